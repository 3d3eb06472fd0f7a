"""Loss recovery under packet spraying over unequal paths.

Published behaviour: go-back-N RoCE NICs treat every reordered packet as a loss (a NAK
and a resend of everything after it), which is why spraying needs a reordering receiver
(IRN, Mittal et al., SIGCOMM 2018; the spraying results of the Ultra Ethernet and
production reports); selective repeat resends only holes once `sr_dupthresh` higher
PSNs were selectively acknowledged, so reordering shallower than that threshold costs
no retransmission.

Scenario: 2 leaves x 4 spines at 100 Gb/s, one of leaf1's four uplinks at half rate
over a longer cable (1.5 us against 1 us); one 4 MB flow h1 -> h3 sprayed per packet
(fabric.p4 `spray`), no congestion control, queues deep enough that nothing is dropped:
every retransmission is spurious. Every fourth packet takes the slow path and arrives
a few packets late.
"""

from __future__ import annotations

import pytest

from emu.control import LbMode
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.summary import RunSummary
from emu.experiments.workloads import WorkloadParams
from emu.topo import loads_topology

pytestmark = pytest.mark.timeout(600)

ASYM = """
name: asym4
description: 2 leaves x 4 spines, one of leaf1's uplinks slower and longer
defaults: {rate: 100Gbps, delay: 1us, queue_depth_pkts: 512, mtu: 9000}
switches:
  - {name: leaf1, role: leaf}
  - {name: leaf2, role: leaf}
  - {name: spine1, role: spine}
  - {name: spine2, role: spine}
  - {name: spine3, role: spine}
  - {name: spine4, role: spine}
hosts: [{name: h1}, {name: h2}, {name: h3}, {name: h4}]
links:
  - {a: h1, b: leaf1}
  - {a: h2, b: leaf1}
  - {a: h3, b: leaf2}
  - {a: h4, b: leaf2}
  - {a: leaf1, b: spine1}
  - {a: leaf1, b: spine2}
  - {a: leaf1, b: spine3}
  - {a: leaf1, b: spine4, rate: 50Gbps, delay: 1500ns}
  - {a: leaf2, b: spine1}
  - {a: leaf2, b: spine2}
  - {a: leaf2, b: spine3}
  - {a: leaf2, b: spine4}
"""


def run(recovery: str) -> RunSummary:
    from emu.experiments.virtual import run_virtual

    model = loads_topology(ASYM, "<asym4>")
    wl = WorkloadParams("incast", message_bytes=4 * 1024 * 1024, incast_senders=1,
                        incast_target="h3")
    cfg = RunConfig(topo="asym4", lb=LbMode.SPRAY, cc="none", recovery=recovery,  # type: ignore[arg-type]
                    virtual=True, workload=wl, dilation=1000, progress=False)
    return run_virtual(plan_run(cfg, model), write=False)


def max_reorder_depth(s: RunSummary) -> int:
    """The deepest late arrival, from the receiver's power-of-two histogram: a bucket
    "lo-hi" (or "n") bounds the distance from above by hi."""
    deepest = 0
    for bucket, n in s.hosts.reorder_distance.items():
        if n:
            deepest = max(deepest, int(bucket.split("-")[-1]))
    return deepest


def test_selective_repeat_absorbs_spraying_that_go_back_n_resends() -> None:
    sr, gbn = run("sr"), run("gbn")
    assert sr.ok and gbn.ok  # exactly-once, byte-identical delivery in both
    for s in (sr, gbn):
        assert s.fabric.queue_drops == 0 and s.hosts.nic_drops == 0  # all retx spurious
    depth = max_reorder_depth(sr)
    print(f"reorder distance (sr): {sr.hosts.reorder_distance}, late {sr.hosts.late_pkts}; "
          f"retx sr {sr.hosts.retx_pkts}, gbn {gbn.hosts.retx_pkts}")
    assert sr.hosts.late_pkts > 0, "the slow uplink must reorder"
    dupthresh = 8  # emu.roce QpConfig.sr_dupthresh default, what the agents use
    if depth < dupthresh:
        assert sr.hosts.retx_pkts == 0
    else:
        assert sr.hosts.retx_pkts <= 0.10 * gbn.hosts.retx_pkts
    assert gbn.hosts.retx_pkts > 0 and gbn.hosts.timeouts == 0
