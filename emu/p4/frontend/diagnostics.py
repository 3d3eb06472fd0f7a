"""Compiler diagnostics in gcc's form.

    file:line:col: error: message
        source line
             ^

A :class:`P4Error` carries every :class:`Diagnostic` collected before the
front end stopped; ``str(err)`` renders them all.  Source lines are read
through a :class:`SourceCache` so that diagnostics also work for text that
never existed on disk (``parse_source``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .ast import Pos


class SourceCache:
    """File name -> text, filled by the preprocessor as it reads files."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def add(self, filename: str, text: str) -> None:
        self.texts[filename] = text

    def line(self, filename: str, line: int) -> str | None:
        text = self.texts.get(filename)
        if text is None:
            if not os.path.isfile(filename):
                return None
            try:
                with open(filename, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                return None
            self.texts[filename] = text
        lines = text.split("\n")
        if 1 <= line <= len(lines):
            return lines[line - 1].rstrip("\r")
        return None


@dataclass
class Diagnostic:
    file: str
    line: int
    col: int
    severity: str  # "error" | "warning" | "note"
    message: str
    source_line: str | None = None

    @property
    def pos(self) -> Pos:
        return Pos(self.file, self.line, self.col)

    def render(self) -> str:
        head = f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"
        if self.source_line is None:
            return head
        # Keep tabs in the caret line so the caret lines up under a tabbed source line.
        prefix = "".join(c if c == "\t" else " " for c in self.source_line[: max(self.col - 1, 0)])
        return f"{head}\n{self.source_line}\n{prefix}^"

    def __str__(self) -> str:
        return self.render()


class P4Error(Exception):
    """Raised by the front end; ``diagnostics`` lists every error found."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.render() for d in diagnostics))


@dataclass
class DiagnosticSink:
    """Collects diagnostics so several errors can be reported at once."""

    sources: SourceCache = field(default_factory=SourceCache)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    max_errors: int = 50

    def make(self, pos: Pos, message: str, severity: str = "error") -> Diagnostic:
        return Diagnostic(
            pos.file, pos.line, pos.col, severity, message, self.sources.line(pos.file, pos.line)
        )

    def error(self, pos: Pos, message: str) -> None:
        if any(d.pos == pos and d.message == message for d in self.diagnostics):
            return
        self.diagnostics.append(self.make(pos, message))
        if self.error_count >= self.max_errors:
            self.raise_if_errors()

    def warning(self, pos: Pos, message: str) -> None:
        self.diagnostics.append(self.make(pos, message, "warning"))

    @property
    def error_count(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "error")

    def raise_if_errors(self) -> None:
        if self.error_count:
            raise P4Error([d for d in self.diagnostics if d.severity == "error"])

    def fail(self, pos: Pos, message: str) -> P4Error:
        """An exception for an error that stops the current phase immediately."""
        self.error(pos, message)
        return P4Error([d for d in self.diagnostics if d.severity == "error"])
