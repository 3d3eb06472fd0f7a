"""The run loop (agents, sampling, timeout, interruption) with stand-in agent processes
on a fake network, so it runs without root; the real thing is in tests/e2e."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.run import Experiment, RunError
from emu.experiments.workloads import WorkloadParams

pytestmark = pytest.mark.timeout(120)

# Takes READY_DELAYS[host] s to come up, prints READY, with --start-on-stdin reads the
# START line, sleeps, writes one summary line (with when it was READY and its START line)
# to --results, prints DONE; on SIGTERM writes a partial summary and exits 2 (the agent's
# protocol).
STANDIN = """
import json, signal, sys, time
args = sys.argv[2:]
res = args[args.index("--results") + 1]
host = args[args.index("--iface") + 1].split("-")[0]
sleep_s = float(sys.argv[1])
start = None
def finish(done):
    with open(res, "w") as f:
        f.write(json.dumps({"type": "summary", "host": host, "done": done, "ready_ns": ready,
                            "start": start}) + "\\n")
    print("DONE" if done else "PARTIAL", flush=True)
    sys.exit(0 if done else 2)
signal.signal(signal.SIGTERM, lambda *_: finish(False))
time.sleep(json.loads(sys.argv[2]).get(host, 0.0))
ready = time.monotonic_ns()
print("READY", flush=True)
if "--start-on-stdin" in args:
    start = sys.stdin.readline().strip()
