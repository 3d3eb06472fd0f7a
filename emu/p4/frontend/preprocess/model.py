"""Preprocessor tokens, macros, the output and its source map."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from ..ast import Pos

_TOKEN_RE = re.compile(
    r'(?P<ws>[ \t\f\r\v]+)|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>[0-9][A-Za-z0-9_]*)'
    r'|(?P<str>"(?:\\.|[^"\\])*"?)|(?P<paste>##)|(?P<punct>.)'
)


@dataclass(frozen=True)
class PPToken:
    text: str
    kind: str  # "ws" | "id" | "num" | "str" | "paste" | "punct"
    pos: Pos
    hide: frozenset[str] = frozenset()


@dataclass
class Macro:
    name: str
    body: list[PPToken]
    params: list[str] | None = None  # None: object-like
    variadic: bool = False
    pos: Pos | None = None


@dataclass
class SourceMap:
    """Output line (1-based) -> sorted anchors (out_col, Pos) of its tokens."""

    lines: list[list[tuple[int, Pos]]] = field(default_factory=list)

    def lookup(self, line: int, col: int) -> Pos:
        if line < 1 or line > len(self.lines) or not self.lines[line - 1]:
            # Past the end (EOF errors): use the last mapped position.
            for anchors in reversed(self.lines[: max(line, 0)] or self.lines):
                if anchors:
                    c, p = anchors[-1]
                    return Pos(p.file, p.line, p.col + 1)
            return Pos("<input>", line, col)
        anchors = self.lines[line - 1]
        i = bisect.bisect_right(anchors, col, key=lambda a: a[0]) - 1
        if i < 0:
            i = 0
        out_col, p = anchors[i]
        return Pos(p.file, p.line, p.col + max(col - out_col, 0))


@dataclass
class Preprocessed:
    text: str
    source_map: SourceMap
    files: list[str]
    macros: dict[str, Macro]
