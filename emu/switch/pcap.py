"""Per-port pcap files, as BMv2's --pcap DIR writes them: `<iface>_in.pcap` and
`<iface>_out.pcap`, classic libpcap format, Ethernet link type, microsecond stamps."""

from __future__ import annotations

import os
import struct
import time
from typing import BinaryIO

_GLOBAL = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
_rec = struct.Struct("<IIII").pack


class PcapWriter:
    """Append frames to a pcap file; buffered, flushed by `flush()` and on close."""

    def __init__(self, path: str, snaplen: int = 65535) -> None:
        self.path = path
        self.snaplen = snaplen
        self._f: BinaryIO | None = open(path, "wb", buffering=1 << 16)  # noqa: SIM115
        self._f.write(_GLOBAL)
        self._f.flush()
        self.frames = 0

    def write(self, frame: bytes, ts_ns: int | None = None) -> None:
        f = self._f
        if f is None:
            return
        t = time.time_ns() if ts_ns is None else ts_ns
        sec, ns = divmod(t, 1_000_000_000)
        data = frame[:self.snaplen]
        f.write(_rec(sec, ns // 1000, len(data), len(frame)))
        f.write(data)
        self.frames += 1

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def pcap_paths(directory: str, iface: str) -> tuple[str, str]:
    return (os.path.join(directory, f"{iface}_in.pcap"),
            os.path.join(directory, f"{iface}_out.pcap"))


def read_pcap(path: str) -> list[bytes]:
    """Frames of a pcap written by PcapWriter (for tests and tools)."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    off = 24
    while off + 16 <= len(data):
        _s, _us, incl, _orig = struct.unpack_from("<IIII", data, off)
        off += 16
        out.append(data[off:off + incl])
        off += incl
    return out
