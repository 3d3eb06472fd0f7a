"""Network namespaces by name (the `ip netns` convention: /run/netns/NAME).

`inside(name)` moves the calling thread into a namespace for the duration of a
block; sockets created there stay bound to that namespace after the block, so
one process can own ports in several namespaces (tests, in-process fabrics).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import subprocess
import threading
from collections.abc import Iterator

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/run/netns"

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def inside(name: str) -> Iterator[None]:
    """Run the block in network namespace `name` (this thread only)."""
    own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    try:
        target = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)


def exists(name: str) -> bool:
    return os.path.exists(os.path.join(NETNS_DIR, name))


def add(name: str) -> None:
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    run(name, "ip", "link", "set", "lo", "up")


def delete(name: str) -> None:
    """Delete a namespace if present (idempotent, for cleanup paths)."""
    if exists(name):
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def run(name: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", name, *cmd], check=check,
                          capture_output=True, text=True)
