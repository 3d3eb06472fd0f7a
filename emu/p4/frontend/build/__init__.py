"""lark parse tree -> :mod:`emu.p4.frontend.ast` (positions mapped through the source map).

One rule mixin per construct (types, declarations, blocks, statements, expressions) over
ToAstBase; literals.py decodes integer literals and annotation bodies.
"""

from __future__ import annotations

from .base import SyntaxIssue
from .blocks import BlockRules
from .declarations import DeclarationRules
from .expressions import ExpressionRules
from .literals import decode_annotation_body, parse_int_literal
from .statements import StatementRules
from .typerefs import TypeRules

__all__ = ["SyntaxIssue", "ToAst", "decode_annotation_body", "parse_int_literal"]


class ToAst(TypeRules, DeclarationRules, BlockRules, StatementRules, ExpressionRules):
    """lark tree -> ``ast`` nodes.  Positions are mapped through the source map."""
