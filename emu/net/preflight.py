"""Before touching the kernel: are we root, and are the tools there?"""

from __future__ import annotations

import os
import shutil

from .errors import NetError

# tool -> the Debian package that provides it
TOOLS = {
    "mnexec": "mininet",
    "ifconfig": "net-tools",  # Mininet's Node.setup() insists on it
    "ip": "iproute2",
    "tc": "iproute2",
    "ethtool": "ethtool",
    "nsenter": "util-linux",
}


def check_environment(extra: dict[str, str] | None = None) -> None:
    """Raise NetError (one line) unless we are root and every tool is installed."""
    if os.geteuid() != 0:
        raise NetError("emu: the emulated network needs root (namespaces, veths, tc); "
                       "run as root or with sudo")
    tools = {**TOOLS, **(extra or {})}
    missing = sorted(t for t in tools if shutil.which(t) is None)
    if missing:
        pkgs = sorted({tools[t] for t in missing})
        raise NetError(f"emu: missing {', '.join(missing)} "
                       f"(apt-get install {' '.join(pkgs)})")
