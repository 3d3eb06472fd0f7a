"""`emu run --cli` end to end: the Mininet CLI on a real fabric, and the signals that end
it (or do not)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO
from .test_run import _wait_ready

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.usefixtures("e2e_ready", "no_leftovers")]


def _start_cli(results: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "emu", "run", "clos4", "--cli", "--no-progress", "--results",
         str(results), "--lock-wait", "600"], cwd=REPO, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _finish(p: subprocess.Popen[str], timeout_s: float = 120) -> tuple[int, str, str]:
    try:
        rc = p.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        assert p.stdin is not None
        p.stdin.close()  # end of input ends Mininet's CLI: the run tears down
        p.wait(timeout=120)
        pytest.fail(f"the CLI was still running {timeout_s:g} s after the signal")
    assert p.stdout is not None and p.stderr is not None
    return rc, p.stdout.read(), p.stderr.read()


@pytest.mark.parametrize("command", ["", "h1 ping h8", "workload permutation 16777216"],
                         ids=["prompt", "mininet-command", "fabric-workload"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_termination_signal_ends_the_cli_and_its_run(tmp_path: Path, sig: int,
                                                       command: str) -> None:
    """Mininet's CLI takes any KeyboardInterrupt for a Ctrl-C and goes on: a SIGTERM
    (or the SIGHUP of a closed terminal) at its prompt or in a command left `emu run
    --cli` running, its fabric up, until its input ended. Now it ends the run."""
    p = _start_cli(tmp_path)
    try:
        _wait_ready(p)
        assert p.stdin is not None
        if command:
            p.stdin.write(command + "\n")
            p.stdin.flush()
        time.sleep(3.0)  # the prompt read, or the command under way
        p.send_signal(sig)
        rc, out, err = _finish(p)
        assert rc == 130, (rc, err[-2000:])
        assert "emu run: interrupted; the fabric was torn down" in err
        if command.startswith("workload"):  # its partial results, then the end
            assert "interrupted (signal " in out, out[-2000:]
            assert list(tmp_path.glob("*/workload1-permutation/summary.json"))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_ctrl_c_at_the_prompt_leaves_the_cli_open(tmp_path: Path) -> None:
    """Ctrl-C is the CLI's own (it cancels a line or a command); the run goes on."""
    p = _start_cli(tmp_path)
    try:
        _wait_ready(p)
        assert p.stdin is not None
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        time.sleep(1.0)
        p.stdin.write("counters leaf1\nexit\n")
        p.stdin.flush()
        rc, out, err = _finish(p)
        assert rc == 0, (rc, err[-2000:])
        assert "Interrupt" in err and "group 1:" in out, (out[-2000:], err[-2000:])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
