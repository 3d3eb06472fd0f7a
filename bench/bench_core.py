"""Throughput of the shared seams: virtual-clock timers and in-memory links."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._machine import describe  # noqa: E402
from emu.core import MemLink, VirtualClock  # noqa: E402


def timers(n: int = 300_000) -> float:
    clock = VirtualClock()
    noop = lambda: None  # noqa: E731
    t0 = time.perf_counter()
    for i in range(n):
        clock.call_at(i * 7 % 1_000_003, noop)
    clock.run_until_idle()
    return n / (time.perf_counter() - t0)


def memlink(n: int = 200_000) -> float:
    clock = VirtualClock()
    link = MemLink(clock, rate_bps=10_000_000_000, delay_ns=1_000)
    got = [0]

    def rx(_frame: bytes) -> None:
        got[0] += 1

    link.b.set_receiver(rx)
    frame = bytes(1024)
    t0 = time.perf_counter()
    for _ in range(n // 1000):
        for _ in range(1000):
            link.a.send(frame)
        clock.run_until_idle()
    assert got[0] == n
    return n / (time.perf_counter() - t0)


def main() -> None:
    print(describe())
    print(f"virtual clock: {timers():>12,.0f} timers/s (schedule + fire)")
    print(f"MemLink:       {memlink():>12,.0f} frames/s (1 KB, send + deliver)")


if __name__ == "__main__":
    main()
