"""The line every benchmark prints first: which interpreter on which machine."""

from __future__ import annotations

import os
import platform
import sys


def describe() -> str:
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    from emu.core.accel import status

    return (f"{platform.python_implementation()} {platform.python_version()} "
            f"({sys.executable}) on {cpu}, {os.cpu_count()} cores, {platform.machine()}; "
            f"per-packet modules: {status()}")