time.sleep(sleep_s)
finish(True)
"""


class FakeNet:
    def __init__(self, sleep_s: float, ready_delays: dict[str, float] | None = None,
                 switches: dict[str, Any] | None = None) -> None:
        self.sleep_s = sleep_s
        self.ready_delays = ready_delays or {}
        self.switches: dict[str, Any] = switches or {}
        self.procs: list[subprocess.Popen[str]] = []

    def popen(self, host: str, cmd: list[str], **kw: Any) -> subprocess.Popen[str]:
        agent_args = cmd[cmd.index("agent") + 1:]
        kw.pop("cwd", None)
        p: subprocess.Popen[str] = subprocess.Popen(
            [sys.executable, "-c", STANDIN, str(self.sleep_s), json.dumps(self.ready_delays),
             *agent_args], **kw)
        self.procs.append(p)
        return p


def experiment(tmp_path: Path, sleep_s: float, ready_delays: dict[str, float] | None = None,
               switches: dict[str, Any] | None = None, **cfg: Any
               ) -> tuple[Experiment, FakeNet, Any]:
    plan = plan_run(RunConfig(workload=WorkloadParams("incast", message_bytes=1000,
                                                      incast_senders=2),
                              sample_interval_s=0.05, **cfg))
    net = FakeNet(sleep_s, ready_delays, switches)
    return Experiment(plan, net, None, tmp_path, lambda _m: None), net, plan


def test_agents_run_and_report(tmp_path: Path) -> None:
    exp, net, plan = experiment(tmp_path, 0.3)
    rec = exp.run_workload(plan)
    assert sorted(rec.rows_by_host) == ["h1", "h2", "h8"]
    assert all(rows[0]["done"] for rows in rec.rows_by_host.values())
    assert set(rec.offsets_s) == {"h1", "h2", "h8"}
    assert all(p.returncode == 0 for p in net.procs)
    assert len(rec.snapshots) >= 2 and not rec.notes
    cfg = json.loads((tmp_path / "agents" / "h1.json").read_text())
    assert cfg["host"]["name"] == "h1"


def test_agents_files_that_cannot_be_written_are_one_error_and_no_agent_left(
        tmp_path: Path) -> None:
    """A full disk (or a folder removed) when the agents start: a traceback, and the
    agents launched before the failing file kept running."""
    exp, net, plan = experiment(tmp_path, 60)
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "h2.log").mkdir()  # h1 is launched, then h2's log fails
    with pytest.raises(RunError, match=r"^emu run: cannot write the agents' files in "
                       + re.escape(str(tmp_path / "agents")) + ": Is a directory$"):
        exp.run_workload(plan)
    assert len(net.procs) == 1 and net.procs[0].poll() is not None
    (tmp_path / "file").write_text("")
    exp, net, plan = experiment(tmp_path / "file", 60)
    with pytest.raises(RunError, match=r"agents: Not a directory$"):
        exp.run_workload(plan)
    assert net.procs == []


def test_agents_start_together_however_late_each_is_ready(tmp_path: Path) -> None:
    """Virtual time starts every sender at once; in real time each agent used to count
    start_delay_s from its own READY, so the flows of agents that came up apart started
    apart (30 ms of wire time in a 2:1 incast at dilation 5000: five modelled frames),
    and the incast's first queue build-up and CNPs differed from virtual time's."""
    exp, _net, plan = experiment(tmp_path, 0.1, ready_delays={"h1": 0.6, "h8": 0.3})
    rec = exp.run_workload(plan)
    rows = {h: rows[0] for h, rows in rec.rows_by_host.items()}
    starts = {r["start"] for r in rows.values()}
    assert len(starts) == 1 and None not in starts, starts  # one START line for all
    word, at = starts.pop().split()
    assert word == "START" and int(at) > max(r["ready_ns"] for r in rows.values())
    # every agent's times count from that instant: one offset onto the run timeline
    assert len(set(rec.offsets_s.values())) == 1 and set(rec.offsets_s) == set(rows)


def test_timeout_stops_agents_with_partial_results(tmp_path: Path) -> None:
    exp, net, plan = experiment(tmp_path, 60, timeout_s=0.2)
    t0 = time.monotonic()
    rec = exp.run_workload(plan)
    assert time.monotonic() - t0 < 30  # timeout_s + the agents' own grace, not 60 s
    assert any("stopped" in n for n in rec.notes)
    # stopped by SIGTERM: partial results (2), or killed outright if it came too early
    assert {p.returncode for p in net.procs} <= {2, -signal.SIGTERM}
    assert all(rows[0]["done"] is False for rows in rec.rows_by_host.values() if rows)


@pytest.mark.usefixtures("ctrl_c")
def test_interrupt_stops_agents_now_and_keeps_partial_results(tmp_path: Path) -> None:
    exp, net, plan = experiment(tmp_path, 60)
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(1.0, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    rec = exp.run_workload(plan)  # Ctrl-C ends the workload, not the run's records
    assert time.monotonic() - t0 < 20
    assert rec.interrupted and any("interrupted (Ctrl-C)" in n for n in rec.notes)
    assert all(rows[0]["done"] is False for rows in rec.rows_by_host.values() if rows)
    assert net.procs and all(p.poll() is not None for p in net.procs)
    for p in net.procs:
        with pytest.raises(ProcessLookupError):
            os.kill(p.pid, 0)


class SignalledSwitch:
    """A switch whose admin `stats` call gets `signals` (one per call, from the 5th on)
    while it is under way, then finishes its exchange: records calls begun and ended."""

    def __init__(self, signals: list[int]) -> None:
        self.process = self
        self.signals = list(signals)
        self.calls = 0
        self.begun = self.ended = 0

    def admin_call(self, cmd: str) -> dict[str, Any]:
        self.calls += 1
        self.begun += 1
        if self.calls >= 5:
            while self.signals:
                signal.raise_signal(self.signals.pop(0))
        time.sleep(0.01)  # the rest of the exchange
        self.ended += 1
        return {"ports": {}, "drops": {}}


@pytest.mark.usefixtures("ctrl_c")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_run_between_switch_reads_not_inside_one(tmp_path: Path,
                                                                     sig: int) -> None:
    """Ctrl-C or SIGTERM raised inside whatever call the loop was in: inside a P4Runtime
    read, that left its gRPC channel stuck, and the run's final reading on it waited
    until the run's timeout (the e2e interrupt test hung 120 s on a loaded machine). A
    signal now ends the loop at its next check: the read under way completes."""
    from emu.core import signals

    sw = SignalledSwitch([sig])
    exp, net, plan = experiment(tmp_path, 60, switches={"leaf1": sw})
    armed = signals.arm()  # as while the network is up: SIGTERM unwinds like Ctrl-C
    try:
        t0 = time.monotonic()
        rec = exp.run_workload(plan)
    finally:
        signals.disarm(armed)
    assert time.monotonic() - t0 < 20
    assert sw.begun == sw.ended and sw.calls > 5  # the final reading too
    how = "Ctrl-C" if sig == signal.SIGINT else "signal SIGTERM"
    assert rec.interrupted and any(f"interrupted ({how})" in n for n in rec.notes), rec.notes
    assert all(rows[0]["done"] is False for rows in rec.rows_by_host.values() if rows)
    assert net.procs and all(p.poll() is not None for p in net.procs)


@pytest.mark.usefixtures("ctrl_c")
def test_a_second_ctrl_c_cuts_in_at_once_and_keeps_partial_results(tmp_path: Path) -> None:
    sw = SignalledSwitch([signal.SIGINT, signal.SIGINT])
    exp, net, plan = experiment(tmp_path, 60, switches={"leaf1": sw})
    rec = exp.run_workload(plan)
    assert sw.begun == sw.ended + 1  # the call the second Ctrl-C landed in
    assert rec.interrupted and any("interrupted (Ctrl-C)" in n for n in rec.notes), rec.notes
    assert net.procs and all(p.poll() is not None for p in net.procs)
