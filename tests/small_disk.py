"""A small tmpfs for tests of what a full disk does to a command (root only)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """`path` (created) as a tmpfs of `size` (mount's syntax, "64k") for the block;
    skips the test where mounting needs a root this process is not."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)
