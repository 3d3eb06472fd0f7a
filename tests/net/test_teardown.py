"""Teardown always runs and leaves nothing: on exception, Ctrl-C, SIGTERM, a switch
that never gets ready, and it is fast on the largest topology."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from emu.core.runstate import RunState, load_records
from emu.net import EmuNet, NetError
from emu.targets.base import SwitchProcess, SwitchSpec
from emu.topo import load_topology

from .conftest import Snapshot, needs_mininet
from .helpers import LOCK_WAIT_S, kill, start_runner, wait_line, wait_record
from .standin import PIPELINE, SleepProcess, SleepTarget

pytestmark = [needs_mininet, pytest.mark.timeout(90)]


def assert_no_record(state_dir: Path) -> None:
    assert load_records(state_dir) == []
    # and the lock is free again
    RunState.begin(directory=state_dir, lock_timeout_s=LOCK_WAIT_S).finish()


def test_exception_in_body_tears_down(state_dir: Path, snapshot: Snapshot,
                                      tmp_path: Path) -> None:
    target = SleepTarget()
    with pytest.raises(RuntimeError, match="boom"), \
            EmuNet(load_topology("leafspine2"), target, tmp_path, pipeline=PIPELINE,
                   lock_wait_s=LOCK_WAIT_S):
        raise RuntimeError("boom")
    assert not any(p.alive() for p in target.started)
    snapshot.assert_clean()
    assert_no_record(state_dir)


def test_ctrl_c_in_body_tears_down(state_dir: Path, snapshot: Snapshot,
                                   tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), \
            EmuNet(load_topology("leafspine2"), SleepTarget(), tmp_path, pipeline=PIPELINE,
                   lock_wait_s=LOCK_WAIT_S):
        raise KeyboardInterrupt
    snapshot.assert_clean()
    assert_no_record(state_dir)


def test_sigterm_to_the_runner_tears_down(state_dir: Path, snapshot: Snapshot,
                                          tmp_path: Path) -> None:
    proc = start_runner("leafspine2", tmp_path)
    try:
        wait_line(proc, "UP")
        proc.send_signal(signal.SIGTERM)
        wait_line(proc, "INTERRUPTED")
        assert proc.wait(timeout=20) == 130
    finally:
        kill(proc)
    snapshot.assert_clean()
    assert_no_record(state_dir)


class NeverReady(SleepTarget):
    def start(self, spec: SwitchSpec, pipeline: object) -> SwitchProcess:  # type: ignore[override]
        proc = BrokenProcess(spec, 0.0)
        self.started.append(proc)
        return proc


class BrokenProcess(SleepProcess):
    def wait_ready(self, timeout_s: float) -> None:
        raise RuntimeError("port leaf1-eth1: no such device")


def test_switch_that_never_gets_ready_fails_cleanly(state_dir: Path, snapshot: Snapshot,
                                                    tmp_path: Path) -> None:
    target = NeverReady()
    with pytest.raises(NetError, match=r"switch \w+: not ready: port leaf1-eth1"), \
            EmuNet(load_topology("leafspine2"), target, tmp_path, pipeline=PIPELINE,
                   lock_wait_s=LOCK_WAIT_S):
        pass
    assert not any(p.alive() for p in target.started)
    snapshot.assert_clean()
    assert_no_record(state_dir)


def test_existing_interface_name_is_refused_and_left_alone(
        state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subprocess.run(["ip", "link", "add", "spine2-eth2", "type", "veth", "peer", "name", "emut-clash"], check=True)
    try:
        snapshot = Snapshot.take()
        with pytest.raises(NetError, match="interface spine2-eth2 already exists.*make stop"):
            EmuNet(load_topology("leafspine2"), SleepTarget(), tmp_path,
                   pipeline=PIPELINE).start()
        snapshot.assert_clean()
        assert "spine2-eth2" in subprocess.run(["ip", "-o", "link"], capture_output=True,
                                               text=True).stdout
        assert_no_record(state_dir)
    finally:
        subprocess.run(["ip", "link", "del", "spine2-eth2"], capture_output=True)


@pytest.mark.parametrize("topo", ["clos4", "fattree4"])
def test_bring_up_and_teardown_times(topo: str, state_dir: Path, snapshot: Snapshot,
                                     tmp_path: Path) -> None:
    net = EmuNet(load_topology(topo), SleepTarget(), tmp_path, pipeline=PIPELINE,
                 lock_wait_s=LOCK_WAIT_S)
    with net:
        pass
    print(f"{topo}: up {net.timings['start_s']:.2f} s, down {net.timings['stop_s']:.2f} s")
    assert net.errors == []
    assert net.timings["stop_s"] < 5.0
    snapshot.assert_clean()


def test_ctrl_c_while_waiting_for_switches_tears_down_at_once(state_dir: Path,
                                                              snapshot: Snapshot,
                                                              tmp_path: Path) -> None:
    proc = start_runner("leafspine2", tmp_path, "--ready-delay", "600")
    try:
        wait_record(state_dir, lambda r: sum(p["role"] == "switch"
                                             for p in r["processes"]) == 4, proc)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        wait_line(proc, "INTERRUPTED")
        assert proc.wait(timeout=20) == 130
        assert time.monotonic() - t0 < 5
    finally:
        kill(proc)
    snapshot.assert_clean()
    assert_no_record(state_dir)


def test_unix_socket_grpc_addresses_live_in_the_runs_scratch_dir(state_dir: Path,
                                                                 snapshot: Snapshot,
                                                                 tmp_path: Path) -> None:
    net = EmuNet(load_topology("leafspine2"), SleepTarget(), tmp_path, pipeline=PIPELINE,
                 grpc="unix", lock_wait_s=LOCK_WAIT_S)
    with net:
        assert net.state is not None
        scratch = state_dir / net.state.run_id
        assert net.grpc_addresses() == {s: f"unix:{scratch}/{s}.grpc"
                                        for s in ("leaf1", "leaf2", "spine1", "spine2")}
        assert scratch.is_dir()
    assert not scratch.exists()
    snapshot.assert_clean()
    assert_no_record(state_dir)
