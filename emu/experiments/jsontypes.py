"""JSON-shaped values: what the results files hold and what the agents and switches
report (read-only views, so any mapping or sequence of JSON values qualifies)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

JsonScalar = str | int | float | bool | None
JsonValue = JsonScalar | Sequence["JsonValue"] | Mapping[str, "JsonValue"]
JsonDict = dict[str, JsonValue]

# One JSON line an agent wrote (emu.roce.agent: `flow`, `summary` and `progress` rows).
# Read from files a killed or older agent may have left incomplete, so its fields are
# read through the accessors below: a missing or mistyped field is absent, never a crash.
Row = Mapping[str, JsonValue]


def number(v: JsonValue) -> float | None:
    """`v` as a number, None when it is not one."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def num(row: Row, key: str) -> float | None:
    """`row[key]` as a number, None when absent or not a number."""
    return number(row.get(key))


def count(row: Row, key: str) -> int:
    """`row[key]` as an integer counter, 0 when absent or not a number."""
    v = row.get(key)
    if isinstance(v, int) and not isinstance(v, bool):
        return v  # exact, whatever its size
    f = number(v)
    return 0 if f is None else int(f)


def sub(row: Row, key: str) -> Row:
    """The mapping `row[key]`, empty when absent or not a mapping."""
    v = row.get(key)
    return v if isinstance(v, Mapping) else {}
