"""DCQCN (Zhu et al., SIGCOMM 2015): notification point and reaction point, plus profiles.

All parameters are given in nominal units (the emulated link, e.g. 100 Gbps) and turned
into wire units by a `Dilation` (see `emu.roce.pacing`): rates divide by the dilation
factor D and durations multiply by it, byte counts stay. The reaction point works only
in wire units.

Reaction point, per QP (current rate Rc, target rate Rt, alpha), as in the notes:
- CNP: Rt = Rc; Rc = max(min_rate, Rc * (1 - alpha/2)); alpha = (1-g) alpha + g;
  the increase timer, byte counter and stage counters i, j restart. A non-zero
  rate_on_first_cnp_bps replaces the decrease of the first CNP. CNPs that arrive less
  than rate_reduce_period after the last decrease are counted and ignored (the NIC
  applies at most one decrease per period).
- alpha decays, alpha = (1-g) alpha, once per full alpha period without a CNP. It is
  evaluated lazily (periods elapsed since the last update), which equals a timer
  restarted at each CNP and costs no events while idle.
- Increase events: every time_reset (i += 1) and every byte_reset bytes sent (j += 1);
  fast recovery while max(i, j) < F: Rc = (Rt + Rc)/2; additive when max(i, j) >= F:
  Rt += R_AI; hyper when min(i, j) >= F: Rt += (min(i, j) - F + 1) * R_HAI; after
  either, Rc = (Rt + Rc)/2. byte_reset = 0 disables the byte counter (j stays 0, so
  hyper increase never triggers, as in the HPCC simulator). Rt and Rc never exceed the
  line rate; once Rc is within 1 bit/s of it, the episode ends and timers stop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from emu.core.clock import Clock, TimerHandle


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN parameters in nominal units (defaults: the NVIDIA NIC profile)."""

    enabled: bool = True
    g: float = 5 / 1024
    alpha_init: float = 1.0
    alpha_period_ns: int = 1_000
    rate_reduce_period_ns: int = 4_000
    min_rate_bps: float = 1e6
    rate_on_first_cnp_bps: float = 0.0
    time_reset_ns: int = 300_000
    byte_reset_bytes: int = 32767
    threshold_f: int = 1
    ai_rate_bps: float = 5e6
    hai_rate_bps: float = 50e6
    min_time_between_cnps_ns: int = 50_000  # notification point

    def validate(self) -> None:
        if not 0 < self.g < 1:
            raise ValueError("dcqcn.g must be in (0, 1)")
        if not 0 <= self.alpha_init <= 1:
            raise ValueError("dcqcn.alpha_init must be in [0, 1]")
        if self.alpha_period_ns <= 0 or self.time_reset_ns <= 0:
            raise ValueError("dcqcn.alpha_period_ns and time_reset_ns must be positive")
        if self.threshold_f < 1:
            raise ValueError("dcqcn.threshold_f must be >= 1")
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
                raise ValueError(f"dcqcn.{f.name} must not be negative")


PROFILES = ("paper", "nvidia", "hpcc")


def profile(name: str, line_rate_bps: float = 100e9) -> DcqcnParams:
    """Named parameter sets from docs/notes (dcqcn.md); rates scale to the link speed
    where the source does (HPCC's AI/HAI are given per 25 Gbps)."""
    if name == "nvidia":
        return DcqcnParams()
    if name == "hpcc":
        k = line_rate_bps / 25e9
        return DcqcnParams(g=1 / 256, min_rate_bps=1e9, byte_reset_bytes=0,
                           ai_rate_bps=5e6 * k, hai_rate_bps=50e6 * k,
                           min_time_between_cnps_ns=0)
    if name == "paper":
        return DcqcnParams(g=1 / 256, alpha_period_ns=55_000, rate_reduce_period_ns=0,
                           time_reset_ns=55_000, byte_reset_bytes=10 * 1024 * 1024,
                           threshold_f=5, ai_rate_bps=40e6, hai_rate_bps=400e6,
                           min_time_between_cnps_ns=50_000)
    raise ValueError(f"unknown DCQCN profile {name!r}; choose one of {', '.join(PROFILES)}")


class NotificationPoint:
    """Receiver side: at most one CNP per QP per min interval, on CE-marked packets."""

    __slots__ = ("min_interval_ns", "last_ns", "suppressed")

    def __init__(self, min_interval_ns: int) -> None:
        self.min_interval_ns = min_interval_ns
        self.last_ns: int | None = None
        self.suppressed = 0

    def on_ce(self, now_ns: int) -> bool:
        """A CE-marked packet arrived; True if a CNP must be sent now."""
        last = self.last_ns
        if last is not None and now_ns - last < self.min_interval_ns:
            self.suppressed += 1
            return False
        self.last_ns = now_ns
        return True


