"""DCQCN on a 4:1 incast (experiments/dcqcn-incast.yaml; the scenario of
emu.experiments.incast, whose published criteria tests/validation/test_incast.py checks).

Claim: DCQCN holds the bottleneck queue around the marking band without drops; without
congestion control the queue fills the buffer and tail-drops.
"""

from __future__ import annotations

from typing import Any

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.incast import IncastSpec, run_incast
from emu.experiments.workloads import WorkloadParams

from .common import run, suite

pytestmark = pytest.mark.timeout(600)


def from_suite(cc: str) -> Any:
    b = suite("dcqcn-incast")["base"]
    assert b["size"] == "3M" and b["window"] == 4096
    wl = WorkloadParams("incast", message_bytes=3 * 1024 * 1024,
                        incast_senders=b["incast_senders"], incast_target=b["incast_target"])
    return run(RunConfig(topo=b["topology"], cc=cc, recovery=b["recovery"],  # type: ignore[arg-type]
                         dcqcn_profile=b["dcqcn_profile"], ecn_kmin_pkts=b["ecn_kmin_pkts"],
                         ecn_kmax_pkts=b["ecn_kmax_pkts"], ecn_pmax=b["ecn_pmax"],
                         mtu_bytes=b["mtu_bytes"], window_pkts=b["window"],
                         dilation=b["dilation"], workload=wl))


def receiver_queue(s: Any, plan: Any) -> Any:
    h = plan.fabric.host(plan.config.workload.incast_target)
    (q,) = [q for q in s.queues if (q.switch, q.port) == (h.switch, h.switch_port)]
    return q


def test_dcqcn_holds_the_marking_band_no_cc_fills_the_buffer() -> None:
    plan, dc = from_suite("dcqcn")
    _plan, no = from_suite("none")
    qd, qn = receiver_queue(dc, plan), receiver_queue(no, plan)
    print(f"dcqcn: queue p90 {qd.p90_pkts:.0f} max {qd.max_pkts:.0f}, drops "
          f"{dc.fabric.queue_drops}, CNPs {dc.hosts.cnps_rcvd}; none: queue p90 "
          f"{qn.p90_pkts:.0f} max {qn.max_pkts:.0f}, drops {no.fabric.queue_drops}, "
          f"retx {no.hosts.retx_pkts}")
    assert dc.ok and no.ok
    assert dc.fabric.queue_drops == 0 and dc.hosts.cnps_rcvd > 0
    assert qd.p90_pkts <= 1.1 * plan.config.ecn_kmax_pkts
    assert no.fabric.queue_drops > 0 and no.hosts.retx_pkts > 0
    assert qn.max_pkts >= 0.9 * plan.fabric.switch("leaf1").port(5).depth_pkts


def test_incast_module_agrees_short() -> None:
    """The same claim through emu.experiments.incast (sampled every modelled us)."""
    share = int(25e9 / 4 * 0.004 / 8)
    dc = run_incast(IncastSpec(senders=4, flow_bytes=share, mtu_bytes=4096))
    no = run_incast(IncastSpec(senders=4, flow_bytes=share, mtu_bytes=4096, cc="none"))
    p90 = sorted(dc.queue_pkts)[int(0.9 * len(dc.queue_pkts))]
    print(f"incast module: dcqcn p90 {p90} (Kmax {dc.kmax_pkts}), drops {dc.drops}; "
          f"none drops {no.drops}, max {max(no.queue_pkts)} of {no.buffer_pkts}")
    assert dc.delivered_ok and no.delivered_ok
    assert dc.drops == 0 and p90 <= 1.1 * dc.kmax_pkts
    assert no.drops > 0 and max(no.queue_pkts) >= 0.9 * no.buffer_pkts
