"""Semantic checks: name resolution, types, widths, constant folding.

Input: an ``ast.Program``.  Output: a :class:`CheckedProgram`; the AST is
annotated in place so that a code generator can walk it directly:

* every ``ast.Expr`` gets ``.type`` (a ``types.Type``) and, when it is a
  compile-time constant, ``.const`` (int or bool; enum members fold to their
  value for serializable enums, else to the member name);
* every ``ast.NameRef`` (and ``ast.Member`` that does not select a field)
  gets ``.ref``, a :class:`Ref` saying what the name denotes;
* every ``ast.Call`` gets ``.kind`` / ``.target`` / ``.type_bindings``;
* ``Param``/``VarDecl``/``ConstDecl``/``Instantiation``/``ValueSetDecl`` get
  ``.type``; ``ActionRef.decl`` is the ActionDecl a table names.

Ref.kind values: "local" (VarDecl), "param" (Param; ``decl.direction == ""``
in an action means control-plane action data), "const" (ConstDecl),
"action", "table", "instance" (Instantiation of an extern / parser / control),
"value_set", "extern_function", "function", "enum_member", "error_member",
"match_kind", "state", "parser", "control" (a declaration used as a type).

Unlike p4c, literal-width rules are those of the P4_16 spec: an unsized
literal adopts the width of the other operand, and two sized operands must
agree exactly (no implicit widening).

One module per construct: declarations, parsers, controls, tables, statements,
expressions, calls, corelib (packet_in and packet_out); base holds the state they
share, program the results.
"""

from __future__ import annotations

from .. import ast as A
from ..diagnostics import DiagnosticSink, P4Error
from .calls import CallChecker
from .controls import ControlChecker
from .corelib import CoreLibChecker
from .declarations import DeclarationChecker
from .expressions import ExpressionChecker
from .parsers import ParserChecker
from .program import BlockInfo, CheckedProgram, Ref, Scope
from .statements import StatementChecker
from .tables import TableChecker


class Checker(DeclarationChecker, ParserChecker, ControlChecker, TableChecker, StatementChecker,
              ExpressionChecker, CallChecker, CoreLibChecker):
    """The type checker: one mixin per construct over the shared state of CheckerBase."""


def check_program(prog: A.Program, sink: DiagnosticSink | None = None) -> CheckedProgram:
    """Check ``prog``; raises :class:`P4Error` listing every error found."""
    return Checker(sink).check(prog)


__all__ = ["Checker", "CheckedProgram", "BlockInfo", "Ref", "Scope", "check_program", "P4Error"]