class ReactionPoint:
    """Sender side rate control of one QP. Rates in wire bit/s, times in clock ns."""

    def __init__(self, params: DcqcnParams, line_rate_bps: float, clock: Clock,
                 on_rate: Callable[[float], None] | None = None, trace_max: int = 100_000) -> None:
        params.validate()
        self.p = params
        self.line = float(line_rate_bps)
        self.clock = clock
        self.on_rate = on_rate
        self.rc = self.line
        self.rt = self.line
        self._alpha = params.alpha_init
        self._alpha_t = clock.now_ns()
        self.i = 0  # timer stage count since the last decrease
        self.j = 0  # byte-counter stage count since the last decrease
        self.bytes = 0
        self.cnps = 0
        self.cnps_ignored = 0
        self.decreases = 0
        self.increases = 0
        self.last_decrease_ns: int | None = None
        self.active = False  # in a congestion episode (Rc below line rate)
        self._timer: TimerHandle | None = None
        self.trace: list[tuple[int, float]] = [(clock.now_ns(), self.rc)]
        self._trace_max = trace_max

    @property
    def alpha(self) -> float:
        self._decay(self.clock.now_ns())
        return self._alpha

    def _decay(self, now: int) -> None:
        period = self.p.alpha_period_ns
        k = (now - self._alpha_t) // period
        if k > 0:
            self._alpha *= (1.0 - self.p.g) ** k
            self._alpha_t += k * period

    def _set_rc(self, rc: float) -> None:
        self.rc = rc
        if len(self.trace) < self._trace_max:
            self.trace.append((self.clock.now_ns(), rc))
        if self.on_rate is not None:
            self.on_rate(rc)

    def on_cnp(self) -> None:
        p = self.p
        now = self.clock.now_ns()
        self.cnps += 1
        last = self.last_decrease_ns
        if last is not None and p.rate_reduce_period_ns and now - last < p.rate_reduce_period_ns:
            self.cnps_ignored += 1
            return
        self._decay(now)
        alpha = self._alpha
        self.rt = self.rc
        if self.decreases == 0 and p.rate_on_first_cnp_bps > 0:
            rc = p.rate_on_first_cnp_bps
        else:
            rc = self.rc * (1.0 - alpha / 2.0)
        rc = min(self.line, max(p.min_rate_bps, rc))
        self._alpha = (1.0 - p.g) * alpha + p.g
        self._alpha_t = now
        self.decreases += 1
        self.last_decrease_ns = now
        self.i = self.j = 0
        self.bytes = 0
        self.active = True
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.clock.call_later(p.time_reset_ns, self._on_timer)
        self._set_rc(rc)

    def _on_timer(self) -> None:
        self._timer = None
        if not self.active:
            return
        self.i += 1
        self._increase()
        if self.active:
            self._timer = self.clock.call_later(self.p.time_reset_ns, self._on_timer)

    def on_sent(self, nbytes: int) -> None:
        """Bytes sent by the QP: drives the byte counter during an episode."""
        if not self.active:
            return
        reset = self.p.byte_reset_bytes
        if reset <= 0:
            return
        self.bytes += nbytes
        while self.bytes >= reset and self.active:
            self.bytes -= reset
            self.j += 1
            self._increase()

    def _increase(self) -> None:
        p = self.p
        f = p.threshold_f
        i, j = self.i, self.j
        if min(i, j) >= f:
            self.rt += (min(i, j) - f + 1) * p.hai_rate_bps
        elif max(i, j) >= f:
            self.rt += p.ai_rate_bps
        if self.rt > self.line:
            self.rt = self.line
        rc = (self.rt + self.rc) / 2.0
        self.increases += 1
        if self.line - rc < 1.0:
            rc = self.line
            self.active = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self._set_rc(min(rc, self.line))

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.active = False


def scaled(params: DcqcnParams, dilation: float, floor_ns: int) -> tuple[DcqcnParams, list[str]]:
    """Params in wire units for time dilation D; durations below floor_ns are raised to
    it (zero stays zero: it means 'no limit'). Returns the params and the clamped names."""
    clamped: list[str] = []
    changes: dict[str, Any] = {}
    for f in fields(params):
        v = getattr(params, f.name)
        if f.name.endswith("_ns"):
            w = int(round(v * dilation))
            if 0 < w < floor_ns:
                w = floor_ns
                clamped.append(f.name)
            changes[f.name] = w
        elif f.name.endswith("_bps"):
            changes[f.name] = v / dilation
    return replace(params, **changes), clamped
