"""SwitchHandle over P4Runtime, for any target that speaks it (embedded or BMv2).

Names are mapped to ids through the switch's P4Info; values are encoded as the
P4Runtime spec's canonical byte strings. The transport is a per-switch client
object with two calls (the project's runtime client, or any adapter):

    client.write(updates: Sequence[p4runtime_pb2.Update]) -> None
    client.read(entities: Sequence[p4runtime_pb2.Entity]) -> Iterable[p4runtime_pb2.Entity]

Note: PI (behind BMv2's simple_switch_grpc) implements no register reads or writes;
there `read_register` raises SouthboundError (use simple_switch_CLI instead).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .errors import SouthboundError
from .southbound import (
    CloneSession,
    Lpm,
    MatchValue,
    MulticastGroup,
    OptionalMatch,
    ProfileGroup,
    ProfileMember,
    Range,
    TableEntry,
    Ternary,
)


class P4RuntimeClient(Protocol):
    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None: ...

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> Iterable[p4runtime_pb2.Entity]:
        ...


def encode(value: int, bitwidth: int) -> bytes:
    """Canonical P4Runtime byte string: shortest big-endian form, at least one byte."""
    if value < 0 or (bitwidth and value >> bitwidth):
        raise SouthboundError(f"value {value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


class P4InfoNames:
    """Name -> P4Info object lookups."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.tables = {t.preamble.name: t for t in p4info.tables}
        self.actions = {a.preamble.name: a for a in p4info.actions}
        self.counters = {c.preamble.name: c for c in p4info.counters}
        self.registers = {r.preamble.name: r for r in p4info.registers}
        self.profiles = {p.preamble.name: p for p in p4info.action_profiles}

    @staticmethod
    def _get(kind: str, table: Mapping[str, Any], name: str) -> Any:
        try:
            return table[name]
        except KeyError:
            raise SouthboundError(f"the switch's P4Info has no {kind} {name!r}") from None

    def table(self, name: str) -> p4info_pb2.Table:
        return self._get("table", self.tables, name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._get("action", self.actions, name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._get("counter", self.counters, name)

    def register(self, name: str) -> p4info_pb2.Register:
        return self._get("register", self.registers, name)

    def profile(self, name: str) -> p4info_pb2.ActionProfile:
        return self._get("action profile", self.profiles, name)


class P4RuntimeSwitchHandle:
    def __init__(self, name: str, client: P4RuntimeClient, p4info: p4info_pb2.P4Info) -> None:
        self.name = name
        self.client = client
        self.info = P4InfoNames(p4info)

    # --- encoding ---------------------------------------------------------------------------

    def _match(self, t: p4info_pb2.Table, match: Mapping[str, MatchValue]) -> list[Any]:
        fields = {f.name: f for f in t.match_fields}
        unknown = set(match) - set(fields)
        if unknown:
            raise SouthboundError(f"{t.preamble.name} has no match field {sorted(unknown)[0]!r}")
        out = []
        for name, value in match.items():
            f = fields[name]
            fm = p4runtime_pb2.FieldMatch(field_id=f.id)
            if isinstance(value, Lpm):
                if value.prefix_len == 0:
                    continue  # a /0 is a don't-care: omitted, per the spec
                fm.lpm.value = encode(value.value, f.bitwidth)
                fm.lpm.prefix_len = value.prefix_len
            elif isinstance(value, Ternary):
                if value.mask == 0:
                    continue
                fm.ternary.value = encode(value.value & value.mask, f.bitwidth)
                fm.ternary.mask = encode(value.mask, f.bitwidth)
            elif isinstance(value, Range):
                if value.low == 0 and value.high == (1 << f.bitwidth) - 1:
                    continue
                fm.range.low = encode(value.low, f.bitwidth)
                fm.range.high = encode(value.high, f.bitwidth)
            elif isinstance(value, OptionalMatch):
                if value.value is None:
                    continue
                fm.optional.value = encode(value.value, f.bitwidth)
            else:
                fm.exact.value = encode(value, f.bitwidth)
            out.append(fm)
        return out

    def _action(self, name: str, params: Mapping[str, int]) -> p4runtime_pb2.Action:
        a = self.info.action(name)
        by_name = {p.name: p for p in a.params}
        missing = set(by_name) - set(params)
        extra = set(params) - set(by_name)
        if missing or extra:
            raise SouthboundError(f"{name}: parameters {sorted(by_name)}, got {sorted(params)}")
        msg = p4runtime_pb2.Action(action_id=a.preamble.id)
        for pname, value in params.items():
            p = by_name[pname]
            msg.params.add(param_id=p.id, value=encode(value, p.bitwidth))
        return msg

    def _entry(self, table: str, match: Mapping[str, MatchValue],
               priority: int | None) -> p4runtime_pb2.TableEntry:
        t = self.info.table(table)
        e = p4runtime_pb2.TableEntry(table_id=t.preamble.id)
        e.match.extend(self._match(t, match))
        if priority is not None:
            e.priority = priority
        return e

    def _write(self, kind: int, entry: p4runtime_pb2.TableEntry) -> None:
        self._write_entity(kind, p4runtime_pb2.Entity(table_entry=entry), "table")

    def _write_entity(self, kind: int, entity: p4runtime_pb2.Entity, what: str) -> None:
        upd = p4runtime_pb2.Update(type=kind, entity=entity)
        try:
            self.client.write([upd])
        except SouthboundError:
            raise
        except Exception as exc:  # gRPC errors carry the target's reason
            raise SouthboundError(f"{self.name}: write to {what} failed: {exc}") from exc

    # --- SwitchHandle -----------------------------------------------------------------------

    def insert_entry(self, entry: TableEntry) -> None:
        e = self._entry(entry.table, entry.match, entry.priority)
        if entry.member_id is not None:
            e.action.action_profile_member_id = entry.member_id
        elif entry.group_id is not None:
            e.action.action_profile_group_id = entry.group_id
        else:
            e.action.action.CopyFrom(self._action(entry.action, entry.params))
        self._write(p4runtime_pb2.Update.INSERT, e)

    def insert_member(self, member: ProfileMember) -> None:
        ent = p4runtime_pb2.Entity()
        m = ent.action_profile_member
        m.action_profile_id = self.info.profile(member.profile).preamble.id
        m.member_id = member.member_id
        m.action.CopyFrom(self._action(member.action, member.params))
        self._write_entity(p4runtime_pb2.Update.INSERT, ent, "action profile")

    def insert_group(self, group: ProfileGroup) -> None:
        ent = p4runtime_pb2.Entity()
        g = ent.action_profile_group
        g.action_profile_id = self.info.profile(group.profile).preamble.id
        g.group_id = group.group_id
        g.max_size = group.max_size
        for m in group.members:
            g.members.add(member_id=m, weight=1)
        self._write_entity(p4runtime_pb2.Update.INSERT, ent, "action profile")

    def insert_multicast_group(self, group: MulticastGroup) -> None:
        from emu.runtime.client import multicast_group_entity

        ent = multicast_group_entity(group.group_id, group.replicas)
        self._write_entity(p4runtime_pb2.Update.INSERT, ent, "multicast group")

    def insert_clone_session(self, session: CloneSession) -> None:
        from emu.runtime.client import clone_session_entity

        ent = clone_session_entity(session.session_id, session.replicas,
                                   class_of_service=session.class_of_service,
                                   packet_length_bytes=session.packet_length_bytes)
        self._write_entity(p4runtime_pb2.Update.INSERT, ent, "clone session")

    def modify_entry(self, entry: TableEntry) -> None:
        e = self._entry(entry.table, entry.match, entry.priority)
        e.action.action.CopyFrom(self._action(entry.action, entry.params))
        self._write(p4runtime_pb2.Update.MODIFY, e)

    def delete_entry(self, table: str, match: Mapping[str, MatchValue]) -> None:
        self._write(p4runtime_pb2.Update.DELETE, self._entry(table, match, None))

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None:
        e = p4runtime_pb2.TableEntry(table_id=self.info.table(table).preamble.id,
                                     is_default_action=True)
        e.action.action.CopyFrom(self._action(action, params))
        self._write(p4runtime_pb2.Update.MODIFY, e)

    def read_counter(self, counter: str, index: int) -> tuple[int, int]:
        return self.read_counters(counter, [index])[index]

    def read_counters(self, counter: str, indices: Sequence[int]) -> dict[int, tuple[int, int]]:
        out = {i: (0, 0) for i in indices}
        cid = self.info.counter(counter).preamble.id
        for got in self._read_cells("counter", cid, indices):
            c = got.counter_entry
            out[c.index.index] = (c.data.packet_count, c.data.byte_count)
        return out

    def _read_cells(self, kind: str, array_id: int, indices: Sequence[int]
                    ) -> Iterable[p4runtime_pb2.Entity]:
        """Cells of a counter or register (`kind`) in one ReadRequest carrying one entity
        per cell: one round trip, not len(indices)."""
        ents = []
        for i in indices:
            ent = p4runtime_pb2.Entity()
            entry = getattr(ent, f"{kind}_entry")
            setattr(entry, f"{kind}_id", array_id)
            entry.index.index = i
            ents.append(ent)
        return self.client.read(ents) if ents else []

    def read_registers(self, register: str, indices: Sequence[int]) -> dict[int, int]:
        rid = self.info.register(register).preamble.id
        out = dict.fromkeys(indices, 0)
        try:
            for got in self._read_cells("register", rid, indices):
                r = got.register_entry
                out[r.index.index] = decode(r.data.bitstring)
        except Exception as exc:
            raise SouthboundError(f"{self.name}: register read failed: {exc}") from exc
        return out

    def read_register(self, register: str, index: int) -> int:
        return self.read_registers(register, [index])[index]

    def write_register(self, register: str, index: int, value: int) -> None:
        r = self.info.register(register)
        upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        upd.entity.register_entry.register_id = r.preamble.id
        upd.entity.register_entry.index.index = index
        upd.entity.register_entry.data.bitstring = encode(value, r.type_spec.bitstring.bit.bitwidth)
        try:
            self.client.write([upd])
        except Exception as exc:
            raise SouthboundError(f"{self.name}: register write failed: {exc}") from exc


def connect(fabric: Any, addresses: Mapping[str, str], p4info: p4info_pb2.P4Info, *,
            device_config: bytes | None = None, election_id: tuple[int, int] = (0, 1),
            ) -> dict[str, P4RuntimeSwitchHandle]:
    """One P4Runtime client and handle per switch of `fabric` (device id = the switch's).

    With `device_config`, the pipeline (P4Info + config) is pushed first
    (VERIFY_AND_COMMIT). `addresses`: switch name -> "host:port" or "unix:PATH".
    """
    from emu.runtime.client import P4RuntimeClient as Client

    from .errors import UnknownSwitchError

    names = [s.name for s in fabric.switches]
    handles: dict[str, P4RuntimeSwitchHandle] = {}
    for name, addr in addresses.items():
        if name not in names:
            raise UnknownSwitchError(name, names)
        client = Client(addr, fabric.switch(name).device_id, election_id)
        if device_config is not None:
            client.set_pipeline(p4info, device_config)
        handles[name] = P4RuntimeSwitchHandle(name, client, p4info)
    return handles
