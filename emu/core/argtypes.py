"""argparse types for numeric and list options: a bad value becomes a one-line
`argument --X: ...` error instead of a traceback or a run with a nonsensical setting."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _bounded(text: str, bound: str, within: Callable[[float], bool]) -> float:
    """float(text) if finite (float() also takes 'nan' and 'inf') and `within`; `bound`
    says which numbers are (for the message)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or not within(value):
        raise argparse.ArgumentTypeError(f"must be a finite number {bound}, got {text!r}")
    return value


def positive(text: str) -> float:
    """A finite number > 0."""
    return _bounded(text, "> 0", lambda v: v > 0)


def non_negative(text: str) -> float:
    """A finite number >= 0."""
    return _bounded(text, ">= 0", lambda v: v >= 0)


def integer(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """An int in low..high; `why` says where the bounds come from."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be {low}..{high}{f' ({why})' if why else ''}, got {value}")
        return value

    return convert


def one_of_each(choices: tuple[str, ...]) -> Callable[[str], list[str]]:
    """'a,b' -> ['a', 'b'], each one of `choices`."""
    def convert(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        bad = [n for n in names if n not in choices]
        if bad or not names:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {', '.join(choices)}, got {text!r}")
        return names

    return convert


def integers(low: int, high: int, why: str = "") -> Callable[[str], list[int]]:
    """'1,2,3' -> [1, 2, 3], each in low..high, at least one, none twice."""
    one = integer(low, high, why)

    def convert(text: str) -> list[int]:
        values = [one(x.strip()) for x in text.split(",") if x.strip()]
        if not values or len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(
                f"expected distinct comma-separated integers, got {text!r}")
        return values

    return convert
