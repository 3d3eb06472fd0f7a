"""P4_16 front end of the embedded v1model target.

Pipeline (one module per step)::

    preprocess/    C preprocessor + SourceMap (output line/col -> original file:line:col)
    lexer.py       post-lexer: type names, '<' of type arguments, '>>', annotations
    p4.lark        LALR(1) grammar
    build/         parse tree -> ast.py dataclasses (positions already mapped)
    parser.py      lark setup, syntax errors -> diagnostics; parse_source()
    check/         names, types, widths, constant folding -> CheckedProgram
                   (one module per construct; see check/__init__.py)
    types.py       canonical Type objects
    diagnostics.py Diagnostic / P4Error / DiagnosticSink (gcc-style rendering)

Public API::

    cp = load_program("fabric.p4", include_dirs=("p4src",), defines={"X": "1"})
    cp = check_source(text, "fabric.p4")          # same, for text not on disk
    prog = parse_source(text, "fabric.p4")        # preprocess + parse only (ast.Program)

Errors raise :class:`P4Error`; ``err.diagnostics`` lists
``Diagnostic(file, line, col, severity, message)`` and ``str(err)`` renders
them gcc-style with the source line and a caret.

What a code generator reads (see check/__init__.py / ast.py / types.py docstrings):

* ``cp.pipeline``: {"p", "vr", "ig", "eg", "ck", "dep"} -> ParserDecl/ControlDecl
  passed to V1Switch; ``cp.parsers`` / ``cp.controls``: BlockInfo(decl, locals)
  with ``.tables``, ``.actions``, ``.instances``.
* ``cp.types`` (HeaderType/StructType/HeaderUnionType with ordered
  ``fields``, EnumType with ``values``, ...), ``cp.constants``,
  ``cp.errors`` (``cp.error_code(name)``), ``cp.match_kinds``.
* Every ``ast.Expr`` has ``.type`` (types.Type) and ``.const`` (folded value or
  None); ``ast.NameRef.ref`` / ``ast.Member.ref`` is a ``Ref(kind, name, decl,
  type, value, owner)``; ``ast.Call`` has ``.kind`` ("action", "function",
  "extern_function", "extern_method", "apply", "builtin"), ``.target`` and
  ``.type_bindings``; ``ast.ActionRef.decl`` is the ActionDecl a table names;
  action parameters with ``direction == ""`` are control-plane action data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from . import ast
from .check import BlockInfo, CheckedProgram, Ref, check_program
from .diagnostics import Diagnostic, DiagnosticSink, P4Error
from .parser import parse_preprocessed, parse_source
from .preprocess import INCLUDE_DIR, preprocess_file, preprocess_text


def load_program(
    path: str,
    include_dirs: Sequence[str] = (),
    defines: Mapping[str, str] | None = None,
    include_roots: Sequence[str] | None = None,
) -> CheckedProgram:
    """Preprocess, parse and check the P4 program in ``path``. With `include_roots`, an
    #include may read only files under those folders (or the bundled v1model.p4)."""
    sink = DiagnosticSink()
    roots = None if include_roots is None else tuple(include_roots)
    pp = preprocess_file(str(path), tuple(include_dirs), dict(defines or {}), sink, roots)
    prog = parse_preprocessed(pp, sink)
    return check_program(prog, sink)


def check_source(
    text: str,
    filename: str = "<input>",
    include_dirs: Sequence[str] = (),
    defines: Mapping[str, str] | None = None,
) -> CheckedProgram:
    """Like :func:`load_program` for text that is not (necessarily) on disk."""
    sink = DiagnosticSink()
    pp = preprocess_text(text, filename, tuple(include_dirs), dict(defines or {}), sink)
    prog = parse_preprocessed(pp, sink)
    return check_program(prog, sink)


__all__ = [
    "BlockInfo",
    "CheckedProgram",
    "Diagnostic",
    "INCLUDE_DIR",
    "P4Error",
    "Ref",
    "ast",
    "check_source",
    "load_program",
    "parse_source",
]
