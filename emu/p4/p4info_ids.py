"""P4Runtime ids for P4Info objects, assigned the way p4c does.

From p4lang/p4c control-plane/p4RuntimeSymbolTable.{h,cpp} and p4runtime's P4Ids enum
(proto/p4/config/v1/p4info.proto):

- id = (resource-type prefix << 24) | (24 low bits of a hash of the fully qualified name);
  the hash is Jenkins' one-at-a-time over the name's bytes.
- An `@id(N)` annotation wins. If N has no prefix byte, the type's prefix is OR-ed in;
  a different prefix byte is an error, and so is one @id used twice.
- Names without @id get ids after all @id ones are known, in sorted name order (p4c keeps
  them in a std::map), so collisions resolve deterministically: on a collision the 32-bit
  hash value is incremented (linear probing on the hash, not on the id) until the id is
  free. Ids are unique across all types (one set for everything).
- Aliases (P4Info `alias`) are the shortest unique dot-separated suffix of the name among
  all symbols of all types.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

__all__ = [
    "IdAllocator",
    "P4IdError",
    "P4IdPrefix",
    "assign_ids",
    "jenkins_one_at_a_time",
    "shortest_unique_suffixes",
]


class P4IdPrefix(enum.IntEnum):
    """p4.config.v1.P4Ids.Prefix: the id's top byte per resource type."""

    UNSPECIFIED = 0x00
    ACTION = 0x01
    TABLE = 0x02
    VALUE_SET = 0x03
    CONTROLLER_HEADER = 0x04
    PSA_EXTERNS_START = 0x10
    ACTION_PROFILE = 0x11
    COUNTER = 0x12
    DIRECT_COUNTER = 0x13
    METER = 0x14
    DIRECT_METER = 0x15
    REGISTER = 0x16
    DIGEST = 0x17
    OTHER_EXTERNS_START = 0x80
    MAX = 0xFF


class P4IdError(ValueError):
    """An @id annotation p4c would reject."""


_M32 = 0xFFFFFFFF


def jenkins_one_at_a_time(data: str | bytes) -> int:
    """Bob Jenkins' one-at-a-time hash (32 bits), as p4c's jenkinsOneAtATimeHash."""
    if isinstance(data, str):
        data = data.encode()
    h = 0
    for b in data:
        h = (h + b) & _M32
        h = (h + (h << 10)) & _M32
        h ^= h >> 6
    h = (h + (h << 3)) & _M32
    h ^= h >> 11
    return (h + (h << 15)) & _M32


class IdAllocator:
    """Collect symbols of all types, then `assign()` ids to all of them at once."""

    def __init__(self) -> None:
        self._symbols: dict[int, dict[str, int | None]] = {}
        self._assigned: set[int] = set()

    def add(self, prefix: int, name: str, id_annotation: int | None = None) -> None:
        """Add a symbol; a repeated (prefix, name) is ignored, as p4c does."""
        table = self._symbols.setdefault(int(prefix), {})
        if name in table:
            return
        if id_annotation is None:
            table[name] = None
            return
        if not 0 <= id_annotation <= _M32:
            raise P4IdError(f"{name}: @id {id_annotation} is not a 32-bit id")
        type_prefix = (int(prefix) & 0xFF) << 24
        top = id_annotation & 0xFF000000
        if top and top != type_prefix:
            raise P4IdError(f"{name}: @id {id_annotation:#x} has the wrong 8-bit prefix")
        full = id_annotation | type_prefix
        if full in self._assigned:
            raise P4IdError(f"@id {full:#x} is assigned to multiple declarations")
        self._assigned.add(full)
        table[name] = full

    def assign(self) -> dict[int, dict[str, int]]:
        """Ids for every symbol, as {prefix: {name: id}}; may be called again after add()."""
        for prefix in sorted(self._symbols):
            table = self._symbols[prefix]
            type_bits = (prefix & 0xFF) << 24
            # Sorted by bytes, as std::map<cstring> orders names (strcmp).
            for name in sorted((n for n, i in table.items() if i is None), key=str.encode):
                start = jenkins_one_at_a_time(name)
                value = start
                while True:
                    candidate = type_bits | (value & 0xFFFFFF)
                    if candidate not in self._assigned:
                        break
                    value = (value + 1) & _M32
                    if value == start:
                        raise P4IdError(f"no id left for {name}")
                self._assigned.add(candidate)
                table[name] = candidate
        return {p: {n: i for n, i in t.items() if i is not None} for p, t in self._symbols.items()}

    def id_of(self, prefix: int, name: str) -> int:
        """The id of one symbol (after assign())."""
        value = self._symbols[int(prefix)][name]
        if value is None:
            raise KeyError(f"{name}: ids not assigned yet")
        return value

    def aliases(self) -> dict[str, str]:
        """Shortest unique suffix of every symbol, over all types (P4Info alias)."""
        return shortest_unique_suffixes(n for t in self._symbols.values() for n in t)


def assign_ids(
    prefix: int, names: Iterable[str], annotations: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Ids for the names of one resource type (with optional @id values by name)."""
    alloc = IdAllocator()
    annotations = annotations or {}
    for name in annotations:
        alloc.add(prefix, name, annotations[name])
    for name in names:
        alloc.add(prefix, name)
    return alloc.assign()[int(prefix)]


def shortest_unique_suffixes(names: Iterable[str]) -> dict[str, str]:
    """name -> its shortest suffix of whole dot-separated components shared by no other name."""
    unique = list(dict.fromkeys(names))
    counts: dict[tuple[str, ...], int] = {}
    for name in unique:
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            counts[parts[-k:]] = counts.get(parts[-k:], 0) + 1
    out: dict[str, str] = {}
    for name in unique:
        parts = tuple(name.split("."))
        k = 1
        while k < len(parts) and counts[parts[-k:]] > 1:
            k += 1
        out[name] = ".".join(parts[-k:])
    return out
