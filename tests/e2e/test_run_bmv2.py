"""`emu run` on Mininet with BMv2 switches (simple_switch_grpc compiled by p4c).

Skipped with the target's reason where p4c / BMv2 are not on PATH. Link delays use
netem where the kernel has it; elsewhere the runs go without delay, and the run
with delays must stop with one line saying why and how to run without them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.summary import RunSummary
from emu.experiments.workloads import WorkloadParams
from emu.targets.bmv2 import netem_problem

from ..quiet import QuietConsole
from ..targets.params import requires_bmv2
from .conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), requires_bmv2,
              pytest.mark.usefixtures("e2e_ready", "no_leftovers")]



def run(tmp_path: Path, target: str = "bmv2", **kw: Any) -> RunSummary:
    from emu.experiments.run import run_experiment

    cfg = RunConfig(topo="clos4", target=target, results_root=tmp_path, progress=False,
                    timeout_s=kw.pop("timeout_s", 240.0),
                    link_delay=target != "bmv2" or netem_problem() is None, **kw)
    return run_experiment(cfg, console=QuietConsole())


def data_uplinks(s: RunSummary) -> dict[str, set[int]]:
    """Per leaf, the uplinks that carried data (not only ACKs): a quarter of the busiest."""
    out = {}
    for u in s.uplinks:
        top = max(b for _p, b in u.tx_bytes)
        out[u.switch] = {p for p, b in u.tx_bytes if top and b > top / 4}
    return out


@pytest.mark.parametrize("lb", ["ecmp", "flowlet", "adaptive", "spray", "te"])
def test_clos4_allreduce_on_bmv2_every_lb_mode(tmp_path: Path, lb: str) -> None:
    recovery = "sr" if lb == "spray" else "gbn"  # spray + go-back-N is livelock-prone
    s = run(tmp_path, lb=lb, recovery=recovery,
            workload=WorkloadParams("allreduce", message_bytes=64 * 1024))
    assert s.ok, s.notes
    assert s.flows and s.flows_verified() == len(s.flows)
    assert s.fabric.tx_pkts > 0


@pytest.mark.parametrize("workload", ["permutation", "incast", "alltoall"])
def test_clos4_workloads_on_bmv2(tmp_path: Path, workload: str) -> None:
    extra = {"incast_senders": 3} if workload == "incast" else {}
    s = run(tmp_path, workload=WorkloadParams(workload, message_bytes=32 * 1024, **extra),
            pcap=workload == "permutation")
    assert s.ok, s.notes
    assert s.flows and s.flows_verified() == len(s.flows)
    if workload == "permutation":
        # BMv2's captures (libpcap, wall-clock microseconds) rewritten into modelled time
        from emu.switch.pcap import PcapReader

        (d,) = [p for p in tmp_path.iterdir() if p.is_dir()]
        with PcapReader(str(d / "pcap" / "leaf1-eth1_in.pcap")) as r:
            assert r.nanosecond
            stamps = [rec.ts_ns for rec in r if rec.data[36:38] == b"\x12\xb7"]
        assert len(stamps) >= 32
        assert stamps[-1] - stamps[0] < 2 * max(f.fct_nominal_s for f in s.flows) * 1e9


def test_bmv2_and_embedded_choose_the_same_ecmp_uplinks(tmp_path: Path) -> None:
    """Same program, same controller, same flows (seeded QP entropy): ECMP hashes to the
    same uplinks on both targets."""
    wl = WorkloadParams("allreduce", message_bytes=64 * 1024)
    bm = run(tmp_path / "bmv2", workload=wl)
    emb = run(tmp_path / "embedded", target="embedded", workload=wl)
    assert bm.ok and emb.ok
    assert data_uplinks(bm) == data_uplinks(emb)
    assert all(data_uplinks(bm).values())


@pytest.mark.skipif(netem_problem() is None, reason="this kernel has netem")
def test_clos4_with_link_delay_without_netem_stops_with_one_line() -> None:
    r = subprocess.run([sys.executable, "-m", "emu", "run", "clos4", "--target", "bmv2",
                        "--no-progress"], capture_output=True, text=True, timeout=300,
                       cwd=str(REPO))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    line = r.stderr.strip()
    assert "\n" not in line, r.stderr
    assert "netem" in line and "h1:0 <-> leaf1:1" in line
    assert "LINK_DELAY=0" in line and "--no-link-delay" in line
