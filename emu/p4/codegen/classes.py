"""Python classes for P4 headers, header unions and structs, emitted as source.

A header is a slotted object: `_v` (validity) plus one attribute per field holding an int
(bool fields hold bool). `_ex(pk)` extracts from a packet_in cursor with one
`int.from_bytes`, `_emit()` deparses with one `to_bytes`; varbit headers get
`_exv(pk, nbits)`. Unions hold their member headers. Every class has `copy()` and `eq()`.
"""

from __future__ import annotations

import keyword

from emu.p4.frontend.types import (
    BitType,
    BoolType,
    EnumType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    StructLikeType,
    TupleType,
    Type,
    VarbitType,
    strip_newtype,
)

from .emitter import Emitter


def fld(name: str) -> str:
    """Python attribute name of a P4 field (keywords and leading underscores are prefixed)."""
    if keyword.iskeyword(name) or name.startswith("_") or name in ("copy", "eq", "set"):
        return "f_" + name
    return name


def scalar_width(t: Type) -> int | None:
    b = strip_newtype(t)
    if isinstance(b, BitType):
        return b.width
    if isinstance(b, BoolType):
        return 1
    if isinstance(b, EnumType) and b.underlying is not None:
        return b.underlying.width
    return None


def header_fields(t: StructLikeType) -> list[tuple[str, Type]]:
    """A header's fields in wire order as (attribute path, type): a struct-typed field
    (P4_16 allows a struct of bit, int, bool and serializable-enum fields in a header)
    contributes its own fields, reached through the nested struct (`row.e`)."""
    out: list[tuple[str, Type]] = []
    for f, ft in t.fields:
        b = strip_newtype(ft)
        if isinstance(b, StructLikeType) and not isinstance(b, HeaderType):
            out.extend((f"{fld(f)}.{p}", st) for p, st in header_fields(b))
        else:
            out.append((fld(f), ft))
    return out


