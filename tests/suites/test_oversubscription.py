"""Oversubscription 2:1 against 4:1 under Poisson web-search background load
(experiments/oversubscription.yaml): FCT slowdown per flow-size bucket.

Claim: bandwidth-bound flows (>= 100 KB) slow down clearly more when the leaves' uplinks
are 4:1 oversubscribed than at 2:1 (here: mean slowdown at least 1.4x higher, for each
seed); the median small flow (< 10 KB, latency-bound) stays near 1 in both.
"""

from __future__ import annotations

from typing import Any

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.workloads import WorkloadParams

from .common import run, suite

pytestmark = pytest.mark.timeout(600)


def background(topo: str, seed: int) -> Any:
    b = suite("oversubscription")["base"]
    wl = WorkloadParams("background", background_load=0.5, size_dist=b["size_dist"],
                        size_scale=b["size_scale"], background_us=b["background_us"],
                        seed=seed)
    _plan, s = run(RunConfig(topo=topo, recovery="sr", cc="dcqcn", workload=wl))
    assert s.ok
    return s


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


@pytest.mark.parametrize("seed", [1, 2])
def test_large_flows_slow_down_more_at_4_to_1(seed: int) -> None:
    s2, s4 = background("oversub2", seed), background("oversub4", seed)
    for s in (s2, s4):
        print(s.run["topo"], [(b.bucket, b.flows, round(b.p50, 2), round(b.p99, 2))
                              for b in s.fct_slowdown])
    big = {k: mean([f.slowdown for f in s.flows if f.size_bytes >= 100_000])
           for k, s in (("2:1", s2), ("4:1", s4))}
    print(f"seed {seed}: mean slowdown of flows >= 100 KB {big}")
    assert [f.id for f in s2.flows] == [f.id for f in s4.flows]  # the same arrivals
    assert big["4:1"] >= 1.4 * big["2:1"]
    for s in (s2, s4):
        small = next(b for b in s.fct_slowdown if b.bucket == "<10KB")
        assert small.p50 < 1.3
