"""Lossless incast on real Mininet (#14): the switch daemons run PFC (--pfc-config),
the host agents honour PAUSE through their HostMac (--pfc), the data rides the
lossless priority. Counts only, never timings (a loaded 2-core machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emu.core.flowmode import FlowControlMode
from emu.experiments.config import RunConfig
from emu.experiments.workloads import WorkloadParams

from ..quiet import QuietConsole

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.usefixtures("e2e_ready", "no_leftovers")]



def test_lossless_incast_pauses_instead_of_dropping(tmp_path: Path) -> None:
    from emu.experiments.run import run_experiment

    # 7 senders at line rate into one host port, no congestion control: without flow
    # control the leaf tail-drops hundreds of packets (test_run's DCQCN test).
    wl = WorkloadParams("incast", message_bytes=512 * 1024)
    cfg = RunConfig(topo="clos4", workload=wl, cc="none", flow_control=FlowControlMode.PFC,
                    results_root=tmp_path, progress=False, timeout_s=300.0, lock_wait_s=600.0)
    s = run_experiment(cfg, console=QuietConsole())
    assert s.ok and s.flows_verified() == 7
    assert s.fabric.queue_drops == 0  # no tail drop: the lossless class paused instead
    p = s.pfc
    assert p is not None and p["total"]["pause_tx"] > 0 and p["total"]["lossless_drops"] == 0
    # the receiver's leaf paused its ingress ports for priority 3 only
    assert all(set(e["pause_tx"]) <= {3} for e in p["ports"])
    # senders' NICs saw the PAUSE frames (the agents' HostMac on their AF_PACKET port)
    assert sum(1 for h in p["hosts"] if h["pause_rx"].get(3)) >= 1
    assert all(h["ok"] for h in p["headroom"])  # each link got the headroom it needs
    (d,) = [x for x in tmp_path.iterdir() if x.is_dir()]
    assert (d / "plots" / "pfc_paused.png").is_file()
    log = (d / "logs" / "leaf4.log").read_text()
    assert "PFC headroom" in log and "needed by its link" in log
    assert json.loads((d / "config.json").read_text())["run"]["flow_control"] == "pfc"