class ClassTable:
    """Assigns class names to aggregate types and emits their definitions once each."""

    def __init__(self, out: Emitter, error_code: dict[str, int]) -> None:
        self.out = out
        self.names: dict[int, str] = {}
        self.types: dict[int, StructLikeType] = {}
        self.err = error_code
        self.structs: list[tuple[str, str]] = []  # (python name, struct format)
        # Per header type (by id): body lines of _ex and the _emit expression, for inlining.
        self.extract_inline: dict[int, list[str]] = {}
        self.emit_inline: dict[int, str] = {}
        # Header types that may be rewritten after extraction (analysis._rewritten_headers);
        # a byte-aligned header of any other type keeps its extracted bytes in `_raw` and
        # deparses as them (no re-packing). None: every header is re-packed.
        self.rewritten: set[int] | None = None
        # Header types whose fields nothing reads (analysis._read_headers): a raw one of
        # these is not decoded at extraction, only its bytes kept.
        self.read: set[int] | None = None

    def name(self, t: StructLikeType) -> str:
        key = id(t)
        n = self.names.get(key)
        if n is None:
            n = f"C{len(self.names)}_{t.name if t.name.isidentifier() else 'anon'}"
            self.names[key] = n
            self.types[key] = t
            for _, ft in t.fields:
                self._need(ft)
            self._emit(t, n)
        return n

    def _need(self, t: Type) -> None:
        b = strip_newtype(t)
        if isinstance(b, StructLikeType):
            self.name(b)
        elif isinstance(b, HeaderStackType):
            self._need(b.elem)
        elif isinstance(b, TupleType):
            for el in b.elems:
                self._need(el)

    # -- default values ---------------------------------------------------------------
    def default(self, t: Type) -> str:
        """Python expression for a fresh (zero / invalid) value of type `t`."""
        b = strip_newtype(t)
        if isinstance(b, StructLikeType):
            return f"{self.name(b)}()"
        if isinstance(b, HeaderStackType):
            el = strip_newtype(b.elem)
            assert isinstance(el, StructLikeType)
            return f"Stack([{self.name(el)}() for _ in range({b.size})])"
        if isinstance(b, TupleType):  # a Python tuple
            return "(" + "".join(f"{self.default(el)}, " for el in b.elems) + ")"
        if isinstance(b, BoolType):
            return "False"
        return "0"

    # -- class body -------------------------------------------------------------------
    def _raw(self, t: StructLikeType) -> int:
        """Byte length of a header of type `t` deparsed from its extracted bytes, else 0."""
        if self.rewritten is None or id(t) in self.rewritten or not isinstance(t, HeaderType):
            return 0
        if any(isinstance(ft, VarbitType) for _, ft in t.fields):
            return 0
        fixed = sum(scalar_width(ft) or 0 for _, ft in header_fields(t))
        return fixed // 8 if fixed and fixed % 8 == 0 else 0

    def _emit(self, t: StructLikeType, n: str) -> None:
        self._current = t
        o = Emitter()
        is_hdr = isinstance(t, HeaderType)
        raw = self._raw(t)
        with o.block(f"class {n}:"):
            # No __slots__: scalar defaults live on the class, so creating a header or
            # struct only allocates an empty instance dict (the per-packet hot path).
            if is_hdr:
                o.line("_v = False")
            if raw:
                o.line(f"_raw = {bytes(raw)!r}")
            nested = []
            for f, ft in t.fields:
                if holds_objects(ft):
                    nested.append((f, ft))
                else:
                    o.line(f"{fld(f)} = {self.default(ft)}")
                if isinstance(ft, VarbitType):
                    o.line(f"{fld(f)}__w = 0")
            if nested:
                with o.block("def __init__(self):"):
                    for f, ft in nested:
                        o.line(f"self.{fld(f)} = {self.default(ft)}")
            if is_hdr and not isinstance(t, HeaderUnionType):
                # setValid() on an invalid header: its fields are zero (BMv2's add_header)
                with o.block("def _reset(self):"):
                    o.line("self.__dict__.clear()")
                    if nested:
                        o.line("self.__init__()")
            with o.block("def copy(self):"):
                o.line(f"c = {n}.__new__({n})")
                o.line("c.__dict__.update(self.__dict__)")
                for f, ft in nested:
                    o.line(f"c.{fld(f)} = {copy_code(f'self.{fld(f)}', ft)}")
                o.line("return c")
            with o.block("def set(self, o):"):
                # In place, recursively: nested headers keep their identity.
                if is_hdr and not isinstance(t, HeaderUnionType):
                    # An invalid value makes this header invalid and leaves its fields
                    # as they were (BMv2's assign_header).
                    o.line("if not o._v: self._v = False; return None")
                    o.line("self._v = True")
                elif is_hdr:
                    o.line("self._v = o._v")
                if raw:
                    o.line("self._raw = o._raw")
                for f, ft in t.fields:
                    a = fld(f)
                    if isinstance(strip_newtype(ft), StructLikeType | HeaderStackType):
                        o.line(f"self.{a}.set(o.{a})")
                    elif holds_objects(ft):  # a tuple holding aggregates: its own copies
                        o.line(f"self.{a} = {copy_code(f'o.{a}', ft)}")
                    else:
                        o.line(f"self.{a} = o.{a}")
                        if isinstance(ft, VarbitType):
                            o.line(f"self.{a}__w = o.{a}__w")
                o.line("return None")
            with o.block("def eq(self, o):"):
                if is_hdr:
                    o.line("if self._v != o._v: return False")
                    o.line("if not self._v: return True")
                if isinstance(t, HeaderUnionType):
                    conds = [f"self.{fld(f)}.eq(o.{fld(f)})" for f, _ in t.fields]
                else:
                    conds = []
                    for f, ft in t.fields:
                        a = fld(f)
                        conds.append(eq_code(f"self.{a}", f"o.{a}", ft))
                o.line("return " + (" and ".join(conds) if conds else "True"))
            if isinstance(t, HeaderUnionType):
                with o.block("def _isv(self):"):
                    conds = [f"self.{fld(f)}._v" for f, _ in t.fields]
                    o.line("return " + (" or ".join(conds) if conds else "False"))
            if is_hdr:
                self._emit_header_io(o, t)
        self.out.extend(o.lines)
        self.out.line("")

    def _emit_header_io(self, o: Emitter, t: StructLikeType) -> None:
        fields = header_fields(t)
        has_varbit = any(isinstance(ft, VarbitType) for _, ft in fields)
        fixed = sum(scalar_width(ft) or 0 for _, ft in fields if not isinstance(ft, VarbitType))
        pts = self.err.get("PacketTooShort", 1)
        if not has_varbit and fixed % 8 == 0 and fixed:
            self._emit_struct_io(o, fields, fixed // 8, pts)
            return
        if not has_varbit:
            nbytes = (fixed + 7) // 8
            pad = nbytes * 8 - fixed
            with o.block("def _ex(self, pk):"):
                o.line(f"o = pk.o; e = o + {nbytes}")
                o.line(f"if e > pk.n: self._v = False; raise ParserError({pts})")
                o.line("v = int.from_bytes(pk.b[o:e], 'big'); pk.o = e")
                if pad:
                    o.line(f"v >>= {pad}")
                sh = fixed
                for f, ft in fields:
                    w = scalar_width(ft) or 0
                    sh -= w
                    o.line(f"self.{fld(f)} = {conv_in(f'v >> {sh}' if sh else 'v', ft, w, sh == fixed - w)}")
                o.line("self._v = True")
            with o.block("def _emit(self):"):
                parts = []
                for f, ft in fields:
                    w = scalar_width(ft) or 0
                    parts.append((conv_out(f"self.{fld(f)}", ft, w), w))
                o.line(f"return ({_pack_expr(parts, pad)}).to_bytes({nbytes}, 'big')")
            with o.block("def _nbytes(self):"):
                o.line(f"return {nbytes}")
            return
        hts = self.err.get("HeaderTooShort", 4)
        pia = self.err.get("ParserInvalidArgument", 6)
        vmax = next(ft.max_width for _, ft in fields if isinstance(ft, VarbitType))
        with o.block("def _exv(self, pk, nbits):"):
            o.line(f"if nbits > {vmax}: raise ParserError({hts})")
            # BMv2 extracts whole bytes only: a header of a fractional byte length is an
            # invalid argument (test-parserinvalidargument-error-bmv2)
            o.line(f"if ({fixed} + nbits) & 7: raise ParserError({pia})")
            o.line(f"total = {fixed} + nbits; nb = (total + 7) >> 3")
            o.line("o = pk.o; e = o + nb")
            o.line(f"if e > pk.n: self._v = False; raise ParserError({pts})")
            o.line("v = int.from_bytes(pk.b[o:e], 'big') >> (nb * 8 - total); pk.o = e")
            o.line("sh = total")
            for f, ft in fields:
                if isinstance(ft, VarbitType):
                    o.line("sh -= nbits")
                    o.line(f"self.{fld(f)} = (v >> sh) & ((1 << nbits) - 1); self.{fld(f)}__w = nbits")
                else:
                    w = scalar_width(ft) or 0
                    o.line(f"sh -= {w}")
                    o.line(f"self.{fld(f)} = {conv_in('v >> sh', ft, w, False)}")
            o.line("self._v = True")
        with o.block("def _emit(self):"):
            o.line("acc = 0; total = 0")
            for f, ft in fields:
                if isinstance(ft, VarbitType):
                    o.line(f"w = self.{fld(f)}__w; acc = (acc << w) | (self.{fld(f)} & ((1 << w) - 1)); total += w")
                else:
                    w = scalar_width(ft) or 0
                    o.line(f"acc = (acc << {w}) | {conv_out(f'self.{fld(f)}', ft, w)}; total += {w}")
            o.line("pad = -total & 7")
            o.line("return (acc << pad).to_bytes((total + pad) >> 3, 'big')")
        with o.block("def _nbytes(self):"):
            vb = next(f for f, ft in fields if isinstance(ft, VarbitType))
            o.line(f"return ({fixed} + self.{fld(vb)}__w + 7) >> 3")

    def _emit_struct_io(self, o: Emitter, fields: list[tuple[str, Type]], nbytes: int, pts: int) -> None:
        """Byte-aligned header: one struct.unpack_from / pack over byte-aligned field groups
        (cheaper than shifting one wide int)."""
        groups = field_groups([(fld(f), scalar_width(ft) or 0) for f, ft in fields])
        fmt, _ = struct_format(groups)
        sname = f"_ST{len(self.structs)}"
        self.structs.append((sname, "!" + fmt))
        types = {fld(f): ft for f, ft in fields}
        o.line("def _ex(self, pk):")
        mark = len(o.lines)
        with o.indent():
            o.line(f"o = pk.o; e = o + {nbytes}")
            o.line(f"if e > pk.n: self._v = False; raise ParserError({pts})")
            names = []
            for gi, (gw, _members) in enumerate(groups):
                for pi in range(len(_parts(gw // 8))):
                    names.append(f"g{gi}_{pi}")
            raw = self._raw(self._current)
            unread = raw and self.read is not None and id(self._current) not in self.read
            if not unread:
                o.line(f"{', '.join(names)}{',' if len(names) == 1 else ''} = {sname}.unpack_from(pk.b, o); pk.o = e")
            if raw:
                o.line("self._raw = pk.b[o:e]")
            if unread:
                o.line("pk.o = e")
            for gi, (gw, members) in enumerate(() if unread else groups):
                parts = _parts(gw // 8)
                if len(parts) == 1:
                    gv = f"g{gi}_0"
                    if parts[0][0].endswith("s"):  # a group wider than 8 bytes: "16s"
                        gv = f"int.from_bytes(g{gi}_0, 'big')"
                else:
                    acc = f"g{gi}_0"
                    for pi in range(1, len(parts)):
                        acc = f"(({acc}) << {parts[pi][1] * 8}) | g{gi}_{pi}"
                    gv = acc
                if len(members) == 1:
                    a, w = members[0]
                    o.line(f"self.{a} = {conv_in(gv, types[a], w, True)}")
                    continue
                if gv != f"g{gi}_0":
                    o.line(f"g{gi}_0 = {gv}")
                    gv = f"g{gi}_0"
                sh = gw
                for a, w in members:
                    sh -= w
                    src = f"{gv} >> {sh}" if sh else gv
                    o.line(f"self.{a} = {conv_in(src, types[a], w, sh == gw - w)}")
            o.line("self._v = True")
        self.extract_inline[id(self._current)] = [ln.strip() for ln in o.lines[mark:]]
        with o.block("def _emit(self):"):
            args = []
            for gi, (gw, members) in enumerate(groups):
                expr = _pack_expr([(conv_out(f"self.{a}", types[a], w), w) for a, w in members], 0)
                parts = _parts(gw // 8)
                if len(parts) == 1:
                    if parts[0][0].endswith("s"):
                        args.append(f"({expr}).to_bytes({gw // 8}, 'big')")
                    else:
                        args.append(expr)
                else:
                    gv = expr
                    if len(members) > 1:
                        o.line(f"g{gi} = {expr}")
                        gv = f"g{gi}"
                    rem = gw
                    for _code, nb in parts:
                        rem -= nb * 8
                        args.append(f"({gv} >> {rem}) & {hex((1 << (nb * 8)) - 1)}" if rem else f"{gv} & {hex((1 << (nb * 8)) - 1)}")
            if raw:
                # Never written since extraction: its own bytes (see `rewritten`).
                o.line("return self._raw")
                self.emit_inline[id(self._current)] = "self._raw"
            else:
                o.line(f"return {sname}.pack({', '.join(args)})")
                if all(len(_parts(gw // 8)) == 1 or len(m) == 1 for gw, m in groups):
                    self.emit_inline[id(self._current)] = f"{sname}.pack({', '.join(args)})"
        with o.block("def _nbytes(self):"):
            o.line(f"return {nbytes}")


def holds_objects(t: Type) -> bool:
    """Whether a value of `t` holds objects a copy must not share (structs, headers,
    stacks, or tuples of them)."""
    b = strip_newtype(t)
    if isinstance(b, TupleType):
        return any(holds_objects(el) for el in b.elems)
    return isinstance(b, StructLikeType | HeaderStackType)


def copy_code(x: str, t: Type) -> str:
    """A copy of the value `x` of type `t` that shares nothing mutable with it."""
    b = strip_newtype(t)
    if isinstance(b, TupleType) and holds_objects(b):
        return "(" + "".join(f"{copy_code(f'{x}[{i}]', el)}, " for i, el in enumerate(b.elems)) + ")"
    return f"{x}.copy()" if holds_objects(b) else x


def eq_code(x: str, y: str, t: Type) -> str:
    """P4 equality of the values `x` and `y` of type `t`."""
    b = strip_newtype(t)
    if isinstance(b, StructLikeType):
        return f"{x}.eq({y})"
    if isinstance(b, HeaderStackType):
        return f"all(p.eq(q) for p, q in zip({x}.a, {y}.a))"
    if isinstance(b, TupleType):
        return " and ".join(f"({eq_code(f'{x}[{i}]', f'{y}[{i}]', el)})"
                            for i, el in enumerate(b.elems)) or "True"
    return f"{x} == {y}"


def conv_in(src: str, ft: Type, w: int, top: bool) -> str:
    """A field's value from the bits `src` holds at its bottom (`top`: no bits above them)."""
    b = strip_newtype(ft)
    masked = f"({src})" if top else f"(({src}) & {hex((1 << w) - 1)})"
    if isinstance(b, BoolType):
        return f"{masked} != 0"
    if isinstance(b, BitType) and b.signed:
        h = 1 << (w - 1)
        return f"(({masked} + {hex(h)}) & {hex((1 << w) - 1)}) - {hex(h)}"
    return masked


def conv_out(src: str, ft: Type, w: int) -> str:
    """A field's bits (in range) from its value `src`."""
    b = strip_newtype(ft)
    if isinstance(b, BoolType):
        return f"(1 if {src} else 0)"
    if isinstance(b, BitType) and b.signed:
        return f"({src} & {hex((1 << w) - 1)})"
    return src


def _pack_expr(parts: list[tuple[str, int]], pad: int) -> str:
    """MSB-first concatenation of already-in-range values."""
    if not parts:
        return "0"
    expr = parts[0][0]
    for code, w in parts[1:]:
        expr = f"(({expr}) << {w}) | {code}" if w else expr
    if pad:
        expr = f"(({expr}) << {pad})"
    return expr


def pack_expr(parts: list[tuple[str, int]]) -> tuple[str, int]:
    """(expression, nbytes) packing (code, width) parts as BMv2 field lists: zero-padded at the end."""
    total = sum(w for _, w in parts)
    pad = -total & 7
    return _pack_expr(parts, pad), (total + pad) // 8


_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}


def _parts(nbytes: int) -> list[tuple[str, int]]:
    """struct codes covering a group of `nbytes` bytes, most significant first."""
    if nbytes in _CODES:
        return [(_CODES[nbytes], nbytes)]
    if nbytes > 8:
        return [(f"{nbytes}s", nbytes)]
    out = []
    for size in (4, 2, 1):
        while nbytes >= size:
            out.append((_CODES[size], size))
            nbytes -= size
    return out


def field_groups(fields: list[tuple[str, int]]) -> list[tuple[int, list[tuple[str, int]]]]:
    """Consecutive fields grouped so that every group starts and ends on a byte boundary."""
    groups: list[tuple[int, list[tuple[str, int]]]] = []
    cur: list[tuple[str, int]] = []
    bits = 0
    for name, w in fields:
        cur.append((name, w))
        bits += w
        if bits and bits % 8 == 0:  # a bit<0> field joins the group that follows it
            groups.append((bits, cur))
            cur, bits = [], 0
    if cur and not bits and groups:  # ... or, last, the one before
        groups[-1][1].extend(cur)
    elif cur:
        groups.append((bits, cur))
    # A group no single struct code holds (3, 5, 6 or 7 bytes: two or three codes and
    # the shifts between them) joins the next one when together they fill one code
    # (Ethernet: a 6-byte address and the 2-byte EtherType as one "Q").
    out: list[tuple[int, list[tuple[str, int]]]] = []
    for gw, members in groups:
        if (out and out[-1][0] % 8 == 0 and gw % 8 == 0 and out[-1][0] // 8 not in _CODES
                and (out[-1][0] + gw) // 8 in _CODES):
            pw, pm = out.pop()
            out.append((pw + gw, pm + members))
        else:
            out.append((gw, members))
    return out


def struct_format(groups: list[tuple[int, list[tuple[str, int]]]]) -> tuple[str, int]:
    fmt = "".join(code for gw, _ in groups for code, _ in _parts(gw // 8))
    return fmt, sum(gw for gw, _ in groups) // 8
