"""Expressions: P4 expressions to Python expression text (widths masked, signed wrap)."""

from __future__ import annotations

import re

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    ApplyResultType,
    BitType,
    BoolType,
    ExternType,
    HeaderStackType,
    HeaderType,
    IntType,
    StructLikeType,
    TupleType,
    Type,
)

from .base import (
    Ctx,
    ExternInst,
    LowererBase,
    bt,
    mask,
    unsupported,
)
from .classes import fld

_MAX_NESTING = 50  # bracket depth of one generated expression before it is split
_SCALARS = (BitType, IntType, BoolType)


def _nesting(code: str) -> int:
    depth = deepest = 0
    for ch in code:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


_SIMPLE_CONST = re.compile(r"^-?\d+$|^0x[0-9a-fA-F]+$|^True$|^False$")  # nothing to snapshot


class ExprLowerer(LowererBase):
    # ------------------------------------------------------------------ expressions
    def value(self, e: A.Expr | None, ctx: Ctx) -> str:
        if e is None:
            raise unsupported(None, "missing argument")
        c = e.const
        if c is not None and not isinstance(e, A.StringLit):
            return self.lit(c, e.type)
        pinned = self.pinned.get(id(e))
        if pinned is not None:
            return pinned
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise unsupported(e, f"expression '{type(e).__name__}'")
        code: str = m(e, ctx)
        if len(code) > 200 and _nesting(code) > _MAX_NESTING and isinstance(bt(e.type), _SCALARS):
            # Python refuses source nested 200 brackets deep: a long operator chain is
            # computed in steps. The operand runs first anyway: P4 evaluates left to
            # right, and an operator whose right side emits lines takes its left first.
            tv = self.tmp("n")
            self.out.line(f"{tv} = {code}")
            return tv
        return code

    def x_StringLit(self, e: A.StringLit, ctx: Ctx) -> str:
        return repr(e.value)

    def x_NameRef(self, e: A.NameRef, ctx: Ctx) -> str:
        r = e.ref
        if r is None:
            raise unsupported(e, f"name '{e.name}'")
        code = ctx.env.get(id(r.decl))
        if code is not None:
            return code
        if r.kind == "const":
            if r.value is not None:
                return self.lit(r.value, r.type)
            d = r.decl
            if isinstance(d, A.ConstDecl):
                return self.value(d.value, Ctx({}, {}, "", pk=ctx.pk))
        if r.kind in ("param", "local") and isinstance(bt(r.type), ExternType):
            inst = ctx.inst.get(id(r.decl))
            if isinstance(inst, ExternInst):
                return inst.py
        raise unsupported(e, f"reference to {r.kind} '{e.name}'")

    def x_Member(self, e: A.Member, ctx: Ctx) -> str:
        r = e.ref
        if r is not None and r.kind in ("enum_member", "error_member"):
            return self.lit(r.value if r.value is not None else r.name, e.type)
        base_t = bt(e.expr.type)
        if isinstance(base_t, ApplyResultType):
            call = e.expr
            assert isinstance(call, A.Call)
            hit, an = self.apply_table(self.table_of(call, ctx),
                                       want_hit=e.name in ("hit", "miss"))
            if e.name == "hit":
                return hit
            if e.name == "miss":
                return f"(not {hit})"
            return an
        base = self.value(e.expr, ctx)
        if isinstance(base_t, StructLikeType):
            return f"{base}.{fld(e.name)}"
        if isinstance(base_t, HeaderStackType):
            soob = self.errcode("StackOutOfBounds")
            if e.name == "next":
                return f"stack_next({base}, {soob})"
            if e.name == "last":
                return f"stack_last({base}, {soob})"
            if e.name == "lastIndex":
                return f"(({base}.n - 1) & 0xffffffff)"
            if e.name == "nextIndex":
                return f"{base}.n"
            if e.name == "size":
                return str(base_t.size)
        raise unsupported(e, f"member '{e.name}'")

    def x_Index(self, e: A.Index, ctx: Ctx) -> str:
        s = self.value(e.expr, ctx)
        if isinstance(bt(e.expr.type), TupleType):
            return f"{s}[{e.index.const}]"  # tuples are Python tuples; the index is constant
        if e.index.const is not None:
            return f"{s}.a[{e.index.const}]"
        return f"stack_get({s}, {self.value(e.index, ctx)})"

    def x_Slice(self, e: A.Slice, ctx: Ctx) -> str:
        hi, lo = int(e.hi.const), int(e.lo.const)
        x = self.value(e.expr, ctx)
        m = mask(hi - lo + 1)
        return f"(({x} >> {lo}) & {m})" if lo else f"({x} & {m})"

    def wrap(self, code: str, t: Type | None) -> str:
        b = bt(t)
        if isinstance(b, BitType):
            if b.signed:
                h = hex(1 << (b.width - 1))
                return f"((({code}) + {h}) & {mask(b.width)}) - {h}"
            return f"(({code}) & {mask(b.width)})"
        return f"({code})"

    def x_Unary(self, e: A.Unary, ctx: Ctx) -> str:
        x = self.value(e.expr, ctx)
        if e.op == "!":
            return f"(not {x})"
        if e.op == "+":
            return x
        b = bt(e.type)
        if e.op == "-":
            return self.wrap(f"-{x}", b)
        if e.op == "~":
            if isinstance(b, BitType) and not b.signed:
                return f"({x} ^ {mask(b.width)})"
            return f"(~{x})"
        raise unsupported(e, f"operator '{e.op}'")

    def x_Binary(self, e: A.Binary, ctx: Ctx) -> str:
        op = e.op
        if op in ("&&", "||"):
            left = self.value(e.left, ctx)
            with self.out.capture() as buf:
                right = self.value(e.right, ctx)
            if not buf:
                return f"({left} {'and' if op == '&&' else 'or'} {right})"
            tv = self.tmp("b")
            self.out.line(f"{tv} = {left}")
            self.out.line(f"if {'' if op == '&&' else 'not '}{tv}:")
            self.out.reindent(buf, 1)
            self.out.line(f"    {tv} = {right}")
            return tv
        lt = bt(e.left.type)
        left = self.value(e.left, ctx)
        with self.out.capture() as buf:
            right = self.value(e.right, ctx)
        if buf:
            # The right operand runs statements (an inlined call that may write what the left
            # one reads): P4 evaluates left to right, so take the left value first.
            if not _SIMPLE_CONST.match(left):
                tv = self.tmp("l")
                self.out.line(f"{tv} = {self.copy_if_agg(left, e.left)}")
                left = tv
            self.out.extend(buf)
        rt = bt(e.type)
        if op in ("==", "!="):
            if isinstance(lt, StructLikeType) or isinstance(bt(e.right.type), StructLikeType):
                r = f"{left}.eq({right})"
                return r if op == "==" else f"(not {r})"
            if isinstance(lt, HeaderStackType):
                r = f"all(x.eq(y) for x, y in zip({left}.a, {right}.a))"
                return r if op == "==" else f"(not {r})"
            if isinstance(e.left, A.ListExpr) or isinstance(e.right, A.ListExpr) or isinstance(lt, TupleType):
                left = self.tuple_code(e.left, ctx)
                right = self.tuple_code(e.right, ctx)
            return f"({left} {op} {right})"
        if op in ("<", ">", "<=", ">="):
            return f"({left} {op} {right})"
        if op == "++":
            lw = self.width(e.left.type, e)
            rw = self.width(e.right.type, e)
            lb = bt(e.left.type)
            rb = bt(e.right.type)
            lcode = f"({left} & {mask(lw)})" if isinstance(lb, BitType) and lb.signed else left
            rcode = f"({right} & {mask(rw)})" if isinstance(rb, BitType) and rb.signed else right
            v = f"(({lcode} << {rw}) | {rcode})"
            if isinstance(rt, BitType) and rt.signed:
                return self.wrap(v, rt)
            return v
        t = rt
        if not isinstance(t, BitType):
            if isinstance(t, IntType):
                pyop = {"/": "//"}.get(op, op)
                return f"({left} {pyop} {right})"
            raise unsupported(e, f"operator '{op}' on '{e.type}'")
        w = t.width
        if op in ("+", "-", "*"):
            return self.wrap(f"{left} {op} {right}", t)
        if op in ("&", "|", "^"):
            return f"({left} {op} {right})"
        if op in ("/", "%"):
            r = self.simple(right)
            pyop = "//" if op == "/" else "%"
            return f"(({left} {pyop} {r}) if {r} else 0)"
        if op == "<<":
            if e.right.const is not None:
                sh = int(e.right.const)
                return "0" if sh >= w else self.wrap(f"{left} << {sh}", t)
            r = self.simple(right)
            return f"({self.wrap(f'{left} << {r}', t)} if {r} < {w} else 0)"
        if op == ">>":
            if e.right.const is not None:
                sh = int(e.right.const)
                if sh >= w:
                    return f"(-1 if {left} < 0 else 0)" if t.signed else "0"
                return f"({left} >> {sh})"
            r = self.simple(right)
            if t.signed:
                return f"({left} >> min({r}, {w}))"
            return f"(({left} >> {r}) if {r} < {w} else 0)"
        if op in ("|+|", "|-|"):
            lo, hi = ((-(1 << (w - 1)), (1 << (w - 1)) - 1) if t.signed else (0, (1 << w) - 1))
            pyop = "+" if op == "|+|" else "-"
            return f"sat_add({left}, {pyop}{right}, {lo}, {hi})"
        raise unsupported(e, f"operator '{op}'")

    def tuple_code(self, e: A.Expr, ctx: Ctx) -> str:
        if isinstance(e, A.ListExpr):
            return "(" + "".join(self.value(i, ctx) + ", " for i in e.items) + ")"
        return self.value(e, ctx)

    def x_Ternary(self, e: A.Ternary, ctx: Ctx) -> str:
        c = self.value(e.cond, ctx)
        with self.out.capture() as b1:
            a = self.value(e.then, ctx)
        with self.out.capture() as b2:
            b = self.value(e.else_, ctx)
        if not b1 and not b2:
            return f"({a} if {c} else {b})"
        t = self.tmp("q")
        self.out.line(f"if {c}:")
        self.out.reindent(b1, 1)
        self.out.line(f"    {t} = {a}")
        self.out.line("else:")
        self.out.reindent(b2, 1)
        self.out.line(f"    {t} = {b}")
        return t

    def x_Cast(self, e: A.Cast, ctx: Ctx) -> str:
        to = bt(e.type)
        frm = bt(e.expr.type)
        if isinstance(to, StructLikeType | TupleType) and isinstance(e.expr, A.ListExpr | A.StructExpr):
            e.expr.type = e.type
            return self.value(e.expr, ctx)
        x = self.value(e.expr, ctx)
        if isinstance(to, BoolType):
            if isinstance(frm, BoolType):
                return x
            return f"({x} != 0)"
        if isinstance(to, BitType):
            if isinstance(frm, BoolType):
                return f"(1 if {x} else 0)"
            if isinstance(frm, BitType) and not frm.signed and not to.signed and frm.width <= to.width:
                return x
            return self.wrap(x, to)
        return x

    def x_ListExpr(self, e: A.ListExpr, ctx: Ctx) -> str:
        return self.aggregate_value(e, [(None, i) for i in e.items], ctx)

    def x_StructExpr(self, e: A.StructExpr, ctx: Ctx) -> str:
        return self.aggregate_value(e, [(n, v) for n, v in e.fields], ctx)

    def aggregate_value(self, e: A.Expr, items: list[tuple[str | None, A.Expr]], ctx: Ctx) -> str:
        t = bt(e.type)
        if isinstance(t, StructLikeType) and t.decl is not None:
            cn = self.cls.name(t)
            v = self.tmp("s")
            self.out.line(f"{v} = {cn}()")
            names = [f for f, _ in t.fields]
            for i, (n, it) in enumerate(items):
                fname = n if n is not None else names[i]
                self.out.line(f"{v}.{fld(fname)} = {self.copy_if_agg(self.value(it, ctx), it)}")
            if isinstance(t, HeaderType):
                self.out.line(f"{v}._v = True")
            return v
        return "(" + "".join(self.value(it, ctx) + ", " for _, it in items) + ")"

    def x_Call(self, e: A.Call, ctx: Ctx) -> str:
        r = self.call(e, ctx, want_value=True)
        if r is None:
            raise unsupported(e, "call used as a value")
        return r
