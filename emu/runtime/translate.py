"""P4Runtime <-> engine encodings: byte strings, P4Info lookups, table entries, actions.

Byte strings follow the P4Runtime spec ("Bytestrings"): the server answers with
the canonical form (shortest big-endian string, at least one byte) and accepts
non-canonical ones with leading zero bytes; a value wider than the bitwidth, or
an empty string, is rejected with OUT_OF_RANGE (the spec's code for both). Error
messages show at most a few bytes of the offending value: a client's 17 MB value
must not come back as a 35 MB message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.p4.tables import (
    ActionCall,
    ActionScope,
    ActionSpec,
    Exact,
    FieldMatch,
    KeyField,
    Lpm,
    MatchKind,
    Optional,
    Range,
    TableEntry,
    Ternary,
    is_dont_care,
)

from .errors import P4RTError, invalid, not_found, out_of_range, show_bytes
from .translation import check_translations

__all__ = [
    "P4InfoIndex", "TableInfo", "decode_uint", "encode_uint", "verify_p4info",
]

_MATCH_KINDS = {
    p4info_pb2.MatchField.EXACT: MatchKind.EXACT,
    p4info_pb2.MatchField.LPM: MatchKind.LPM,
    p4info_pb2.MatchField.TERNARY: MatchKind.TERNARY,
    p4info_pb2.MatchField.RANGE: MatchKind.RANGE,
    p4info_pb2.MatchField.OPTIONAL: MatchKind.OPTIONAL,
}

_SCOPES = {
    p4info_pb2.ActionRef.TABLE_AND_DEFAULT: ActionScope.TABLE_AND_DEFAULT,
    p4info_pb2.ActionRef.TABLE_ONLY: ActionScope.TABLE_ONLY,
    p4info_pb2.ActionRef.DEFAULT_ONLY: ActionScope.DEFAULT_ONLY,
}


def decode_uint(data: bytes, bitwidth: int, what: str) -> int:
    """Bytes -> int; leading zeros accepted; bitwidth 0 means unchecked."""
    if not data:
        raise out_of_range(f"{what}: empty byte string")
    value = int.from_bytes(data, "big")
    if bitwidth and value >> bitwidth:
        raise out_of_range(f"{what}: value {show_bytes(data)} does not fit in {bitwidth} bits")
    return value


def encode_uint(value: int, bitwidth: int = 0) -> bytes:
    """int -> canonical byte string (shortest, at least one byte)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


@dataclass
class TableInfo:
    """What the server needs about one table, precomputed from P4Info."""

    proto: p4info_pb2.Table
    name: str
    key: tuple[KeyField, ...]
    field_index: dict[int, int]  # match field id -> position in the key
    action_specs: tuple[ActionSpec, ...]
    action_ids: frozenset[int]
    profile_id: int = 0
    direct_counter_id: int = 0
    direct_meter_id: int = 0
    needs_priority: bool = False
    const_default_action_id: int = 0


