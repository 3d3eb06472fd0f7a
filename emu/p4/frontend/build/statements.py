"""Statements, including switch and for loops."""

from __future__ import annotations

from typing import Any

from lark import v_args

from .. import ast as A
from .base import ToAstBase, _ForInit, _ForUpdate


class StatementRules(ToAstBase):
    # -- statements
    def block(self, items: list[Any]) -> A.Block:
        annos, *stmts = items
        pos = stmts[0].pos if stmts else (annos[0].pos if annos else A.NOPOS)
        return A.Block(stmts, annos, pos=pos)

    @v_args(meta=True)
    def assignment(self, meta: Any, items: list[Any]) -> A.Assign:
        return A.Assign(items[0], items[1], pos=items[0].pos)

    def compound_assignment(self, items: list[Any]) -> A.Assign:
        return A.Assign(items[0], items[2], str(items[1]), pos=items[0].pos)

    def call_stmt(self, items: list[Any]) -> A.CallStmt:
        func = items[0]
        if len(items) == 2:
            call = A.Call(func, [], items[1], pos=func.pos)
        else:
            call = A.Call(func, items[2], items[4], pos=func.pos)
        return A.CallStmt(call, pos=func.pos)

    def if_stmt(self, items: list[Any]) -> A.If:
        els = items[4] if len(items) > 3 else None
        return A.If(items[1], items[2], els, pos=self.p(items[0]))

    def exit_stmt(self, items: list[Any]) -> A.Exit:
        return A.Exit(pos=self.p(items[0]))

    def return_stmt(self, items: list[Any]) -> A.Return:
        return A.Return(items[1] if len(items) > 1 else None, pos=self.p(items[0]))

    @v_args(meta=True)
    def empty_stmt(self, meta: Any, items: list[Any]) -> A.Empty:
        return A.Empty(pos=self.p(meta))

    def switch_stmt(self, items: list[Any]) -> A.Switch:
        return A.Switch(items[1], list(items[2:]), pos=self.p(items[0]))

    def switch_case(self, items: list[Any]) -> A.SwitchCase:
        body = items[1] if len(items) > 1 else None
        return A.SwitchCase(items[0], body, pos=items[0].pos)

    def for_classic(self, items: list[Any]) -> A.ForStmt:
        loop = A.ForStmt(pos=self.p(items[0]), body=items[-1])
        for it in items[1:-1]:  # the optional parts, told apart by their builders' results
            if isinstance(it, _ForInit):
                loop.init = list(it)
            elif isinstance(it, _ForUpdate):
                loop.update = list(it)
            else:
                loop.cond = it
        return loop

    def for_init(self, items: list[Any]) -> _ForInit:
        return _ForInit(items)

    def for_update(self, items: list[Any]) -> _ForUpdate:
        return _ForUpdate(items)

    def for_decl(self, items: list[Any]) -> A.VarDecl:
        annos, typeref, name, init = items
        return A.VarDecl(str(name), typeref, init, annotations=annos, pos=self.p(name))

    def for_assign(self, items: list[Any]) -> A.Assign:
        if len(items) == 3:
            return A.Assign(items[0], items[2], str(items[1]), pos=items[0].pos)
        return A.Assign(items[0], items[1], pos=items[0].pos)

    def for_call(self, items: list[Any]) -> A.CallStmt:
        func = items[0]
        return A.CallStmt(A.Call(func, [], items[1], pos=func.pos), pos=func.pos)

    def break_stmt(self, items: list[Any]) -> A.Break:
        return A.Break(pos=self.p(items[0]))

    def continue_stmt(self, items: list[Any]) -> A.Continue:
        return A.Continue(pos=self.p(items[0]))

    def for_in(self, items: list[Any]) -> A.ForStmt:
        return A.ForStmt(pos=self.p(items[0]))
