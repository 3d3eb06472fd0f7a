"""Type references and parameter lists."""

from __future__ import annotations

from typing import Any

from lark import Token

from .. import ast as A
from .base import ToAstBase


class TypeRules(ToAstBase):
    # -- types
    def base_type(self, items: list[Any]) -> A.BaseTypeRef:
        """A keyword type (`bool`, `void`, `_`, ...), or `bit`/`int`/`varbit` with a width."""
        width = self._int_or_expr(items[2]) if len(items) > 1 else None
        return A.BaseTypeRef(str(items[0]), width, pos=self.p(items[0]))

    def named_type(self, items: list[Any]) -> A.NamedTypeRef:
        name, top, tok = items[0]
        args = items[2] if len(items) > 1 else []
        return A.NamedTypeRef(name, args, top, pos=self.p(tok))

    def stack_type(self, items: list[Any]) -> A.StackTypeRef:
        return A.StackTypeRef(items[0], items[1], pos=items[0].pos)

    def tuple_type(self, items: list[Any]) -> A.TupleTypeRef:
        return A.TupleTypeRef(items[2], pos=self.p(items[0]))

    def type_args(self, items: list[Any]) -> list[A.TypeRef]:
        return list(items)

    # -- params
    def params(self, items: list[Any]) -> list[A.Param]:
        return list(items)

    def ctor_params(self, items: list[Any]) -> list[A.Param]:
        return items[0]  # type: ignore[no-any-return]

    def direction(self, items: list[Token]) -> str:
        return str(items[0])

    def param(self, items: list[Any]) -> A.Param:
        annos = items[0]
        rest = items[1:]
        direction = ""
        if isinstance(rest[0], str) and not isinstance(rest[0], Token):
            direction = rest[0]
            rest = rest[1:]
        typeref, name = rest[0], rest[1]
        default = rest[2] if len(rest) > 2 else None
        return A.Param(str(name), direction, typeref, default, annotations=annos, pos=self.p(name))
