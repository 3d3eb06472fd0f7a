"""TableEntry: entries (insert/modify/delete), the default entry (MODIFY, reset), direct
counter and meter data, idle timeouts, and one-shot action sets.

A one-shot action set becomes hidden members (and a group, for selectors) with ids from
ONESHOT_BASE up, released with the entry and read back as written.
"""

from __future__ import annotations

from typing import Any

from p4.v1 import p4runtime_pb2

from emu.p4.tables import KEEP, GroupMember, Table

from ..errors import invalid, permission_denied, unimplemented
from ..pipeline import OneShot, Pipeline
from ..translate import TableInfo
from .action_profiles import watch_port
from .common import Entity, EntityContext, U, profile_of, table_of
from .meters import meter_from_proto, meter_to_proto


def write(ctx: EntityContext, typ: int, te: p4runtime_pb2.TableEntry) -> None:
    if te.table_id == 0:
        raise invalid("table_id 0 (wildcard) is only valid in reads")
    if te.is_const:
        # Spec: is_const is set by the server on reads of const entries; a client
        # may not write it (INSERT, MODIFY and DELETE alike).
        raise invalid("is_const is read-only: entries with is_const set cannot be written")
    pipe = ctx.pipe
    ti, table = table_of(pipe, te.table_id)
    if te.is_default_action:
        _write_default(pipe, ti, table, typ, te)
        return
    where = ti.name
    match = pipe.index.match_from_proto(ti, te.match)
    if not ti.needs_priority and te.priority:
        raise invalid(f"{where}: priority must be 0 for a table without "
                      "ternary/range/optional fields")
    if typ == U.DELETE:
        pipe.drop_oneshot(table.delete(match, te.priority, strict=True))
        return
    if not te.HasField("action") and typ == U.INSERT:
        raise invalid(f"{where}: INSERT needs an action")
    action, member, group, shot = _target(pipe, ti, table, te)
    try:
        _insert_or_modify(pipe, ti, table, typ, te, match, action, member, group, shot)
    except BaseException:
        if shot is not None:
            shot.release()
        raise


def _write_default(pipe: Pipeline, ti: TableInfo, table: Table, typ: int,
                   te: p4runtime_pb2.TableEntry) -> None:
    where = ti.name
    if typ != U.MODIFY:
        raise invalid(f"{where}: the default entry can only be MODIFYed")
    if len(te.match) or te.priority:
        raise invalid(f"{where}: the default entry has no match and no priority")
    if ti.profile_id:
        # Spec "Default Entry": an indirect table's default entry is a constant NoAction,
        # and modifying a constant default entry is PERMISSION_DENIED (reads flag it
        # is_const).
        raise permission_denied(f"{where}: the default entry of an indirect table is a "
                                "constant NoAction")
    if table.const_default_action and te.HasField("action"):
        # before the action is decoded, as BMv2 (a bad parameter was OUT_OF_RANGE here)
        raise permission_denied(f"{where}: default action is const")
    meter = meter_from_proto(te) if te.HasField("meter_config") else None
    if te.HasField("action"):
        if te.action.WhichOneof("type") != "action":
            raise invalid(f"{where}: the default entry needs a direct action")
        # its scope before its parameters, as BMv2 (a bad one was OUT_OF_RANGE here)
        table.check_scope(pipe.index.action(te.action.action.action_id).preamble.name,
                          for_default=True)
        call = pipe.index.action_from_proto(te.action.action, ti.action_ids, where)
        table.set_default_action(call, metadata=te.metadata,
                                 controller_metadata=te.controller_metadata,
                                 meter_config=meter)
    else:
        table.reset_default_action()
    if te.HasField("counter_data"):
        table.default_entry.counter.packets = te.counter_data.packet_count
        table.default_entry.counter.bytes = te.counter_data.byte_count


def _target(pipe: Pipeline, ti: TableInfo, table: Table, te: p4runtime_pb2.TableEntry
            ) -> tuple[Any, Any, Any, OneShot | None]:
    """(action, member id, group id, one-shot set) an entry's TableAction names."""
    where = ti.name
    action: Any = None
    member: Any = None
    group: Any = None
    shot: OneShot | None = None
    if not te.HasField("action"):
        return action, member, group, shot
    kind = te.action.WhichOneof("type")
    if kind == "action":
        if ti.profile_id:
            raise invalid(f"{where}: entries of an indirect table need a member or a group")
        table.check_scope(pipe.index.action(te.action.action.action_id).preamble.name,
                          for_default=False)  # before the parameters, as for the default
        action = pipe.index.action_from_proto(te.action.action, ti.action_ids, where)
    elif kind in ("action_profile_member_id", "action_profile_group_id"):
        if ti.profile_id:
            pipe.require_style(profile_of(pipe, ti.profile_id)[1], False, where)
        if kind == "action_profile_member_id":
            member = te.action.action_profile_member_id
        else:
            group = te.action.action_profile_group_id
    elif kind == "action_profile_action_set":
        if not ti.profile_id:
            raise invalid(f"{where}: one-shot action sets need an action profile")
        pipe.require_style(profile_of(pipe, ti.profile_id)[1], True, where)
        shot = _make_oneshot(pipe, ti, te.action.action_profile_action_set)
        if shot.group_id is not None:
            group = shot.group_id
        else:
            member = shot.member_ids[0]
    else:
        raise invalid(f"{where}: empty TableAction")
    if (member is not None or group is not None) and not ti.profile_id:
        raise invalid(f"{where}: a direct table takes an action, not a member/group")
    return action, member, group, shot


