"""ValueSetEntry: parser value sets written and read over P4Runtime.

P4Runtime spec ("ValueSetEntry"):

- Only MODIFY: it replaces the whole membership of the set (an empty `members`
  empties it); INSERT and DELETE are INVALID_ARGUMENT.
- Each member is a list of FieldMatch following the TableEntry rules: exact
  fields must be given, a don't-care lpm/ternary/optional field is omitted
  (prefix length 0 or mask 0 is INVALID_ARGUMENT), lpm values have no bits
  beyond the prefix and ternary values none outside the mask (as PI checks).
- More members than the P4Info `size`: RESOURCE_EXHAUSTED. Duplicate members:
  ALREADY_EXISTS (read-write symmetry).
- No priorities: a packet takes the transition if any member matches.

The switch keeps each member as one (value, mask) pair per field, as BMv2 does,
so exact, lpm, ternary and optional fields are supported; a range field (or an
architecture-specific `other_match_type`) is UNIMPLEMENTED. The whole check
runs before the set is touched: a refused MODIFY leaves the old members.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from ..errors import (
    already_exists,
    invalid,
    not_found,
    resource_exhausted,
    unimplemented,
)
from ..translate import P4InfoIndex, decode_uint, encode_uint
from .common import EntityContext

__all__ = ["Member", "ValueSetEngine", "read", "read_value_sets", "write", "write_value_set"]

MF = p4info_pb2.MatchField
U = p4runtime_pb2.Update

# One member as the switch holds it: (value, mask) per field, P4Info field order.
Member = tuple[tuple[int, int], ...]


class ValueSetEngine(Protocol):
    """The switch's parser value set (emu.p4.target.runtime.ValueSet)."""

    name: str
    size: int
    widths: tuple[int, ...]
    entries: list[Member]

    def add(self, values: tuple[int, ...], masks: tuple[int, ...] | None = None) -> None: ...
    def clear(self) -> None: ...


class _Control(Protocol):
    @property
    def value_sets(self) -> Mapping[str, ValueSetEngine]: ...


@dataclass(frozen=True)
class _Field:
    id: int
    name: str
    bitwidth: int
    match_type: int
    other: str


def _fields(info: p4info_pb2.ValueSet) -> list[_Field]:
    return [_Field(m.id, m.name or str(m.id), m.bitwidth, m.match_type, m.other_match_type)
            for m in info.match]


def _ones(w: int) -> int:
    return (1 << w) - 1


def _prefix_mask(plen: int, w: int) -> int:
    return _ones(w) ^ _ones(w - plen)


def _decode_member(name: str, fields: list[_Field],
                   fms: Iterable[p4runtime_pb2.FieldMatch]) -> Member:
    pos = {f.id: i for i, f in enumerate(fields)}
    out: list[tuple[int, int] | None] = [None] * len(fields)
    for fm in fms:
        i = pos.get(fm.field_id)
        if i is None:
            raise invalid(f"value set {name}: unknown match field id {fm.field_id}")
        if out[i] is not None:
            raise invalid(f"value set {name}: match field id {fm.field_id} given twice")
        f = fields[i]
        w = f.bitwidth
        what = f"value set {name} field {f.name}"
        which = fm.WhichOneof("field_match_type")
        if f.match_type == MF.RANGE or (f.match_type == MF.UNSPECIFIED and f.other):
            kind = "range" if f.match_type == MF.RANGE else f.other
            raise unimplemented(f"{what}: {kind} matches in value sets are not supported "
                                "(the switch keeps one value/mask per field)")
        if f.match_type == MF.EXACT and which == "exact":
            out[i] = (decode_uint(fm.exact.value, w, what), _ones(w))
        elif f.match_type == MF.OPTIONAL and which == "optional":
            out[i] = (decode_uint(fm.optional.value, w, what), _ones(w))
        elif f.match_type == MF.LPM and which == "lpm":
            plen = fm.lpm.prefix_len
            if not 0 < plen <= w:
                raise invalid(f"{what}: prefix length {plen} outside 1..{w} "
                              "(a don't-care lpm match must be omitted)")
            v, m = decode_uint(fm.lpm.value, w, what), _prefix_mask(plen, w)
            if v & ~m:
                raise invalid(f"{what}: lpm value has bits set beyond the prefix")
            out[i] = (v, m)
        elif f.match_type == MF.TERNARY and which == "ternary":
            v = decode_uint(fm.ternary.value, w, what)
            m = decode_uint(fm.ternary.mask, w, what + " mask")
            if m == 0:
                raise invalid(f"{what}: a don't-care ternary match must be omitted, "
                              "not given mask 0")
            if v & ~m:
                raise invalid(f"{what}: ternary value has bits outside the mask")
            out[i] = (v, m)
        else:
            raise invalid(f"{what}: {MF.MatchType.Name(f.match_type).lower()} field "
                          f"given a {which} match")
    for f, got in zip(fields, out, strict=True):
        if got is None and f.match_type == MF.EXACT:
            raise invalid(f"value set {name}: exact field {f.name} must be given")
    return tuple(x if x is not None else (0, 0) for x in out)


