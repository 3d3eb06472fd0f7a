"""ECMP polarization on fattree4 (experiments/ecmp-polarization.yaml).

Claim: with one hash seed on every switch, the aggregation switch's choice repeats the
edge switch's, so an edge switch's flows reach only 2 of the 4 cores; per-switch seeds
reach all 4. Measured on the uplinks of pod 1's aggregation switches, which carry only
edge p1e1's flows (no other host of pod 1 takes part).
"""

from __future__ import annotations

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.workloads import WorkloadParams

from .common import run, suite

pytestmark = pytest.mark.timeout(300)


def cores_reached(lb_seed: int | None, seed: int) -> tuple[set[str], bool]:
    base = suite("ecmp-polarization")["base"]
    wl = WorkloadParams("alltoall", message_bytes=14 * 1024, hosts=tuple(base["hosts"]),
                        seed=seed)
    plan, s = run(RunConfig(topo="fattree4", cc="none", lb_seed=lb_seed, workload=wl))
    fabric = plan.fabric
    cores = set()
    for u in s.uplinks:
        if u.switch in ("p1a1", "p1a2"):
            sw = fabric.switch(u.switch)
            cores |= {sw.port(p).peer.node for p, b in u.tx_bytes if b > 0}
    return cores, s.ok


@pytest.mark.parametrize("seed", [1, 2])
def test_one_seed_everywhere_polarizes_per_switch_seeds_do_not(seed: int) -> None:
    same, ok1 = cores_reached(7, seed)
    own, ok2 = cores_reached(None, seed)
    print(f"workload seed {seed}: cores reached from p1e1: same seed {sorted(same)}, "
          f"per-switch {sorted(own)}")
    assert ok1 and ok2
    assert len(same) == 2
    assert own == {"c1", "c2", "c3", "c4"}
