"""A virtual run's results do not depend on how long it waits before its first send.

The experiment runner and `emu run` wait `start_delay_s` (0.3 s of wire time) after the
agents are ready; the suites' tests start at once. Both must give the same figures,
relative to the workload's start. They did not: a responder's first ACK, a pacer's
first slot, the paper profile's alpha and a new flowlet's member were tied to the
clock's origin, a Poisson start time lost a nanosecond to truncation depending on the
delay added to it, and a virtual link failure counted from time 0 (with the default
delay, a failure "0.1 s into the run" came before the first packet). A credit run
started at once waited for the links' first credit updates.
"""

from __future__ import annotations

from typing import Any

import pytest

from emu.control import LbMode
from emu.core.flowmode import FlowControlMode
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.summary import RunSummary
from emu.experiments.virtual import run_virtual
from emu.experiments.workloads import WorkloadParams

RING = ("h1", "h3", "h5", "h7", "h2", "h4", "h6", "h8")  # every hop crosses the spines

CASES: dict[str, dict[str, Any]] = {
    "ecmp, no cc, colliding ring": dict(
        lb=LbMode.ECMP, cc="none", recovery="sr",
        workload=WorkloadParams("allreduce", message_bytes=256 * 1024, hosts=RING)),
    "flowlet": dict(
        lb=LbMode.FLOWLET, workload=WorkloadParams("allreduce", message_bytes=256 * 1024,
                                                   hosts=RING)),
    "paper profile incast": dict(
        dcqcn_profile="paper", workload=WorkloadParams("incast", message_bytes=128 * 1024)),
    "mix, channels, Poisson background": dict(
        workload=WorkloadParams("mix", message_bytes=32 * 1024, channels=2,
                                background_load=0.3, size_scale=0.05)),
    # Links come up with the run: a credit port sends nothing before its peer's first
    # update. Started at once, the incast's first packets waited for it (1.2% slower).
    "credit incast": dict(
        flow_control=FlowControlMode.CREDIT, cc="none",
        workload=WorkloadParams("incast", message_bytes=128 * 1024)),
    "link failure": dict(
        fail_link=("leaf4", "spine4"), fail_after_s=0.05, recovery="sr",
        workload=WorkloadParams("permutation", message_bytes=256 * 1024, seed=3)),
}


def relative(delay_s: float, **kw: Any) -> tuple[list[tuple[Any, ...]], list[Any], RunSummary]:
    cfg = RunConfig(topo="clos4", virtual=True, progress=False, start_delay_s=delay_s, **kw)
    s = run_virtual(plan_run(cfg), write=False)
    assert s.ok
    t0 = min(f.start_s for f in s.flows if f.start_s is not None)
    flows = sorted((f.id, round((f.start_s - t0) * 1e9),
                    None if f.end_s is None else round((f.end_s - t0) * 1e9),
                    f.retx_pkts, f.timeouts, f.ecn_marked_rcvd, f.cnps_rcvd)
                   for f in s.flows if f.start_s is not None)
    events = [(round((t - delay_s) * 1e9), what) for t, what in s.events]
    return flows, events, s


@pytest.mark.parametrize("case", list(CASES))
def test_a_virtual_run_is_the_same_whatever_its_start_delay(case: str) -> None:
    flows0, events0, s0 = relative(0.0, **CASES[case])
    flows1, events1, s1 = relative(0.3, **CASES[case])
    assert flows0 == flows1
    assert events0 == events1
    assert (s0.fabric.drops, s0.fabric.ecn_marks) == (s1.fabric.drops, s1.fabric.ecn_marks)
    if case == "link failure":
        # mid-run: after the first flow started, while traffic was still flowing
        (t_fail, _), *_ = events1
        assert 0 < t_fail < max(f[2] for f in flows1)
