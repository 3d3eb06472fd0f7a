"""FCT slowdown: a flow's completion time over its ideal on an empty fabric.

ideal = size x 8 / line rate + base RTT, in modelled units, as the HPCC simulator's
standalone FCT: the line rate is the slower of the two hosts' links, the base RTT that
of the fastest equal-cost path between them (emu.experiments.agent_configs.base_rtt_s:
propagation both ways, one frame out (an MTU, or the whole flow if smaller) and one ACK
back serialised per hop). The fastest, because the ideal is the best the empty fabric
allows: a flow a load balancer puts on a slower or longer path (asym4's slow uplink)
shows it as a slowdown, never as one below 1. The measured FCT (sender post to last
ACK, wire time) is divided by the dilation. Header bytes are not in the ideal, so a
lone flow's slowdown sits slightly above 1 (about (mtu + 78) / mtu for long flows).
Experiment reports take these slowdowns as they are (emu.experiments.points).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from emu.core.units import Dilation
from emu.topo import Fabric

from .agent_configs import base_rtt_s
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
    """Ideal FCTs on one modelled fabric (base RTTs cached per host pair)."""

    def __init__(self, model: Fabric, mtu_bytes: int) -> None:
        self.model = model
        self.mtu = mtu_bytes
        rate = {lk.index: float(lk.rate_bps) for lk in model.links}
        self.rate = {h.name: rate[h.link] for h in model.hosts}
        self.rtt: dict[tuple[str, str, int], float] = {}

    def __call__(self, src: str, dst: str, size_bytes: int) -> float:
        # A flow shorter than one MTU crosses the fabric as one smaller frame.
        frame = max(1, min(size_bytes, self.mtu))
        key = (src, dst, frame)
        if key not in self.rtt:
            self.rtt[key] = base_rtt_s(self.model, src, dst, frame, worst=False)
        return size_bytes * 8 / min(self.rate[src], self.rate[dst]) + self.rtt[key]


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


def slowdown_buckets(flows: Sequence[FlowResult]) -> list[SlowdownBucket]:
    """Slowdown percentiles per flow-size bucket (buckets without a completed flow left out)."""
    out = []
    for label, lo, hi in SIZE_BUCKETS:
        vals = [f.slowdown for f in flows if f.slowdown is not None and lo <= f.size_bytes < hi]
        if vals:
            out.append(SlowdownBucket(label, len(vals), percentile(vals, 50),
                                      percentile(vals, 95), percentile(vals, 99), max(vals)))
    return out
