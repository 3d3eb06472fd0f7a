"""Packing of header/struct fields (hash, checksum, digest data) and the per-program helpers
the switch calls: field lists, packet paths, header length."""

from __future__ import annotations

import re

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    BitType,
    BoolType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    StructLikeType,
    StructType,
    Type,
    VarbitType,
)

from .analysis import (
    _parse_len_is_cursor,
    _unpadded,
    _walk,
)
from .base import (
    Ctx,
    LowererBase,
    bt,
    mask,
)
from .classes import (
    _parts,
    field_groups,
    fld,
    header_fields,
    pack_expr,
    scalar_width,
    struct_format,
)
from .localize import StructLocals, localize


def _fixed_nbytes(t: HeaderType) -> int | None:
    """Bytes of a header without varbit fields (as its class's _nbytes returns), else None."""
    total = 0
    for _, ft in header_fields(t):
        w = scalar_width(ft)
        if w is None:
            return None
        total += w
    return (total + 7) // 8


def _sm_fields_read(prog: A.Program, sm_t: Type) -> set[str] | None:
    """Names of standard_metadata fields the program refers to; None when it uses the
    struct as a whole somewhere (a digest, a copy, a list), so any field may be read.

    The packet paths skip setting fields nobody reads (a few stores per packet).
    Passing it to mark_to_drop or to a control/action/function is not a whole use:
    the callee's own accesses are Members on a parameter of the same type."""
    names: set[str] = set()
    ok: set[int] = set()
    # _walk yields a node before its children, so marking a child `ok` here is in time.
    for n in _walk(prog):
        if isinstance(n, A.Member) and bt(n.expr.type) is sm_t:
            names.add(n.name)
            ok.add(id(n.expr))
        elif isinstance(n, A.Call) and (
                n.kind in ("apply", "action", "function")
                or n.kind == "extern_function" and isinstance(n.target, A.MethodDecl) and n.target.name == "mark_to_drop"):
            ok.update(id(a.value) for a in n.args)
        elif isinstance(n, A.Expr) and bt(n.type) is sm_t and id(n) not in ok:
            return None
    return names


