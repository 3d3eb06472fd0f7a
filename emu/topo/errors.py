"""Topology errors carrying a source position (`file:line:col: message`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mark:
    """A position in a topology file; line and col are 1-based (0 = unknown)."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a topology."""

    mark: Mark
    message: str

    def __str__(self) -> str:
        return f"{self.mark}: {self.message}"


class TopologyError(Exception):
    """One or more problems in a topology.

    `file`, `line`, `col` and `message` describe the first problem; `diagnostics`
    holds all of them (validation keeps going so a user sees every problem at once).
    """

    def __init__(self, diagnostics: Iterable[Diagnostic] | Diagnostic) -> None:
        diags = [diagnostics] if isinstance(diagnostics, Diagnostic) else list(diagnostics)
        if not diags:
            raise ValueError("TopologyError needs at least one diagnostic")
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diags)
        super().__init__(str(self))

    @classmethod
    def at(cls, mark: Mark, message: str) -> TopologyError:
        return cls(Diagnostic(mark, message))

    @property
    def file(self) -> str:
        return self.diagnostics[0].mark.file

    @property
    def line(self) -> int:
        return self.diagnostics[0].mark.line

    @property
    def col(self) -> int:
        return self.diagnostics[0].mark.col

    @property
    def message(self) -> str:
        return self.diagnostics[0].message

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)

    def report(self) -> str:
        """What the CLI prints: every problem, then how many there are."""
        n = len(self.diagnostics)
        return f"{self}\n{n} error{'s' if n != 1 else ''}"


class Collector:
    """Accumulates diagnostics; `raise_if_any` turns them into one TopologyError."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def error(self, mark: Mark, message: str) -> None:
        self.diagnostics.append(Diagnostic(mark, message))

    def __bool__(self) -> bool:
        return bool(self.diagnostics)

    def raise_if_any(self) -> None:
        if self.diagnostics:
            # Sort by position so the report reads top to bottom like the file.
            # dict.fromkeys: one report per problem even if two checks find it.
            unique = list(dict.fromkeys(self.diagnostics))
            ordered = sorted(unique, key=lambda d: (d.mark.file, d.mark.line, d.mark.col))
            raise TopologyError(ordered)
