"""RECONCILE_AND_COMMIT to a different program: carry the forwarding state over.

P4Runtime spec ("SetForwardingPipelineConfig RPC"): RECONCILE_AND_COMMIT
realizes the new config "while preserving the forwarding state"; when the state
cannot be preserved the answer is INVALID_ARGUMENT. How, here:

1. The state of the running pipeline is read as P4Runtime entities (the
   server's own Read path): multicast groups, clone sessions, action profile
   members and groups, table entries (one-shot action sets, direct counter data
   and direct meter configs included; const entries come with the program),
   default actions the controller changed, non-zero counter cells, configured
   meter cells, non-zero register cells, non-empty parser value sets.
2. Each entity is re-addressed by *name* into the new P4Info: tables, action
   profiles, counters, meters, registers and actions by their preamble name,
   match fields and action params by their name. Shapes must agree: a table
   keeps the same match fields (name, match kind, bitwidth; order may change),
   an action the same params (name, bitwidth); a direct counter or meter with
   state needs one in the new table; a value set with members keeps its match
   fields the same way. Anything that does not exist or fit in the
   new program is INVALID_ARGUMENT, naming it.
3. The entities are written into the new pipeline with the server's Write path
   (so every check of a Write applies) while the switch loop holds the data
   path, and only then is the new pipeline swapped in. Any failure abandons
   the new pipeline: the old one keeps running untouched (atomic).

Idle-timeout clocks restart (time_since_last_hit is not carried). Digest
configs are carried by digest name by the server (digests.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from p4.v1 import p4runtime_pb2

from .dataplane import ControlPlane
from .errors import P4RTError, as_p4rt_error, invalid
from .translate import P4InfoIndex, TableInfo

__all__ = ["IdMap", "changed_defaults", "snapshot_entities", "transfer"]

U = p4runtime_pb2.Update
E = p4runtime_pb2.Entity
ReadFn = Callable[[p4runtime_pb2.Entity], list[p4runtime_pb2.Entity]]
ApplyFn = Callable[[p4runtime_pb2.Update], None]

_CANNOT = "RECONCILE_AND_COMMIT cannot preserve the forwarding state: "


def _cannot(msg: str) -> P4RTError:
    return invalid(_CANNOT + msg)


def _part_ids(old: Iterable[Any], new: Iterable[Any], shape: Callable[[Any], Any],
              renamed: str, reshaped: Callable[[Any, Any], str]) -> dict[int, int]:
    """Old id -> new id of the named parts (match fields, params) of one object.

    The new object must have parts of the same names (else `renamed`), each of the
    same `shape` (else `reshaped(old part, new part)`)."""
    new_by_name = {p.name: p for p in new}
    old = list(old)
    if {p.name for p in old} != set(new_by_name):
        raise _cannot(renamed)
    ids = {}
    for p in old:
        np_ = new_by_name[p.name]
        if shape(np_) != shape(p):
            raise _cannot(reshaped(p, np_))
        ids[p.id] = np_.id
    return ids


@dataclass
class IdMap:
    """Old P4Info ids -> new P4Info ids, by name, with shape checks."""

    old: P4InfoIndex
    new: P4InfoIndex

    @staticmethod
    def _by_name(items: Iterable[Any], name: str) -> Any | None:
        return next((x for x in items if x.preamble.name == name), None)

    def table(self, old_id: int) -> tuple[TableInfo, TableInfo, dict[int, int]]:
        """(old, new, match field id map) for a table present in both with one key shape."""
        ot = self.old.table(old_id)
        nt = next((t for t in self.new.tables.values() if t.name == ot.name), None)
        if nt is None:
            raise _cannot(f"table {ot.name} has entries but is not in the new P4Info")
        fmap = _part_ids(
            ot.key, nt.key, lambda k: (k.kind, k.bitwidth), f"table {ot.name}: match fields changed",
            lambda k, nk: f"table {ot.name} field {k.name}: {k.kind.value}/{k.bitwidth} "
                          f"became {nk.kind.value}/{nk.bitwidth}")
        return ot, nt, fmap

    def action(self, action: p4runtime_pb2.Action, where: str) -> None:
        """Re-address an Action in place."""
        oa = self.old.actions.get(action.action_id)
        if oa is None:
            raise _cannot(f"{where}: unknown action id {action.action_id}")
        na = self.new.action_by_name.get(oa.preamble.name)
        if na is None:
            raise _cannot(f"{where}: action {oa.preamble.name} is not in the new P4Info")
        pmap = _part_ids(
            oa.params, na.params, lambda p: p.bitwidth,
            f"{where}: action {oa.preamble.name} changed its params",
            lambda p, np_: f"{where}: action {oa.preamble.name} param {p.name}: "
                           f"bit<{p.bitwidth}> became bit<{np_.bitwidth}>")
        action.action_id = na.preamble.id
        for prm in action.params:
            prm.param_id = pmap[prm.param_id]

    def _named(self, kind: str, old: Mapping[int, Any], new: Mapping[int, Any],
               old_id: int) -> int:
        o = old.get(old_id)
        if o is None:
            raise _cannot(f"unknown {kind} id {old_id}")
        n = self._by_name(new.values(), o.preamble.name)
        if n is None:
            raise _cannot(f"{kind} {o.preamble.name} has state but is not in the new P4Info")
        return int(n.preamble.id)

    def profile(self, old_id: int) -> int:
        return self._named("action profile", self.old.profiles, self.new.profiles, old_id)

    def counter(self, old_id: int) -> int:
        return self._named("counter", self.old.counters, self.new.counters, old_id)

    def meter(self, old_id: int) -> int:
        return self._named("meter", self.old.meters, self.new.meters, old_id)

    def register(self, old_id: int) -> int:
        return self._named("register", self.old.registers, self.new.registers, old_id)

    def value_set(self, old_id: int) -> tuple[int, dict[int, int]]:
        """(new id, match field id map) for a value set present in both with one shape."""
        o = self.old.value_sets.get(old_id)
        if o is None:
            raise _cannot(f"unknown value set id {old_id}")
        name = o.preamble.name
        n = self._by_name(self.new.value_sets.values(), name)
        if n is None:
            raise _cannot(f"value set {name} has members but is not in the new P4Info")
        fmap = _part_ids(
            o.match, n.match, lambda m: (m.match_type, m.other_match_type, m.bitwidth),
            f"value set {name}: match fields changed",
            lambda m, _: f"value set {name} field {m.name}: match kind or width changed")
        return int(n.preamble.id), fmap

    def digest_ids(self) -> dict[int, int]:
        """Digests present in both with the same type (old id -> new id)."""
        out = {}
        for d in self.old.digests.values():
            n = self._by_name(self.new.digests.values(), d.preamble.name)
            if n is not None and n.type_spec == d.type_spec:
                out[d.preamble.id] = n.preamble.id
        return out

    # -- entities -----------------------------------------------------------------

    def table_entry(self, te: p4runtime_pb2.TableEntry) -> None:
        ot, nt, fmap = self.table(te.table_id)
        te.table_id = nt.proto.preamble.id
        for fm in te.match:
            fm.field_id = fmap[fm.field_id]
        where = f"table {ot.name}"
        kind = te.action.WhichOneof("type")
        if kind == "action":
            self.action(te.action.action, where)
        elif kind == "action_profile_action_set":
            for a in te.action.action_profile_action_set.action_profile_actions:
                self.action(a.action, where)
        # A direct resource with nothing in it is not state worth refusing over.
        if te.HasField("counter_data") and not (te.counter_data.packet_count
                                                or te.counter_data.byte_count):
            te.ClearField("counter_data")
        if te.HasField("counter_data") and not nt.direct_counter_id:
            raise _cannot(f"{where}: direct counter data but no direct counter in the new table")
        if te.HasField("meter_config") and not nt.direct_meter_id:
            raise _cannot(f"{where}: direct meter config but no direct meter in the new table")

    def entity(self, ent: p4runtime_pb2.Entity) -> p4runtime_pb2.Entity:
        """A re-addressed copy of `ent` for the new P4Info."""
        out = E()
        out.CopyFrom(ent)
        which = out.WhichOneof("entity")
        if which == "table_entry":
            self.table_entry(out.table_entry)
        elif which == "action_profile_member":
            m = out.action_profile_member
            name = self.old.profile(m.action_profile_id).preamble.name
            m.action_profile_id = self.profile(m.action_profile_id)
            self.action(m.action, f"action profile {name} member {m.member_id}")
        elif which == "action_profile_group":
            g = out.action_profile_group
            g.action_profile_id = self.profile(g.action_profile_id)
        elif which == "counter_entry":
            out.counter_entry.counter_id = self.counter(out.counter_entry.counter_id)
        elif which == "meter_entry":
            out.meter_entry.meter_id = self.meter(out.meter_entry.meter_id)
        elif which == "register_entry":
            out.register_entry.register_id = self.register(out.register_entry.register_id)
        elif which == "value_set_entry":
            vs = out.value_set_entry
            vs.value_set_id, fmap = self.value_set(vs.value_set_id)
            for member in vs.members:
                for fm in member.match:
                    fm.field_id = fmap[fm.field_id]
        elif which != "packet_replication_engine_entry":  # the PRE needs no P4Info
            raise _cannot(f"cannot carry {which} entities")
        return out


def changed_defaults(read: ReadFn, index: P4InfoIndex,
                     control: ControlPlane) -> list[p4runtime_pb2.Entity]:
    """Default entries the controller changed (the others come with the new program)."""
    out = []
    for ti in index.tables.values():
        table = control.tables[ti.name]
        d = table.default_entry
        initial = getattr(table, "_initial_default", d.action)
        if d.is_const or (d.action == initial and not d.metadata
                          and not d.controller_metadata and d.meter_config is None):
            continue
        q = E()
        q.table_entry.table_id = ti.proto.preamble.id
        q.table_entry.is_default_action = True
        out.extend(read(q))
    return out


def snapshot_entities(read: ReadFn, index: P4InfoIndex, control: ControlPlane
                      ) -> list[tuple[int, p4runtime_pb2.Entity]]:
    """The running pipeline's state as (update type, entity), in write order."""
    out: list[tuple[int, p4runtime_pb2.Entity]] = []
    pre = p4runtime_pb2.PacketReplicationEngineEntry
    for q in (E(packet_replication_engine_entry=pre(
                  multicast_group_entry=p4runtime_pb2.MulticastGroupEntry())),
              E(packet_replication_engine_entry=pre(
                  clone_session_entry=p4runtime_pb2.CloneSessionEntry())),
              E(action_profile_member=p4runtime_pb2.ActionProfileMember()),
              E(action_profile_group=p4runtime_pb2.ActionProfileGroup())):
        out.extend((U.INSERT, e) for e in read(q))
    q = E(table_entry=p4runtime_pb2.TableEntry())
    q.table_entry.counter_data.SetInParent()
    q.table_entry.meter_config.SetInParent()
    out.extend((U.INSERT, e) for e in read(q) if not e.table_entry.is_const)
    out.extend((U.MODIFY, e) for e in changed_defaults(read, index, control))
    for e in read(E(counter_entry=p4runtime_pb2.CounterEntry())):
        if e.counter_entry.data.packet_count or e.counter_entry.data.byte_count:
            out.append((U.MODIFY, e))
    for e in read(E(meter_entry=p4runtime_pb2.MeterEntry())):
        if e.meter_entry.HasField("config"):
            out.append((U.MODIFY, e))
    for e in read(E(register_entry=p4runtime_pb2.RegisterEntry())):
        if e.register_entry.data.bitstring.strip(b"\x00"):
            out.append((U.MODIFY, e))
    for e in read(E(value_set_entry=p4runtime_pb2.ValueSetEntry())):
        if len(e.value_set_entry.members):
            out.append((U.MODIFY, e))
    return out


def transfer(ids: IdMap, state: Iterable[tuple[int, p4runtime_pb2.Entity]],
             apply: ApplyFn) -> int:
    """Write the re-addressed state into the new pipeline; INVALID_ARGUMENT on the
    first entity that cannot be carried. Returns how many entities were written."""
    n = 0
    for typ, ent in state:
        new = ids.entity(ent)
        try:
            apply(p4runtime_pb2.Update(type=typ, entity=new))
        except Exception as e:  # engine errors too: any refusal means the state is lost
            err = as_p4rt_error(e)
            what = new.WhichOneof("entity")
            raise _cannot(f"{what} does not fit the new program ({err.message})") from None
        n += 1
    return n
