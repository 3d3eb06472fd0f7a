"""P4Runtime requests that both switch targets answer, and their answers normalised for
comparison: a Write's gRPC code and per-update codes, a Read's entities (text form,
sorted) or its error code. Messages are left out: they are each server's own words."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as P

from emu.runtime.client import (
    P4RuntimeClient,
    WriteError,
    clone_session_entity,
    multicast_group_entity,
)

U = P.Update
INSERT, MODIFY, DELETE = U.INSERT, U.MODIFY, U.DELETE


@dataclass(frozen=True)
class Op:
    label: str
    kind: str  # "write" (updates) or "read" (one entity)
    updates: tuple[P.Update, ...] = ()
    query: P.Entity | None = None


def answer(c: P4RuntimeClient, op: Op) -> str:
    if op.kind == "write":
        try:
            c.write(list(op.updates))
        except WriteError as e:
            return f"{e.code.name} {[code for code, _ in e.errors]}"
        return "OK"
    assert op.query is not None
    try:
        ents = c.read([op.query])
    except grpc.RpcError as e:
        return f"read {e.code().name}"
    return "read " + " | ".join(sorted(text_format.MessageToString(e, as_one_line=True)
                                       for e in ents))


class Ids:
    """P4Info ids by name (tables, actions, profiles, counters, meters, registers)."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.ids = {x.preamble.name: x.preamble.id
                    for kind in ("tables", "actions", "action_profiles", "counters",
                                 "direct_counters", "meters", "direct_meters", "registers")
                    for x in getattr(info, kind)}

    def __getitem__(self, name: str) -> int:
        return self.ids[name]


def entry(table: int, matches: Sequence[tuple] = (), action: int | None = None,
          params: Sequence[tuple[int, bytes]] = (), *, priority: int = 0,
          default: bool = False, member: int | None = None, group: int | None = None,
          idle_timeout_ns: int = 0) -> P.Entity:
    e = P.Entity()
    t = e.table_entry
    t.table_id, t.priority, t.is_default_action = table, priority, default
    t.idle_timeout_ns = idle_timeout_ns
    for fid, kind, *v in matches:
        fm = t.match.add(field_id=fid)
        if kind == "exact":
            fm.exact.value = v[0]
        elif kind == "ternary":
            fm.ternary.value, fm.ternary.mask = v
        elif kind == "range":
            fm.range.low, fm.range.high = v
        elif kind == "optional":
            fm.optional.value = v[0]
        else:
            fm.lpm.value, fm.lpm.prefix_len = v
    if action is not None:
        t.action.action.action_id = action
        for pid, val in params:
            t.action.action.params.add(param_id=pid, value=val)
    if member is not None:
        t.action.action_profile_member_id = member
    if group is not None:
        t.action.action_profile_group_id = group
    return e


def member(profile: int, mid: int, action: int,
           params: Sequence[tuple[int, bytes]] = ()) -> P.Entity:
    e = P.Entity()
    m = e.action_profile_member
    m.action_profile_id, m.member_id, m.action.action_id = profile, mid, action
    for pid, val in params:
        m.action.params.add(param_id=pid, value=val)
    return e


def group(profile: int, gid: int, members: Sequence[tuple[int, int]],
          max_size: int = 0) -> P.Entity:
    e = P.Entity()
    g = e.action_profile_group
    g.action_profile_id, g.group_id, g.max_size = profile, gid, max_size
    for mid, weight in members:
        g.members.add(member_id=mid, weight=weight)
    return e


