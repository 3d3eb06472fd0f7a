"""C-style preprocessor for P4 sources, with a source map.

P4 programs rely on the C preprocessor (#include <core.p4>, #define, #ifdef,
V1MODEL_VERSION).  p4c runs cpp and then reads #line markers; we instead keep
a :class:`SourceMap` from every output (line, column) back to the original
file:line:col, so diagnostics name what the user wrote, including tokens that
came out of a macro expansion (mapped to the macro invocation) or out of a
macro argument (mapped to where the argument was written).

Supported: #include <..> / "..", #pragma once, #define (object-like and
function-like, # and ##, no recursive self-expansion), #undef, #if / #elif
with integer constant expressions and defined(X), #ifdef, #ifndef, #else,
#endif, #error, #warning, backslash line continuations, comments.

Layout: base.py (state, main loop, lines and tokens), directives.py, macros.py,
conditions.py (#if expressions), model.py (tokens, macros, source map).
"""

from __future__ import annotations

from ..diagnostics import DiagnosticSink, P4Error
from .directives import INCLUDE_DIR, DirectiveMixin
from .macros import MacroMixin
from .model import Macro, PPToken, Preprocessed, SourceMap


class Preprocessor(DirectiveMixin, MacroMixin):
    """The C preprocessor: directives and macro expansion over PreprocessorBase."""


def preprocess_file(
    path: str,
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str] | None = None,
    sink: DiagnosticSink | None = None,
    include_roots: tuple[str, ...] | list[str] | None = None,
) -> Preprocessed:
    return Preprocessor(include_dirs, defines, sink, include_roots).run_file(path)


def preprocess_text(
    text: str,
    filename: str,
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str] | None = None,
    sink: DiagnosticSink | None = None,
) -> Preprocessed:
    return Preprocessor(include_dirs, defines, sink).run_text(text, filename)


__all__ = ["Macro", "PPToken", "Preprocessor", "Preprocessed", "SourceMap", "preprocess_file", "preprocess_text", "P4Error", "INCLUDE_DIR"]
