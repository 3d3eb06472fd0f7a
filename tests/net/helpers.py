"""Starting the test runner (tests/net/runner.py) and watching its run record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).with_name("runner.py")
REPO = Path(__file__).resolve().parents[2]
# The run lock is machine-wide: tests queue for it (behind a run or another session).
LOCK_WAIT_S = 240


def start_runner(topo: str, run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(RUNNER), topo, str(run_dir),
                             "--lock-wait", str(LOCK_WAIT_S), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ), cwd=REPO)


def wait_line(proc: subprocess.Popen[str], want: str, timeout_s: float = 30.0) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.strip() == want:
            return
        if not line and proc.poll() is not None:
            break
    err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
    raise AssertionError(f"runner never printed {want}: {err[-2000:]}")


def records(state_dir: Path) -> list[dict[str, Any]]:
    out = []
    for p in state_dir.glob("*.json"):
        try:
            out.append(json.loads(p.read_text()))
        except ValueError:
            pass  # being rewritten
    return out


def wait_record(state_dir: Path, pred: Any, proc: subprocess.Popen[str] | None = None,
                timeout_s: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            _out, err = proc.communicate()
            raise AssertionError(f"runner exited ({proc.returncode}): {err[-2000:]}")
        for rec in records(state_dir):
            if pred(rec):
                return rec
        time.sleep(0.05)
    raise AssertionError(f"no run record matching in {state_dir}: {records(state_dir)}")


def emu_stop(env_state_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EMU_STATE_DIR": str(env_state_dir)}
    return subprocess.run([sys.executable, "-m", "emu", "stop", "--lock-wait", str(LOCK_WAIT_S)],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=40)


def kill(proc: subprocess.Popen[str]) -> None:
    """Test cleanup: the runner, if still there. No communicate(): whatever it left
    running may hold its pipes open."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()
