"""Fixtures for Mininet tests: a private run-state dir, and a snapshot of the
machine's interfaces, namespaces and processes to prove teardown left nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from emu.core.runstate import acquire_lock

from .helpers import LOCK_WAIT_S

IS_ROOT = os.geteuid() == 0
TOOLS = ("mnexec", "ip", "tc", "ethtool", "ifconfig", "nsenter", "ping")
MISSING = [t for t in TOOLS if shutil.which(t) is None]

needs_mininet = pytest.mark.skipif(
    not IS_ROOT or bool(MISSING),
    reason="needs root" if not IS_ROOT else f"needs {', '.join(MISSING)}")

REPO = Path(__file__).resolve().parents[2]


def root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {line.split()[1].rstrip(":").split("@")[0] for line in out.splitlines()}


def processes() -> dict[int, str]:
    """pid -> cmdline of every process now."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    out[int(entry)] = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                pass
    return out


@dataclass
class Snapshot:
    links: set[str]
    pids: set[int]

    @classmethod
    def take(cls) -> Snapshot:
        return cls(root_links(), set(processes()))

    def leftovers(self) -> list[str]:
        """What exists now that did not before and looks like ours: Mininet-named
        interfaces, node shells, stand-in switches, switch daemons, probes. (Other
        sessions' tests on this machine make namespaces and veths of their own.)"""
        now = Snapshot.take()
        problems = [f"interface {n}" for n in sorted(now.links - self.links)
                    if re.search(r"-eth\d+$", n)]
        procs = processes()
        for pid in sorted(now.pids - self.pids):
            cmd = procs.get(pid, "")
            ours = (any(k in cmd for k in ("mininet:", "mnexec", "sleep 600", "ping -n -q -c"))
                    or ("emu.switch" in cmd and re.search(r"@\S+-eth\d+", cmd)))
            if ours:
                problems.append(f"process {pid} {cmd.strip()}")
        return problems

    def assert_clean(self, timeout_s: float = 5.0) -> None:
        """Namespaces are freed by the kernel asynchronously: allow it a moment. Checked
        under the run lock, so another session's run that started after ours ended is
        not taken for our leftovers."""
        fd = acquire_lock(LOCK_WAIT_S)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                left = self.leftovers()
                if not left or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        finally:
            os.close(fd)
        assert not left, f"left behind: {left}"




@pytest.fixture
def state_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private EMU_STATE_DIR, so tests never meet a real run's records. The run lock
    is machine-wide: tests queue for it (behind a run or another test session). A
    short path, as the real one: unix-socket addresses live in it (108-byte sun_path),
    and pytest-xdist's tmp_path is longer."""
    d = Path(tempfile.mkdtemp(prefix="emu-state-"))
    monkeypatch.setenv("EMU_STATE_DIR", str(d))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def snapshot() -> Iterator[Snapshot]:
    yield Snapshot.take()


@pytest.fixture(scope="session", autouse=True)
def one_net_session_at_a_time() -> Iterator[None]:
    """Two pytest sessions on this machine (CI and a developer, say) would both build
    leafspine2's `leaf1-eth1` and see each other's interfaces as leftovers: the
    Mininet tests of one session run only after the other's are done."""
    if not IS_ROOT:
        yield
        return
    import fcntl

    os.makedirs("/run/emu", exist_ok=True)
    fd = os.open("/run/emu/tests.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + 900
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail("another test session kept /run/emu/tests.lock for 15 min")
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)
