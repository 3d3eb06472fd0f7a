"""type_info: P4 types as P4DataTypeSpec (headers, structs, enums, errors, new types)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from p4.config.v1 import p4types_pb2

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    BitType,
    BoolType,
    EnumType,
    ErrorType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    NewType,
    StructLikeType,
    TupleType,
    Type,
    VarbitType,
    strip_newtype,
)

from .annotations import _add_annotations, _error


def _type_width(t: Type) -> int:
    """Bit width of a control-plane value (p4c getTypeWidth)."""
    if isinstance(t, NewType):
        translated = _translation(t)
        if translated is not None:
            return translated[1]
        return _type_width(strip_newtype(t))  # the data plane's, whatever lies between
    if isinstance(t, ErrorType):
        return 0  # p4c treats error as a string
    w = t.bit_width
    return 0 if w is None else w


def _translation(t: NewType) -> tuple[str, int] | None:
    """(uri, controller bit width) of a type with @p4runtime_translation; width 0 for string."""
    a = A.find_annotation(t.annotations, "p4runtime_translation")
    if a is None:
        return None
    m = re.match(r'\s*"([^"]*)"\s*,\s*(?:bit\s*<\s*(\d+)\s*>|(string)|(\d+))\s*$', a.body or "")
    if not m:
        raise _error(a.pos, "@p4runtime_translation expects a URI and bit<W> or string")
    uri, bits, _string, legacy = m.groups()
    width = int(bits or legacy or 0)
    if width >= 1 << 31:  # P4Info's bitwidth is an int32; p4c refuses it there too
        raise _error(a.pos, f"{width}: this implementation does not support bitstrings this "
                            "large (a P4Info bit width is an int32)")
    return uri, width


def _new_members(table: Any, t: StructLikeType) -> Iterator[tuple[Any, Type]]:
    """The first time `t` is seen: add its declaration to the P4Info `table` and yield each
    field's new member (named) with the field's type; later, nothing (declared once)."""
    if t.name in table:
        return
    decl = table[t.name]
    for fname, ftype in t.fields:
        m = decl.members.add()
        m.name = fname
        yield m, ftype


def _type_name(t: Type) -> str | None:
    """P4Info `type_name` of a match field / param / metadata: set for user-defined types."""
    return t.name if isinstance(t, NewType) else None


# ------------------------------------------------------------------ type specs


class _TypeSpecs:
    """p4c's TypeSpecConverter: P4DataTypeSpec for a type, filling P4TypeInfo as it goes."""

    def __init__(self, info: p4types_pb2.P4TypeInfo, errors: Sequence[str]) -> None:
        self.info = info
        self.errors = errors

    def bitstring(self, t: Type, out: p4types_pb2.P4BitstringLikeTypeSpec) -> bool:
        if isinstance(t, BitType):
            (out.int if t.signed else out.bit).bitwidth = t.width
            return True
        if isinstance(t, VarbitType):
            out.varbit.max_bitwidth = t.max_width
            return True
        if isinstance(t, BoolType):
            out.bit.bitwidth = 1
            return True
        return False

    def convert(self, t: Type, out: p4types_pb2.P4DataTypeSpec | None = None) -> p4types_pb2.P4DataTypeSpec:
        spec = out if out is not None else p4types_pb2.P4DataTypeSpec()
        if isinstance(t, BoolType):
            spec.bool.SetInParent()
        elif isinstance(t, BitType | VarbitType):
            self.bitstring(t, spec.bitstring)
        elif isinstance(t, HeaderType):
            spec.header.name = t.name
            for m, ftype in _new_members(self.info.headers, t):
                self.bitstring(ftype.base if isinstance(ftype, NewType) else ftype, m.type_spec)
        elif isinstance(t, HeaderUnionType):
            spec.header_union.name = t.name
            for m, ftype in _new_members(self.info.header_unions, t):
                m.header.name = str(ftype)
                self.convert(ftype)
        elif isinstance(t, StructLikeType):
            spec.struct.name = t.name
            for m, ftype in _new_members(self.info.structs, t):
                self.convert(ftype, m.type_spec)
        elif isinstance(t, HeaderStackType):
            spec.header_stack.header.name = str(t.elem)
            spec.header_stack.size = t.size
            self.convert(t.elem)
        elif isinstance(t, TupleType):
            for elem in t.elems:
                self.convert(elem, spec.tuple.members.add())
        elif isinstance(t, EnumType) and t.underlying is not None:
            spec.serializable_enum.name = t.name
            if t.name not in self.info.serializable_enums:
                enum = self.info.serializable_enums[t.name]
                width = t.underlying.width
                enum.underlying_type.bitwidth = width
                for member in t.members:
                    m = enum.members.add()
                    m.name = member
                    value = t.values.get(member, 0) & ((1 << width) - 1)
                    m.value = value.to_bytes((width + 7) // 8, "big")
        elif isinstance(t, EnumType):
            spec.enum.name = t.name
            if t.name not in self.info.enums:
                enum_spec = self.info.enums[t.name]
                for member in t.members:
                    enum_spec.members.add().name = member
        elif isinstance(t, ErrorType):
            spec.error.SetInParent()
            if not self.info.error.members:
                self.info.error.members.extend(self.errors)
        elif isinstance(t, NewType):
            spec.new_type.name = t.name
            if t.name not in self.info.new_types:
                new_type = self.info.new_types[t.name]
                translated = _translation(t)
                if translated is not None:
                    new_type.translated_type.uri = translated[0]
                    if translated[1]:
                        new_type.translated_type.sdn_bitwidth = translated[1]
                    else:
                        new_type.translated_type.sdn_string.SetInParent()
                else:  # p4c: the underlying type, not the `type` it may be declared over
                    self.convert(strip_newtype(t.base), new_type.original_type)
                _add_annotations(new_type, t.annotations, frozenset({"p4runtime_translation"}))
        return spec
