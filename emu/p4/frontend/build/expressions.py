"""Expressions and argument lists; the program root."""

from __future__ import annotations

from typing import Any

from lark import Token, v_args

from .. import ast as A
from .base import ToAstBase
from .literals import unescape_string


class ExpressionRules(ToAstBase):
    # -- expressions
    def expr_list(self, items: list[Any]) -> list[A.Expr]:
        return list(items)

    def args(self, items: list[Any]) -> list[A.Argument]:
        out = []
        for it in items:
            if isinstance(it, A.Argument):
                out.append(it)
            else:
                out.append(A.Argument(it, pos=it.pos))
        return out

    def named_arg(self, items: list[Any]) -> A.Argument:
        return A.Argument(items[1], str(items[0]), pos=self.p(items[0]))

    def named_dontcare(self, items: list[Any]) -> A.Argument:
        return A.Argument(A.DontCare(pos=self.p(items[1])), str(items[0]), pos=self.p(items[0]))

    def ternary(self, items: list[Any]) -> A.Ternary:
        return A.Ternary(items[0], items[1], items[2], pos=items[0].pos)

    def binary(self, items: list[Any]) -> A.Binary:
        left, op, right = items
        return A.Binary(str(op), left, right, pos=self.p(op))

    def unary(self, items: list[Any]) -> A.Unary:
        op, e = items
        return A.Unary(str(op), e, pos=self.p(op))

    @v_args(meta=True)
    def cast(self, meta: Any, items: list[Any]) -> A.Cast:
        return A.Cast(items[0], items[1], pos=self.p(meta))

    def member(self, items: list[Any]) -> A.Member:
        return A.Member(items[0], str(items[2]), pos=items[0].pos, name_pos=self.p(items[2]))

    def index(self, items: list[Any]) -> A.Index:
        return A.Index(items[0], items[1], pos=items[0].pos)

    def slice(self, items: list[Any]) -> A.Slice:
        return A.Slice(items[0], items[1], items[2], pos=items[0].pos)

    def call(self, items: list[Any]) -> A.Call:
        func = items[0]
        if len(items) == 2:
            return A.Call(func, [], items[1], pos=func.pos)
        return A.Call(func, items[2], items[4], pos=func.pos)

    def true_lit(self, items: list[Token]) -> A.BoolLit:
        return A.BoolLit(True, pos=self.p(items[0]))

    def false_lit(self, items: list[Token]) -> A.BoolLit:
        return A.BoolLit(False, pos=self.p(items[0]))

    def string_lit(self, items: list[Token]) -> A.StringLit:
        raw = str(items[0])[1:-1]
        return A.StringLit(unescape_string(raw), pos=self.p(items[0]))

    def name_ref(self, items: list[Token]) -> A.NameRef:
        if len(items) == 2:
            return A.NameRef(str(items[1]), True, pos=self.p(items[0]))
        return A.NameRef(str(items[0]), pos=self.p(items[0]))

    def this_expr(self, items: list[Token]) -> A.This:
        return A.This(pos=self.p(items[0]))

    def error_member(self, items: list[Any]) -> A.Member:
        tr = A.BaseTypeRef("error", pos=self.p(items[0]))
        return A.Member(A.TypeNameExpr(tr, pos=tr.pos), str(items[2]), pos=tr.pos, name_pos=self.p(items[2]))

    def type_member(self, items: list[Any]) -> A.Member:
        name, top, tok = items[0]
        tr = A.NamedTypeRef(name, [], top, pos=self.p(tok))
        return A.Member(A.TypeNameExpr(tr, pos=tr.pos), str(items[2]), pos=tr.pos, name_pos=self.p(items[2]))

    def ctor_call(self, items: list[Any]) -> A.CtorCall:
        return A.CtorCall(items[0], items[1], pos=items[0].pos)

    @v_args(meta=True)
    def list_expr(self, meta: Any, items: list[Any]) -> A.ListExpr:
        elems = items[0] if items else []
        ell = any(isinstance(e, A.Ellipsis_) for e in elems)
        return A.ListExpr([e for e in elems if not isinstance(e, A.Ellipsis_)], ell, pos=self.p(meta))

    def list_items(self, items: list[Any]) -> list[Any]:
        return list(items)

    def ellipsis(self, items: list[Any]) -> A.Ellipsis_:
        return A.Ellipsis_(pos=self.p(items[0]))

    @v_args(meta=True)
    def struct_expr(self, meta: Any, items: list[Any]) -> A.StructExpr:
        return A.StructExpr(list(items), pos=self.p(meta))

    @v_args(meta=True)
    def struct_expr_dots(self, meta: Any, items: list[Any]) -> A.StructExpr:
        return A.StructExpr([i for i in items if isinstance(i, tuple)], True, pos=self.p(meta))

    def kv_pair(self, items: list[Any]) -> tuple[str, A.Expr]:
        return str(items[0]), items[1]

    def start(self, items: list[Any]) -> A.Program:
        return A.Program([d for d in items if isinstance(d, A.Decl)],
                         structured_annotations=self.structured)
