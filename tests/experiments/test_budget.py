"""The workload's budget (how long a run may take before its agents are stopped): the
mode's default, unless the workload needs more than a quarter of it on the wire; then
four times what it needs, so a big workload at a large dilation is not cut short with
partial results. An explicit --timeout is kept, with a warning when too short."""

from __future__ import annotations

import pytest

from emu.experiments.agent_configs import FRAME_OVERHEAD_BYTES, retry_span_wire_s
from emu.experiments.config import REAL_TIMEOUT_S, VIRTUAL_TIMEOUT_S, RunConfig
from emu.experiments.plan import BUDGET_MARGIN, min_wire_s, plan_run
from emu.experiments.workloads import WorkloadParams


def _incast(size: int, **kw: object) -> RunConfig:
    return RunConfig(topo="clos4", workload=WorkloadParams("incast", message_bytes=size),
                     **kw)  # type: ignore[arg-type]


def test_the_least_time_is_the_busiest_host_link_by_hand() -> None:
    plan = plan_run(_incast(128 * 1024))
    need, host = min_wire_s(plan.fabric, plan.workload, plan.config.mtu_bytes)
    assert host == "h8"  # the receiver: 7 flows in
    pkts = 128 * 1024 // plan.config.mtu_bytes
    bits = 7 * (128 * 1024 + pkts * FRAME_OVERHEAD_BYTES) * 8
    rate = plan.fabric.link(plan.fabric.host("h8").link).rate_bps
    assert need == pytest.approx(bits / rate)


@pytest.mark.parametrize("virtual", [False, True])
def test_a_small_workload_keeps_the_default(virtual: bool) -> None:
    """In virtual time plus the longest a QP retries before it fails (free to wait)."""
    plan = plan_run(_incast(64 * 1024, virtual=virtual))
    span = retry_span_wire_s(plan.agents)
    assert 0 < span < VIRTUAL_TIMEOUT_S
    assert plan.budget_s == (VIRTUAL_TIMEOUT_S + span if virtual else REAL_TIMEOUT_S)
    assert {a.timeout_s for a in plan.agents.values()} == {plan.budget_s}


def test_a_big_workload_gets_four_times_what_it_needs() -> None:
    plan = plan_run(RunConfig(topo="fattree4", rate_bps=500_000, workload=WorkloadParams(
        "alltoall", message_bytes=16 * 1024 * 1024)))
    need, _host = min_wire_s(plan.fabric, plan.workload, plan.config.mtu_bytes)
    assert need > REAL_TIMEOUT_S  # at fattree4's built-in 0.5 Mb/s wire
    assert plan.budget_s == pytest.approx(BUDGET_MARGIN * need)
    assert {a.timeout_s for a in plan.agents.values()} == {plan.budget_s}
    assert not any("raise --timeout" in n for n in plan.notes)


def test_an_explicit_budget_is_kept_and_a_short_one_warned_of() -> None:
    plan = plan_run(RunConfig(topo="fattree4", rate_bps=500_000, timeout_s=100.0,
                              workload=WorkloadParams(
        "alltoall", message_bytes=16 * 1024 * 1024)))
    assert plan.budget_s == 100.0
    (note,) = [n for n in plan.notes if "raise --timeout" in n]
    assert "needs at least 272 s of wire time" in note and "h9's link" in note
