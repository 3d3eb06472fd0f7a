"""Receiver reorder buffer for selective repeat: out-of-order packets wait here.

Positions are absolute sequence numbers (unbounded ints, PSN = (start + seq) mod 2^24),
so PSN wrap-around never reaches this module. Occupancy is also kept as an int bitmap
relative to the expected sequence number, which is exactly the SACK bitmap.
"""

from __future__ import annotations

from typing import Any


class ReorderBuffer:
    __slots__ = ("capacity", "slots", "bits", "hwm")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("reorder buffer capacity must be >= 1")
        self.capacity = capacity
        self.slots: dict[int, Any] = {}
        self.bits = 0  # bit i: seq (expected + i) is held
        self.hwm = 0

    def __len__(self) -> int:
        return len(self.slots)

    def put(self, seq: int, offset: int, item: Any) -> bool:
        """Hold `item` for seq = expected + offset (1 <= offset < capacity); False if held."""
        bit = 1 << offset
        if self.bits & bit:
            return False
        self.bits |= bit
        self.slots[seq] = item
        n = len(self.slots)
        if n > self.hwm:
            self.hwm = n
        return True

    def holds(self, offset: int) -> bool:
        return bool((self.bits >> offset) & 1)

    def advance(self) -> None:
        """The expected sequence number moved up by one."""
        self.bits >>= 1

    def pop(self, seq: int) -> Any:
        """Take the item for the (new) expected seq if held, else None."""
        if self.bits & 1:
            return self.slots.pop(seq)
        return None

    def sack_bitmap(self) -> bytes:
        bits = self.bits
        return bits.to_bytes((bits.bit_length() + 7) >> 3, "little") if bits else b""
