"""p4c's rules for core.p4's packet_in and packet_out methods beyond their generic
signatures (checkCoreMethods.cpp): what extract, lookahead and emit take."""

from __future__ import annotations

from .. import ast as A
from ..types import (
    DontCareType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    StructType,
    TupleType,
    Type,
    VarbitType,
    VoidType,
)
from .base import CheckerBase


class CoreLibChecker(CheckerBase):
    def core_method(self, method: str, e: A.Call, targs: list[Type]) -> None:
        """Checks a checked call of packet_in or packet_out `method`."""
        arg = e.args[0].value if e.args else None
        at = arg.type if arg is not None else None
        if method == "extract" and arg is not None:
            if not isinstance(at, HeaderType | DontCareType):
                self.err(arg, f"extract: argument must be a header, not '{at}'")
            elif isinstance(at, HeaderType) and len(varbits := [
                    n for n, f in at.fields if isinstance(f, VarbitType)]) > 1:
                # p4c allows the declaration, not its extraction: one size cannot split
                self.err(arg, f"extract: header '{at.name}' has more than one varbit field "
                              f"('{varbits[0]}' and '{varbits[1]}')")
            elif len(e.args) == 1 and _has_varbit_or_union(at):
                self.err(arg, "extract: a header with a varbit field is extracted with its "
                              "size in bits, extract(hdr, size)")
            elif len(e.args) == 2 and not _has_varbit_or_union(at):
                self.err(arg, "extract(hdr, size): the header has no varbit field")
        elif method == "lookahead" and targs:
            if isinstance(targs[0], VoidType):
                self.err(e, "lookahead: 'void' is not a type to look ahead at")
            elif _has_varbit_or_union(targs[0]):
                self.err(e, f"lookahead: type argument '{targs[0]}' must be a fixed-width type")
        elif method == "emit" and at is not None and not _emittable(at):
            self.err(arg or e, f"emit: argument must be a header, stack or union, or a struct "
                               f"or tuple of such types, not '{at}'")


def _has_varbit_or_union(t: Type) -> bool:
    if isinstance(t, VarbitType | HeaderUnionType):
        return True
    if isinstance(t, HeaderType | StructType):
        return any(_has_varbit_or_union(f) for _, f in t.fields)
    if isinstance(t, HeaderStackType):
        return _has_varbit_or_union(t.elem)
    if isinstance(t, TupleType):
        return any(map(_has_varbit_or_union, t.elems))
    return False


def _emittable(t: Type) -> bool:
    if isinstance(t, HeaderType | HeaderStackType | HeaderUnionType):
        return True
    if isinstance(t, StructType):
        return all(_emittable(f) for _, f in t.fields)
    if isinstance(t, TupleType):
        return all(map(_emittable, t.elems))
    return False
