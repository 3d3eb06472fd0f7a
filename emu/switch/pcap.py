"""Per-port pcap files, as BMv2's --pcap DIR writes them: `<iface>_in.pcap` and
`<iface>_out.pcap`, classic libpcap format, Ethernet link type, microsecond stamps (or
nanosecond ones: the variant with magic 0xA1B23C4D, which tshark, libpcap and Scapy read).

A run's captures are stamped in modelled time: a virtual run writes it directly, a real
run's files (the switch daemon's or BMv2's, in wall-clock time) are rewritten by
`rescale_to_modelled` once the switches have stopped."""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import time
from collections.abc import Iterable, Iterator
from typing import BinaryIO, NamedTuple

log = logging.getLogger(__name__)

MAGIC_US = 0xA1B2C3D4
MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
_rec = struct.Struct("<IIII").pack


def _global_header(nanosecond: bool, snaplen: int, linktype: int = LINKTYPE_ETHERNET) -> bytes:
    magic = MAGIC_NS if nanosecond else MAGIC_US
    return struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)


class PcapWriter:
    """Append frames to a pcap file; buffered, flushed by `flush()` and on close.

    A capture is a by-product: a file that cannot be written (disk full, folder gone)
    ends that capture, logged once and kept in `error`, never the switch or the run
    that feeds it. What was written before stays readable (tshark reads up to the last
    whole record). Stamps are nanoseconds since the epoch (wall-clock time when the
    caller gives none), stored as microseconds unless `nanosecond`."""

    def __init__(self, path: str, snaplen: int = 65535, *, warn: bool = True,
                 nanosecond: bool = False) -> None:
        self.path = path
        self.snaplen = snaplen
        self.warn = warn  # off where the caller reports `error` itself (a run's notes)
        self.nanosecond = nanosecond
        self.frames = 0
        self.error: str | None = None
        self._f: BinaryIO | None = None
        try:
            self._f = open(path, "wb", buffering=1 << 16)  # noqa: SIM115
            self._f.write(_global_header(nanosecond, snaplen))
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
            f.write(_rec(sec, ns if self.nanosecond else ns // 1000, len(data), len(frame)))
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


class PcapRecord(NamedTuple):
    ts_ns: int  # since the epoch
    data: bytes  # as captured (at most the snap length)
    orig_len: int  # the frame's length on the wire


class PcapFormatError(ValueError):
    pass


class PcapReader:
    """A classic pcap file of either byte order and either stamp resolution (the
    switch daemon's, BMv2's, tcpdump's): `nanosecond` says which its stamps are, and
    iterating gives its records. A record cut short at the end (a capture stopped
    mid-write) is left out, as tshark leaves it out."""

    def __init__(self, path: str) -> None:
        self._f = f = open(path, "rb")  # noqa: SIM115 (closed by close())
        head = f.read(24)
        for order in "<>":
            if len(head) == 24 and struct.unpack_from(order + "I", head)[0] in (MAGIC_US,
                                                                               MAGIC_NS):
                break
        else:
            f.close()
            raise PcapFormatError(f"{path}: not a classic pcap file")
        magic, _major, _minor, _zone, _sigfigs, self.snaplen, self.linktype = \
            struct.unpack(order + "IHHiIII", head)
        self.nanosecond = magic == MAGIC_NS
        self._rec = struct.Struct(order + "IIII")

    def __iter__(self) -> Iterator[PcapRecord]:
        f, unpack, scale = self._f, self._rec.unpack, 1 if self.nanosecond else 1000
        while len(h := f.read(16)) == 16:
            sec, frac, incl, orig = unpack(h)
            data = f.read(incl)
            if len(data) < incl:
                return
            yield PcapRecord(sec * 1_000_000_000 + frac * scale, data, orig)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> PcapReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_pcap(path: str) -> list[bytes]:
    """The frames of a pcap file (for tests and tools)."""
    with PcapReader(path) as r:
        return [rec.data for rec in r]


def read_stamps(path: str) -> list[int]:
    """The stamps of a pcap file's records, in nanoseconds since the epoch."""
    with PcapReader(path) as r:
        return [rec.ts_ns for rec in r]


def rescale_to_modelled(path: str, origin_ns: int, dilation: float) -> None:
    """Rewrite a capture stamped in wall-clock (wire) time into modelled time, with
    nanosecond stamps: a frame `t` after `origin_ns` on the wire is stamped `t /
    dilation` after it, as every other figure of a run is, so intervals and rates read
    from the file are the modelled fabric's; the new file, in nanoseconds, replaces the
    old one (of either resolution) whole. Run it once per capture."""
    tmp = f"{path}.tmp"
    with PcapReader(path) as reader:
        try:
            with open(tmp, "wb") as out:
                out.write(_global_header(True, reader.snaplen, reader.linktype))
                for r in reader:
                    t = origin_ns + round((r.ts_ns - origin_ns) / dilation)
                    sec, ns = divmod(t, 1_000_000_000)
                    out.write(_rec(sec, ns, len(r.data), r.orig_len))
                    out.write(r.data)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