def _encode_member(fields: list[_Field], member: Member,
                   out: p4runtime_pb2.ValueSetMember) -> None:
    for f, (v, m) in zip(fields, member, strict=True):
        w = f.bitwidth
        m &= _ones(w)
        if m == 0 and f.match_type != MF.EXACT:
            continue  # don't-care: omitted
        fm = out.match.add(field_id=f.id)
        if f.match_type == MF.EXACT:
            fm.exact.value = encode_uint(v & _ones(w))
        elif f.match_type == MF.OPTIONAL:
            fm.optional.value = encode_uint(v & m)
        elif f.match_type == MF.LPM:
            plen = w - (m ^ _ones(w)).bit_length()  # leading ones of the mask
            fm.lpm.value = encode_uint(v & _prefix_mask(plen, w))
            fm.lpm.prefix_len = plen
        elif f.match_type == MF.RANGE:  # only reachable for members set outside P4Runtime
            fm.range.low = encode_uint(v & m)
            fm.range.high = encode_uint((v & m) | (_ones(w) ^ m))
        else:
            fm.ternary.value = encode_uint(v & m)
            fm.ternary.mask = encode_uint(m)


def _info(index: P4InfoIndex, value_set_id: int) -> p4info_pb2.ValueSet:
    info = index.value_sets.get(value_set_id)
    if info is None:
        raise not_found(f"value set id {value_set_id} not in P4Info")
    return info


def write_value_set(index: P4InfoIndex, control: _Control, typ: int,
                    entry: p4runtime_pb2.ValueSetEntry) -> None:
    if typ in (U.INSERT, U.DELETE):
        raise invalid("a ValueSetEntry can only be MODIFYed (the members replace the set)")
    if typ != U.MODIFY:
        raise invalid("update type must be INSERT, MODIFY or DELETE")
    if entry.value_set_id == 0:
        raise invalid("value_set_id 0 (wildcard) is only valid in reads")
    info = _info(index, entry.value_set_id)
    name = info.preamble.name
    engine = control.value_sets[name]
    fields = _fields(info)
    if len(engine.widths) != len(fields):
        raise invalid(f"value set {name}: the program has {len(engine.widths)} fields, "
                      f"the P4Info {len(fields)}")
    members: list[Member] = []
    for m in entry.members:
        dm = _decode_member(name, fields, m.match)
        if dm in members:
            raise already_exists(f"value set {name}: duplicate member")
        members.append(dm)
    limit = min(info.size, engine.size) if info.size > 0 else engine.size
    if len(members) > limit:
        raise resource_exhausted(f"value set {name}: {len(members)} members exceed its "
                                 f"size {limit}")
    engine.clear()
    for dm in members:
        engine.add(tuple(v for v, _ in dm), tuple(m for _, m in dm))


def read_value_sets(index: P4InfoIndex, control: _Control,
                    query: p4runtime_pb2.ValueSetEntry) -> list[p4runtime_pb2.Entity]:
    """One ValueSetEntry per set (all sets for value_set_id 0), members in write order."""
    infos = ([_info(index, query.value_set_id)] if query.value_set_id
             else list(index.value_sets.values()))
    out = []
    for info in infos:
        engine = control.value_sets[info.preamble.name]
        fields = _fields(info)
        r = p4runtime_pb2.Entity()
        r.value_set_entry.value_set_id = info.preamble.id
        for member in engine.entries:
            _encode_member(fields, member, r.value_set_entry.members.add())
        out.append(r)
    return out


def write(ctx: EntityContext, typ: int, entry: p4runtime_pb2.ValueSetEntry) -> None:
    write_value_set(ctx.pipe.index, ctx.pipe.control, typ, entry)


def read(ctx: EntityContext, query: p4runtime_pb2.ValueSetEntry) -> list[p4runtime_pb2.Entity]:
    return read_value_sets(ctx.pipe.index, ctx.pipe.control, query)