class LayoutLowerer(LowererBase):
    def flatten(self, e: A.Expr, ctx: Ctx, *, field_validity: bool = True
                ) -> list[tuple[str, int, str | None]]:
        """(code, width, validity-code) leaves of a field list, MSB first. A field of a
        header is left out while its header is invalid, as BMv2 leaves out the fields a
        calculation names directly (checksums, selectors); with `field_validity` False
        it always counts, as in hash(), whose fields p4c copies into temporaries first
        (a whole header it copies as a header, which an invalid one leaves out)."""
        if isinstance(e, A.ListExpr):
            out = []
            for it in e.items:
                out.extend(self.flatten(it, ctx, field_validity=field_validity))
            return out
        if isinstance(e, A.StructExpr):
            out = []
            for _, it in e.fields:
                out.extend(self.flatten(it, ctx, field_validity=field_validity))
            return out
        t = bt(e.type)
        if isinstance(t, StructLikeType | HeaderStackType):
            code = self.value(e, ctx)
            return self.flatten_code(code, t, None)
        code = self.value(e, ctx)
        valid = None
        if field_validity and isinstance(e, A.Member) and isinstance(bt(e.expr.type), HeaderType):
            valid = self.value(e.expr, ctx) + "._v"
        if isinstance(t, BoolType):
            return [(f"(1 if {code} else 0)", 1, valid)]
        if isinstance(t, VarbitType):
            return [(f"({code}, {code}__w)", -1, valid)]
        w = self.width(t, e)
        if isinstance(t, BitType) and t.signed:
            code = f"({code} & {mask(w)})"
        return [(code, w, valid)]

    def flatten_code(self, code: str, t: Type, valid: str | None) -> list[tuple[str, int, str | None]]:
        t = bt(t)  # type: ignore[assignment]
        out: list[tuple[str, int, str | None]] = []
        if isinstance(t, HeaderStackType):
            for i in range(t.size):
                out.extend(self.flatten_code(f"{code}.a[{i}]", t.elem, valid))
            return out
        if isinstance(t, HeaderUnionType):
            for f, ft in t.fields:
                out.extend(self.flatten_code(f"{code}.{fld(f)}", ft, valid))
            return out
        assert isinstance(t, StructLikeType)
        v = f"{code}._v" if isinstance(t, HeaderType) else valid
        for f, ft in t.fields:
            b = bt(ft)
            if isinstance(b, StructLikeType | HeaderStackType):
                out.extend(self.flatten_code(f"{code}.{fld(f)}", b, v))
            elif isinstance(b, VarbitType):
                out.append((f"({code}.{fld(f)}, {code}.{fld(f)}__w)", -1, v))
            elif isinstance(b, BoolType):
                out.append((f"(1 if {code}.{fld(f)} else 0)", 1, v))
            elif isinstance(b, BitType) and b.signed:
                out.append((f"({code}.{fld(f)} & {mask(b.width)})", b.width, v))
            else:
                out.append((f"{code}.{fld(f)}", self.width(b), v))
        return out

    def struct_pack(self, parts: list[tuple[str, int]]) -> tuple[str, int] | None:
        """`_STn.pack(...)` for byte-aligned field groups of at most 8 bytes, else None."""
        total = sum(w for _, w in parts)
        if total % 8 or not parts:
            return None
        groups = field_groups(parts)
        if any(gw > 64 for gw, _ in groups):
            return None
        fmt, nb = struct_format(groups)
        sname = f"_ST{len(self.cls.structs)}"
        self.cls.structs.append((sname, "!" + fmt))
        args = []
        for gw, members in groups:
            expr = _unpadded(members)
            codes = _parts(gw // 8)
            if len(codes) == 1:
                # a group wider than 8 bytes packs as bytes ("16s")
                args.append(f"({expr}).to_bytes({gw // 8}, 'big')" if codes[0][0].endswith("s") else expr)
            else:
                t = self.tmp("g")
                self.out.line(f"{t} = {expr}")
                rem = gw
                for _c, n in codes:
                    rem -= n * 8
                    args.append(f"(({t} >> {rem}) & {mask(n * 8)})" if rem else f"({t} & {mask(n * 8)})")
        return f"{sname}.pack({', '.join(args)})", nb

    def pack_leaves(self, leaves: list[tuple[str, int, str | None]]) -> str:
        """Python expression giving the packed bytes, skipping fields of invalid headers."""
        valids = sorted({v for _, _, v in leaves if v is not None})
        if not any(w < 0 for _, w, _ in leaves):
            sp = self.struct_pack([(c, w) for c, w, _ in leaves])
            if sp is not None:
                fast = sp[0]
            else:
                pe, nb = pack_expr([(c, w) for c, w, _ in leaves])
                fast = f"({pe}).to_bytes({nb}, 'big')"
            if not valids:
                return fast
            items = ", ".join(f"(({c}, {w}),) if {v} else ()" if v else f"(({c}, {w}),)" for c, w, v in leaves)
            slow = f"pack(sum(({items},), ()))"
            return f"({fast} if {' and '.join(valids)} else {slow})"
        parts = []
        for c, w, v in leaves:
            item = f"({c},)" if w < 0 else f"(({c}, {w}),)"
            parts.append(f"({item} if {v} else ())" if v else item)
        return f"pack(sum(({', '.join(parts)},), ()))"

    def gen_field_lists(self) -> None:
        """@field_list(N) annotations on user metadata fields -> preserved field lists."""
        lists: dict[str, list[list[str]]] = {}

        def walk(t: StructLikeType, path: list[str]) -> None:
            decl = t.decl
            anns = {}
            if decl is not None:
                for sf in decl.fields:
                    anns[sf.name] = sf.annotations
            for f, ft in t.fields:
                b = bt(ft)
                for an in anns.get(f, []):
                    if an.name == "field_list":
                        for arg in an.args:
                            lists.setdefault(str(arg), []).append([".".join(path + [fld(f)])])
                if isinstance(b, StructType):
                    walk(b, path + [fld(f)])

        walk(self.meta_t, ["meta"])
        for k, v in lists.items():
            self.info.field_lists.setdefault(k, v)

    def gen_packet_paths(self) -> None:
        """Per-packet wrappers for the switch's hot path (normal packets): one call runs
        parser + verify + ingress, one runs egress + checksum + deparser; the block bodies
        are spliced in rather than called."""
        o = self.out
        static = self.info.static_length
        start = len(o.lines)
        with o.block("def run_ingress(ps, data, port, ts_us):"):
            o.line("_ps = ps")
            # mcast_grp and priority are read by the switch after ingress: set here
            # (a read that falls back to the class default is several times slower).
            o.line(f"sm = {self.info.sm_class}(); ps.sm = sm")
            o.line("sm.mcast_grp = 0; sm.priority = 0")
            used = _sm_fields_read(self.cp.program, self.sm_t)

            def sets(*pairs: tuple[str, str]) -> str:
                return "; ".join(f"sm.{f} = {v}" for f, v in pairs if used is None or f in used)

            o.line("sm.ingress_port = port")
            if line := sets(("packet_length", "ps.length"), ("ingress_global_timestamp", "ts_us")):
                o.line(line)
            o.line(f"meta = {self.info.meta_class}(); ps.meta = meta")
            o.line(f"hdr = {self.info.hdr_class}(); ps.hdr = hdr")
            mark = len(o.lines)
            o.line("pk = Pkt(data)")
            o.line("try:")
            o.level += 1
            self.splice("parse", "parse(pk, hdr, meta, sm, ps)", o.level)
            o.level -= 1
            o.line("except ParserError as err:")
            o.line("    if err.code is not None: sm.parser_error = err.code")
            o.line("o = pk.o")
            seg = o.lines[mark:]
            if not any(re.search(r"\bpk\b(?!\.[obn]\b)", ln) for ln in seg[1:]):
                # The cursor only read through pk.o/.n/.b: keep it in locals instead.
                seg = [ln.replace("pk.o", "_po").replace("pk.n", "_pn").replace("pk.b", "_pb") for ln in seg]
                seg[0] = seg[0].replace("pk = Pkt(data)", "_pb = data; _pn = len(data); _po = 0")
                o.lines[mark:] = seg
            o.line("ps.payload = data[o:] if o else data")
            # (the headers' bytes right after parsing)
            o.line("ps.base_len = o" if static or _parse_len_is_cursor(self.parser_decl)
                   else f"ps.base_len = {self.hdr_len_expr()}")
            if not self.empty_blocks.get("verify", False):
                self.splice("verify", "verify(hdr, meta, ps)", o.level)
            self.splice("ingress", "ingress(hdr, meta, sm, ps)", o.level)
            o.line("return sm")
        o.line("")
        with o.block("def run_egress(ps, port, info, ts_us):"):
            o.line("_ps = ps; hdr = ps.hdr; meta = ps.meta; sm = ps.sm")
            o.line("sm.egress_port = port; sm.egress_spec = 0")
            for line in (sets(("enq_timestamp", "info.enq_timestamp & 0xffffffff"),
                              ("enq_qdepth", "info.enq_qdepth")),
                         sets(("deq_timedelta", "info.deq_timedelta & 0xffffffff"),
                              ("deq_qdepth", "info.deq_qdepth")),
                         sets(("egress_global_timestamp", "ts_us"),
                              ("packet_length", "ps.length" if static else
                               "ps.length + hdr_len(hdr) - ps.base_len"))):
                if line:
                    o.line(line)
            self.splice("egress", "egress(hdr, meta, sm, ps)", o.level)
            o.line("if ps.clone is not None or sm.egress_spec == DROP_PORT: return None")
            if not self.empty_blocks.get("compute", False):
                self.splice("compute", "compute(hdr, meta, ps)", o.level)
            o.line("_out = []")
            self.splice("deparse", "deparse(_out, hdr, ps)", o.level)
            o.line("_out.append(ps.payload)")
            o.line("return b''.join(_out)")
        o.line("")
        o.lines[start:] = self.localize_structs(self.alias_headers(o.lines[start:]))

    def localize_structs(self, lines: list[str]) -> list[str]:
        """run_ingress and run_egress with their scalar metadata fields in locals
        (localize.py). What ingress assigns to user metadata goes back into the struct
        when egress or a field list (clone, resubmit, recirculate) may read it; what
        egress assigns, when a field list may; standard_metadata, all of it (the switch
        reads it)."""
        def fields(t: StructLikeType, var: str, prefix: str, fresh: bool,
                   writeback: set[str] | None) -> StructLocals:
            scal = {fld(f): self.cls.default(ft) for f, ft in t.fields
                    if scalar_width(ft) is not None and not isinstance(bt(ft), VarbitType)}
            others = {fld(f) for f, _ in t.fields} - set(scal)
            others |= {f + "__w" for f in others}  # a varbit field's width
            return StructLocals(var, prefix, scal, others, fresh, writeback)

        listed = {p[0].split(".")[1] for v in self.info.field_lists.values() for p in v
                  if p[0].startswith("meta.")}
        later = "\n".join(ln for k in ("egress", "compute", "deparse") for ln in self.bodies.get(k, []))
        acc = re.findall(r"(?<![\w.])meta\b(?:\s*\.\s*(\w+))?", later)
        after_ingress: set[str] | None = None if "" in acc else set(acc) | listed
        split = next(i for i, ln in enumerate(lines) if ln.startswith("def run_egress("))
        ing = [ln.replace("_ps.sm.", "sm.") for ln in lines[:split]]
        eg = [ln.replace("_ps.sm.", "sm.") for ln in lines[split:]]
        meta_t, sm_t = self.meta_t, self.sm_t
        ing = localize(ing, fields(sm_t, "sm", "_s_", True, None))
        ing = localize(ing, fields(meta_t, "meta", "_m_", True, after_ingress))
        eg = localize(eg, fields(sm_t, "sm", "_s_", False, None))
        eg = localize(eg, fields(meta_t, "meta", "_m_", False, listed))
        return ing + eg

    def alias_headers(self, lines: list[str]) -> list[str]:
        """Replace `hdr.<field>` by a local bound once per function (one attribute load
        instead of two per access). Valid because aggregate assignments are in place."""
        aggs = {fld(f) for f, t in self.hdr_t.fields if self.is_agg(t)}
        pat = re.compile(r"'[^']*'|\bhdr\.(\w+)\b(?!\s*=[^=])")
        out: list[str] = []
        used: set[str] = set()
        func: list[str] = []

        def flush() -> None:
            if not func:
                return
            header, body = func[0], func[1:]
            # Bind the aliases right after `hdr` is known (first line mentioning "hdr =").
            for i, ln in enumerate(body):
                if "hdr = " in ln:
                    ind = ln[: len(ln) - len(ln.lstrip())]
                    binds = [f"{ind}_H_{a} = hdr.{a}" for a in sorted(used)]
                    body = body[: i + 1] + binds + body[i + 1:]
                    break
            out.append(header)
            out.extend(body)
            func.clear()
            used.clear()

        def repl(m: re.Match[str]) -> str:
            if m.group(1) is None or m.group(1) not in aggs:
                return m.group(0)
            used.add(m.group(1))
            return f"_H_{m.group(1)}"

        for ln in lines:
            if ln.startswith("def "):
                flush()
                func.append(ln)
            elif func:
                func.append(pat.sub(repl, ln) if "hdr = " not in ln else ln)
            else:
                out.append(ln)
        flush()
        return out

    def hdr_len_expr(self) -> str:
        """hdr_len(hdr) as one expression when every header has a fixed size (a call and
        a local per header less, once per packet), else the call."""
        terms = []
        for f, ft in self.hdr_t.fields:
            b = bt(ft)
            nb = _fixed_nbytes(b) if isinstance(b, HeaderType) else None
            if nb is None:
                return "hdr_len(hdr)"
            terms.append(f"({nb} if hdr.{fld(f)}._v else 0)")
        return " + ".join(terms) or "0"

    def gen_hdr_len(self) -> None:
        """Bytes of the valid headers (BMv2 adjusts packet_length by header adds/removes)."""
        o = self.out
        with o.block("def hdr_len(hdr):"):
            o.line("n = 0")
            for f, ft in self.hdr_t.fields:
                b = bt(ft)
                a = f"hdr.{fld(f)}"
                # Fixed-size headers add a constant: this runs twice per packet when
                # headers may be added or removed.
                if isinstance(b, HeaderType):
                    nb = _fixed_nbytes(b)
                    o.line(f"if {a}._v: n += {nb if nb is not None else f'{a}._nbytes()'}")
                elif isinstance(b, HeaderStackType):
                    o.line(f"for _h in {a}.a:")
                    eb = bt(b.elem)
                    if isinstance(eb, HeaderUnionType):  # a stack of unions: each valid member
                        for uf, _ in eb.fields:
                            o.line(f"    if _h.{fld(uf)}._v: n += _h.{fld(uf)}._nbytes()")
                    else:
                        o.line("    if _h._v: n += _h._nbytes()")
                elif isinstance(b, HeaderUnionType):
                    for uf, uft in b.fields:
                        ub = bt(uft)
                        nb = _fixed_nbytes(ub) if isinstance(ub, HeaderType) else None
                        size = nb if nb is not None else f"{a}.{fld(uf)}._nbytes()"
                        o.line(f"if {a}.{fld(uf)}._v: n += {size}")
            o.line("return n")
        o.line("")