def _insert_or_modify(pipe: Pipeline, ti: TableInfo, table: Table, typ: int,
                      te: p4runtime_pb2.TableEntry, match: Any, action: Any,
                      member: Any, group: Any, shot: OneShot | None) -> None:
    # Counter data or a meter config without the direct resource: the table refuses them
    # once the action's scope is checked (BMv2's order), Table(direct_counter=...).
    counter = ((te.counter_data.packet_count, te.counter_data.byte_count)
               if te.HasField("counter_data") else None)
    meter = meter_from_proto(te) if te.HasField("meter_config") else None
    if typ == U.INSERT:
        e = table.insert(match, action, member_id=member, group_id=group,
                         priority=te.priority, idle_timeout_ns=te.idle_timeout_ns,
                         metadata=te.metadata, controller_metadata=te.controller_metadata,
                         counter=counter, meter_config=meter, strict=True)
    else:
        retarget = te.HasField("action")
        e = table.modify(
            match, te.priority,
            action=action if retarget else KEEP,
            member_id=member if retarget else KEEP,
            group_id=group if retarget else KEEP,
            idle_timeout_ns=te.idle_timeout_ns, metadata=te.metadata,
            controller_metadata=te.controller_metadata,
            counter=counter if counter is not None else KEEP,
            # Spec "Direct Resources": a MODIFY without meter_config resets the meter to
            # its default (GREEN); counter_data unset leaves the counts.
            meter_config=meter, strict=True)
        if retarget:
            pipe.drop_oneshot(e)  # the entry no longer references it
    if shot is not None:
        pipe.keep_oneshot(e, shot)


def _make_oneshot(pipe: Pipeline, ti: TableInfo,
                  aset: p4runtime_pb2.ActionProfileActionSet) -> OneShot:
    """Hidden members (and a group, for selectors) for a one-shot action set."""
    where = ti.name
    pinfo, prof = profile_of(pipe, ti.profile_id)
    acts = list(aset.action_profile_actions)
    if not acts:
        raise invalid(f"{where}: empty one-shot action set")
    if not pinfo.with_selector and len(acts) != 1:
        raise invalid(f"{where}: an action profile without selector takes one action")
    calls = []
    for a in acts:
        if a.weight <= 0:
            raise invalid(f"{where}: one-shot action weights must be positive")
        wp = watch_port(a)
        calls.append((pipe.index.action_from_proto(a.action, ti.action_ids, where),
                      a.weight, wp))
    stored = p4runtime_pb2.ActionProfileActionSet()
    stored.CopyFrom(aset)
    shot = OneShot(prof, None, [], stored)
    try:
        for call, _w, _wp in calls:
            mid = pipe.next_oneshot_id
            pipe.next_oneshot_id += 1
            prof.insert_member(mid, call)
            shot.member_ids.append(mid)
        if pinfo.with_selector:
            gid = pipe.next_oneshot_id
            pipe.next_oneshot_id += 1
            prof.insert_group(gid, [GroupMember(mid, w, wp) for mid, (_c, w, wp)
                                    in zip(shot.member_ids, calls, strict=True)],
                              max_size=pinfo.max_group_size)
            shot.group_id = gid
    except BaseException:
        shot.release()
        raise
    return shot


def _action_filter(pipe: Pipeline, ti: TableInfo, te: p4runtime_pb2.TableEntry) -> str | None:
    """The action name a read filters on (spec, Wildcard Reads: a direct action's id;
    its parameters, members and groups are not filters)."""
    if not te.HasField("action"):
        return None
    if te.action.WhichOneof("type") != "action" or ti.profile_id:
        raise unimplemented(f"{ti.name}: a read filters on the id of a direct action only")
    aid = te.action.action.action_id
    if aid not in ti.action_ids:
        raise invalid(f"{ti.name}: action id {aid} is not an action of this table")
    return str(pipe.index.action(aid).preamble.name)


def read(ctx: EntityContext, te: p4runtime_pb2.TableEntry) -> list[Entity]:
    pipe = ctx.pipe
    idx = pipe.index
    tis = [idx.table(te.table_id)] if te.table_id else list(idx.tables.values())
    if not te.table_id and (len(te.match) or te.is_default_action or te.priority
                            or te.HasField("action") or te.controller_metadata
                            or te.metadata):
        # Spec, Wildcard Reads: with table_id 0 "no other filter can be used".
        raise invalid("a read of every table cannot filter on match, action, priority, "
                      "controller_metadata, metadata or is_default_action")
    out = []
    for ti in tis:
        table = pipe.control.tables[ti.name]
        if te.is_default_action:
            entries = [table.default_entry]
        else:
            match = idx.match_from_proto(ti, te.match) if len(te.match) else None
            entries = table.read(match, priority=te.priority, action=_action_filter(pipe, ti, te),
                                 metadata=te.metadata, controller_metadata=te.controller_metadata,
                                 strict=True)
        for e in entries:
            r = Entity()
            idx.entry_to_proto(ti, e, r.table_entry)
            shot = pipe.oneshots.get(e)
            if shot is not None:
                r.table_entry.action.action_profile_action_set.CopyFrom(shot.action_set)
            if ti.direct_counter_id and te.HasField("counter_data"):
                r.table_entry.counter_data.packet_count = e.counter.packets
                r.table_entry.counter_data.byte_count = e.counter.bytes
            if ti.direct_meter_id and te.HasField("meter_config"):
                meter_to_proto(e.meter_config, r.table_entry.meter_config)
            if e.is_const or (e.is_default and ti.profile_id):  # see _write_default
                r.table_entry.is_const = True
            if te.HasField("time_since_last_hit") and table.support_timeout:
                r.table_entry.time_since_last_hit.elapsed_ns = \
                    e.time_since_last_hit(table._clock())
            out.append(r)
    return out
