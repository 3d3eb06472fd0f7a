"""Modelled network versus wire: the one time-dilation rule.

A topology describes the modelled network (say 100 Gbps links with 1 us of propagation
delay). The emulator runs it `factor` times slower on the wire: every rate is divided by
the factor and every duration (link delay, timers, intervals) multiplied by it, while byte
and packet counts (MTU, queue depths, ECN thresholds, buffers) stay. Packets per unit of
time, bandwidth-delay products in packets and packets per timer period are then those of
the modelled network, so its dynamics keep their shape at any factor.

Every modelled-to-wire conversion of a run goes through one `Dilation`.
"""

from __future__ import annotations

from dataclasses import dataclass

# Bounds of what a configuration or a control command may set. The longest time (about
# 11.6 days) times any dilation still gives a finite number of clock nanoseconds; 1 Pb/s
# is far above any NIC or link, yet below what overflows the models' arithmetic.
MAX_TIME_NS = 10**15
MAX_LINE_RATE_BPS = 1e15
# A dilation of 1e9 runs one modelled second in about 32 years: any run wants less.
MAX_DILATION = 1e9


@dataclass(frozen=True)
class Dilation:
    factor: float = 1.0

    def __post_init__(self) -> None:
        if not 0 < self.factor <= MAX_DILATION:  # also refuses NaN
            raise ValueError(f"time dilation must be in (0, {MAX_DILATION:g}], "
                             f"got {self.factor!r}")

    def wire_rate_bps(self, modelled_bps: float) -> float:
        return modelled_bps / self.factor

    def wire_ns(self, modelled_ns: float) -> int:
        return int(round(modelled_ns * self.factor))

    def modelled_rate_bps(self, wire_bps: float) -> float:
        return wire_bps * self.factor

    def modelled_ns(self, wire_ns: float) -> float:
        return wire_ns / self.factor

    def modelled_s(self, wire_s: float) -> float:
        return wire_s / self.factor
