"""Link-level credit on real Mininet: the switch daemons run credit (--pfc-config with
mode "credit"), the host agents send through their HostCreditMac, and the run reports
each port's credit figures. Counts only, never timings (a loaded 2-core machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.core.flowmode import FlowControlMode
from emu.experiments.config import RunConfig
from emu.experiments.workloads import WorkloadParams

from ..quiet import QuietConsole

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.usefixtures("e2e_ready", "no_leftovers")]



def test_credit_incast_is_lossless_and_reports_credit(tmp_path: Path) -> None:
    from emu.experiments.run import run_experiment

    cfg = RunConfig(topo="clos4", workload=WorkloadParams("incast", message_bytes=64 * 1024),
                    flow_control=FlowControlMode.CREDIT, results_root=tmp_path,
                    progress=False, timeout_s=300.0, lock_wait_s=600.0)
    s = run_experiment(cfg, console=QuietConsole())
    assert s.ok and s.flows_verified() == 7
    assert s.fabric.queue_drops == 0 and s.pfc is None
    c = s.credit
    assert c is not None and c["total"]["lossless_drops"] == 0 and c["total"]["overrun"] == 0
    # every agent's MAC and every switch port on a link spoke credit
    assert len(c["hosts"]) == 8 and all(sum(h["updates_rx"].values()) for h in c["hosts"])
    assert len(c["ports"]) == 40  # 4 leaves x (2 hosts + 4 spines) + 4 spines x 4 leaves
    # the receiver's leaf held the senders back: some port waited for credit
    assert any(e["waited_ns"] > 0 for e in [*c["ports"], *c["hosts"]])
    (d,) = [x for x in tmp_path.iterdir() if x.is_dir()]
    assert "Credit: " in (d / "summary.txt").read_text()
