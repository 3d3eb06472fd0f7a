"""The switch daemon's first step, run before its slow imports (about 0.5 s).

A daemon must die with its launcher. The death signal (PR_SET_PDEATHSIG) only
covers a parent that exits after it is set, so it is set at once, and the
parent read before it is checked again afterwards: a launcher that exited
during start-up is noticed. Until the daemon installs its handler the signal is
ignored (its default action would kill the daemon when only the launching
*thread* exits) and the later check in run_switch covers that window.
This module imports only the standard library's cheapest parts.
"""

from __future__ import annotations

import os
import signal

PR_SET_PDEATHSIG = 1
PDEATH_SIGNAL = signal.SIGUSR2

launcher_pid: int | None = None  # the parent seen first, or given with --parent-pid


def arm(argv: list[str]) -> bool:
    """Set the death signal for a `switch` command line; False if the parent is gone."""
    global launcher_pid
    parent = os.getppid()
    if "--no-pdeathsig" in argv:
        return True
    for i, a in enumerate(argv):  # an explicit launcher pid wins (exact even for a
        # launcher that exited before this interpreter got going)
        if a == "--parent-pid" and i + 1 < len(argv) and argv[i + 1].isdigit():
            parent = int(argv[i + 1])
        elif a.startswith("--parent-pid=") and a[13:].isdigit():
            parent = int(a[13:])
    launcher_pid = parent
    signal.signal(PDEATH_SIGNAL, signal.SIG_IGN)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(PDEATH_SIGNAL), 0, 0, 0)
    return os.getppid() == parent
