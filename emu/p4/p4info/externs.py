"""Counters, meters and registers; controller packet metadata (packet_in/out headers); parser value sets."""

from __future__ import annotations

from p4.config.v1 import p4info_pb2

from emu.p4 import names
from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    BitType,
    EnumType,
    ExternType,
    HeaderType,
    HeaderUnionType,
    NewType,
    StructLikeType,
    StructType,
    Type,
)
from emu.p4.p4info_ids import P4IdPrefix

from .annotations import (
    _add_annotations,
    _add_doc,
    _arg_value,
    _const_int,
    _error,
    _field_ids,
    _fits,
    _has,
    _string_arg,
)
from .base import _GeneratorBase
from .records import _CtrlHeader
from .tables import _MATCH_TYPES
from .typespecs import _type_name, _type_width

_COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}


class _ExternEmitter(_GeneratorBase):
    def emit_extern(self, name: str, inst: A.Instantiation) -> None:
        t = inst.type
        assert isinstance(t, ExternType)
        info = self.p4info
        if t.name == "counter":
            c = info.counters.add()
            self.preamble(c, P4IdPrefix.COUNTER, name, inst.annotations)
            c.spec.unit = _COUNTER_UNITS.get(str(_arg_value(inst, 1, "type").const), 0)  # type: ignore[union-attr]
            c.size = _const_int(_arg_value(inst, 0, "size")) or 0
        elif t.name == "meter":
            m = info.meters.add()
            self.preamble(m, P4IdPrefix.METER, name, inst.annotations)
            m.spec.unit = _METER_UNITS.get(str(_arg_value(inst, 1, "type").const), 0)  # type: ignore[union-attr]
            m.size = _const_int(_arg_value(inst, 0, "size")) or 0
        elif t.name == "register":
            r = info.registers.add()
            self.preamble(r, P4IdPrefix.REGISTER, name, inst.annotations)
            elem = t.type_args.get("T")
            if elem is not None:
                self.types.convert(elem, r.type_spec)
            r.size = _fits(_const_int(_arg_value(inst, 0, "size")) or 0, 32, inst.pos,
                           "register size", "size field")

    def emit_controller_header(self, h: _CtrlHeader) -> None:
        msg = self.p4info.controller_packet_metadata.add()
        msg.preamble.id = self.id_of(P4IdPrefix.CONTROLLER_HEADER, h.name)
        msg.preamble.name = h.controller_name
        msg.preamble.alias = h.controller_name
        _add_annotations(msg.preamble, h.decl.annotations)
        _add_doc(msg.preamble, h.decl.annotations)
        leaves = _leaf_fields(h.type, h.decl.fields)
        # A @hidden field keeps its position: p4c numbers the fields after it as if listed.
        ids = _field_ids([(f, f.annotations) for _, f, _ in leaves])
        for (path, f, ft), fid in zip(leaves, ids, strict=True):
            if _has(f.annotations, "hidden"):
                continue
            if not isinstance(ft, BitType | NewType | EnumType):
                raise _error(f.pos, f"Header field {f.name} has a type which is not bit<>, int<>, type, "
                                    "or serializable enum")
            m = msg.metadata.add()
            m.id = fid
            m.name = path + names.field_name(f.name, f.annotations)
            _add_annotations(m, f.annotations)
            m.bitwidth = _type_width(ft)
            self.types.convert(ft)
            tn = _type_name(ft)
            if tn:
                m.type_name.name = tn

    def emit_value_set(self, name: str, vs: A.ValueSetDecl) -> None:
        msg = self.p4info.value_sets.add()
        self.preamble(msg, P4IdPrefix.VALUE_SET, name, vs.annotations)
        msg.size = _fits(_const_int(vs.size) or 0, 32, vs.pos, "value_set size", "size field")
        et = vs.type
        if isinstance(et, BitType):
            m = msg.match.add()
            m.id = 1
            m.bitwidth = et.width
            m.match_type = p4info_pb2.MatchField.EXACT
        elif isinstance(et, StructLikeType) and not isinstance(et, HeaderType | HeaderUnionType):
            decl_fields = list(et.decl.fields) if et.decl is not None else []
            annos = {f.name: list(f.annotations) for f in decl_fields}
            ids = _field_ids([(n, annos.get(n, [])) for n, _ in et.fields])
            for (fname, ftype), fid in zip(et.fields, ids, strict=True):
                if not isinstance(ftype, BitType):
                    raise _error(vs.pos, f"value_set '{vs.name}': field '{fname}' must be of type bit<W>")
                fa = annos.get(fname, [])
                m = msg.match.add()
                m.id = fid
                m.name = names.field_name(fname, fa)
                m.bitwidth = ftype.width
                kind = _string_arg(fa, "match") or "exact"
                if kind in _MATCH_TYPES:
                    m.match_type = _MATCH_TYPES[kind]
                else:
                    m.other_match_type = kind
                _add_annotations(m, fa, frozenset({"match"}))
        else:
            raise _error(vs.pos, f"value_set '{vs.name}': P4Runtime needs bit<W> or a struct of bit<W> fields")


def _leaf_fields(t: StructLikeType, fields: list[A.StructField],
                 path: str = "") -> list[tuple[str, A.StructField, Type]]:
    """(name prefix, field, type) of each field, a struct field's own fields in its place:
    p4c lists a struct inside a controller header flattened, as `s.f`."""
    out: list[tuple[str, A.StructField, Type]] = []
    for f in fields:
        ft = t.field_type(f.name)
        assert ft is not None  # the checker resolved every field
        if isinstance(ft, StructType) and ft.decl is not None:
            out += _leaf_fields(ft, ft.decl.fields, f"{path}{f.name}.")
        else:
            out.append((path, f, ft))
    return out


