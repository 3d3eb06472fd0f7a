"""A disk that fills during a real-time run costs the files, not what the run measured."""

from __future__ import annotations

import errno
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.small_disk import small_disk

from .conftest import REPO
from .test_run import _wait_ready

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.usefixtures("e2e_ready", "no_leftovers")]


def _fill(disk: Path) -> None:
    with (disk / "fill").open("wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_a_disk_that_fills_during_the_workload_costs_files_not_the_measurement(
        tmp_path: Path) -> None:
    """The agents died writing their results (a traceback each, exit 1), then `emu run`
    itself in a traceback: minutes of run, no summary, flows as if never delivered."""
    with small_disk(tmp_path / "disk", "8m") as disk:
        p = subprocess.Popen(
            [sys.executable, "-m", "emu", "run", "clos4", "--no-progress", "--results",
             str(disk), "--workload", "permutation", "--size", "256K", "--timeout", "120",
             "--lock-wait", "600"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            _wait_ready(p)
            deadline = time.monotonic() + 120
            while sum(s.read_text().strip() == "ready"  # every agent up, in its workload
                      for s in disk.glob("*/agents/*.status")) < 8:
                assert time.monotonic() < deadline and p.poll() is None
                time.sleep(0.1)
            (agents,) = disk.glob("*/agents")
            _fill(disk)
            out, err = p.communicate(timeout=300)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert p.returncode == 1, err[-2000:]
    assert "Traceback" not in out + err
    assert re.search(r"^OK: 8/8 flows verified, 2\.1 MB delivered", out, re.M), out[-3000:]
    note = (f"note: 16 agent file(s) not written, first cannot write {agents}/h1.jsonl: "
            "No space left on device; the results of h1, h2, h3, h4, h5, h6, h7, h8 came "
            "on their output")
    # The console wraps the note at its width, within a long path too: compare the text
    # without its whitespace.
    assert "".join(note.split()) in "".join((out + err).split()), (out + err)[-3000:]
    assert err.strip().splitlines()[-1].startswith("emu run: cannot write the results in ")
