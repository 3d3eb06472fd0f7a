"""ActionProfileMember and ActionProfileGroup. Ids from ONESHOT_BASE up belong to
one-shot action sets (tables.py): clients may not write them, reads leave them out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4.v1 import p4runtime_pb2

from emu.p4.tables import GroupMember

from ..errors import invalid
from ..pipeline import ONESHOT_BASE, Pipeline
from ..translate import decode_uint, encode_uint
from .common import Entity, EntityContext, U, profile_of


def _profile(pipe: Pipeline, profile_id: int) -> Any:
    if profile_id == 0:
        raise invalid("action_profile_id 0 (wildcard) is only valid in reads")
    return profile_of(pipe, profile_id)


def watch_port(m: Any) -> int | None:
    """The watch port of a group member or one-shot action (None: not watched)."""
    which = m.WhichOneof("watch_kind")
    if which == "watch_port":
        return decode_uint(m.watch_port, 0, "watch_port")
    if which == "watch" and m.watch:
        if m.watch < 0:  # the deprecated int32 field; reads return it as watch_port bytes
            raise invalid(f"watch port {m.watch} is negative")
        return int(m.watch)
    return None


def write_member(ctx: EntityContext, typ: int, m: p4runtime_pb2.ActionProfileMember) -> None:
    pipe = ctx.pipe
    info, prof = _profile(pipe, m.action_profile_id)
    if m.member_id >= ONESHOT_BASE:
        raise invalid(f"member ids from {ONESHOT_BASE} up are reserved (one-shot sets)")
    if typ == U.DELETE:
        prof.delete_member(m.member_id)
        return
    if not m.HasField("action"):
        raise invalid(f"{info.preamble.name}: member {m.member_id} needs an action")
    allowed = frozenset(a for t in pipe.index.tables.values()
                        if t.profile_id == m.action_profile_id for a in t.action_ids)
    call = pipe.index.action_from_proto(m.action, allowed, info.preamble.name)
    if typ == U.INSERT:
        pipe.require_style(prof, False, info.preamble.name)
        prof.insert_member(m.member_id, call)
    else:
        prof.modify_member(m.member_id, call)


def _read_profiles(ctx: EntityContext, profile_id: int) -> Iterator[tuple[int, Any]]:
    """(id, engine profile) of the profile a read names, or of every one (id 0)."""
    idx = ctx.pipe.index
    for pinfo in [idx.profile(profile_id)] if profile_id else idx.profiles.values():
        yield pinfo.preamble.id, ctx.pipe.control.action_profiles[pinfo.preamble.name]


def read_members(ctx: EntityContext, m: p4runtime_pb2.ActionProfileMember) -> list[Entity]:
    idx = ctx.pipe.index
    out = []
    for profile_id, prof in _read_profiles(ctx, m.action_profile_id):
        for mem in prof.members():
            if (m.member_id and mem.member_id != m.member_id) or \
                    mem.member_id >= ONESHOT_BASE:
                continue
            r = Entity()
            rm = r.action_profile_member
            rm.action_profile_id = profile_id
            rm.member_id = mem.member_id
            idx.action_to_proto(mem.action, rm.action)
            out.append(r)
    return out


def write_group(ctx: EntityContext, typ: int, g: p4runtime_pb2.ActionProfileGroup) -> None:
    info, prof = _profile(ctx.pipe, g.action_profile_id)
    if g.group_id >= ONESHOT_BASE:
        raise invalid(f"group ids from {ONESHOT_BASE} up are reserved (one-shot sets)")
    if typ == U.DELETE:
        prof.delete_group(g.group_id)
        return
    members = [GroupMember(gm.member_id, gm.weight, watch_port(gm)) for gm in g.members]
    if typ == U.INSERT:
        ctx.pipe.require_style(prof, False, info.preamble.name)
        prof.insert_group(g.group_id, members, max_size=g.max_size)
    else:
        prof.modify_group(g.group_id, members, max_size=g.max_size or None)


def read_groups(ctx: EntityContext, g: p4runtime_pb2.ActionProfileGroup) -> list[Entity]:
    out = []
    for profile_id, prof in _read_profiles(ctx, g.action_profile_id):
        if not prof.with_selector:
            continue
        for grp in prof.groups():
            if (g.group_id and grp.group_id != g.group_id) or grp.group_id >= ONESHOT_BASE:
                continue
            r = Entity()
            rg = r.action_profile_group
            rg.action_profile_id = profile_id
            rg.group_id = grp.group_id
            rg.max_size = grp.max_size
            for gm in grp.members:
                x = rg.members.add(member_id=gm.member_id, weight=gm.weight)
                if gm.watch_port is not None:
                    x.watch_port = encode_uint(gm.watch_port)
            out.append(r)
    return out