@dataclass
class P4InfoIndex:
    """Lookups by id (and name) into one P4Info."""

    p4info: p4info_pb2.P4Info
    tables: dict[int, TableInfo] = field(default_factory=dict)
    actions: dict[int, p4info_pb2.Action] = field(default_factory=dict)
    action_by_name: dict[str, p4info_pb2.Action] = field(default_factory=dict)
    profiles: dict[int, p4info_pb2.ActionProfile] = field(default_factory=dict)
    counters: dict[int, p4info_pb2.Counter] = field(default_factory=dict)
    direct_counters: dict[int, p4info_pb2.DirectCounter] = field(default_factory=dict)
    meters: dict[int, p4info_pb2.Meter] = field(default_factory=dict)
    direct_meters: dict[int, p4info_pb2.DirectMeter] = field(default_factory=dict)
    registers: dict[int, p4info_pb2.Register] = field(default_factory=dict)
    digests: dict[int, p4info_pb2.Digest] = field(default_factory=dict)
    value_sets: dict[int, p4info_pb2.ValueSet] = field(default_factory=dict)
    packet_in: p4info_pb2.ControllerPacketMetadata | None = None
    packet_out: p4info_pb2.ControllerPacketMetadata | None = None

    @classmethod
    def build(cls, p4info: p4info_pb2.P4Info) -> P4InfoIndex:
        """Index a P4Info, rejecting inconsistent ones with INVALID_ARGUMENT (and the
        translations this target cannot serve with UNIMPLEMENTED)."""
        check_translations(p4info)
        idx = cls(p4info)
        seen: set[int] = set()

        def claim(pre: p4info_pb2.Preamble, kind: str) -> int:
            if pre.id == 0 or pre.id in seen:
                raise invalid(f"P4Info: {kind} {pre.name!r} has a zero or duplicate id {pre.id}")
            if not pre.name:
                raise invalid(f"P4Info: {kind} id {pre.id} has no name")
            seen.add(pre.id)
            return pre.id

        for a in p4info.actions:
            idx.actions[claim(a.preamble, "action")] = a
            idx.action_by_name[a.preamble.name] = a
        # P4Info repeated field -> (index dict, kind named in errors)
        by_id: tuple[tuple[str, dict, str], ...] = (
            ("action_profiles", idx.profiles, "action profile"),
            ("counters", idx.counters, "counter"),
            ("direct_counters", idx.direct_counters, "direct counter"),
            ("meters", idx.meters, "meter"),
            ("direct_meters", idx.direct_meters, "direct meter"),
            ("registers", idx.registers, "register"),
            ("digests", idx.digests, "digest"),
            ("value_sets", idx.value_sets, "value set"),
        )
        for attr, index, kind in by_id:
            for obj in getattr(p4info, attr):
                index[claim(obj.preamble, kind)] = obj
        for cpm in p4info.controller_packet_metadata:
            claim(cpm.preamble, "controller packet metadata")
            if cpm.preamble.name == "packet_in":
                idx.packet_in = cpm
            elif cpm.preamble.name == "packet_out":
                idx.packet_out = cpm
        for t in p4info.tables:
            tid = claim(t.preamble, "table")
            idx.tables[tid] = idx._table_info(t)
        for dc in p4info.direct_counters:
            ti = idx.tables.get(dc.direct_table_id)
            if ti is None:
                raise invalid(f"P4Info: direct counter {dc.preamble.name} has no table")
            ti.direct_counter_id = dc.preamble.id
        for dm in p4info.direct_meters:
            ti = idx.tables.get(dm.direct_table_id)
            if ti is None:
                raise invalid(f"P4Info: direct meter {dm.preamble.name} has no table")
            ti.direct_meter_id = dm.preamble.id
        return idx

    def _table_info(self, t: p4info_pb2.Table) -> TableInfo:
        key: list[KeyField] = []
        index: dict[int, int] = {}
        for i, mf in enumerate(t.match_fields):
            kind = _MATCH_KINDS.get(mf.match_type)
            if kind is None:
                raise invalid(f"P4Info: table {t.preamble.name} field {mf.name}: "
                              "unsupported match type")
            if mf.id in index or mf.bitwidth <= 0:
                raise invalid(f"P4Info: table {t.preamble.name} field {mf.name}: bad id/width")
            index[mf.id] = i
            key.append(KeyField(mf.name, kind, mf.bitwidth, mf.id))
        specs: list[ActionSpec] = []
        ids: set[int] = set()
        for ref in t.action_refs:
            a = self.actions.get(ref.id)
            if a is None:
                raise invalid(f"P4Info: table {t.preamble.name} refers to unknown action {ref.id}")
            ids.add(ref.id)
            specs.append(ActionSpec(a.preamble.name, a.preamble.id,
                                    tuple(p.bitwidth for p in a.params),
                                    _SCOPES.get(ref.scope, ActionScope.TABLE_AND_DEFAULT)))
        if t.implementation_id and t.implementation_id not in self.profiles:
            raise invalid(f"P4Info: table {t.preamble.name} has unknown implementation")
        return TableInfo(
            proto=t, name=t.preamble.name, key=tuple(key), field_index=index,
            action_specs=tuple(specs), action_ids=frozenset(ids),
            profile_id=t.implementation_id,
            needs_priority=any(k.kind in (MatchKind.TERNARY, MatchKind.RANGE,
                                          MatchKind.OPTIONAL) for k in key),
            const_default_action_id=t.const_default_action_id)

    # -- lookups that raise P4Runtime errors ----------------------------------------

    def table(self, table_id: int) -> TableInfo:
        ti = self.tables.get(table_id)
        if ti is None:
            raise not_found(f"table id {table_id} not in P4Info")
        return ti

    def action(self, action_id: int) -> p4info_pb2.Action:
        a = self.actions.get(action_id)
        if a is None:
            raise invalid(f"action id {action_id} not in P4Info")
        return a

    def profile(self, profile_id: int) -> p4info_pb2.ActionProfile:
        p = self.profiles.get(profile_id)
        if p is None:
            raise not_found(f"action profile id {profile_id} not in P4Info")
        return p

    def action_id_of(self, name: str | int) -> int:
        if isinstance(name, int):
            return name
        a = self.action_by_name.get(name)
        if a is None:  # e.g. an engine that calls it "NoAction" while P4Info says ".NoAction"
            for cand in self.actions.values():
                if cand.preamble.name.lstrip(".") == name.lstrip(".") or \
                        cand.preamble.alias == name:
                    a = cand
                    break
        if a is None:
            raise P4RTError(grpc.StatusCode.INTERNAL,
                            f"engine action {name!r} not in P4Info")
        return a.preamble.id

    # -- table entries ------------------------------------------------------------

    def match_from_proto(self, ti: TableInfo,
                         fms: Iterable[p4runtime_pb2.FieldMatch]) -> list[FieldMatch | None]:
        """Field matches in key order (None = omitted don't-care)."""
        out: list[FieldMatch | None] = [None] * len(ti.key)
        for fm in fms:
            pos = ti.field_index.get(fm.field_id)
            if pos is None:
                raise invalid(f"{ti.name}: unknown match field id {fm.field_id}")
            if out[pos] is not None:
                raise invalid(f"{ti.name}: match field id {fm.field_id} given twice")
            kf = ti.key[pos]
            which = fm.WhichOneof("field_match_type")
            what = f"{ti.name} field {kf.name}"
            w = kf.bitwidth
            m: FieldMatch
            if kf.kind is MatchKind.EXACT and which == "exact":
                m = Exact(decode_uint(fm.exact.value, w, what))
            elif kf.kind is MatchKind.LPM and which == "lpm":
                if not 0 < fm.lpm.prefix_len <= w:
                    raise invalid(f"{what}: prefix length {fm.lpm.prefix_len} outside 1..{w}"
                                  " (a don't-care lpm match must be omitted)")
                m = Lpm(decode_uint(fm.lpm.value, w, what), fm.lpm.prefix_len)
            elif kf.kind is MatchKind.TERNARY and which == "ternary":
                m = Ternary(decode_uint(fm.ternary.value, w, what),
                            decode_uint(fm.ternary.mask, w, what + " mask"))
            elif kf.kind is MatchKind.RANGE and which == "range":
                m = Range(decode_uint(fm.range.low, w, what + " low"),
                          decode_uint(fm.range.high, w, what + " high"))
            elif kf.kind is MatchKind.OPTIONAL and which == "optional":
                m = Optional(decode_uint(fm.optional.value, w, what))
            else:
                raise invalid(f"{what}: {kf.kind.value} field given a {which} match")
            out[pos] = m
        for kf, given in zip(ti.key, out, strict=True):
            if given is None and kf.kind is MatchKind.EXACT:
                raise invalid(f"{ti.name}: exact field {kf.name} must be given")
        return out

    def match_to_proto(self, ti: TableInfo, match: Sequence[FieldMatch],
                       out: p4runtime_pb2.TableEntry) -> None:
        for kf, m in zip(ti.key, match, strict=True):
            if is_dont_care(kf, m):
                continue
            fm = out.match.add(field_id=kf.id)
            if isinstance(m, Exact):
                fm.exact.value = encode_uint(m.value)
            elif isinstance(m, Lpm):
                fm.lpm.value = encode_uint(m.value)
                fm.lpm.prefix_len = m.prefix_len
            elif isinstance(m, Ternary):
                fm.ternary.value = encode_uint(m.value)
                fm.ternary.mask = encode_uint(m.mask)
            elif isinstance(m, Range):
                fm.range.low = encode_uint(m.low)
                fm.range.high = encode_uint(m.high)
            else:
                assert m.value is not None
                fm.optional.value = encode_uint(m.value)

    def action_from_proto(self, action: p4runtime_pb2.Action,
                          allowed: frozenset[int] | None, where: str) -> ActionCall:
        a = self.action(action.action_id)
        if allowed is not None and action.action_id not in allowed:
            raise invalid(f"{where}: action {a.preamble.name} is not an action of this table")
        widths = {p.id: p.bitwidth for p in a.params}
        values: dict[int, int] = {}
        for p in action.params:
            w = widths.get(p.param_id)
            if w is None:
                raise invalid(f"{where}: action {a.preamble.name} has no param id {p.param_id}")
            if p.param_id in values:
                raise invalid(f"{where}: param id {p.param_id} given twice")
            values[p.param_id] = decode_uint(p.value, w, f"{a.preamble.name} param {p.param_id}")
        if len(values) != len(widths):
            raise invalid(f"{where}: action {a.preamble.name} takes {len(widths)} params, "
                          f"got {len(values)}")
        return ActionCall(a.preamble.name, tuple(values[p.id] for p in a.params))

    def action_to_proto(self, call: ActionCall, out: p4runtime_pb2.Action) -> None:
        aid = self.action_id_of(call.action)
        out.action_id = aid
        a = self.actions[aid]
        for p, v in zip(a.params, call.params, strict=False):
            out.params.add(param_id=p.id, value=encode_uint(v))

    def key_to_proto(self, ti: TableInfo, e: TableEntry, out: p4runtime_pb2.TableEntry) -> None:
        """What names the entry (a direct counter or meter entity carries only that)."""
        out.table_id = ti.proto.preamble.id
        if e.is_default:
            out.is_default_action = True
        else:
            self.match_to_proto(ti, e.match, out)
            out.priority = e.priority

    def entry_to_proto(self, ti: TableInfo, e: TableEntry,
                       out: p4runtime_pb2.TableEntry) -> None:
        self.key_to_proto(ti, e, out)
        if e.action is not None:
            self.action_to_proto(e.action, out.action.action)
        elif e.member_id is not None:
            out.action.action_profile_member_id = e.member_id
        elif e.group_id is not None:
            out.action.action_profile_group_id = e.group_id
        out.idle_timeout_ns = e.idle_timeout_ns
        out.controller_metadata = e.controller_metadata
        if e.metadata:
            out.metadata = e.metadata


def verify_p4info(p4info: p4info_pb2.P4Info) -> P4InfoIndex:
    return P4InfoIndex.build(p4info)
