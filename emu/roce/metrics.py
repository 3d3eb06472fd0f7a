"""Counters and histograms of the host stack (plain objects, cheap to update)."""

from __future__ import annotations

import math
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


class LagHistogram:
    """Counts of non-negative values (us) in quarter-octave buckets: bucket 0 holds 0,
    bucket b >= 1 holds [2^((b-1)/4), 2^(b/4)); a quantile's upper bound is within 19%
    and never above the largest value added."""

    __slots__ = ("buckets", "count", "max")

    SUB = 4
    SIZE = 4 * 32

    def __init__(self) -> None:
        self.buckets: list[int] = [0] * self.SIZE
        self.count = 0
        self.max = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        if value > self.max:
            self.max = value
        if value < 1:
            self.buckets[0] += 1
            return
        b = int(math.log2(value) * self.SUB) + 1
        self.buckets[b if b < self.SIZE else self.SIZE - 1] += 1

    def total(self) -> int:
        return self.count

    def quantile_upper(self, q: float) -> float:
        """An upper bound of the q-quantile (0..1): the top of the bucket holding it."""
        if self.count == 0:
            return 0.0
        rank = q * self.count
        seen = 0
        for b, k in enumerate(self.buckets):
            seen += k
            if seen >= rank:
                # A bucket's top can lie above every value in it: the report showed a
                # p99 above its max (2.4 ms vs 2.1 ms).
                return 0.0 if b == 0 else min(round(2 ** (b / self.SUB), 1), self.max)
        return self.max


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
    # The retry count (QpParams.retry_cnt) ran out: the QP went to the error state
    # (mlx5's req_transport_retries_exceeded), and its messages failed or were flushed.
    transport_retries_exceeded: int = 0
    msgs_failed: int = 0


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
    # A PSN arriving for the first time after a higher one left a hole: `late_pkts` if it is
    # the original transmission (reordered on the way), `lost_gaps` if a retransmission
    # filled the hole (the original was lost). Losses alone are never counted as late.
    late_pkts: int = 0
    lost_gaps: int = 0
    # First arrivals by how far below the highest PSN received they were: 0 = in order
    # (or a new highest), >= 1 = late packets only.
    reorder_distance: Pow2Histogram = field(default_factory=Pow2Histogram)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reorder_distance"] = self.reorder_distance.as_dict()
        return d


class DropCounter(Counter[str]):
    """Frames dropped by the NIC before reaching a QP, per reason."""
