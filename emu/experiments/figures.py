"""Figures as the run's tables print them: bytes, rates and durations with a unit
(shared by the summary, the live view and the PFC tables)."""

from __future__ import annotations

import math

__all__ = ["fmt_bytes", "fmt_rate", "fmt_s"]


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_rate(bps: float | None) -> str:
    if bps is None or not math.isfinite(bps):
        return "-"
    for unit, k in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= k:
            return f"{bps / k:.2f} {unit}"
    return f"{bps:.0f} b/s"


def fmt_s(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.1f} us"
