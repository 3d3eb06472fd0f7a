"""What every rule of the tree transformer uses: positions, annotations, names, literals."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lark import Token, Transformer, Tree, v_args

from .. import ast as A
from ..diagnostics import DiagnosticSink
from ..preprocess import SourceMap
from .literals import decode_annotation_body, parse_int_literal

_LITERAL = r'\s*"(?:[^"\\]|\\.)*"\s*'
_STRING = re.compile(rf"{_LITERAL}(?:\+\+{_LITERAL})*")  # concatenated literals too (P4_16 1.2.4)


class SyntaxIssue(Exception):
    def __init__(self, pos: A.Pos, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


class _ForInit(list):  # type: ignore[type-arg]
    """The init part of a for loop (a list of statements)."""


class _ForUpdate(list):  # type: ignore[type-arg]
    """The update part of a for loop (a list of statements)."""


class ToAstBase(Transformer):
    """The source map and sink; helpers shared by the rule mixins."""

    def __init__(self, smap: SourceMap, sink: DiagnosticSink,
                 parse_body: Callable[[Token], Tree]) -> None:
        super().__init__()
        self.smap = smap
        self.sink = sink
        self.parse_body = parse_body  # a structured annotation's body, to its parse tree
        self.structured: list[A.Annotation] = []

    # -- helpers
    def p(self, x: Any) -> A.Pos:
        if isinstance(x, Token):
            return self.smap.lookup(x.line or 0, x.column or 0)
        if isinstance(x, A.Node):
            return x.pos
        if getattr(x, "empty", True):
            return A.NOPOS
        return self.smap.lookup(x.line, x.column)

    # -- annotations
    def annos(self, items: list[Any]) -> list[A.Annotation]:
        names = [a.name for a in items]
        for a in items:  # p4c: a structured annotation's name is used once per declaration
            if a.structured is not None and names.count(a.name) > 1:
                self.sink.error(a.pos, f"@{a.name}: duplicate name for structured annotation")
        return list(items)

    def annotation(self, items: list[Any]) -> A.Annotation:
        name = items[0]
        if len(items) > 1:
            raw = str(items[1])
            body = raw[1:-1]
            args, kv = decode_annotation_body(body)
            anno = A.Annotation(str(name), body, raw[0], args, kv, pos=self.p(name))
            if raw[0] == "[":
                anno.structured = self.transform(self.parse_body(items[1]))
                self.structured.append(anno)
        else:
            anno = A.Annotation(str(name), pos=self.p(name))
        if anno.name in ("name", "deprecated") and not (
                anno.bracket == "(" and _STRING.fullmatch(anno.body or "")):
            # p4c: "@name: should contain a string", "@deprecated ... must be a string"
            self.sink.error(anno.pos, f"@{anno.name} takes one string literal")
        return anno

    def structured_body(self, items: list[Any]) -> list[tuple[str | None, A.Expr]]:
        return [(None, e) for e in items[0]]

    def structured_kv(self, items: list[Any]) -> list[tuple[str | None, A.Expr]]:
        return list(items)

    # -- names
    def name(self, items: list[Token]) -> Token:
        return items[0]

    def enum_name(self, items: list[Token]) -> Token:
        return items[0]

    def arg_name(self, items: list[Token]) -> Token:
        return items[0]

    @v_args(meta=True)
    def switch_block(self, meta: Any, items: list[Any]) -> A.Block:
        return A.Block(list(items), pos=self.p(meta))

    def type_name(self, items: list[Token]) -> tuple[str, bool, Token]:
        if len(items) == 2:
            return str(items[1]), True, items[0]
        return str(items[0]), False, items[0]

    def type_params(self, items: list[Token]) -> list[str]:
        return [str(t) for t in items if isinstance(t, Token) and t.type not in ("TLT", "GT")]

    def _int_or_expr(self, w: Any) -> A.Expr:
        if isinstance(w, Token):
            return self.int_lit([w])
        return w  # type: ignore[no-any-return]

    def int_lit(self, items: list[Token]) -> A.IntLit:
        t = items[0]
        try:
            v, w, s = parse_int_literal(str(t))
        except ValueError as e:
            raise SyntaxIssue(self.p(t), str(e)) from None
        return A.IntLit(v, w, s, str(t), pos=self.p(t))
