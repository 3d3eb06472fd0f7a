"""Run records, the run lock and `emu stop`."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from emu.core.runstate import (
    RunActive,
    RunState,
    load_records,
    proc_start_time,
    same_process,
)
from emu.experiments import commands
from emu.net import EmuNet, NetError, check_environment
from emu.topo import load_topology

from .conftest import Snapshot, needs_mininet
from .helpers import LOCK_WAIT_S, emu_stop, kill, start_runner, wait_line, wait_record
from .standin import PIPELINE, SleepTarget

FABRIC = load_topology("leafspine2")


def orphan(state: RunState) -> None:
    """Leave `state` as a dead runner would: record kept, lock free, owner gone (the
    test process itself must not be the owner `emu stop` interrupts)."""
    state.data["owner"]["pid"] = 1  # pid 1 never has the recorded start time
    state.save()
    state.finish(keep=True)


def _killed_when_up(state_dir: Path, run_dir: Path, *args: str) -> tuple[dict, int]:
    """A leafspine2 runner (tests/net/runner.py ARGS) SIGKILLed once up: (its record,
    its PID)."""
    proc = start_runner("leafspine2", run_dir, *args)
    try:
        wait_line(proc, "UP", timeout_s=90)
        rec = wait_record(state_dir, lambda r: True, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        kill(proc)
    return rec, proc.pid


def _wait_exec(pid: int, name: str, timeout_s: float = 10.0) -> None:
    """Wait until process `pid` runs the program `name`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not start {name} within {timeout_s} s")


def test_start_time_identifies_a_process() -> None:
    me = os.getpid()
    st = proc_start_time(me)
    assert st is not None and same_process(me, st)
    assert not same_process(me, st + 1)
    assert proc_start_time(2**22 + 12345) is None


def test_lock_refuses_a_second_run_with_one_clear_line(state_dir: Path) -> None:
    first = RunState.begin(directory=state_dir, lock_timeout_s=LOCK_WAIT_S)
    try:
        with pytest.raises(RunActive) as err:
            RunState.begin(directory=state_dir, lock_timeout_s=0)
        msg = str(err.value)
        assert "\n" not in msg
        assert msg.startswith(f"another emu run (pid {os.getpid()}, started 20")
        assert msg.endswith("is active; stop it or run `make stop`")
    finally:
        first.finish()
    RunState.begin(directory=state_dir, lock_timeout_s=LOCK_WAIT_S).finish()  # free again


