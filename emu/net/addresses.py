"""Where each switch serves P4Runtime (and BMv2's Thrift): free TCP ports on
127.0.0.1 found by a bind test from a base, in switch order (so the same fabric gets
the same ports on an idle machine), or unix sockets in the run's scratch dir."""

from __future__ import annotations

import socket
from pathlib import Path

from .errors import NetError

UNIX_PATH_MAX = 107  # sun_path is 108 bytes including the NUL


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class PortAllocator:
    """Hands out free ports from `base` upwards, never the same one twice."""

    def __init__(self, base: int, limit: int = 2000) -> None:
        self.next = base
        self.end = base + limit
        self.taken: set[int] = set()

    def take(self) -> int:
        while self.next < self.end:
            port, self.next = self.next, self.next + 1
            if port not in self.taken and port_is_free(port):
                self.taken.add(port)
                return port
        raise NetError(f"no free TCP port in {self.end - 2000}..{self.end - 1} on 127.0.0.1")


def unix_address(directory: Path, name: str) -> str:
    path = directory / f"{name}.grpc"
    if len(str(path)) > UNIX_PATH_MAX:
        raise NetError(f"unix socket path too long ({len(str(path))} > {UNIX_PATH_MAX}): {path}")
    return f"unix:{path}"
