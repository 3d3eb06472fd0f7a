"""Parsers (states, transitions, select), controls and tables (keys, actions, entries)."""

from __future__ import annotations

from typing import Any

from lark import Token

from .. import ast as A
from .base import ToAstBase


class BlockRules(ToAstBase):
    # -- parsers
    @staticmethod
    def _block_head(rest: list[Any]) -> tuple[list[str], list[A.Param], list[A.Param]]:
        """Pop a parser's or control's type parameters (if any), apply parameters and
        constructor parameters (if any) off the front of `rest`."""
        tparams: list[str] = []
        if rest and isinstance(rest[0], list) and rest[0] and isinstance(rest[0][0], str):
            tparams = rest.pop(0)
        params = rest.pop(0)
        ctor: list[A.Param] = []
        if rest and isinstance(rest[0], list):
            ctor = rest.pop(0)
        return tparams, params, ctor

    def parser_decl(self, items: list[Any]) -> A.ParserDecl:
        annos, kw, name, *rest = items
        tparams, params, ctor = self._block_head(rest)
        locals_ = [r for r in rest if not isinstance(r, A.ParserState)]
        states = [r for r in rest if isinstance(r, A.ParserState)]
        return A.ParserDecl(str(name), tparams, params, ctor, locals_, states, annotations=annos, pos=self.p(name))

    def parser_state(self, items: list[Any]) -> A.ParserState:
        annos, _, name, *rest = items
        trans = rest.pop() if rest and isinstance(rest[-1], A.Transition) else None
        return A.ParserState(str(name), rest, trans, annotations=annos, pos=self.p(name))

    def parser_block(self, items: list[Any]) -> A.Block:
        annos, *stmts = items
        pos = stmts[0].pos if stmts else (annos[0].pos if annos else A.NOPOS)
        return A.Block(stmts, annos, pos=pos)

    def transition_name(self, items: list[Any]) -> A.Transition:
        return A.Transition(str(items[1]), pos=self.p(items[0]))

    def transition_select(self, items: list[Any]) -> A.Transition:
        return A.Transition(None, items[1], pos=self.p(items[0]))

    def select_expr(self, items: list[Any]) -> A.SelectExpr:
        return A.SelectExpr(items[1], list(items[2:]), pos=self.p(items[0]))

    def select_case(self, items: list[Any]) -> A.SelectCase:
        return A.SelectCase(items[0], str(items[1]), pos=items[0].pos)

    def keyset_tuple(self, items: list[Any]) -> A.ListExpr:
        return A.ListExpr(list(items), pos=items[0].pos)

    def mask_expr(self, items: list[Any]) -> A.Mask:
        return A.Mask(items[0], items[2], pos=self.p(items[1]))

    def range_expr(self, items: list[Any]) -> A.Range:
        return A.Range(items[0], items[2], pos=self.p(items[1]))

    def default_expr(self, items: list[Any]) -> A.DefaultExpr:
        return A.DefaultExpr(pos=self.p(items[0]))

    def dontcare_expr(self, items: list[Any]) -> A.DontCare:
        return A.DontCare(pos=self.p(items[0]))

    # -- controls
    def control_decl(self, items: list[Any]) -> A.ControlDecl:
        annos, kw, name, *rest = items
        tparams, params, ctor = self._block_head(rest)
        body = rest.pop()
        rest = [r for r in rest if not (isinstance(r, Token) and r.type == "APPLY")]
        return A.ControlDecl(str(name), tparams, params, ctor, rest, body, annotations=annos, pos=self.p(name))

    def table_decl(self, items: list[Any]) -> A.TableDecl:
        annos, _, name, *props = items
        return A.TableDecl(str(name), props, annotations=annos, pos=self.p(name))

    def key_property(self, items: list[Any]) -> A.TableProperty:
        annos, kw, *keys = items
        return A.TableProperty("key", "key", keys=keys, annotations=annos, pos=self.p(kw))

    def actions_property(self, items: list[Any]) -> A.TableProperty:
        annos, kw, *acts = items
        return A.TableProperty("actions", "actions", actions=acts, annotations=annos, pos=self.p(kw))

    def entries_property(self, items: list[Any]) -> A.TableProperty:
        annos, *rest = items
        is_const = isinstance(rest[0], Token) and rest[0].type == "CONST"
        kw = rest[1] if is_const else rest[0]
        entries = rest[2:] if is_const else rest[1:]
        return A.TableProperty("entries", "entries", is_const, entries=entries, annotations=annos, pos=self.p(kw))

    def value_property(self, items: list[Any]) -> A.TableProperty:
        annos, *rest = items
        is_const = isinstance(rest[0], Token) and rest[0].type == "CONST" and len(rest) == 3
        if is_const:
            rest = rest[1:]
        name, value = rest
        return A.TableProperty(str(name), "value", is_const, value=value, annotations=annos, pos=self.p(name))

    def key_element(self, items: list[Any]) -> A.KeyElement:
        expr, mk, annos = items
        return A.KeyElement(expr, str(mk), annos, pos=expr.pos)

    def action_ref(self, items: list[Any]) -> A.ActionRef:
        annos, (name, tok), *rest = items
        args = rest[0] if rest else None
        return A.ActionRef(name, args, annos, pos=self.p(tok))

    def prefixed_name(self, items: list[Token]) -> tuple[str, Token]:
        return (("." + str(items[1])) if len(items) == 2 else str(items[0])), items[-1]

    def entry(self, items: list[Any]) -> A.Entry:
        is_const = False
        if isinstance(items[0], Token) and items[0].type == "CONST":
            is_const = True
            items = items[1:]
        prio = None
        if isinstance(items[0], tuple):
            prio = items[0][0]
            items = items[1:]
        keyset, action, annos = items
        return A.Entry(keyset, action, prio, annos, is_const, pos=keyset.pos)

    def entry_priority(self, items: list[Any]) -> tuple[A.Expr]:
        v = items[1]
        return (self._int_or_expr(v),)
