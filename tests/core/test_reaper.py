"""The reaper's `--kill` mode (Reaper.for_processes): the processes a command started,
recorded when it made the list, and what those started since (a local Ray instance's
raylet starts its workers on demand), all end before the folders go. Killed only with
their parent, a late child still wrote in a folder as it was removed: a Ray sweep
SIGKILLed as its tasks began left its emu-sweep-* scratch folder in /tmp."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from emu.core.reaper import reap_processes
from emu.core.runstate import descendants, proc_start_time, same_process

# A parent that, once `go` exists, starts a child writing a file in `folder` every 5 ms.
PARENT = """
import os, subprocess, sys, time
go, folder = sys.argv[1], sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.01)
child = ("import os, sys, time\\n"
         "d = sys.argv[1]\\n"
         "i = 0\\n"
         "while True:\\n"
         "    os.makedirs(d, exist_ok=True)\\n"
         "    open(os.path.join(d, str(i)), 'w').close()\\n"
         "    i += 1\\n"
         "    time.sleep(0.005)\\n")
subprocess.Popen([sys.executable, "-c", child, folder])
time.sleep(600)
"""


def test_children_started_after_the_list_end_before_the_folders_go(tmp_path: Path) -> None:
    go, folder = tmp_path / "go", tmp_path / "scratch"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(go), str(folder)])
    kids: list[tuple[int, int | None]] = []
    try:
        start = proc_start_time(parent.pid)
        assert start is not None
        spec = f"{parent.pid}:{start}"  # the list, made before the child exists
        go.touch()
        deadline = time.monotonic() + 30
        while not (descendants(parent.pid) and folder.exists()):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        kids += descendants(parent.pid)
        (child,) = kids
        assert reap_processes(spec, [str(folder)]) == 0
        assert not same_process(*child) and parent.wait(timeout=10) is not None
        time.sleep(0.2)  # a child still alive would have made the folder again by now
        assert not folder.exists()
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid, st in kids:  # reparented once the parent is gone
            if same_process(pid, st):
                os.kill(pid, signal.SIGKILL)
