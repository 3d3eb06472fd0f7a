"""Lossless Ethernet on a 7:1 incast (experiments/lossless-incast.yaml).

Claim: without flow control the receiver's leaf tail-drops and the senders resend;
PFC and link-level credits are lossless and finish sooner, PFC by PAUSE frames whose
back-pressure spreads beyond the receiver's leaf, credits without a single PAUSE.
"""

from __future__ import annotations

from typing import Any

import pytest

from emu.core.flowmode import FlowControlMode
from emu.experiments.config import RunConfig
from emu.experiments.workloads import WorkloadParams

from .common import run, suite

pytestmark = pytest.mark.timeout(600)


def from_suite(mode: str) -> Any:
    data = suite("lossless-incast")
    b = data["base"]
    assert b["size"] == "128K" and mode in data["grid"]["flow_control"]
    return run(RunConfig(topo=b["topology"], cc=b["cc"], flow_control=FlowControlMode(mode),
                         workload=WorkloadParams(b["workload"], message_bytes=128 * 1024)))


def test_pfc_and_credits_are_lossless_where_no_flow_control_drops() -> None:
    _n, none = from_suite("none")
    _p, pfc = from_suite("pfc")
    _c, credit = from_suite("credit")
    assert none.ok and pfc.ok and credit.ok
    print(f"none: drops {none.fabric.queue_drops} retx {none.hosts.retx_pkts} "
          f"{none.traffic_s:.3f} s; pfc: {pfc.traffic_s:.3f} s; credit: "
          f"{credit.traffic_s:.3f} s")
    assert none.fabric.queue_drops > 0 and none.hosts.retx_pkts > 0
    for s in (pfc, credit):
        assert s.fabric.drops == 0 and s.hosts.retx_pkts == 0 and s.hosts.timeouts == 0
        assert s.traffic_s is not None and none.traffic_s is not None
        assert s.traffic_s * 1.3 < none.traffic_s  # no resends: sooner done
    assert pfc.traffic_s == pytest.approx(credit.traffic_s, rel=0.1)

    p = pfc.pfc
    assert p is not None and p["total"]["pause_tx"] > 0
    # congestion spreading: paused ports beyond the receiver's leaf
    paused = {e["node"] for e in [*p["ports"], *p["hosts"]] if e["paused_ns"]}
    assert any(n.startswith("spine") for n in paused)
    assert any(n.startswith("h") for n in paused)  # the senders' NICs

    c = credit.credit
    assert credit.pfc is None and c is not None
    every = [*c["ports"], *c["hosts"]]
    assert all(e["pause_rx"] == 0 for e in every)  # no PAUSE frame anywhere
    assert any(e["waited_ns"] for e in every)
