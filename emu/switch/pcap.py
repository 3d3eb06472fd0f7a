"""Per-port pcap files, as BMv2's --pcap DIR writes them: `<iface>_in.pcap` and
`<iface>_out.pcap`, classic libpcap format, Ethernet link type, microsecond stamps."""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import time
from collections.abc import Iterable
from typing import BinaryIO

log = logging.getLogger(__name__)

_GLOBAL = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
_rec = struct.Struct("<IIII").pack


class PcapWriter:
    """Append frames to a pcap file; buffered, flushed by `flush()` and on close.

    A capture is a by-product: a file that cannot be written (disk full, folder gone)
    ends that capture, logged once and kept in `error`, never the switch or the run
    that feeds it. What was written before stays readable (tshark reads up to the last
    whole record)."""

    def __init__(self, path: str, snaplen: int = 65535, *, warn: bool = True) -> None:
        self.path = path
        self.snaplen = snaplen
        self.warn = warn  # off where the caller reports `error` itself (a run's notes)
        self.frames = 0
        self.error: str | None = None
        self._f: BinaryIO | None = None
        try:
            self._f = open(path, "wb", buffering=1 << 16)  # noqa: SIM115
            self._f.write(_GLOBAL)
            self._f.flush()
        except OSError as exc:
            self._stop(exc)

    def write(self, frame: bytes, ts_ns: int | None = None) -> None:
        f = self._f
        if f is None:
            return
        t = time.time_ns() if ts_ns is None else ts_ns
        sec, ns = divmod(t, 1_000_000_000)
        data = frame[:self.snaplen]
        try:
            f.write(_rec(sec, ns // 1000, len(data), len(frame)))
            f.write(data)
        except OSError as exc:
            self._stop(exc)
            return
        self.frames += 1

    def flush(self) -> None:
        if self._f is not None:
            try:
                self._f.flush()
            except OSError as exc:
                self._stop(exc)

    def close(self) -> None:
        if self._f is not None:
            try:
                self._f.close()
            except OSError as exc:
                self._stop(exc)
            self._f = None

    def _stop(self, exc: OSError) -> None:
        self.error = exc.strerror or str(exc)
        say = log.warning if self.warn else log.debug
        say("pcap %s: capture stopped after %d frames: %s", self.path, self.frames, self.error)
        f, self._f = self._f, None
        if f is not None:
            with contextlib.suppress(OSError):  # its buffer cannot be written either
                f.close()


def capture_problems(writers: Iterable[PcapWriter]) -> list[str]:
    """One line for the captures that stopped early, by reason (for a run's notes)."""
    stopped: dict[str, list[str]] = {}
    for w in writers:
        if w.error:
            stopped.setdefault(w.error, []).append(os.path.basename(w.path))
    return [f"pcap capture stopped early in {len(names)} file(s) ({', '.join(names[:3])}"
            f"{', ...' if len(names) > 3 else ''}): {why}" for why, names in stopped.items()]


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