class Builder:
    """Collects Ops: w(label, type, entity), r(label, query), batch(label, updates)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def w(self, label: str, typ: int, ent: P.Entity) -> None:
        self.ops.append(Op(label, "write", (U(type=typ, entity=ent),)))

    def batch(self, label: str, updates: Sequence[tuple[int, P.Entity]]) -> None:
        self.ops.append(Op(label, "write", tuple(U(type=t, entity=e) for t, e in updates)))

    def r(self, label: str, query: P.Entity) -> None:
        self.ops.append(Op(label, "read", query=query))


def _indexed(kind: str, obj: int, index: int | None = None) -> P.Entity:
    e = P.Entity()
    x = getattr(e, kind)
    setattr(x, {"counter_entry": "counter_id", "meter_entry": "meter_id",
                "register_entry": "register_id"}[kind], obj)
    if index is not None:
        x.index.index = index
    return e


def cp_requests(ids: Ids) -> list[Op]:
    """tests/runtime/p4/cp.p4: one of each entity kind (direct, ternary/range/optional and
    indirect tables, counters, meters, a register)."""
    fwd, acl, ind = ids["MyIngress.fwd"], ids["MyIngress.acl"], ids["MyIngress.indirect"]
    fwd_a, drop, set_port, no_action = (ids["MyIngress.forward"], ids["MyIngress.drop"],
                                        ids["MyIngress.set_port"], ids["NoAction"])
    prof, pkts, port_meter = (ids["MyIngress.prof"], ids["MyIngress.pkt_counter"],
                              ids["MyIngress.port_meter"])
    b = Builder()
    one = [(1, b"\x01")]
    b.w("insert with a padded key", INSERT, entry(fwd, [(1, "exact", b"\x00" * 5 + b"\x01")],
                                                  fwd_a, one))
    b.w("insert the same key canonical", INSERT, entry(fwd, [(1, "exact", b"\x01")], fwd_a, one))
    b.w("insert a second", INSERT, entry(fwd, [(1, "exact", b"\x02")], fwd_a, [(1, b"\x00\x02")]))
    b.w("key wider than its field", INSERT, entry(fwd, [(1, "exact", b"\x01" * 7)], fwd_a, one))
    b.w("param wider than its field", INSERT, entry(fwd, [(1, "exact", b"\x04")], fwd_a,
                                                    [(1, b"\x02\x00")]))
    b.w("no key", INSERT, entry(fwd, [], fwd_a, one))
    b.w("missing param", INSERT, entry(fwd, [(1, "exact", b"\x06")], fwd_a))
    b.w("extra param", INSERT, entry(fwd, [(1, "exact", b"\x06")], fwd_a, [*one, (2, b"\x01")]))
    b.w("action not in the table", INSERT, entry(fwd, [(1, "exact", b"\x07")], set_port, one))
    b.w("unknown action id", INSERT, entry(fwd, [(1, "exact", b"\x07")], 12345))
    b.w("no action", INSERT, entry(fwd, [(1, "exact", b"\x07")]))
    b.w("priority on an exact table", INSERT, entry(fwd, [(1, "exact", b"\x08")], drop,
                                                    priority=5))
    b.w("ternary match on an exact field", INSERT,
        entry(fwd, [(1, "ternary", b"\x08", b"\xff")], drop))
    b.w("a field twice", INSERT, entry(fwd, [(1, "exact", b"\x08"), (1, "exact", b"\x08")], drop))
    b.w("idle timeout", INSERT, entry(fwd, [(1, "exact", b"\x09")], drop,
                                      idle_timeout_ns=10**12))
    b.w("modify a missing entry", MODIFY, entry(fwd, [(1, "exact", b"\x0a")], drop))
    b.w("delete a missing entry", DELETE, entry(fwd, [(1, "exact", b"\x0a")]))
    b.w("modify by a padded key", MODIFY, entry(fwd, [(1, "exact", b"\x00\x01")], drop))
    b.w("insert the default entry", INSERT, entry(fwd, [], drop, default=True))
    b.w("modify the default entry", MODIFY, entry(fwd, [], fwd_a, [(1, b"\x03")], default=True))
    b.w("default entry with a key", MODIFY,
        entry(fwd, [(1, "exact", b"\x01")], fwd_a, one, default=True))
    b.w("delete the default entry", DELETE, entry(fwd, [], default=True))
    b.r("read the table", entry(fwd))
    b.r("read the default entry", entry(fwd, default=True))
    b.r("read by a padded key", entry(fwd, [(1, "exact", b"\x00\x01")]))
    q = entry(fwd)
    q.table_entry.counter_data.SetInParent()
    b.r("read with counter data", q)
    b.w("ternary without priority", INSERT,
        entry(acl, [(1, "ternary", b"\x08\x00", b"\xff\xff")], drop))
    b.w("ternary", INSERT, entry(acl, [(1, "ternary", b"\x08\x00", b"\xff\xff")], drop,
                                 priority=10))
    b.w("ternary again", INSERT, entry(acl, [(1, "ternary", b"\x08\x00", b"\xff\xff")], drop,
                                       priority=10))
    b.w("ternary value outside its mask", INSERT,
        entry(acl, [(1, "ternary", b"\x08\x01", b"\xff\x00")], drop, priority=10))
    b.w("ternary mask 0", INSERT, entry(acl, [(1, "ternary", b"\x00", b"\x00")], drop,
                                        priority=12))
    b.w("range low above high", INSERT, entry(acl, [(2, "range", b"\x05", b"\x01")], drop,
                                              priority=14))
    b.w("range", INSERT, entry(acl, [(2, "range", b"\x01", b"\x05")], drop, priority=15))
    b.w("range bound wider than its field", INSERT,
        entry(acl, [(2, "range", b"\x01", b"\x02\x00")], drop, priority=16))
    b.w("optional", INSERT, entry(acl, [(3, "optional", b"\x01")], set_port, one, priority=17))
    b.w("every field don't care", INSERT, entry(acl, [], no_action, priority=18))
    b.w("negative priority", INSERT, entry(acl, [(3, "optional", b"\x04")], no_action,
                                           priority=-1))
    b.w("idle timeout on a table without", INSERT,
        entry(acl, [(3, "optional", b"\x05")], no_action, priority=1, idle_timeout_ns=10**9))
    b.w("default entry with a priority", MODIFY, entry(acl, [], drop, default=True, priority=4))
    b.r("read by priority", entry(acl, priority=10))
    b.r("read by a ternary value outside its mask",
        entry(acl, [(1, "ternary", b"\x08\x01", b"\xff\x00")], priority=10))
    b.r("read by a range low above high", entry(acl, [(2, "range", b"\x05", b"\x01")],
                                               priority=14))
    b.r("read every table by priority", entry(0, priority=10))
    b.r("read by action", entry(acl, action=drop))
    b.r("read by an action of no table", entry(acl, action=fwd_a))
    q = entry(acl)
    q.table_entry.controller_metadata = 3
    b.r("read by controller_metadata", q)
    q = entry(acl)
    q.table_entry.metadata = b"\x01"
    b.r("read by metadata", q)
    b.w("member", INSERT, member(prof, 7, set_port, one))
    b.w("member again", INSERT, member(prof, 7, set_port, one))
    b.w("member with an action of no table of its profile", INSERT, member(prof, 8, fwd_a, one))
    b.w("direct action in an indirect table", INSERT,
        entry(ind, [(1, "exact", b"\x01")], set_port, one))
    b.w("missing member", INSERT, entry(ind, [(1, "exact", b"\x01")], member=9))
    b.w("indirect entry", INSERT, entry(ind, [(1, "exact", b"\x01")], member=7))
    b.w("missing member for a taken key", INSERT, entry(ind, [(1, "exact", b"\x01")], member=9))
    b.w("a group for a taken key", INSERT, entry(ind, [(1, "exact", b"\x01")], group=1))
    b.w("a member id taken, a bad action", INSERT, member(prof, 7, fwd_a, one))
    b.w("delete a member in use", DELETE, member(prof, 7, set_port))
    b.w("the default entry of an indirect table", MODIFY, entry(ind, [], drop, default=True))
    b.r("read the indirect table", entry(ind))
    q = P.Entity()
    q.action_profile_member.action_profile_id = prof
    b.r("read the members", q)
    b.r("read a counter", _indexed("counter_entry", pkts, 3))
    b.r("read a counter past its size", _indexed("counter_entry", pkts, 64))
    b.r("read a counter at -1", _indexed("counter_entry", pkts, -1))
    e = _indexed("counter_entry", pkts, 5)
    e.counter_entry.data.packet_count = 9
    b.w("write a counter", MODIFY, e)
    b.r("read it back", _indexed("counter_entry", pkts, 5))
    b.w("insert a counter", INSERT, _indexed("counter_entry", pkts, 5))
    dc = P.Entity()
    dc.direct_counter_entry.table_entry.CopyFrom(entry(fwd, [(1, "exact", b"\x01")]).table_entry)
    dc.direct_counter_entry.data.packet_count, dc.direct_counter_entry.data.byte_count = 4, 5
    b.w("write a direct counter", MODIFY, dc)
    q = P.Entity()
    q.direct_counter_entry.table_entry.table_id = fwd
    b.r("read the direct counters", q)
    e = _indexed("meter_entry", port_meter, 2)
    b.r("read a meter at its default", e)
    e = _indexed("meter_entry", port_meter, 2)
    cfg = e.meter_entry.config
    cfg.cir, cfg.cburst, cfg.pir, cfg.pburst = 100, 10, 200, 20
    b.w("configure a meter", MODIFY, e)
    b.r("read its config", _indexed("meter_entry", port_meter, 2))
    b.w("reset it", MODIFY, _indexed("meter_entry", port_meter, 2))
    b.r("read it reset", _indexed("meter_entry", port_meter, 2))
    dm = P.Entity()
    dm.direct_meter_entry.table_entry.CopyFrom(dc.direct_counter_entry.table_entry)
    cfg = dm.direct_meter_entry.config
    cfg.cir, cfg.cburst, cfg.pir, cfg.pburst = 100, 10, 200, 20
    b.w("configure a direct meter", MODIFY, dm)
    q = P.Entity()
    q.direct_meter_entry.table_entry.table_id = fwd
    b.r("read the direct meters", q)
    b.batch("a batch with failures", [
        (INSERT, entry(fwd, [(1, "exact", b"\x20")], drop)),
        (INSERT, entry(fwd, [(1, "exact", b"\x20")], drop)),
        (DELETE, entry(fwd, [(1, "exact", b"\x21")])),
        (INSERT, entry(fwd, [(1, "exact", b"\x22")], drop))])
    b.w("delete", DELETE, entry(fwd, [(1, "exact", b"\x02")]))
    b.r("read the table at the end", entry(fwd))
    # Last: BMv2 takes these, so the two sides' state differs from here on.
    b.w("empty key", INSERT, entry(fwd, [(1, "exact", b"")], fwd_a, one))
    b.w("empty param", INSERT, entry(fwd, [(1, "exact", b"\x05")], fwd_a, [(1, b"")]))
    b.w("range covering every value", INSERT,
        entry(acl, [(2, "range", b"\x00", b"\x01\xff")], drop, priority=13))
    b.w("member id 0", INSERT, member(prof, 0, set_port, one))
    b.w("group in a profile without selector", INSERT, group(prof, 1, [(7, 1)]))
    return b.ops


def ecmp_requests(ids: Ids) -> list[Op]:
    """tests/switch/p4/ecmp_ecn.p4: an LPM table behind an action selector, a counter,
    and the packet replication engine."""
    t, sel = ids["MyIngress.ipv4_lpm"], ids["MyIngress.ecmp_selector"]
    nhop, drop = ids["MyIngress.set_nhop"], ids["MyIngress.drop"]
    b = Builder()
    p1 = [(1, b"\x01"), (2, b"\x01")]
    b.w("member 1", INSERT, member(sel, 1, nhop, p1))
    b.w("member 2", INSERT, member(sel, 2, nhop, [(1, b"\x02"), (2, b"\x02")]))
    b.w("member 3", INSERT, member(sel, 3, drop))
    b.w("lpm /24", INSERT, entry(t, [(1, "lpm", b"\x0a\x00\x01\x00", 24)], member=1))
    b.w("lpm /24 again", INSERT, entry(t, [(1, "lpm", b"\x0a\x00\x01\x00", 24)], member=2))
    b.w("lpm bits past the prefix", INSERT,
        entry(t, [(1, "lpm", b"\x0a\x00\x01\x05", 24)], member=1))
    b.w("lpm prefix 0", INSERT, entry(t, [(1, "lpm", b"\x00", 0)], member=1))
    b.w("lpm prefix 33", INSERT, entry(t, [(1, "lpm", b"\x0a\x00\x00\x00", 33)], member=1))
    b.w("lpm prefix 32", INSERT, entry(t, [(1, "lpm", b"\x0a\x00\x00\x01", 32)], member=1))
    b.w("group", INSERT, group(sel, 1, [(1, 1), (2, 1)]))
    b.w("group again", INSERT, group(sel, 1, [(1, 1)]))
    b.w("group weight 0", INSERT, group(sel, 4, [(1, 0)]))
    b.w("group weights", INSERT, group(sel, 5, [(1, 5), (2, 3)]))
    b.w("group past its max_size", INSERT, group(sel, 6, [(1, 1), (2, 1)], max_size=1))
    b.w("group with max_size", INSERT, group(sel, 8, [(1, 1)], max_size=16))
    b.w("change a group's max_size", MODIFY, group(sel, 8, [(1, 1), (2, 1)], max_size=8))
    b.w("empty group", INSERT, group(sel, 9, []))
    b.w("entry to a group", INSERT, entry(t, [(1, "lpm", b"\x0d\x00\x00\x00", 8)], group=1))
    b.w("missing group", INSERT, entry(t, [(1, "lpm", b"\x0f\x00\x00\x00", 8)], group=77))
    b.w("delete a group in use", DELETE, group(sel, 1, []))
    b.w("delete a member in a group", DELETE, member(sel, 2, nhop))
    b.w("modify a member", MODIFY, member(sel, 1, nhop, [(1, b"\x07"), (2, b"\x03")]))
    b.w("modify a missing member", MODIFY, member(sel, 44, nhop, p1))
    b.w("modify a missing group", MODIFY, group(sel, 55, [(1, 1)]))
    b.w("modify a group", MODIFY, group(sel, 5, [(2, 2)]))
    b.w("point an entry at another group", MODIFY,
        entry(t, [(1, "lpm", b"\x0a\x00\x01\x00", 24)], group=5))
    b.r("read the table", entry(t))
    q = P.Entity()
    q.action_profile_group.action_profile_id = sel
    q.action_profile_group.group_id = 5
    b.r("read a group", q)
    q = P.Entity()
    q.action_profile_group.action_profile_id = sel
    q.action_profile_group.group_id = 99
    b.r("read a missing group", q)

    b.w("multicast group", INSERT, multicast_group_entity(1, [(1, 1), (2, 1)]))
    b.w("multicast group again", INSERT, multicast_group_entity(1, [(1, 1)]))
    b.w("multicast group 0", INSERT, multicast_group_entity(0, [(1, 1)]))
    b.w("empty multicast group", INSERT, multicast_group_entity(4, []))
    b.w("modify a missing multicast group", MODIFY, multicast_group_entity(5, [(1, 1)]))
    b.w("delete a missing multicast group", DELETE, multicast_group_entity(5, []))
    b.r("read a multicast group", multicast_group_entity(1, []))
    b.r("read a missing multicast group", multicast_group_entity(42, []))
    b.w("clone session", INSERT, clone_session_entity(1, [(1, 1)]))
    b.w("clone session again", INSERT, clone_session_entity(1, [(2, 1)]))
    b.w("clone session 0", INSERT, clone_session_entity(0, [(1, 1)]))
    b.w("clone session with two replicas", INSERT, clone_session_entity(4, [(1, 0), (2, 0)]))
    b.r("read a clone session", clone_session_entity(4, []))
    # Last: BMv2 takes these, so the two sides' state differs from here on.
    b.w("group id 0", INSERT, group(sel, 0, [(1, 1)]))
    return b.ops


Requests = Callable[[Ids], list[Op]]
