"""Statements and calls: assignment, inlined actions/functions/blocks with copy-in/copy-out,
`exit` and `return` handling."""

from __future__ import annotations

import os
from collections.abc import Callable

from emu.p4.frontend import ast as A
from emu.p4.frontend import types as T
from emu.p4.names import qualify

from .analysis import (
    _has_return,
    _walk,
    _written,
)
from .base import (
    _SIMPLE,
    BlockInst,
    Ctx,
    LowererBase,
    _ParserBody,
    bind_args,
    bt,
    mask,
    unsupported,
)
from .classes import copy_code, fld, holds_objects


class StmtLowerer(LowererBase):
    # ------------------------------------------------------------------ statements
    def block(self, b: A.Stmt, ctx: Ctx) -> None:
        if isinstance(b, A.Block):
            c = ctx.child()
            for s in b.stmts:
                self.stmt(s, c)
                # Propagate declarations made visible in this block only.
            return
        self.stmt(b, ctx)

    def stmt(self, s: A.Stmt, ctx: Ctx) -> None:
        lines = self.out.lines
        mark = len(lines)
        self._stmt(s, ctx)
        pos = getattr(s, "pos", None)
        # The P4 position on the statement's first generated line: an exception at
        # packet time is reported at it (CompiledProgram.location_of).
        if (pos is not None and not isinstance(s, A.Block) and lines is self.out.lines
                and len(lines) > mark and "#" not in lines[mark]
                and not lines[mark].rstrip().endswith("\\")):
            lines[mark] = f"{lines[mark]}  # @{os.path.basename(pos.file)}:{pos.line}"

    def _stmt(self, s: A.Stmt, ctx: Ctx) -> None:
        o = self.out
        if isinstance(s, A.Block):
            self.block(s, ctx)
        elif isinstance(s, A.VarDecl):
            v = self.tmp("v_" + s.name)
            ctx.env[id(s)] = v
            o.line(f"{v} = {self.init_value(s.init, s.type, ctx)}")
        elif isinstance(s, A.ConstDecl):
            if s.value.const is None:
                v = self.tmp("c_" + s.name)
                ctx.env[id(s)] = v
                o.line(f"{v} = {self.value(s.value, ctx)}")
        elif isinstance(s, A.Assign):
            rhs: A.Expr = s.rhs
            if s.op != "=":
                rhs = A.Binary(s.op[:-1], s.lhs, s.rhs, pos=s.pos)
                rhs.type = s.lhs.type
            pins = self.pin_lvalue_indexes(s.lhs, rhs, ctx)
            code = self.value(rhs, ctx)
            self.assign(s.lhs, self.copy_if_agg(code, rhs), ctx)
            for k in pins:
                del self.pinned[k]
        elif isinstance(s, A.CallStmt):
            self.call_stmt(s.call, ctx)
        elif isinstance(s, A.If):
            cond = self.value(s.cond, ctx)
            with o.block(f"if {cond}:"):
                self.block(s.then, ctx.child())
            els = s.else_
            while isinstance(els, A.If):
                with o.capture() as buf:
                    cond = self.value(els.cond, ctx)
                if buf:
                    break
                with o.block(f"elif {cond}:"):
                    self.block(els.then, ctx.child())
                els = els.else_
            if els is not None:
                with o.block("else:"):
                    self.block(els, ctx.child())
        elif isinstance(s, A.Switch):
            self.switch(s, ctx)
        elif isinstance(s, A.ForStmt):
            self.for_loop(s, ctx)
        elif isinstance(s, A.Break):
            o.line("break")
        elif isinstance(s, A.Continue):
            o.line("continue")
        elif isinstance(s, A.Exit):
            o.line("raise ExitBlock()")
        elif isinstance(s, A.Return):
            if s.value is not None and ctx.ret is not None:
                o.line(f"{ctx.ret} = {self.copy_if_agg(self.value(s.value, ctx), s.value)}")
            o.line("break" if ctx.inlined else "return")
        elif isinstance(s, A.Empty):
            pass
        else:
            raise unsupported(s, f"statement '{type(s).__name__}'")

    # ------------------------------------------------------------------ assignment
    def for_loop(self, s: A.ForStmt, ctx: Ctx) -> None:
        """`while True` with the update at the top (skipped the first time), so that a P4
        `continue` (Python `continue`) still runs the update before the condition."""
        if s.body is None:
            raise unsupported(s, "'for ... in' loop")
        if ctx.inlined and _has_return(s.body):
            # an inlined body's `return` is a Python `break`, which would only leave the loop
            raise unsupported(s, "'return' inside a 'for' loop of an inlined action or function")
        o = self.out
        lctx = ctx.child()
        for x in s.init:
            self.stmt(x, lctx)
        first = self.tmp("first")
        o.line(f"{first} = True")
        with o.block("while True:"):
            self.count_loop_iteration("LoopLimit()")
            if s.update:
                with o.block(f"if not {first}:"):
                    for x in s.update:
                        self.stmt(x, lctx)
                o.line(f"{first} = False")
            if s.cond is not None:
                o.line(f"if not ({self.value(s.cond, lctx)}): break")
            self.block(s.body, lctx.child())

    def pin_lvalue_indexes(self, lhs: A.Expr, rhs: A.Expr, ctx: Ctx) -> list[int]:
        """Evaluate the lvalue's runtime stack indexes before a right-hand side with calls:
        the left side is evaluated first (p4c orders side effects so; gauntlet_index_7)."""
        if not any(isinstance(n, A.Call) and n.kind in ("function", "extern_function", "extern_method")
                   for n in _walk(rhs)):
            return []
        pins: list[int] = []
        e = lhs
        while isinstance(e, A.Member | A.Index | A.Slice):
            if isinstance(e, A.Index) and e.index.const is None:
                t = self.tmp("ix")
                self.out.line(f"{t} = {self.value(e.index, ctx)}")
                self.pinned[id(e.index)] = t
                pins.append(id(e.index))
            e = e.expr
        return pins

    def assign(self, lhs: A.Expr, val: str, ctx: Ctx) -> None:
        o = self.out
        if isinstance(lhs, A.DontCare):
            return
        if isinstance(lhs, A.NameRef):
            r = lhs.ref
            code = ctx.env.get(id(r.decl)) if r is not None else None
            if code is None:
                raise unsupported(lhs, f"assignment to '{lhs.name}'")
            if (code in ("hdr", "meta", "sm") or (r is not None and id(r.decl) in self.by_ref)) \
                    and self.is_agg(lhs.type):
                # The pipeline's own structs keep their identity (the switch holds them);
                # so does a caller's aggregate passed by reference (inline_block).
                o.line(f"{code}.set({val})")
            else:
                o.line(f"{code} = {val}")
        elif isinstance(lhs, A.Member):
            base_t = bt(lhs.expr.type)
            if isinstance(base_t, T.HeaderStackType):
                if lhs.name == "next" and ctx.in_parser:
                    s = self.value(lhs.expr, ctx)
                    o.line(f"{s}.a[{s}.n] = {val}")
                    return
                raise unsupported(lhs, f"assignment to stack member '{lhs.name}'")
            base = self.value(lhs.expr, ctx)
            if isinstance(base_t, T.HeaderUnionType):
                # Assigning a member header makes it the (only) valid one.
                o.line(f"{base}.{fld(lhs.name)}.set({val})")
                for f, _ in base_t.fields:
                    if f != lhs.name:
                        o.line(f"if {base}.{fld(lhs.name)}._v: {base}.{fld(f)}._v = False")
                return
            if self.is_agg(lhs.type):
                # In place: nested headers keep their identity for the whole packet, so
                # the hot path may hold them in locals (see alias_headers).
                o.line(f"{base}.{fld(lhs.name)}.set({val})")
                return
            o.line(f"{base}.{fld(lhs.name)} = {val}")
        elif isinstance(lhs, A.Index):
            s = self.value(lhs.expr, ctx)
            i = lhs.index
            if i.const is not None:
                o.line(f"{s}.a[{i.const}] = {val}")
            else:
                ic = self.simple(self.value(i, ctx))
                o.line(f"if 0 <= {ic} < len({s}.a): {s}.a[{ic}] = {val}")
        elif isinstance(lhs, A.Slice):
            hi, lo = int(lhs.hi.const), int(lhs.lo.const)
            m = (1 << (hi - lo + 1)) - 1
            inner_t = bt(lhs.expr.type)
            cur = self.value(lhs.expr, ctx)
            new = f"({cur} & {hex(~(m << lo) & ((1 << self.width(inner_t, lhs)) - 1))}) | ((({val}) & {hex(m)}) << {lo})"
            if isinstance(inner_t, T.BitType) and inner_t.signed:
                w = inner_t.width
                new = f"((({new}) + {hex(1 << (w - 1))}) & {mask(w)}) - {hex(1 << (w - 1))}"
            self.assign(lhs.expr, new, ctx)
        else:
            raise unsupported(lhs, "assignment target")

    # ------------------------------------------------------------------ inlining
    def inline_body(self, body: A.Block, ictx: Ctx, bound: list[tuple[A.Param, A.Expr | None]],
                    caller: Ctx, ret: str | None = None,
                    prologue: Callable[[], None] | None = None, by_ref: bool = False) -> None:
        """Copy-in, body (return => break), copy-out (also on exit). With `by_ref` (a
        control's body, which sees nothing of its caller but its arguments), an inout
        aggregate argument that no other argument overlaps is used in place: the result
        is the same as copy-in/copy-out, without copying the structs twice per packet."""
        o = self.out
        copy_out: list[tuple[A.Expr, str, A.Param]] = []
        written = _written(body)
        refs: list[int] = []
        for p, a in bound:
            if by_ref and p.direction == "inout" and a is not None and _ref_ok(a, bound):
                ictx.env[id(p)] = self.value(a, caller)
                refs.append(id(p))
                continue
            if p.direction in ("", "in"):
                if a is None:
                    v = self.tmp("p_" + p.name)
                    o.line(f"{v} = {self.default(p.type)}")
                    ictx.env[id(p)] = v
                    continue
                if isinstance(bt(p.type), T.ExternType) or isinstance(bt(a.type), T.ExternType):
                    ictx.inst[id(p)] = self.resolve_instance(a, caller)
                    continue
                if str(p.type) == "packet_in" or str(p.type) == "packet_out":
                    ictx.env[id(p)] = self.value(a, caller)
                    continue
                code = self.value(a, caller)
                if id(p) not in written and (_SIMPLE.match(code) and not self.is_agg(p.type)):
                    ictx.env[id(p)] = code
                else:
                    v = self.tmp("p_" + p.name)
                    o.line(f"{v} = {self.copy_if_agg(code, a)}")
                    ictx.env[id(p)] = v
            else:
                v = self.tmp("p_" + p.name)
                if p.direction == "inout" and a is not None and not isinstance(a, A.DontCare):
                    o.line(f"{v} = {self.copy_if_agg(self.value(a, caller), a)}")
                else:
                    o.line(f"{v} = {self.default(p.type)}")
                ictx.env[id(p)] = v
                if a is not None and not isinstance(a, A.DontCare):
                    copy_out.append((a, v, p))
        self.by_ref.update(refs)
        if prologue is not None:
            prologue()
        needs_loop = _has_return(body)
        may_exit = bool(copy_out) and self.exits.may_exit(body)
        if ret is not None:
            ictx.ret = ret
        ictx.inlined = needs_loop
        if may_exit:
            o.line("try:")
            o.level += 1
        if needs_loop:
            with o.block("while True:"):
                self.block(body, ictx)
                o.line("break")
        else:
            self.block(body, ictx)
        if may_exit:
            o.level -= 1
            with o.block("finally:"):
                for a, v, _p in copy_out:
                    self.assign(a, v, caller)
        else:
            for a, v, _p in copy_out:
                self.assign(a, v, caller)
        self.by_ref.difference_update(refs)

    def copy_if_agg(self, code: str, e: A.Expr) -> str:
        """`code` as a value of its own: an aggregate read from a place (or chosen by a
        conditional between places) is copied, so writes to the copy stay there."""
        if e.type is not None and holds_objects(e.type) and isinstance(
                e, A.NameRef | A.Member | A.Index | A.Ternary):
            return copy_code(code, e.type)  # a tuple of headers too, element by element
        return code

    # ------------------------------------------------------------------ calls
    def call_stmt(self, e: A.Call, ctx: Ctx) -> None:
        self.call(e, ctx, want_value=False)

    def call(self, e: A.Call, ctx: Ctx, want_value: bool) -> str | None:
        o = self.out
        k = e.kind
        if k == "builtin":
            return self.builtin(e, ctx)
        if k == "action":
            ad = e.target
            assert isinstance(ad, A.ActionDecl)
            actx = ctx.child(ret=None, inlined=False)
            if id(ad) in self.top_actions:
                actx = Ctx({}, {}, "", ctx.in_parser, pk=ctx.pk)
            self.inline_body(ad.body, actx, bind_args(ad.params, e.args), ctx)
            return None
        if k == "function":
            fd = e.target
            if not isinstance(fd, A.FunctionDecl):
                raise unsupported(e, "call of an unknown function")
            rt = None if fd.proto.return_type is None else e.type
            ret = self.tmp("r")
            if rt is not None and not isinstance(bt(rt), type(None)):
                o.line(f"{ret} = {self.default(rt) if self.is_agg(rt) or isinstance(bt(rt), (T.BitType, T.BoolType)) else '0'}")
            fctx = Ctx({}, {}, ctx.scope, ctx.in_parser, pk=ctx.pk)
            if id(fd) not in self.global_functions:
                fctx = ctx.child(inlined=False, ret=None)
            self.inline_body(fd.body, fctx, bind_args(fd.proto.params, e.args), ctx, ret=ret)
            return ret
        if k == "apply":
            tgt = e.target
            if isinstance(tgt, A.TableDecl):
                ti = self.table_of(e, ctx)
                hit, _an = self.apply_table(ti, want_hit=want_value)
                return hit if want_value else None
            f = e.func
            inst = None
            ref = f.expr.ref if isinstance(f, A.Member) and isinstance(f.expr, A.NameRef) else None
            if ref is not None and ref.kind == "type":
                d = ref.decl
                if isinstance(d, A.ParserDecl | A.ControlDecl):
                    # Direct type invocation: an anonymous instance named by its type.
                    inst = BlockInst(d, qualify(ctx.scope, d.name, d.annotations), [])
            elif ref is not None:
                inst = ctx.inst.get(id(ref.decl))
            if not isinstance(inst, BlockInst):
                raise unsupported(e, "apply of a block")
            self.inline_block(inst, e, ctx)
            return None
        if k == "extern_function":
            return self.extern_function(e, ctx)
        if k == "extern_method":
            return self.extern_method(e, ctx)
        raise unsupported(e, f"call kind '{k}'")

    def inline_block(self, inst: BlockInst, e: A.Call, ctx: Ctx) -> None:
        d = inst.decl
        bctx = Ctx({}, dict(inst.outer), inst.qname, in_parser=isinstance(d, A.ParserDecl), pk=ctx.pk)
        bound = bind_args(d.params, e.args)
        # Locals are bound after copy-in (their initialisers may read parameters); exit
        # propagates to the top-level block, which catches it.
        if isinstance(d, A.ParserDecl):
            for p, a in bound:
                if str(p.type) == "packet_in" and a is not None:
                    bctx.pk = self.value(a, ctx)
            self.inline_body_custom(_ParserBody(d), bctx, bound, ctx, inst.args)
        else:
            self.inline_body(d.body, bctx, bound, ctx, prologue=lambda: self.instantiate(d, bctx, inst.args),
                             by_ref=True)


def _path_root(e: A.Expr) -> A.NameRef | None:
    """The variable an lvalue `a.b.c` (struct members only) is rooted at, else None."""
    while isinstance(e, A.Member):
        if not isinstance(bt(e.expr.type), T.StructType):
            return None
        e = e.expr
    return e if isinstance(e, A.NameRef) and e.ref is not None and e.ref.decl is not None else None


def _ref_ok(a: A.Expr, bound: list[tuple[A.Param, A.Expr | None]]) -> bool:
    """`a` (an inout argument) may be passed by reference: a header or struct lvalue
    whose variable no other argument of the call mentions (no aliasing to observe)."""
    if not isinstance(bt(a.type), T.StructType | T.HeaderType):
        return False
    r = _path_root(a)
    if r is None:
        return False
    decl = r.ref.decl  # type: ignore[union-attr]
    for _p, b in bound:
        if b is None or b is a:
            continue
        for n in _walk(b):
            if isinstance(n, A.NameRef) and n.ref is not None and n.ref.decl is decl:
                return False
    return True
