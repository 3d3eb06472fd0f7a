"""A console that prints nothing, for runs whose summary a test reads instead."""

from __future__ import annotations


class QuietConsole:
    def print(self, *_a: object, **_k: object) -> None:
        pass
