"""Indented Python source buffer with capture, used by the lowering pass."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Emitter:
    """Lines of Python source; `indent()` nests, `block(header)` is a header line and its
    nested body, `capture()` diverts lines to a side list."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

    @contextmanager
    def indent(self) -> Iterator[None]:
        self.level += 1
        mark = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == mark:
                self.lines.append("    " * self.level + "pass")
            self.level -= 1

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """The line `header` (`def ...:`, `if ...:`) and, one level in, what the body emits."""
        self.line(header)
        with self.indent():
            yield

    @contextmanager
    def capture(self) -> Iterator[list[str]]:
        """Collect the lines emitted inside the block (at the current level) separately."""
        saved = self.lines
        buf: list[str] = []
        self.lines = buf
        try:
            yield buf
        finally:
            self.lines = saved

    def extend(self, lines: list[str]) -> None:
        self.lines.extend(lines)

    def reindent(self, lines: list[str], extra: int) -> None:
        pad = "    " * extra
        self.lines.extend(pad + ln for ln in lines)

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"
