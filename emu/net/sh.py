"""Running batches of ip/tc/ethtool commands: one process per batch, not per command,
because fork+exec dominates bring-up time on a 2-core machine."""

from __future__ import annotations

import shlex
import subprocess
import tempfile
from collections.abc import Iterable, Sequence

from .errors import NetError


def script(commands: Iterable[Sequence[str]]) -> str:
    """A `sh -e` script that stops at the first failing command and names it."""
    lines = []
    for argv in commands:
        line = shlex.join(argv)
        lines.append(f"{line} || {{ echo {shlex.quote('failed: ' + line)} >&2; exit 1; }}")
    return "\n".join(lines) + "\n"


def run_script(text: str, what: str) -> None:
    """Run a script in the current (root) namespace; NetError with its stderr on failure.

    The script goes to sh as a file: a large fabric's batch (fattree8: 512 switch
    interfaces) is past the kernel's 128 KiB limit on one argument of `sh -c`."""
    with tempfile.NamedTemporaryFile("w", prefix="emu-", suffix=".sh") as f:
        f.write(text)
        f.flush()
        r = subprocess.run(["sh", f.name], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise NetError(f"{what}: {last_line(r.stderr) or f'exit {r.returncode}'}")


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return "; ".join(lines[-2:])
