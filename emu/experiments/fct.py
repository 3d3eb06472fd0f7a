"""FCT slowdown: a flow's completion time over its ideal on an empty fabric.

The ideal is the flow alone on the modelled fabric, store-and-forward, as the emulator
itself carries it: the message leaves the sender as RoCE MTU packets back to back (each
its payload, padded to 4 bytes, plus FRAME_OVERHEAD_BYTES of headers, preamble, FCS and
gap; the first packet's RETH and the last's immediate data too, as every flow here is a
WRITE with immediate), every hop serialises each packet at its port's rate after the
packet has fully arrived, plus its link's delay, and the responder's ACK of the last
packet (ACK_FRAME_BYTES) comes back the same way; on the fastest equal-cost path, since
the ideal is the best one path of the empty fabric allows (a flow a load balancer puts on
asym4's slow uplink shows it as a slowdown). So a lone flow's slowdown is 1, whatever its
size or the link delays (the NICs here take no processing time), when it keeps to one
path. A flow sprayed over several at once (spray, adaptive) can beat it: where the
uplinks are slower than the hosts' links (leafspine2's 50 Gbit/s under 100 Gbit/s
hosts, a lone sprayed 64 KB flow: slowdown 0.8), or by a few ns where a short
last packet overtakes the one before it on another path. The ideal stays one for every
load-balancing mode, so slowdowns compare across modes; a run's notes say when flows
beat it (`beat_ideal_note`). The measured FCT (sender post to last ACK, wire time) is
divided by the dilation. Experiment reports take these same slowdowns
(emu.experiments.points).

(The HPCC simulator's standalone FCT, base RTT + size x 8 / line rate, which this
module used before, counts one packet's serialisation twice, so a short flow's slowdown
falls below 1 where links are short: 0.77 for a 1500-byte flow without link delay.)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from emu.core.units import Dilation
from emu.roce.wire import IMMDT_BYTES, RETH_BYTES
from emu.topo import Fabric
from emu.topo.paths import host_path_ports

from .agent_configs import ACK_FRAME_BYTES, FRAME_OVERHEAD_BYTES
from .metrics import FlowResult, percentile

# (label, lowest size, size bound (exclusive)) in bytes, as the HPCC line of work bins
# flow sizes for slowdown plots (decades).
SIZE_BUCKETS: tuple[tuple[str, int, float], ...] = (
    ("<10KB", 0, 10_000), ("10KB-100KB", 10_000, 100_000),
    ("100KB-1MB", 100_000, 1_000_000), ("1MB-10MB", 1_000_000, 10_000_000),
    (">=10MB", 10_000_000, math.inf))


@dataclass(frozen=True)
class SlowdownBucket:
    bucket: str
    flows: int
    p50: float
    p95: float
    p99: float
    max: float


class IdealFct:
    """Ideal FCTs on one modelled fabric (the hops of every equal-cost path cached per
    host pair)."""

    def __init__(self, model: Fabric, mtu_bytes: int) -> None:
        self.model = model
        self.mtu = mtu_bytes
        self._links = {lk.index: lk for lk in model.links}
        self._paths: dict[tuple[str, str], list[list[tuple[float, float]]]] = {}

    def paths(self, src: str, dst: str) -> list[list[tuple[float, float]]]:
        """Each equal-cost path from host src to host dst as its hops: (rate in b/s,
        link delay in s), the sender's own link first."""
        key = (src, dst)
        if key not in self._paths:
            m, links = self.model, self._links
            first = links[m.host(src).link]
            self._paths[key] = [
                [(float(first.rate_bps), first.delay_ns / 1e9)] +
                [(float(p.rate_bps), links[p.link].delay_ns / 1e9) for p in ports]
                for ports in host_path_ports(m, src, dst)]
        return self._paths[key]

    def __call__(self, src: str, dst: str, size_bytes: int) -> float:
        n = max(1, -(-size_bytes // self.mtu))
        rest = size_bytes - (n - 1) * self.mtu
        # WRITE FIRST carries a RETH, WRITE LAST with immediate the ImmDt, WRITE ONLY
        # with immediate both; each payload is padded to 4 bytes (78 B of headers and no
        # RETH/ImmDt made a lone 64 KB flow's slowdown 1.0020).
        last = (rest + (-rest & 3) + IMMDT_BYTES + FRAME_OVERHEAD_BYTES) * 8
        if n == 1:
            first = mid = last = last + RETH_BYTES * 8
        else:
            mid = (self.mtu + (-self.mtu & 3) + FRAME_OVERHEAD_BYTES) * 8
            first = mid + RETH_BYTES * 8
        there = min(_train(hops, n, first, mid, last) for hops in self.paths(src, dst))
        back = min(sum(ACK_FRAME_BYTES * 8 / r + d for r, d in hops)
                   for hops in self.paths(dst, src))
        return there + back


def _train(hops: Sequence[tuple[float, float]], n: int, first_bits: int, mid_bits: int,
           last_bits: int) -> float:
    """When the last of `n` packets (one of first_bits, n - 2 of mid_bits, one of
    last_bits; n == 1: last_bits alone), all ready at time 0, has crossed `hops`
    store-and-forward. Tandem FIFO servers: the last packet's exit is every link delay
    plus the costliest monotone path through the (packet, hop) grid, each cell costing
    that packet's serialisation at that hop. Such a path takes the first packet over
    hops 1..a, the middle ones from hop a to hop b (each of those hops once and the
    rest of them at the slowest), the last packet over hops b..K: O(K^3), any n."""
    delays = sum(d for _r, d in hops)
    k = len(hops)
    t0 = [first_bits / r for r, _d in hops]
    tm = [mid_bits / r for r, _d in hops]
    tl = [last_bits / r for r, _d in hops]
    if n == 1:
        return sum(tl) + delays
    best = 0.0
    for a in range(k):
        head = sum(t0[:a + 1])
        for b in range(a, k):
            tail = sum(tl[b:])
            if n == 2:
                if b == a:
                    best = max(best, head + tail)
                continue
            mids = sum(tm[a:b + 1]) + (n - 3) * max(tm[a:b + 1])
            best = max(best, head + mids + tail)
    return best + delays


def with_slowdown(flows: Sequence[FlowResult], model: Fabric, dilation: Dilation,
                  mtu_bytes: int) -> list[FlowResult]:
    """`flows` with fct_nominal_s, ideal_fct_s and slowdown filled (None if not completed)."""
    ideal = IdealFct(model, mtu_bytes)
    out = []
    for f in flows:
        if f.fct_s is None or not f.completed:
            out.append(f)
            continue
        fct = dilation.modelled_s(f.fct_s)
        best = ideal(f.src, f.dst, f.size_bytes)
        out.append(dataclasses.replace(f, fct_nominal_s=fct, ideal_fct_s=best,
                                       slowdown=fct / best))
    return out


def beat_ideal_note(flows: Sequence[FlowResult]) -> list[str]:
    """A note for the run when flows finished faster than their one-path ideal (spread
    over several paths at once): why their slowdown is below 1."""
    below = [f.slowdown for f in flows if f.slowdown is not None and f.slowdown < 1 - 1e-6]
    if not below:
        return []
    return [f"{len(below)} flow(s) beat their ideal (slowdown down to {min(below):.3g}): "
            "the ideal carries a flow on the fastest single path, and these were spread "
            "over several at once (uplinks slower than the hosts' links, or a short last "
            "packet overtaking on another path)"]


def median_slowdown(flows: Sequence[FlowResult]) -> float | None:
    """The completed flows' median slowdown (None without any)."""
    xs = [f.slowdown for f in flows if f.slowdown is not None]
    return percentile(xs, 50) if xs else None


def size_bucket(size_bytes: int) -> str:
    """The label of the SIZE_BUCKETS bucket holding a flow of `size_bytes`."""
    return next(label for label, lo, hi in SIZE_BUCKETS if lo <= size_bytes < hi)


def slowdown_buckets(flows: Sequence[FlowResult]) -> list[SlowdownBucket]:
    """Slowdown percentiles per flow-size bucket (buckets without a completed flow left out)."""
    out = []
    for label, lo, hi in SIZE_BUCKETS:
        vals = [f.slowdown for f in flows if f.slowdown is not None and lo <= f.size_bytes < hi]
        if vals:
            out.append(SlowdownBucket(label, len(vals), percentile(vals, 50),
                                      percentile(vals, 95), percentile(vals, 99), max(vals)))
    return out
