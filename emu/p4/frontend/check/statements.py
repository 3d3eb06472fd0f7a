"""Statements: assignments, conditionals, switch, loops, returns; l-values."""

from __future__ import annotations

from typing import Any

from .. import ast as A
from ..types import (
    BOOL,
    DONTCARE,
    ActionEnumType,
    BitType,
    BoolType,
    EnumType,
    ErrorType,
    IntType,
    VoidType,
)
from .base import CheckerBase
from .program import _UNSUPPORTED_MSG, Scope, _Abort, ref_to_action


class StatementChecker(CheckerBase):
    # ================================================================ statements
    def stmt_safe(self, st: A.Stmt, s: Scope) -> None:
        try:
            self.stmt(st, s)
        except _Abort:
            pass

    def stmt(self, st: A.Stmt, s: Scope) -> None:
        if isinstance(st, A.Block):
            inner = Scope(s)
            for x in st.stmts:
                self.stmt_safe(x, inner)
        elif isinstance(st, A.Assign):
            lt = self.expr(st.lhs, s)
            self.check_lvalue(st.lhs, s)
            if st.op != "=":
                op = st.op[:-1]
                bin_ = A.Binary(op, st.lhs, st.rhs, pos=st.pos)
                self.expr(bin_, s)
            else:
                self.expr(st.rhs, s, lt)
                self.coerce(st.rhs, lt, "assign")
        elif isinstance(st, A.CallStmt):
            self.expr(st.call, s)
        elif isinstance(st, A.If):
            self.expr(st.cond, s, BOOL)
            self.expect_bool(st.cond, "condition of 'if'")
            self.stmt_safe(st.then, Scope(s))
            if st.else_ is not None:
                self.stmt_safe(st.else_, Scope(s))
        elif isinstance(st, A.VarDecl):
            self.var_decl(st, s)
        elif isinstance(st, A.ConstDecl):
            self.const_decl(st, s)
        elif isinstance(st, A.Exit):
            if self.in_parser:
                self.err(st, "'exit' cannot be used in a parser")
        elif isinstance(st, A.Return):
            if self.in_parser:
                self.err(st, "'return' cannot be used in a parser")
            rt = self.return_type
            if st.value is not None:
                if rt is None or isinstance(rt, VoidType):
                    self.err(st, "return with a value in a block that returns nothing")
                else:
                    self.expr(st.value, s, rt)
                    self.coerce(st.value, rt, "return")
            elif rt is not None and not isinstance(rt, VoidType):
                self.err(st, f"return without a value in a function returning '{rt}'")
        elif isinstance(st, A.Empty):
            pass
        elif isinstance(st, A.Switch):
            self.switch(st, s)
        elif isinstance(st, A.ForStmt):
            if st.body is None:
                self.err(st, "'for ... in' loops are not supported by the embedded target")
                return
            inner = Scope(s)  # the loop variables live in the loop
            for x in st.init:
                self.stmt_safe(x, inner)
            if st.cond is not None:
                self.expr(st.cond, inner, BOOL)
                self.expect_bool(st.cond, "condition of 'for'")
            self.loops += 1
            try:
                self.stmt_safe(st.body, Scope(inner))
            finally:
                self.loops -= 1
            for x in st.update:
                self.stmt_safe(x, inner)
        elif isinstance(st, A.Break | A.Continue):
            if not self.loops:
                self.err(st, f"'{type(st).__name__.lower()}' outside a loop")
        else:
            self.err(st, f"'{type(st).__name__}' {_UNSUPPORTED_MSG}")

    def switch(self, st: A.Switch, s: Scope) -> None:
        t = self.expr(st.expr, s)
        seen: set[Any] = set()
        for i, c in enumerate(st.cases):
            if c.body is None and i == len(st.cases) - 1:
                self.err(c, "the last switch case must have a body")
            lab = c.label
            if isinstance(lab, A.DefaultExpr):
                lab.type = DONTCARE
                if i != len(st.cases) - 1:
                    self.err(lab, "'default' must be the last switch label")
            elif isinstance(t, ActionEnumType):
                if not isinstance(lab, A.NameRef):
                    self.err(lab, "switch labels on action_run must be action names")
                else:
                    names = {ar.name.lstrip("."): ar for p in t.decl.properties if p.kind == "actions" for ar in p.actions}
                    if lab.name not in names:
                        self.err(lab, f"'{lab.name}' is not an action of table '{t.decl.name}'")
                    else:
                        ad = names[lab.name].decl
                        lab.ref = ref_to_action(lab.name, ad)
                        lab.type = t
                    if lab.name in seen:
                        self.err(lab, f"duplicate switch label '{lab.name}'")
                    seen.add(lab.name)
            else:
                try:
                    lt = self.expr(lab, s, t)
                    if isinstance(t, EnumType) and not isinstance(lt, EnumType):
                        # p4c: no implicit cast to an enum, even a serializable one's value
                        raise self.fatal(lab, f"a switch on '{t}' takes labels of that enum, "
                                              f"not of type '{lt}'")
                    self.coerce(lab, t, "match")
                    if lab.const is None:
                        self.err(lab, "switch label must be a compile-time constant")
                    elif (type(lab.const), lab.const) in seen:
                        self.err(lab, "duplicate switch label")
                    seen.add((type(lab.const), lab.const))
                except _Abort:
                    pass
            if c.body is not None:
                self.stmt_safe(c.body, Scope(s))
        if not isinstance(t, ActionEnumType | BitType | EnumType | ErrorType | IntType):
            self.err(st.expr, f"cannot switch on a value of type '{t}'")

    def check_lvalue(self, e: A.Expr, s: Scope, what: str = "") -> bool:
        """Report (and return False) when ``e`` cannot be written."""
        n = self.sink.error_count
        self._check_lvalue(e, s, what)
        return self.sink.error_count == n

    def _check_lvalue(self, e: A.Expr, s: Scope, what: str) -> None:
        root = e
        while isinstance(root, A.Member | A.Index | A.Slice):
            if isinstance(root, A.Member) and root.ref is not None and root.ref.kind in ("enum_member", "error_member"):
                break
            root = root.expr
        if isinstance(root, A.NameRef) and root.ref is not None:
            r = root.ref
            if r.kind == "const":
                self.err(e, f"cannot assign to constant '{r.name}'")
            elif r.kind == "param" and isinstance(r.decl, A.Param) and r.decl.direction == "in":
                self.err(e, f"cannot assign to 'in' parameter '{r.name}'")
            elif r.kind == "param" and isinstance(r.decl, A.Param) and r.decl.direction == "" and self.in_action:
                self.err(e, f"cannot assign to action data parameter '{r.name}'")
            elif r.kind not in ("local", "param"):
                self.err(e, f"cannot assign to {r.kind.replace('_', ' ')} '{r.name}'")
            return
        if isinstance(root, A.Call):
            return  # e.g. hdrs.stack.next in some targets; checked elsewhere
        self.err(e, f"{what or 'expression'} is not assignable")

    def expect_bool(self, e: A.Expr, what: str) -> None:
        if not isinstance(e.type, BoolType):
            self.err(e, f"{what} must be bool, not '{e.type}'")
