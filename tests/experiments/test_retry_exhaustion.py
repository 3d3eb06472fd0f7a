"""A link whose failure leaves no path: the QPs across it run out of transport retries
(IBTA retry_cnt) and fail, the flows of the collective waiting on them never start, and
the run ends there, reporting which failed and why, instead of retrying until its
budget ends and reporting them merely incomplete."""

from __future__ import annotations

import pytest

from emu.core.flowmode import FlowControlMode
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.summary import RunSummary, render_text
from emu.experiments.workloads import WorkloadParams
from emu.topo import Fabric
from emu.topo.generators import clos_fabric

pytestmark = pytest.mark.timeout(300)

def line2() -> Fabric:
    """Two leaves under one spine, two hosts each: one path between the leaves."""
    return clos_fabric(2, 1, 2)


def _run(**kw: object) -> tuple[RunConfig, RunSummary]:
    from emu.experiments.virtual import run_virtual

    cfg = RunConfig(topo="clos-2x1", virtual=True, flow_control=FlowControlMode.NONE,
                    workload=WorkloadParams("allreduce", message_bytes=256 * 1024),
                    fail_link=("leaf1", "spine1"), fail_after_s=20e-6, **kw)  # type: ignore[arg-type]
    return cfg, run_virtual(plan_run(cfg, line2()), write=False)


def test_flows_across_a_dead_path_fail_and_the_run_ends() -> None:
    cfg, s = _run()
    by = {f.id: f.status for f in s.flows}
    crossing = [f for f in s.flows if f.id.startswith("ar0-s0-")
                and {f.src, f.dst} not in ({"h1", "h2"}, {"h3", "h4"})]
    assert crossing and all(by[f.id] == "retry_exc_err" for f in crossing)
    local = [f for f in s.flows if f.id.startswith("ar0-s0-") and f not in crossing]
    assert local and all(by[f.id] == "success" and f.verified for f in local)
    # every later step waits on a failed flow, or was posted behind one on its QP
    later = [f for f in s.flows if not f.id.startswith("ar0-s0-")]
    assert all(by[f.id] in ("dependency_failed", "wr_flush_err") for f in later)
    assert "dependency_failed" in by.values() and "wr_flush_err" in by.values()
    assert not s.ok
    assert s.hosts.timeouts == 8 * len(crossing)  # retry_cnt 7: the 8th timeout fails
    # Ended when nothing more could happen, not at the budget.
    assert s.duration_s < cfg.timeout() / 2
    assert not any("still running" in n for n in s.notes)
    text = render_text(s, width=200)
    assert f"FAILED ({len(s.flows) - len(local)} flows)" in text
    assert "NO: retries exhausted" in text and "NO: waited on a failed flow" in text
    note = next(n for n in s.notes if "flows failed" in n)
    assert f"{len(crossing)} retries exhausted" in note and "retry_cnt" in note


def test_without_a_retry_limit_the_run_waits_out_its_budget() -> None:
    _cfg, s = _run(retry_cnt=None, timeout_s=400.0)
    assert all(f.status in (None, "success") for f in s.flows)
    assert any("still running" in n for n in s.notes)
    assert s.hosts.timeouts > 8 * 2
    assert not any("flows failed" in n for n in s.notes)


def test_command_line_and_experiment_files_take_it(capsys: pytest.CaptureFixture[str]) -> None:
    from emu.cli import build_parser, main
    from emu.experiments.commands import config_from_args
    from emu.experiments.experiment import options

    def parsed(*argv: str) -> int | None:
        return config_from_args(build_parser().parse_args(["run", "clos4", *argv])).retry_cnt

    assert parsed() == 7 and parsed("--retry-cnt", "0") == 0
    assert parsed("--retry-cnt", "inf") is None
    plan = plan_run(RunConfig(virtual=True, retry_cnt=3))
    assert {q.retry_cnt for a in plan.agents.values() for q in a.qps} == {3}
    assert options()["retry_cnt"].parse(5) == 5
    for bad in ("8", "-1", "x"):
        with pytest.raises(SystemExit):
            main(["run", "clos4", "--retry-cnt", bad, "--dry-run"])
        assert "0..7" in capsys.readouterr().err
    with pytest.raises(ValueError, match="retry_cnt must be 0..7"):
        RunConfig(retry_cnt=9).validate()


def test_with_the_nics_ack_timeout_a_dead_path_fails_after_eight_fixed_timers() -> None:
    """--ack-timeout 20 (NCCL's): every timeout waits 4.096 us x 2^20 = 4.29 s modelled,
    never doubled, so the QPs fail 8 x 4.29 s after their last progress. The virtual
    budget's default grows by that span: the run reports failed flows, not incomplete
    ones cut off at 600 s of wire time (under 0.2 s modelled at this dilation)."""
    cfg, s = _run(ack_timeout=20)
    timer_s = 4.096e-6 * 2**20
    d = s.run["dilation"]
    assert s.flows_failed() == 22 and s.hosts.timeouts == 16
    crossing = [f for f in s.flows if f.status == "retry_exc_err"]
    assert len(crossing) == 2
    # the run ends as the last QP fails: 8 timers after the failure, start-up aside
    assert s.duration_s / d == pytest.approx(8 * timer_s, abs=1e-3)
    plan = plan_run(cfg, line2())
    assert plan.budget_s > s.duration_s > cfg.timeout()
    assert {q.rto_ns for a in plan.agents.values() for q in a.qps} == {4096 * 2**20}
    assert not any(q.rto_backoff for a in plan.agents.values() for q in a.qps)


def test_ack_timeout_on_the_command_line_and_in_experiment_files(
        capsys: pytest.CaptureFixture[str]) -> None:
    from emu.cli import build_parser, main
    from emu.experiments.commands import config_from_args
    from emu.experiments.effective import effective_values
    from emu.experiments.experiment import options

    def parsed(*argv: str) -> RunConfig:
        return config_from_args(build_parser().parse_args(["run", "clos4", *argv]))

    assert parsed().ack_timeout is None and parsed("--ack-timeout", "18").ack_timeout == 18
    assert options()["ack_timeout"].parse(14) == 14
    eff = effective_values(plan_run(RunConfig(virtual=True, ack_timeout=14)))
    assert eff["rto_backoff"] is False and eff["ack_timeout"] == 14
    assert eff["rto_us_modelled"] == [pytest.approx(4.096 * 2**14)]
    # in real time NCCL's timer outlasts any budget: the warning points at virtual time
    (note,) = [n for n in plan_run(RunConfig(ack_timeout=20)).notes if "raise --timeout" in n]
    assert "two retransmission timeouts in a row" in note and "--virtual" in note
    for bad in ("0", "32", "x"):
        with pytest.raises(SystemExit):
            main(["run", "clos4", "--ack-timeout", bad, "--dry-run"])
        assert "1..31" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "clos4", "--ack-timeout", "20", "--rto", "50", "--dry-run"])
    assert "not allowed with" in capsys.readouterr().err
    with pytest.raises(ValueError, match="rto_us or ack_timeout, not both"):
        RunConfig(ack_timeout=20, rto_us=50.0).validate()
    for value in (0, 32, True, 2.5):
        with pytest.raises(ValueError, match="ack_timeout must be 1..31"):
            RunConfig(ack_timeout=value).validate()  # type: ignore[arg-type]
