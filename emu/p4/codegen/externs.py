"""Extern functions and methods: v1model builtins, registers, counters, hash, checksum, digest."""

from __future__ import annotations

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    BitType,
    BoolType,
    ExternType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    StructLikeType,
    Type,
)
from emu.p4.names import digest_name

from .base import (
    _SIMPLE,
    Ctx,
    ExternInst,
    LowererBase,
    bind_args,
    bt,
    mask,
    unsupported,
)
from .classes import fld, pack_expr, scalar_width


class ExternLowerer(LowererBase):
    def builtin(self, e: A.Call, ctx: Ctx) -> str | None:
        name = e.target
        f = e.func
        assert isinstance(f, A.Member)
        recv_t = bt(f.expr.type)
        o = self.out
        if name == "isValid":
            x = self.value(f.expr, ctx)
            if isinstance(recv_t, HeaderUnionType):
                return f"{x}._isv()"
            return f"{x}._v"
        if name == "setInvalid":
            o.line(f"{self.value(f.expr, ctx)}._v = False")
            return None
        if name == "setValid":
            # BMv2 (add_header) zeroes the fields of a header it makes valid; one that is
            # valid already keeps them.
            x = self.simple(self.value(f.expr, ctx))
            o.line(f"if not {x}._v: {x}._reset(); {x}._v = True")
            self.invalidate_union_siblings(f.expr, ctx)
            return None
        if name in ("push_front", "pop_front"):
            assert isinstance(recv_t, HeaderStackType)
            s = self.value(f.expr, ctx)
            el = bt(recv_t.elem)
            assert isinstance(el, StructLikeType)
            o.line(f"{s}.{name}({int(e.args[0].value.const)}, {self.cls.name(el)})")
            return None
        if e.const is not None:
            return str(e.const)
        raise unsupported(e, f"method '{name}'")

    # ------------------------------------------------------------------ externs
    def args_by_name(self, e: A.Call) -> dict[str, A.Expr | None]:
        m = e.target
        params = m.params if isinstance(m, A.MethodDecl) else []
        return {p.name: a for p, a in bind_args(params, e.args)}

    def extern_function(self, e: A.Call, ctx: Ctx) -> str | None:
        o = self.out
        m = e.target
        assert isinstance(m, A.MethodDecl)
        name = m.name
        a = self.args_by_name(e)
        args = [x for _, x in bind_args(m.params, e.args)]
        if name == "mark_to_drop":
            sm = self.value(args[0], ctx) if args else "_ps.sm"
            o.line(f"{sm}.egress_spec = DROP_PORT; {sm}.mcast_grp = 0")
            return None
        if name == "verify":
            cond = self.value(args[0], ctx)
            err = self.value(args[1], ctx)
            o.line(f"if not {cond}: raise ParserError({err})")
            return None
        if name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                    "update_checksum_with_payload"):
            self.checksum(name, a, ctx, e)
            return None
        if name == "hash":
            self.hash_call(a, ctx, e)
            return None
        if name == "random":
            res = a["result"]
            assert res is not None
            lo = self.value(a["lo"], ctx)  # type: ignore[arg-type]
            hi = self.value(a["hi"], ctx)  # type: ignore[arg-type]
            self.assign(res, self.wrap(f"RNG.randint({lo}, {hi}) if {lo} <= {hi} else {lo}", res.type), ctx)
            return None
        if name in ("clone", "clone3", "clone_preserving_field_list"):
            ct = args[0]
            kind = "E2E" if ct is not None and ct.const in ("E2E", 1) else "I2E"
            sess = self.value(args[1], ctx)
            fl = "None"
            if name == "clone3" and args[2] is not None:
                fl = repr(self.field_list_from_data(args[2], ctx))
            elif name == "clone_preserving_field_list" and args[2] is not None:
                fl = repr(str(args[2].const))
            o.line(f"_ps.clone = ({kind!r}, {sess}, {fl})")
            return None
        if name in ("resubmit", "resubmit_preserving_field_list", "recirculate",
                    "recirculate_preserving_field_list"):
            what = "resubmit" if name.startswith("resubmit") else "recirc"
            if name.endswith("field_list"):
                fl = repr(str(args[0].const)) if args and args[0] is not None else "None"
            else:
                fl = repr(self.field_list_from_data(args[0], ctx)) if args and args[0] is not None else "None"
            o.line(f"_ps.{what} = ({fl},)")
            return None
        if name == "truncate":
            o.line(f"_ps.trunc = {self.value(args[0], ctx)}")
            return None
        if name == "digest":
            recv = self.value(args[0], ctx)
            data = args[1]
            assert data is not None
            vals = [c for c, _w, _v in self.flatten(data, ctx)]
            dname = self.digest_name(data, e)
            o.line(f"_ps.digests += (({dname!r}, {recv}, ({''.join(v + ', ' for v in vals)})),)")
            return None
        if name == "log_msg":
            msg = self.value(args[0], ctx)
            if len(args) > 1 and args[1] is not None:
                vals = [c for c, _w, _v in self.flatten(args[1], ctx)]
                o.line(f"log_msg({msg}, ({''.join(v + ', ' for v in vals)}))")
            else:
                o.line(f"log_msg({msg}, ())")
            return None
        if name in ("assert", "assume"):
            o.line(f"if not {self.value(args[0], ctx)}: raise AssertFailed({name!r} + ' failed at {e.pos}')")
            return None
        if name == "static_assert":
            return "True"
        raise unsupported(e, f"extern function '{name}'")

    def digest_name(self, data: A.Expr, e: A.Call) -> str:
        t = bt(data.type)
        nm = digest_name(self.cp, e)
        if not any(d["name"] == nm for d in self.info.digests):
            fields = [[f, scalar_width(ft) or 0] for f, ft in t.fields] if isinstance(t, StructLikeType) else []
            self.info.digests.append({"name": nm, "fields": fields})
        return nm

    def hash_call(self, a: dict[str, A.Expr | None], ctx: Ctx, e: A.Call) -> None:
        res, algo, base, data, mx = a["result"], a["algo"], a["base"], a["data"], a["max"]
        assert res is not None and algo is not None and data is not None
        algo_name = str(algo.const)
        hf = self.obj(algo_name, "hash", "HF", algo=algo_name)
        leaves = self.flatten(data, ctx, field_validity=False)
        total = sum(lw for _, lw, _ in leaves)
        if (algo_name == "identity" and leaves and total % 8 == 0 and total <= 64
                and all(lw > 0 and v is None for _, lw, v in leaves)):
            # identity is the first 8 bytes as an integer: for a whole-byte list of at most
            # 8 bytes that is the concatenated value itself, with no bytes built.
            hcall = f"({pack_expr([(c, w) for c, w, _ in leaves])[0]})"
        else:
            hcall = f"{hf}({self.pack_leaves(leaves)})"
        b = self.value(base, ctx) if base is not None else "0"
        m = self.value(mx, ctx) if mx is not None else "0"
        rw = self.width(res.type, res)
        if mx is not None and mx.const is not None and base is not None and base.const is not None:
            mc, bc = int(mx.const) & ((1 << 64) - 1), int(base.const)
            if mc:
                # a hash is >= 0: base + hash % max needs no mask when it stays in range
                inner = f"{hcall} % {mc}" if bc == 0 else f"{bc} + {hcall} % {mc}"
                fits = 0 <= bc and bc + mc - 1 <= (1 << rw) - 1
                code = f"({inner})" if fits else f"(({inner}) & {mask(rw)})"
            else:
                code = f"({bc} & {mask(rw)})"
        else:
            hv = self.tmp("h")
            mv = self.simple(m)
            self.out.line(f"{hv} = {hcall}")
            mt = bt(mx.type) if mx is not None else None
            if (base is None or base.const == 0) and isinstance(mt, BitType) and not mt.signed and mt.width <= rw:
                code = f"({hv} % {mv} if {mv} else 0)"  # below max, which fits the result
            else:
                code = f"(({b}) + ({hv} % {mv} if {mv} else 0)) & {mask(rw)}"
        self.assign(res, code, ctx)

    def checksum(self, name: str, a: dict[str, A.Expr | None], ctx: Ctx, e: A.Call) -> None:
        o = self.out
        cond, data, cks, algo = a["condition"], a["data"], a["checksum"], a["algo"]
        assert cond is not None and data is not None and cks is not None and algo is not None
        algo_name = str(algo.const)
        hf = self.obj(algo_name, "hash", "HF", algo=algo_name)
        leaves = self.flatten(data, ctx)
        w = self.width(cks.type, cks)
        c = self.value(cond, ctx)
        with o.block(f"if {c}:"):
            total = sum(lw for _, lw, _ in leaves)
            if (algo_name.endswith("csum16") and not name.endswith("with_payload") and total % 16 == 0
                    and total and all(lw > 0 for _, lw, _ in leaves)):
                # Internet checksum inline, without building bytes: 2**16 == 1 (mod 0xFFFF),
                # so the ones'-complement sum of the words is the sum of the fields, each
                # shifted by its bit offset mod 16, taken mod 0xFFFF (0xFFFF, not 0, unless
                # every field is 0).
                valids = sorted({v for _, _, v in leaves if v is not None})
                terms = []
                off = total
                for lc, lw, _ in leaves:
                    off -= lw
                    sh = off % 16
                    terms.append(f"({lc} << {sh})" if sh else lc)
                t = self.tmp("cs")
                fast_code = (f"{self.csum_sum(t, terms, name, data, ctx)}; {t}r = {t} % 0xffff; "
                             f"{t} = ~({t}r if {t}r or not {t} else 0xffff) & 0xffff")
                if valids:
                    with o.block(f"if {' and '.join(valids)}:"):
                        o.line(fast_code)
                    with o.block("else:"):  # packing may hoist temporaries: inside the block
                        o.line(f"{t} = {hf}({self.pack_leaves(leaves)})")
                else:
                    o.line(fast_code)
                val = f"({t} & {mask(w)})"
            else:
                packed = self.pack_leaves(leaves)
                if name.endswith("with_payload"):
                    packed = f"({packed} + _ps.payload)"
                val = f"({hf}({packed}) & {mask(w)})"
            # BMv2 skips verify/update when the checksum field's header is invalid.
            if isinstance(cks, A.Member) and isinstance(bt(cks.expr.type), HeaderType):
                hv = self.value(cks.expr, ctx)
                o.line(f"if {hv}._v:")
                o.level += 1
            if name.startswith("verify"):
                o.line(f"if {val} != {self.value(cks, ctx)}: _ps.sm.checksum_error = 1")
            else:
                self.assign(cks, val, ctx)
            if isinstance(cks, A.Member) and isinstance(bt(cks.expr.type), HeaderType):
                o.level -= 1

    def csum_sum(self, t: str, terms: list[str], name: str, data: A.Expr, ctx: Ctx) -> str:
        """`t = <sum of terms>`. When every term is a field of one header and some of
        those fields are never written after parsing (analysis._header_writes), verify
        keeps their partial sum on the header (`_cspN`) and update adds only the other
        terms to it: the same integer, so the same checksum, with fewer field loads.
        A header that verify did not see (None) sums every term."""
        items = data.items if isinstance(data, A.ListExpr) else (
            [v for _, v in data.fields] if isinstance(data, A.StructExpr) else [])
        full = f"{t} = {' + '.join(terms)}"
        if (len(items) != len(terms) or not all(
                isinstance(it, A.Member) and isinstance(bt(it.expr.type), HeaderType) for it in items)):
            return full
        mems = [it for it in items if isinstance(it, A.Member)]
        h = bt(mems[0].expr.type)
        code = self.value(mems[0].expr, ctx)
        written = self.header_writes.get(id(h), set())
        if written is None or any(self.value(m.expr, ctx) != code for m in mems):
            return full
        stable = [tm for m, tm in zip(mems, terms, strict=True) if m.name not in written]
        rest = [tm for m, tm in zip(mems, terms, strict=True) if m.name in written]
        if not stable:
            return full
        assert isinstance(h, HeaderType)
        key = (id(h), tuple(terms))
        if name.startswith("verify"):
            if key not in self.csum_partial:
                self.csum_partial[key] = len(self.csum_partial)
                self.top.line(f"{self.cls.name(h)}._csp{self.csum_partial[key]} = None")
            attr = f"{code}._csp{self.csum_partial[key]}"
            return f"{attr} = {t} = {' + '.join(stable)}" + (f"; {t} += {' + '.join(rest)}" if rest else "")
        got = self.csum_partial.get(key)
        if got is None:
            return full
        more = f" + {' + '.join(rest)}" if rest else ""
        return f"{t} = {code}._csp{got}; {t} = {' + '.join(terms)} if {t} is None else {t}{more}"

    def extern_method(self, e: A.Call, ctx: Ctx) -> str | None:
        o = self.out
        f = e.func
        assert isinstance(f, A.Member)
        m = e.target
        assert isinstance(m, A.MethodDecl)
        rt = bt(f.expr.type)
        ename = rt.name if isinstance(rt, ExternType) else str(rt)
        args = [x for _, x in bind_args(m.params, e.args)]
        if ename == "packet_in":
            pk = self.value(f.expr, ctx)
            return self.packet_in(m.name, e, args, pk, ctx)
        if ename == "packet_out":
            out = self.value(f.expr, ctx)
            if m.name == "emit":
                arg = args[0]
                assert arg is not None
                self.emit_value(self.value(arg, ctx), bt(arg.type), out, arg)
                return None
        inst = None
        if isinstance(f.expr, A.NameRef) and f.expr.ref is not None:
            inst = ctx.inst.get(id(f.expr.ref.decl)) or self.global_instance(f.expr.ref.decl)
        if not isinstance(inst, ExternInst):
            raise unsupported(e, f"method '{m.name}' of '{ename}'")
        py = inst.py
        if ename == "register":
            if m.name == "read":
                res, idx = args[0], args[1]
                assert res is not None and idx is not None
                cur = self.value(res, ctx)
                val = f"{py}.read({self.value(idx, ctx)}, {cur})"
                if inst.info.get("signed"):
                    val = self.wrap(val, res.type)
                self.assign(res, val, ctx)
                return None
            if m.name == "write":
                idx, wv = args[0], args[1]
                assert idx is not None and wv is not None
                v = self.value(wv, ctx)
                if isinstance(bt(wv.type), BoolType):
                    v = f"(1 if {v} else 0)"
                # RegisterArray.write inlined on the cells (<py>_c, bound by the switch):
                # the index and value evaluated in argument order, an out-of-range
                # index ignored, the value truncated to the width.
                size, mask = max(1, inst.info["size"]), (1 << inst.info["width"]) - 1
                o.line(f"_ri = {self.value(idx, ctx)}; _rv = {v}")
                wt = bt(wv.type)
                if not (isinstance(wt, BitType) and not wt.signed and wt.width <= inst.info["width"]):
                    v = f"_rv & {mask:#x}"  # else already in range
                else:
                    v = "_rv"
                o.line(_guarded(_in_range("_ri", idx, size), f"{py}_c[_ri] = {v}"))
                return None
        if ename == "counter" and m.name == "count":
            # CounterArray.count inlined on its lists (<py>_p, <py>_b, bound by the switch).
            size = max(1, inst.info["size"])
            idx = args[0]
            assert idx is not None
            o.line(f"_ci = {self.value(idx, ctx)}")
            o.line(_guarded(_in_range("_ci", idx, size), f"{py}_p[_ci] += 1; {py}_b[_ci] += _ps.length"))
            return None
        if ename == "direct_counter" and m.name == "count":
            return None  # BMv2 counts direct counters on every table hit
        if ename == "meter" and m.name == "execute_meter":
            idx, res = args[0], args[1]
            assert idx is not None and res is not None
            cur = self.value(res, ctx)
            self.assign(res, f"{py}.execute({self.value(idx, ctx)}, _ps.length, {cur})", ctx)
            return None
        if ename == "direct_meter" and m.name == "read":
            if id(e) in self.hoisted_reads:
                return None  # the table's hit wrote it (TableLowerer.apply_table)
            res = args[0]
            assert res is not None
            with o.block(f"if {py}.color is not None:"):
                self.assign(res, f"{py}.color", ctx)
            return None
        raise unsupported(e, f"method '{m.name}' of '{ename}'")

    def emit_value(self, code: str, t: Type | None, out: str, node: A.Node | None = None) -> None:
        o = self.out
        if isinstance(t, HeaderType):
            inline = self.cls.emit_inline.get(id(t))
            if inline is not None and _SIMPLE.match(code):
                o.line(f"if {code}._v: {out}.append({inline.replace('self.', code + '.')})")
            else:
                o.line(f"if {code}._v: {out}.append({code}._emit())")
        elif isinstance(t, HeaderStackType):
            with o.block(f"for _h in {code}.a:"):
                et = bt(t.elem)
                if isinstance(et, HeaderUnionType):
                    # A stack of unions: each element emits its valid member.
                    for f, _ in et.fields:
                        o.line(f"if _h.{fld(f)}._v: {out}.append(_h.{fld(f)}._emit())")
                else:
                    o.line(f"if _h._v: {out}.append(_h._emit())")
        elif isinstance(t, StructLikeType):
            for f, ft in t.fields:
                self.emit_value(f"{code}.{fld(f)}", bt(ft), out, node)
        else:
            raise unsupported(node, f"emit of '{t}'")

    # ------------------------------------------------------------------ field lists
    def field_list_from_data(self, data: A.Expr, ctx: Ctx) -> str:
        """Old-style data argument (clone3/resubmit/recirculate): the listed metadata
        fields are preserved. Registered as an anonymous field list."""
        paths: list[list[str]] = []
        items = data.items if isinstance(data, A.ListExpr) else [data]
        if isinstance(data, A.StructExpr):
            items = [v for _, v in data.fields]
        for it in items:
            p = self.meta_path(it, ctx)
            if p is not None:
                paths.append(p)
            elif isinstance(bt(it.type), StructLikeType):
                base = self.meta_path(it, ctx)
                if base is not None:
                    paths.append(base)
        self.fl_count += 1
        name = f"__data{self.fl_count}"
        self.info.field_lists[name] = [[".".join(p)] for p in paths]
        return name

    def meta_path(self, e: A.Expr, ctx: Ctx) -> list[str] | None:
        """['meta'|'sm', field, ...] for an lvalue rooted at the user or standard metadata."""
        names: list[str] = []
        while isinstance(e, A.Member):
            names.append(fld(e.name))
            e = e.expr
        if isinstance(e, A.NameRef) and e.ref is not None:
            root = ctx.env.get(id(e.ref.decl))
            if root in ("meta", "sm"):
                return [root] + names[::-1]
        return None


def _in_range(var: str, idx: A.Expr, size: int) -> str | None:
    """The index check of an inlined counter/register access: the value of an unsigned
    bit<W> expression is never negative (the generated code keeps every bit<W> value in
    [0, 2**W)), so one comparison does, and none when 2**W <= size."""
    t = bt(idx.type)
    if isinstance(t, BitType) and not t.signed:
        w = t.width
        # a widening cast of an unsigned value keeps its range
        if isinstance(idx, A.Cast) and isinstance(it := bt(idx.expr.type), BitType) and not it.signed:
            w = min(w, it.width)
        return None if (1 << w) <= size else f"{var} < {size}"
    return f"0 <= {var} < {size}"


def _guarded(cond: str | None, stmt: str) -> str:
    return stmt if cond is None else f"if {cond}: {stmt}"
