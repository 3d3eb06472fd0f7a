"""Parser states (a state loop or straight-line code), select, and packet_in methods."""

from __future__ import annotations

from typing import Any

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    StructLikeType,
)

from .analysis import (
    _targets,
)
from .base import (
    _SIMPLE,
    Ctx,
    LowererBase,
    _ParserBody,
    bt,
    unsupported,
)
from .classes import conv_in, fld, header_fields


class ParserLowerer(LowererBase):
    # ------------------------------------------------------------------ parsers
    def parser_states(self, p: A.ParserDecl, ctx: Ctx) -> None:
        """State machine: `while True` over states with >1 predecessor or in loops; states
        reached from exactly one transition are inlined at it."""
        o = self.out
        states = {s.name: s for s in p.states}
        preds: dict[str, int] = {n: 0 for n in states}
        for s in p.states:
            for t in _targets(s):
                if t in preds:
                    preds[t] += 1
        # A state is in a loop if it can reach itself.
        looped = set()
        for n in states:
            seen: set[str] = set()
            stack = list(_targets(states[n]))
            while stack:
                x = stack.pop()
                if x == n:
                    looped.add(n)
                    break
                if x in seen or x not in states:
                    continue
                seen.add(x)
                stack.extend(_targets(states[x]))
        # `start` first: the loop begins at state 0, wherever start is declared.
        loop_states = ["start"] + [n for n in states if n != "start" and (preds[n] != 1 or n in looped)]
        ids = {n: i for i, n in enumerate(loop_states)}
        stv = self.tmp("st")
        pctx = ctx.child(in_parser=True)
        o.line(f"{stv} = 0")
        with o.block("while True:"):
            if looped:
                # A state loop that never ends stops as the spec's parser time limit
                # does; BMv2 would spin on it.
                self.count_loop_iteration(f"ParserError({self.errcode('ParserTimeout')})")
            for i, n in enumerate(loop_states):
                with o.block(f"{'if' if i == 0 else 'elif'} {stv} == {i}:"):
                    self.state_body(states[n], pctx, states, ids, stv)

    def state_body(self, s: A.ParserState, ctx: Ctx, states: dict[str, A.ParserState],
                   ids: dict[str, int], stv: str) -> None:
        sctx = ctx.child()
        for st in s.stmts:
            self.stmt(st, sctx)
        tr = s.transition
        if tr is None:
            self.goto("reject", sctx, states, ids, stv)
        elif tr.state is not None:
            self.goto(tr.state, sctx, states, ids, stv)
        elif tr.select is not None:
            self.select(tr.select, sctx, states, ids, stv)

    def goto(self, name: str, ctx: Ctx, states: dict[str, A.ParserState], ids: dict[str, int], stv: str) -> None:
        o = self.out
        if name == "accept":
            o.line("break")
        elif name == "reject":
            o.line("raise ParserError(None)")
        elif name in ids:
            o.line(f"{stv} = {ids[name]}")
            o.line("continue")
        else:
            self.state_body(states[name], ctx, states, ids, stv)

    def select(self, sel: A.SelectExpr, ctx: Ctx, states: dict[str, A.ParserState], ids: dict[str, int], stv: str) -> None:
        o = self.out
        keys = []
        for e in sel.exprs:
            c = self.value(e, ctx)
            if not _SIMPLE.match(c):
                t = self.tmp("k")
                o.line(f"{t} = {c}")
                c = t
            keys.append((c, e.type))
        first = True
        for case in sel.cases:
            cond = self.keyset_cond(case.keyset, keys, ctx)
            if cond == "True":
                if first:
                    self.goto(case.state, ctx, states, ids, stv)
                else:
                    with o.block("else:"):
                        self.goto(case.state, ctx, states, ids, stv)
                return
            o.line(f"{'if' if first else 'elif'} {cond}:")
            first = False
            with o.indent():
                self.goto(case.state, ctx, states, ids, stv)
        # No case matches: BMv2 ends parsing there with parser_error untouched (p4c-bm2-ss
        # gives such a select no default transition; the spec's error.NoMatch is not
        # raised), as an explicit `transition reject` does.
        if first:
            o.line("raise ParserError(None)")
        else:
            with o.block("else:"):
                o.line("raise ParserError(None)")

    def keyset_cond(self, ks: A.Expr, keys: list[tuple[str, Any]], ctx: Ctx) -> str:
        if isinstance(ks, A.DefaultExpr | A.DontCare):
            return "True"
        if isinstance(ks, A.NameRef) and ks.ref is not None and ks.ref.kind == "value_set":
            vs = ctx.inst[id(ks.ref.decl)]
            return f"{vs}.match(({', '.join(k for k, _ in keys)},))"
        items = ks.items if isinstance(ks, A.ListExpr) and len(keys) > 1 else [ks]
        if isinstance(ks, A.ListExpr) and len(keys) == 1 and len(ks.items) == 1:
            items = ks.items
        conds = []
        for it, (k, kt) in zip(items, keys, strict=False):
            c = self.elem_cond(it, k, kt, ctx)
            if c != "True":
                conds.append(c)
        return " and ".join(conds) if conds else "True"

    def elem_cond(self, it: A.Expr, k: str, kt: Any, ctx: Ctx) -> str:
        if isinstance(it, A.DefaultExpr | A.DontCare):
            return "True"
        if isinstance(it, A.NameRef) and it.ref is not None and it.ref.kind == "value_set":
            return f"{ctx.inst[id(it.ref.decl)]}.match(({k},))"
        if isinstance(it, A.Mask):
            v, m = self.value(it.value, ctx), self.value(it.mask, ctx)
            return f"({k} & {m}) == ({v} & {m})"
        if isinstance(it, A.Range):
            return f"{self.value(it.lo, ctx)} <= {k} <= {self.value(it.hi, ctx)}"
        return f"{k} == {self.value(it, ctx)}"

    def packet_in(self, name: str, e: A.Call, args: list[A.Expr | None], pk: str, ctx: Ctx) -> str | None:
        o = self.out
        pts = self.errcode("PacketTooShort")
        if name == "extract":
            tgt = args[0]
            assert tgt is not None
            if isinstance(tgt, A.Member) and isinstance(bt(tgt.expr.type), HeaderStackType) and tgt.name == "next":
                s = self.value(tgt.expr, ctx)
                h = f"stack_next({s}, {self.errcode('StackOutOfBounds')})"
                if len(args) > 1 and args[1] is not None:
                    o.line(f"{h}._exv({pk}, {self.value(args[1], ctx)})")
                else:
                    o.line(f"{h}._ex({pk})")
                o.line(f"{s}.n += 1")
                return None
            if (isinstance(tgt, A.Member) and isinstance(tgt.expr, A.Member) and tgt.expr.name == "next"
                    and isinstance(bt(tgt.expr.expr.type), HeaderStackType)):
                # extract(stack.next.member) on a stack of unions: the union at nextIndex
                # takes the member (the others become invalid) and nextIndex advances,
                # as BMv2's union_stack extract does.
                s = self.value(tgt.expr.expr, ctx)
                u = self.tmp("u")
                o.line(f"{u} = stack_next({s}, {self.errcode('StackOutOfBounds')})")
                args2 = f", {self.value(args[1], ctx)}" if len(args) > 1 and args[1] is not None else ""
                o.line(f"{u}.{fld(tgt.name)}.{'_exv' if args2 else '_ex'}({pk}{args2})")
                ut = bt(tgt.expr.type)
                if isinstance(ut, HeaderUnionType):
                    for fn, _ in ut.fields:
                        if fn != tgt.name:
                            o.line(f"{u}.{fld(fn)}._v = False")
                o.line(f"{s}.n += 1")
                return None
            if not isinstance(bt(tgt.type), HeaderType):
                raise unsupported(tgt, "extract into a non-header")
            if isinstance(tgt, A.DontCare):
                # extract<T>(_): parse into a scratch header, so the bytes are consumed and checked.
                ht = bt(tgt.type)
                if not isinstance(ht, HeaderType):
                    raise unsupported(tgt, "extract into '_' without a header type")
                h = self.tmp("dc")
                o.line(f"{h} = {self.cls.name(ht)}()")
            else:
                h = self.value(tgt, ctx)
            if len(args) > 1 and args[1] is not None:
                o.line(f"{h}._exv({pk}, {self.value(args[1], ctx)})")
            elif id(tgt.type) in self.cls.extract_inline and _SIMPLE.match(h) and _SIMPLE.match(pk):
                # The extraction body inline (no method call on the hot path).
                o.line(f"_x = {h}")
                for ln in self.cls.extract_inline[id(tgt.type)]:
                    o.line(ln.replace("self.", "_x.").replace("pk.", f"{pk}."))
            else:
                o.line(f"{h}._ex({pk})")
            self.invalidate_union_siblings(tgt, ctx)
            return None
        if name == "lookahead":
            return self.lookahead(bt(e.type), e, pk, pts)
        if name == "advance":
            n = self.simple(self.value(args[0], ctx))  # type: ignore[arg-type]
            # BMv2 advances whole bytes: a bit count that is not one is an invalid argument
            # (checked before the length), and the cursor stays where it was.
            invalid = f"raise ParserError({self.errcode('ParserInvalidArgument')})"
            if not n.isdigit():
                o.line(f"if {n} & 7: {invalid}")
            elif int(n) & 7:
                o.line(invalid)
                return None
            o.line(f"if {pk}.o + ({n} >> 3) > {pk}.n: raise ParserError({pts})")
            o.line(f"{pk}.o += {n} >> 3")
            return None
        if name == "length":
            return f"{pk}.n"
        raise unsupported(e, f"packet_in.{name}")

    def lookahead(self, t: Any, e: A.Call, pk: str, pts: int) -> str:
        """lookahead<T>(): T's bits at the cursor, the cursor left where it is. A header
        is extracted as extract() would; any other type is filled from one integer,
        field by field in wire order (headers in it made valid, as BMv2 does)."""
        o = self.out
        v = self.tmp("la")
        if isinstance(t, HeaderType):
            o.line(f"{v} = {self.cls.name(t)}(); _o = {pk}.o; {v}._ex({pk}); {pk}.o = _o")
            return v
        # The type's serialized width; error and plain enums have none of their own (the
        # target's width, or a refusal for an aggregate holding one, as p4c refuses it).
        tw = t.bit_width if t.bit_width is not None else self.width(t, e)
        nb = (tw + 7) // 8
        o.line(f"if {pk}.o + {nb} > {pk}.n: raise ParserError({pts})")
        o.line(f"_x = int.from_bytes({pk}.b[{pk}.o:{pk}.o + {nb}], 'big') >> {nb * 8 - tw}")
        if not isinstance(t, StructLikeType | HeaderStackType):
            o.line(f"{v} = {conv_in('_x', t, tw, True)}")
            return v
        o.line(f"{v} = {self.default(t)}")
        self.fill_from_bits(t, v, tw, e)
        return v

    def fill_from_bits(self, t: Any, target: str, end: int, e: A.Node) -> int:
        """Lines setting `target` (of type t) from the bits of `_x` that end `end` bits
        above its bottom; the bit position where they start."""
        o = self.out
        if isinstance(t, HeaderStackType):
            for i in range(t.size):
                end = self.fill_from_bits(bt(t.elem), f"{target}.a[{i}]", end, e)
            return end
        fields = header_fields(t) if isinstance(t, HeaderType) else [(fld(f), ft) for f, ft in t.fields]
        for a, ft in fields:
            b = bt(ft)
            if isinstance(b, StructLikeType | HeaderStackType):
                end = self.fill_from_bits(b, f"{target}.{a}", end, e)
                continue
            w = self.width(ft, e)
            end -= w
            o.line(f"{target}.{a} = {conv_in(f'_x >> {end}' if end else '_x', ft, w, False)}")
        if isinstance(t, HeaderType):
            o.line(f"{target}._v = True")
        return end

    def inline_body_custom(self, body: _ParserBody, bctx: Ctx, bound: list[tuple[A.Param, A.Expr | None]],
                           caller: Ctx, ctor_args: list[A.Argument]) -> None:
        """A sub-parser: copy-in, its state machine, copy-out (parser errors propagate)."""
        o = self.out
        copy_out = []
        for p, a in bound:
            if str(p.type) in ("packet_in", "packet_out"):
                bctx.env[id(p)] = self.value(a, caller) if a is not None else "pk"
                continue
            v = self.tmp("p_" + p.name)
            if p.direction in ("", "in", "inout") and a is not None:
                o.line(f"{v} = {self.copy_if_agg(self.value(a, caller), a)}")
            else:
                o.line(f"{v} = {self.default(p.type)}")
            bctx.env[id(p)] = v
            if p.direction in ("out", "inout") and a is not None:
                copy_out.append((a, v))
        self.instantiate(body.decl, bctx, ctor_args)
        if copy_out:
            o.line("try:")
            o.level += 1
        self.parser_states(body.decl, bctx)
        if copy_out:
            o.level -= 1
            with o.block("finally:"):
                for a, v in copy_out:
                    self.assign(a, v, caller)
