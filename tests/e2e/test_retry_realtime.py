"""Transport retries exhausted on real Mininet: a link whose failure leaves no path
fails the QPs across it (IBTA retry_cnt); the orchestrator then stops the agents that
wait only on flows that failed, and the run ends long before its budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.workloads import WorkloadParams

from ..experiments.test_retry_exhaustion import line2
from ..quiet import QuietConsole

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.usefixtures("e2e_ready", "no_leftovers")]



@pytest.mark.parametrize("kind", ["allreduce", "incast"])
def test_failed_qps_end_a_real_time_run(tmp_path: Path, kind: str) -> None:
    """allreduce: the ring's later steps wait on the failed flows; incast: the senders
    whose flows failed end at once, and only the progress line each prints as it ends
    names them (its periodic ones, every 2 s here, came before the failure), so the
    receiver waiting on those flows is stopped."""
    from emu.experiments.run import run_experiment

    cfg = RunConfig(topo="clos-2x1", workload=WorkloadParams(kind, message_bytes=256 * 1024),
                    retry_cnt=1, rto_us=30.0, fail_link=("leaf1", "spine1"), fail_after_s=0.05,
                    results_root=tmp_path / "results", progress=False, timeout_s=60.0,
                    lock_wait_s=600.0, agent_progress_s=2.0 if kind == "incast" else 0.25)
    s = run_experiment(cfg, console=QuietConsole(), plan=plan_run(cfg, line2()))
    failed = [f for f in s.flows if f.status == "retry_exc_err"]
    # the failure may come at any step of the ring: the flows it catches cross leaves
    assert failed and all({f.src, f.dst} not in ({"h1", "h2"}, {"h3", "h4"}) for f in failed)
    assert all(f.status in ("success", "retry_exc_err", "wr_flush_err", "dependency_failed")
               for f in s.flows)
    assert not s.ok
    if kind == "allreduce":
        assert any(f.status == "dependency_failed" for f in s.flows)
    else:  # h1's and h2's flows cross the dead link, h3's does not
        assert {f.src for f in failed} == {"h1", "h2"}
    assert s.hosts.timeouts == 2 * len(failed)  # retry_cnt 1: the 2nd timeout fails
    # the waiting agents were stopped: nothing ran to the budget
    assert s.duration_s < cfg.timeout() / 4
    assert not any("still running" in n for n in s.notes)
    assert any("flows failed" in n for n in s.notes)
