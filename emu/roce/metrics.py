"""Counters and histograms of the host stack (plain objects, cheap to update)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any


class Pow2Histogram:
    """Counts of values in buckets [0], [1], [2,3], [4,7], ... (bucket = bit_length)."""

    __slots__ = ("buckets",)

    def __init__(self) -> None:
        self.buckets: list[int] = [0] * 26

    def add(self, value: int) -> None:
        b = value.bit_length() if value > 0 else 0
        self.buckets[b if b < 26 else 25] += 1

    def total(self) -> int:
        return sum(self.buckets)

    def as_dict(self) -> dict[str, int]:
        out = {}
        for b, n in enumerate(self.buckets):
            if n:
                lo = 0 if b == 0 else 1 << (b - 1)
                hi = 0 if b == 0 else (1 << b) - 1
                out[f"{lo}-{hi}" if hi != lo else str(lo)] = n
        return out


@dataclass
class RequesterStats:
    data_pkts_sent: int = 0
    data_bytes_sent: int = 0  # payload bytes, including retransmissions
    retx_pkts: int = 0
    timeouts: int = 0
    acks_rcvd: int = 0
    naks_rcvd: int = 0
    sacks_rcvd: int = 0
    stale_acks: int = 0
    cnps_rcvd: int = 0
    repaths: int = 0
    msgs_completed: int = 0


@dataclass
class ResponderStats:
    data_pkts_rcvd: int = 0
    payload_bytes_delivered: int = 0
    msgs_delivered: int = 0
    acks_sent: int = 0
    naks_sent: int = 0
    cnps_sent: int = 0
    ecn_marked_rcvd: int = 0
    duplicates: int = 0
    out_of_sequence: int = 0  # go-back-N: ahead of the expected PSN, dropped
    outside_window: int = 0  # selective repeat: beyond the reorder buffer, dropped
    bad_opcode_sequence: int = 0
    reorder_hwm: int = 0
    reorder_distance: Pow2Histogram = field(default_factory=Pow2Histogram)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reorder_distance"] = self.reorder_distance.as_dict()
        return d


class DropCounter(Counter[str]):
    """Frames dropped by the NIC before reaching a QP, per reason."""
