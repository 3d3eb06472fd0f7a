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
from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.roce.wire import DATA_HEADER_BYTES


@dataclass(frozen=True)
class Dilation(_Dilation):
    """The run's dilation (emu.core.units) plus the host's timer floor."""

    timer_resolution_ns: int = 0
    nominal_line_rate_bps: float | None = None
    # one full data frame on the wire: payload + headers + preamble, FCS and gap
    mtu_frame_bytes: int = 1024 + DATA_HEADER_BYTES + WIRE_OVERHEAD_BYTES

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
    """Next-send-time scheduling at a rate; a late wakeup catches up by its lateness and
    `burst_ns` more.

    `set_rate` applies from the next packet on (the gap after the last one keeps the old
    rate, as the DCQCN models of the HPCC and DCQCN authors' simulators do); `retime`
    also re-times that gap at the new rate, as a rate limiter whose rate changes would
    (and as the HPCC simulator's ChangeRate does for its other algorithms)."""

    __slots__ = ("rate_bps", "next_ns", "burst_ns", "overhead_bytes", "_ns_per_byte",
                 "_slot_ns", "_slot_bytes")

    def __init__(self, rate_bps: float | None, burst_ns: int = 0,
                 overhead_bytes: int = WIRE_OVERHEAD_BYTES) -> None:
        self.next_ns = 0
        self.burst_ns = burst_ns
        self.overhead_bytes = overhead_bytes  # preamble + SFD + FCS + inter-frame gap
        self.rate_bps: float | None = None
        self._ns_per_byte = 0.0
        self._slot_ns = 0  # when the last packet's slot began, and its wire bytes
        self._slot_bytes = 0
        self.set_rate(rate_bps)

    def set_rate(self, rate_bps: float | None) -> None:
        self.rate_bps = rate_bps
        self._ns_per_byte = 0.0 if not rate_bps else 8e9 / rate_bps

    def retime(self, now_ns: int) -> None:
        """The next slot: the last packet's slot plus its gap at the current rate."""
        if self._slot_bytes:
            t = self._slot_ns + int(self._slot_bytes * self._ns_per_byte)
            # a re-timed slot already past is due now, not credit for a catch-up burst
            self.next_ns = max(t, now_ns)

    def restart(self, now_ns: int) -> None:
        """The sender has something to send again after having nothing: its next slot is
        now at the earliest. The catch-up allowance is for time spent waiting to send,
        not for time with nothing to send: that credit was burst_ns of wire time, so a
        slow-motion replay at another dilation sent other bursts, and a first packet got
        it only when it came burst_ns or more after the clock's origin."""
        if self.next_ns < now_ns:
            self.next_ns = now_ns

    def on_send(self, nbytes: int, now_ns: int, late_ns: int = 0) -> None:
        """A packet sent at `now_ns` by a transmit turn `late_ns` behind its timer: the
        slot may start up to that lateness plus `burst_ns` back, so the frames a late
        wakeup held up go at once and the rate over time stays the set one (a slot lost
        to each late turn would lower it by as much as the clock lags)."""
        if self._ns_per_byte:
            t = self.next_ns
            floor = now_ns - self.burst_ns - late_ns
            if t < floor:
                t = floor
            self._slot_ns = t
            self._slot_bytes = nbytes + self.overhead_bytes
            self.next_ns = t + int(self._slot_bytes * self._ns_per_byte)
