"""Runtime support that generated pipeline code calls into.

Generated modules (see emu.p4.codegen) are exec'd in a namespace holding these names.
Values: bit<N> and int<N> are Python ints (int<N> stored signed), bool is bool, error and
enum values are ints. A header is an instance of a generated slotted class with `_v`
(validity); header stacks are `Stack` objects; control flow uses the exceptions below.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Callable
from typing import Any, Final

from emu.p4.v1model.hashes import pack_fields

# Loop iterations a packet may make, parser state loops and `for` loops together:
# enough for any loop that ends (a parser loop that extracts ends within the frame's
# bytes; two nested loops over bit<8> take 65,792), so that a loop that does not end
# cannot hang the switch. docs/v1model.md, "Loops".
LOOP_LIMIT: Final = 1 << 20


# Generated code packs (value, width) pairs (MSB first, zero-padded to a byte) as the
# hash inputs are packed.
pack = pack_fields


class ParserError(Exception):
    """A parser error (verify, short packet, no select match, stack overflow).

    `code` is the error's index in CheckedProgram.errors, or None for an explicit
    `transition reject` (parser_error is then left as it was).
    """

    __slots__ = ("code",)

    def __init__(self, code: int | None) -> None:
        self.code = code


class ExitBlock(Exception):
    """`exit`: leaves the current top-level control (out parameters are kept)."""


class AssertFailed(Exception):
    """A failed v1model assert/assume; the switch logs it and drops the packet."""


class LoopLimit(Exception):
    """A `for` loop ran past the packet's LOOP_LIMIT: the switch drops the packet as a
    pipeline error (a parser loop ends with error.ParserTimeout instead)."""

    def __init__(self) -> None:
        super().__init__(f"more than {LOOP_LIMIT:,} loop iterations for one packet")


class Pkt:
    """The packet_in cursor: buffer, byte offset and length."""

    __slots__ = ("b", "o", "n")

    def __init__(self, b: bytes) -> None:
        self.b = b
        self.o = 0
        self.n = len(b)


class Stack:
    """A header stack: `a` holds the elements, `n` is nextIndex."""

    __slots__ = ("a", "n")

    def __init__(self, a: list[Any], n: int = 0) -> None:
        self.a = a
        self.n = n

    def copy(self) -> Stack:
        return Stack([h.copy() for h in self.a], self.n)

    def set(self, o: Stack) -> None:
        """In-place assignment (the object keeps its identity)."""
        self.a = o.a
        self.n = o.n

    def push_front(self, k: int, make: Callable[[], Any]) -> None:
        size = len(self.a)
        k = min(k, size)
        self.a = [make() for _ in range(k)] + self.a[: size - k]
        self.n = min(self.n + k, size)

    def pop_front(self, k: int, make: Callable[[], Any]) -> None:
        size = len(self.a)
        k = min(k, size)
        self.a = self.a[k:] + [make() for _ in range(k)]
        self.n = max(self.n - k, 0)


def stack_next(s: Stack, code: int) -> Any:
    """`s.next` in a parser: the element at nextIndex, StackOutOfBounds past the end."""
    if s.n >= len(s.a):
        raise ParserError(code)
    return s.a[s.n]


def stack_last(s: Stack, code: int) -> Any:
    if s.n == 0:
        raise ParserError(code)
    return s.a[s.n - 1]


def stack_get(s: Stack, i: int) -> Any:
    """`s[i]` with a run-time index; out of range reads a scratch invalid element
    (BMv2 reports an error and carries on)."""
    a = s.a
    if 0 <= i < len(a):
        return a[i]
    return a[-1].__class__()


def sat_add(a: int, b: int, lo: int, hi: int) -> int:
    v = a + b
    return lo if v < lo else hi if v > hi else v


class ValueSet:
    """A parser value_set: entries (value, mask) tuples per key, configured at run time."""

    __slots__ = ("name", "size", "entries", "widths")

    def __init__(self, name: str, size: int, widths: tuple[int, ...]) -> None:
        self.name = name
        self.size = size
        self.widths = widths
        self.entries: list[tuple[tuple[int, int], ...]] = []

    def add(self, values: tuple[int, ...], masks: tuple[int, ...] | None = None) -> None:
        if len(self.entries) >= self.size:
            raise ValueError(f"value_set {self.name} is full ({self.size})")
        if masks is None:
            masks = tuple((1 << w) - 1 for w in self.widths)
        self.entries.append(tuple(zip(values, masks, strict=True)))

    def clear(self) -> None:
        self.entries.clear()

    def match(self, key: tuple[int, ...]) -> bool:
        for ent in self.entries:
            for k, (v, m) in zip(key, ent, strict=True):
                if k & m != v & m:
                    break
            else:
                return True
        return False


def _crc16_tables() -> tuple[list[int], list[int]]:
    """CRC-16/ARC (reflected poly 0xA001) tables: one per byte and one per 16-bit word."""
    t8 = []
    for i in range(256):
        r = i
        for _ in range(8):
            r = (r >> 1) ^ 0xA001 if r & 1 else r >> 1
        t8.append(r)
    return t8, []


_T8, _ = _crc16_tables()
_T16: list[int] = []


def _build_t16() -> list[int]:
    # reg' after bytes (lo, hi) from reg 0: two table steps; CRC is linear, so
    # crc(reg ^ word) = T16[(reg ^ word) & 0xFFFF] for a 16-bit register.
    t = [0] * 65536
    t8 = _T8
    for w in range(65536):
        r = w
        r = (r >> 8) ^ t8[r & 0xFF]
        r = (r >> 8) ^ t8[r & 0xFF]
        t[w] = r
    return t


def crc16(data: bytes) -> int:
    """CRC-16/ARC two bytes per step (same values as emu.p4.v1model.hashes.crc16)."""
    global _T16
    t = _T16
    if not t:
        t = _T16 = _build_t16()
    reg = 0
    n = len(data)
    i = 0
    if n >= 2:
        for w in _struct.unpack_from(f"<{n >> 1}H", data):
            reg = t[reg ^ w]
        i = n & ~1
    if i < n:
        t8 = _T8
        reg = (reg >> 8) ^ t8[(reg ^ data[i]) & 0xFF]
    return reg


def cached(fn: Callable[[bytes], int], limit: int = 1 << 16) -> Callable[[bytes], int]:
    """Memoise a pure hash over its input bytes (flows repeat the same 5-tuple); the
    memo is dropped when it reaches `limit` entries."""
    memo: dict[bytes, int] = {}
    get = memo.get

    def h(data: bytes) -> int:
        v = get(data)
        if v is None:
            if len(memo) >= limit:
                memo.clear()
            v = memo[data] = fn(data)
        return v

    return h
