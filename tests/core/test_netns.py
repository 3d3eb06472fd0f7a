"""`netns.private()`: a namespace of its own for the calling thread, loopback only."""

from __future__ import annotations

import os
import socket
import subprocess
import threading

from emu.core import netns
from tests.conftest import needs_root


def _own_ns() -> str:
    return os.readlink(f"/proc/self/task/{threading.get_native_id()}/ns/net")


@needs_root
def test_a_private_namespace_has_loopback_alone_and_the_thread_comes_back() -> None:
    before = _own_ns()
    with netns.private():
        inside = _own_ns()
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                               text=True, check=True).stdout.splitlines()
        # a server bound to every interface there is reachable on loopback only
        with socket.socket() as srv:
            srv.bind(("0.0.0.0", 0))
            srv.listen()
            with socket.create_connection(("127.0.0.1", srv.getsockname()[1]), timeout=5):
                pass
        child = subprocess.Popen(["sleep", "30"])
    try:
        assert inside != before and _own_ns() == before
        assert len(links) == 1 and ": lo:" in links[0] and "UP" in links[0]
        # a process started in the block stays there
        assert os.readlink(f"/proc/{child.pid}/ns/net") == inside
    finally:
        child.kill()
        child.wait()
