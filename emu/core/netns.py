"""Network namespaces by name (the `ip netns` convention: /run/netns/NAME).

`inside(name)` moves the calling thread into a namespace for the duration of a
block; sockets created there stay bound to that namespace after the block, so
one process can own ports in several namespaces (tests, in-process fabrics).
`private()` does the same with a new, unnamed namespace that only has loopback.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct
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


@contextlib.contextmanager
def private() -> Iterator[None]:
    """Run the block in a new network namespace with loopback up and no other interface
    (this thread only; needs CAP_SYS_ADMIN, else OSError on entry). Processes started in
    the block stay in it; being unnamed, it goes when the last of them ends."""
    own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    try:
        if _libc.unshare(CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unshare: {os.strerror(err)}")
        try:
            _loopback_up()
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)


_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ_FLAGS = "16sH22x"  # struct ifreq: the name, then ifr_flags in the union


def _loopback_up() -> None:
    """`ip link set lo up` in this thread's namespace, without iproute2."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        _, flags = struct.unpack(_IFREQ_FLAGS, fcntl.ioctl(
            s, _SIOCGIFFLAGS, struct.pack(_IFREQ_FLAGS, b"lo", 0)))
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack(_IFREQ_FLAGS, b"lo", flags | _IFF_UP))


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
