"""`emu calibrate` end to end on real Mininet: a stop signal stops the calibration."""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_stops_the_calibration_and_saves_nothing(tmp_path: Path,
                                                               sig: int) -> None:
    """Ctrl-C stopped only the point under way: its partial run was judged "too slow",
    the next rates ran, and a rate suggested from that verdict was saved for `emu run`."""
    saved = tmp_path / "calibration.json"
    p = subprocess.Popen(
        [sys.executable, "-m", "emu", "calibrate", "clos4", "--rates", "1Mbps,2Mbps",
         "--size", "16777216", "--results", str(tmp_path / "results")], cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "EMU_CALIBRATION": str(saved)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_ready(p)
        time.sleep(3.0)  # in the first point's workload
        p.send_signal(sig)
        rc = p.wait(timeout=180)
        assert p.stdout is not None and p.stderr is not None
        out, err = p.stdout.read(), p.stderr.read()
        assert rc == 130, (rc, err[-2000:])
        assert "emu calibrate: interrupted after 0 of 2 rates; nothing saved" in err, err
        assert "at 2 Mb/s" not in err and "verdict" not in out, (out, err)
        assert not saved.exists()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