def test_nothing_to_stop(state_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() != 0:
        pytest.skip("emu stop needs root")
    assert commands.cmd_stop(argparse.Namespace(lock_wait=0.0)) == 0
    assert "nothing to stop" in capsys.readouterr().out


def test_stop_not_root_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert commands.cmd_stop(argparse.Namespace(lock_wait=0.0)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs root" in err


def test_missing_tool_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    real = shutil.which
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "mnexec" else real(t))
    with pytest.raises(NetError, match=r"^emu: missing mnexec \(apt-get install mininet\)$"):
        check_environment()


@needs_mininet
@pytest.mark.timeout(60)
def test_recycled_pid_is_not_killed(state_dir: Path) -> None:
    """A record whose PID now belongs to another process (other start time) must not
    kill it; the same record with the right start time does."""
    sleeper = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        st = proc_start_time(sleeper.pid)
        assert st is not None
        state = RunState.begin(directory=state_dir, lock_timeout_s=LOCK_WAIT_S)
        state.data["processes"].append({"pid": sleeper.pid, "start_time": st - 1,
                                        "role": "switch", "name": "leaf1", "group": True})
        orphan(state)
        r = emu_stop(state_dir)
        assert r.returncode == 0, r.stdout + r.stderr
        assert sleeper.poll() is None, "emu stop killed a process it did not start"
        assert load_records(state_dir) == []

        state = RunState.begin(directory=state_dir, lock_timeout_s=LOCK_WAIT_S)
        state.data["processes"].append({"pid": sleeper.pid, "start_time": st,
                                        "role": "switch", "name": "leaf1", "group": True})
        orphan(state)
        r = emu_stop(state_dir)
        assert r.returncode == 0, r.stdout + r.stderr
        assert sleeper.wait(timeout=10) == -signal.SIGTERM
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        sleeper.wait()


@needs_mininet
@pytest.mark.timeout(60)
def test_interface_with_another_mac_is_left_alone(state_dir: Path) -> None:
    subprocess.run(["ip", "link", "add", "emut-x0", "address", "02:aa:00:00:00:01", "type",
                    "veth", "peer", "name", "emut-x1"], check=True)
    try:
        state = RunState.begin(directory=state_dir, lock_timeout_s=LOCK_WAIT_S)
        state.add_interfaces([("emut-x0", "02:aa:00:00:00:02", None)])
        orphan(state)
        r = emu_stop(state_dir)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "not ours, left alone" in r.stdout
        assert "emut-x0" in subprocess.run(["ip", "-o", "link"], capture_output=True,
                                           text=True).stdout
    finally:
        subprocess.run(["ip", "link", "del", "emut-x0"], capture_output=True)


@needs_mininet
@pytest.mark.timeout(90)
def test_a_run_killed_mid_setup_is_removed_by_emu_stop(state_dir: Path, snapshot: Snapshot,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Switches "never" get ready: the runner is killed while waiting for them.
    proc = start_runner("leafspine2", tmp_path, "--ready-delay", "600", "--no-reaper")
    try:
        rec = wait_record(state_dir, lambda r: sum(p["role"] == "switch"
                                                   for p in r["processes"]) == 4, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        kill(proc)
    switch_pids = [(p["pid"], p["start_time"]) for p in rec["processes"]
                   if p["role"] == "switch"]
    assert all(same_process(p, st) for p, st in switch_pids)  # orphans, for now
    assert snapshot.leftovers()  # interfaces, processes: the mess emu stop is for

    # A new run is not blocked by the dead one's lock, but its interfaces clash.
    with pytest.raises(NetError, match="already exists.*make stop"):
        # lock_wait_s 0 (the default): no waiting for the names to go away
        EmuNet(FABRIC, SleepTarget(), tmp_path / "again", pipeline=PIPELINE).start()

    r = emu_stop(state_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"run {rec['run_id']}: removing what it left behind" in r.stdout
    assert not any(same_process(p, st) for p, st in switch_pids)
    snapshot.assert_clean()
    assert load_records(state_dir) == []
    assert not (state_dir / rec["run_id"]).exists()


@needs_mininet
@pytest.mark.timeout(90)
def test_emu_stop_ends_a_live_run(state_dir: Path, snapshot: Snapshot, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    proc = start_runner("leafspine2", tmp_path)
    try:
        wait_line(proc, "UP")
        # the live run holds the lock; a second network says so (not "names taken")
        with pytest.raises(RunActive, match=f"pid {proc.pid},"):
            RunState.begin(directory=state_dir, lock_timeout_s=0)
        with pytest.raises(RunActive, match=f"another emu run \\(pid {proc.pid},"):
            EmuNet(FABRIC, SleepTarget(), tmp_path / "second", pipeline=PIPELINE).start()
        t0 = time.monotonic()
        r = emu_stop(state_dir)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"stopping its runner (pid {proc.pid})" in r.stdout
        assert proc.wait(timeout=10) == 130  # it tore itself down on SIGINT
        assert time.monotonic() - t0 < 10
    finally:
        kill(proc)
    snapshot.assert_clean()
    assert load_records(state_dir) == []


@needs_mininet
@pytest.mark.timeout(60)
def test_processes_started_in_a_host_die_with_a_killed_run(state_dir: Path,
                                                          snapshot: Snapshot,
                                                          tmp_path: Path) -> None:
    """Recorded or not, what runs in a host namespace is found (by the namespace,
    proven ours by its interface's MAC) and ended."""
    state = RunState.begin(tmp_path, directory=state_dir, lock_timeout_s=LOCK_WAIT_S)
    net = EmuNet(FABRIC, SleepTarget(), tmp_path, pipeline=PIPELINE, state=state)
    net.start()
    try:
        recorded = net.popen("h1", ["sleep", "600"])
        unrecorded = net.host("h2").popen(["sleep", "600"])  # behind EmuNet's back
        # Popen returns at fork: until mnexec has joined h2's namespace and run sleep,
        # nothing marks the process as h2's (a killed run's processes are long past that).
        _wait_exec(unrecorded.pid, "sleep")
        # Simulate the runner dying: forget the network without tearing it down.
        orphan(state)
        r = emu_stop(state_dir)
        assert r.returncode == 0, r.stdout + r.stderr
        assert recorded.wait(timeout=10) is not None
        assert unrecorded.wait(timeout=10) is not None
        assert "left in host h2's namespace" in r.stdout
    finally:
        net.stop()
    snapshot.assert_clean()


@needs_mininet
@pytest.mark.timeout(120)
def test_a_killed_run_of_real_switch_daemons_is_removed_by_emu_stop(
        state_dir: Path, snapshot: Snapshot, tmp_path: Path) -> None:
    from emu.targets import get_target

    try:
        if get_target("embedded").missing():
            pytest.skip("the embedded target is not available")
    except ImportError:
        pytest.skip("emu.targets.embedded is not in the tree yet")
    rec, _pid = _killed_when_up(state_dir, tmp_path, "--target", "embedded", "--no-reaper")
    r = emu_stop(state_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    snapshot.assert_clean()
    assert load_records(state_dir) == []
    for d in rec["dirs"]:
        assert not Path(d).exists()
    for s in rec["sockets"]:
        assert not Path(s).exists()


@needs_mininet
@pytest.mark.timeout(120)
@pytest.mark.parametrize("target", ["standin", "embedded"])
def test_a_killed_run_is_removed_by_its_reaper(target: str, state_dir: Path,
                                               snapshot: Snapshot, tmp_path: Path) -> None:
    """SIGKILL runs no teardown: a killed runner's switch veths and processes stayed
    until `make stop`, and the next run refused to start. Its reaper removes them."""
    rec, pid = _killed_when_up(state_dir, tmp_path, "--target", target)
    deadline = time.monotonic() + 60
    while load_records(state_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert load_records(state_dir) == []
    snapshot.assert_clean()
    log = (tmp_path / "reaper.log").read_text()
    assert f"run {rec['run_id']}: its runner (pid {pid}) ended without tearing the " \
           "fabric down" in log and log.endswith("  done\n")
    # ... and a new run starts at once
    net = EmuNet(FABRIC, SleepTarget(), tmp_path / "again", pipeline=PIPELINE)
    net.start()
    net.stop()
    snapshot.assert_clean()


@needs_mininet
@pytest.mark.timeout(60)
def test_a_run_that_ends_releases_its_reaper(state_dir: Path, snapshot: Snapshot,
                                             tmp_path: Path) -> None:
    """Torn down normally, a run leaves nothing for its reaper, which exits at once."""
    net = EmuNet(FABRIC, SleepTarget(), tmp_path, pipeline=PIPELINE)
    net.start()
    reaper = net._reaper
    assert reaper is not None and reaper.proc.poll() is None
    net.stop()
    assert reaper.proc.returncode == 0
    assert not (tmp_path / "reaper.log").exists()
    snapshot.assert_clean()
