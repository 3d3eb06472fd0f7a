"""Per-QP pacing and the time-dilation rule.

Time dilation: the emulator can run a fabric of nominal speed R (say 100 Gbps) at
R / D on the wire (say 20 Mbps with D = 5000). Every rate is divided by D and every
duration (DCQCN timers and intervals, RTO) multiplied by D; byte counts (MTU, DCQCN
byte counter, buffers) stay. Then packets per unit of (dilated) time, rate/time
products and the number of packets per timer period are unchanged, so dynamics keep
their shape. A dilated duration is clamped up to the floor
    max(timer_resolution_ns, one MTU-sized frame time at the wire line rate)
because a timer shorter than a packet time or than what the clock can resolve cannot
act as designed; the clamped parameter names are reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from emu.core.units import Dilation as _Dilation


@dataclass(frozen=True)
class Dilation(_Dilation):
    """The run's dilation (emu.core.units) plus the host's timer floor."""

    timer_resolution_ns: int = 0
    nominal_line_rate_bps: float | None = None
    mtu_frame_bytes: int = 1024 + 58

    @property
    def wire_line_rate_bps(self) -> float | None:
        r = self.nominal_line_rate_bps
        return None if r is None else self.wire_rate_bps(r)

    def floor_ns(self) -> int:
        wire = self.wire_line_rate_bps
        pkt = 0 if wire is None else int(self.mtu_frame_bytes * 8 * 1e9 / wire)
        return max(self.timer_resolution_ns, pkt)

    def time_ns(self, nominal_ns: int) -> int:
        w = self.wire_ns(nominal_ns)
        return max(w, self.floor_ns()) if w > 0 else 0

    def rate_bps(self, nominal_bps: float) -> float:
        return self.wire_rate_bps(nominal_bps)


class Pacer:
    """Next-send-time scheduling at a rate; a late wakeup may catch up by `burst_ns`."""

    __slots__ = ("rate_bps", "next_ns", "burst_ns", "overhead_bytes", "_ns_per_byte",
                 "_last_bytes")

    def __init__(self, rate_bps: float | None, burst_ns: int = 0, overhead_bytes: int = 24) -> None:
        self.next_ns = 0
        self.burst_ns = burst_ns
        self.overhead_bytes = overhead_bytes  # preamble + SFD + FCS + inter-frame gap
        self.rate_bps: float | None = None
        self._ns_per_byte = 0.0
        self._last_bytes = 0  # the last packet's gap, in bytes on the wire
        self.set_rate(rate_bps)

    def set_rate(self, rate_bps: float | None, now_ns: int | None = None) -> None:
        """A new rate at `now_ns` re-times the gap still running after the last packet
        (the HPCC simulator's ChangeRate does the same): without it, a packet sent at a
        minimum rate of 1 Mb/s holds the QP for ~30 ms whatever the rate becomes
        meanwhile. The re-timed send is never before `now_ns`: a send in the past would
        take the late-wakeup catch-up (`burst_ns`, wire time), which depends on the
        dilation."""
        old = self._ns_per_byte
        new = 0.0 if not rate_bps else 8e9 / rate_bps
        if now_ns is not None and old and new and self._last_bytes and self.next_ns > now_ns:
            shift = int(self._last_bytes * new) - int(self._last_bytes * old)
            self.next_ns = max(now_ns, self.next_ns + shift)
        self.rate_bps = rate_bps
        self._ns_per_byte = new

    def on_send(self, nbytes: int, now_ns: int) -> None:
        if self._ns_per_byte:
            t = self.next_ns
            floor = now_ns - self.burst_ns
            if t < floor:
                t = floor
            self._last_bytes = nbytes + self.overhead_bytes
            self.next_ns = t + int(self._last_bytes * self._ns_per_byte)
