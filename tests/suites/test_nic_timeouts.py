"""The NIC's own retransmission timer on a lossy fabric (experiments/nic-timeouts.yaml).

Claim: with the IBTA local ACK timer a RoCE NIC runs (4.096 us x 2^T on every timeout,
never doubled; NCCL sets T = 20, 4.29 s), a 7:1 incast without congestion control or
flow control, which tail-drops, lasts whole timers: every flow that timed out finishes
a multiple of the timer after its last progress, and the incast takes seconds where
the path-derived RTO takes microseconds. PFC loses nothing, so no timer fires and T
changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from emu.core.flowmode import FlowControlMode
from emu.experiments.config import RunConfig
from emu.experiments.figures import fmt_s
from emu.experiments.summary import render_text
from emu.experiments.workloads import WorkloadParams

from .common import run, suite

pytestmark = pytest.mark.timeout(600)


def from_suite(mode: str, ack_timeout: int | None) -> Any:
    data = suite("nic-timeouts")
    b, grid = data["base"], data["grid"]
    assert b["size"] == "128K" and b["cc"] == "none"
    assert mode in grid["flow_control"] and ack_timeout in grid["ack_timeout"]
    return run(RunConfig(topo=b["topology"], cc=b["cc"], flow_control=FlowControlMode(mode),
                         ack_timeout=ack_timeout,
                         workload=WorkloadParams(b["workload"], message_bytes=128 * 1024)))[1]


def _modelled_s(s: Any) -> float:
    assert s.traffic_s is not None
    return float(s.traffic_s / s.run["dilation"])


@pytest.mark.parametrize("t", [14, 20])
def test_tail_drops_cost_whole_nic_timers(t: int) -> None:
    timer_s = 4.096e-6 * 2**t
    path = from_suite("none", None)
    nic = from_suite("none", t)
    assert path.ok and nic.ok
    print(f"T={t}: path RTO {_modelled_s(path) * 1e6:.0f} us, NIC timer "
          f"{_modelled_s(nic):.4g} s, timeouts {nic.hosts.timeouts}")
    assert path.fabric.queue_drops > 0 and nic.fabric.queue_drops > 0
    assert _modelled_s(path) < 1e-3 and path.hosts.timeouts > 0
    timed_out = [f for f in nic.flows if f.timeouts]
    assert timed_out and nic.hosts.timeouts == sum(f.timeouts for f in timed_out)
    for f in nic.flows:
        # whole timers after the flow's last progress, which came within a millisecond
        assert f.fct_nominal_s is not None
        whole, rest = divmod(f.fct_nominal_s, timer_s)
        assert whole == f.timeouts and rest < 1e-3, (f.id, f.fct_nominal_s, f.timeouts)
    assert _modelled_s(nic) >= timer_s > 400 * _modelled_s(path)
    # the summary's heading says which timer ran
    head = render_text(nic, width=200).splitlines()[0]
    assert f"recovery=gbn ack_timeout={t} ({fmt_s(timer_s)})" in head
    assert "ack_timeout" not in render_text(path, width=200).splitlines()[0]


def test_pfc_loses_nothing_so_the_timer_never_fires() -> None:
    pfc = from_suite("pfc", None)
    nic = from_suite("pfc", 20)
    for s in (pfc, nic):
        assert s.ok and s.fabric.drops == 0 and s.hosts.timeouts == 0
        assert s.hosts.retx_pkts == 0
    assert _modelled_s(nic) == _modelled_s(pfc) < 1e-3
    assert [f.fct_s for f in nic.flows] == [f.fct_s for f in pfc.flows]
