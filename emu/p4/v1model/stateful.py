"""Stateful externs: register, counter (indirect and a direct-counter cell), meter.

BMv2 simple_switch facts (targets/simple_switch/primitives.cpp, src/bm_sim/meters.cpp,
include/bm/bm_sim/meters.h):

- Out-of-bounds index from the data plane: register_read leaves the destination unchanged,
  register_write, count and execute_meter do nothing (BMv2 logs an error and goes on; no
  drop, no exception). So data-plane reads here take the destination's current value as
  `default` and return it for a bad index. Control-plane access with a bad index raises
  IndexError (the CLI reports an error).
- Register cells hold `width`-bit values; writes truncate.
- Counters count packets and bytes whatever their declared type; the type only says what
  the control plane reports. Bytes added per packet are the packet's ingress length.
- Meters are two-rate three-color markers (RFC 2698): GREEN=0, YELLOW=1, RED=2. Rates are
  in units (packets or bytes) per microsecond, bursts in units, as BMv2's meter_set_rates
  takes them; P4Runtime gives per-second rates (divided by 1e6 here, as PI does). A meter
  that was never configured returns GREEN. Token buckets start full and refill from a fixed
  time origin: tokens = floor(elapsed_us * rate) - tokens already credited, capped at the
  burst. The PIR bucket is checked first: short -> RED (CIR untouched); else its tokens are
  taken and the CIR bucket checked: short -> YELLOW; else both are taken -> GREEN.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from emu.core.clock import Clock

__all__ = [
    "GREEN",
    "RED",
    "YELLOW",
    "CounterArray",
    "CounterCell",
    "CounterKind",
    "Meter",
    "MeterArray",
    "MeterKind",
    "MeterRates",
    "RegisterArray",
]

GREEN = 0
YELLOW = 1
RED = 2


class _CellArray:
    """Base of the register, counter and meter arrays: the control plane's index check."""

    __slots__ = ("name", "size")
    what = ""  # the extern, for messages
    name: str
    size: int

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"{self.what} {self.name}: index {index} out of range 0..{self.size - 1}")


class RegisterArray(_CellArray):
    """`register<bit<width>>(size)`: unsigned `width`-bit cells, zero at start."""

    __slots__ = ("width", "_mask", "_cells")
    what = "register"

    def __init__(self, name: str, size: int, width: int) -> None:
        if size <= 0 or width <= 0:
            raise ValueError("register size and width must be positive")
        self.name = name
        self.size = size
        self.width = width
        self._mask = (1 << width) - 1
        self._cells = [0] * size

    # data plane: never raises on a bad index (BMv2 logs and leaves things alone)
    def read(self, index: int, default: int = 0) -> int:
        """The cell's value; `default` (the destination's current value) if out of range."""
        if 0 <= index < self.size:
            return self._cells[index]
        return default

    def write(self, index: int, value: int) -> bool:
        """Store `value` truncated to the width; False (and no change) if out of range."""
        if 0 <= index < self.size:
            self._cells[index] = value & self._mask
            return True
        return False

    # control plane
    def get(self, index: int) -> int:
        self._check(index)
        return self._cells[index]

    def set(self, index: int, value: int) -> None:
        self._check(index)
        self._cells[index] = value & self._mask

    def values(self) -> list[int]:
        return list(self._cells)

    def reset(self) -> None:
        self._cells[:] = [0] * self.size  # in place: generated code holds the list

    @property
    def cells(self) -> list[int]:
        """The cells themselves (generated pipeline code writes them in place)."""
        return self._cells



class CounterKind(str, enum.Enum):
    packets = "packets"
    bytes = "bytes"
    packets_and_bytes = "packets_and_bytes"


class CounterCell:
    """One counter (an indirect counter's element, or a table entry's direct counter)."""

    __slots__ = ("packets", "bytes")

    def __init__(self, packets: int = 0, nbytes: int = 0) -> None:
        self.packets = packets
        self.bytes = nbytes

    def count(self, nbytes: int) -> None:
        self.packets += 1
        self.bytes += nbytes

    def read(self) -> tuple[int, int]:
        """(packets, bytes)."""
        return (self.packets, self.bytes)

    def write(self, packets: int, nbytes: int) -> None:
        self.packets = packets
        self.bytes = nbytes

    def reset(self) -> None:
        self.packets = 0
        self.bytes = 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CounterCell):
            return NotImplemented
        return self.packets == other.packets and self.bytes == other.bytes

    __hash__ = None  # type: ignore[assignment]  # mutable: compared by value, not hashed

    def __repr__(self) -> str:
        return f"CounterCell(packets={self.packets}, bytes={self.bytes})"


class CounterArray(_CellArray):
    """`counter(size, CounterType.kind)`; indices 0..size-1."""

    __slots__ = ("kind", "_packets", "_bytes")
    what = "counter"

    def __init__(self, name: str, size: int, kind: CounterKind | str) -> None:
        if size <= 0:
            raise ValueError("counter size must be positive")
        self.name = name
        self.size = size
        self.kind = CounterKind(kind)
        self._packets = [0] * size
        self._bytes = [0] * size

    def count(self, index: int, nbytes: int) -> bool:
        """One packet of `nbytes` (its ingress length); False and no change if out of range."""
        if 0 <= index < self.size:
            self._packets[index] += 1
            self._bytes[index] += nbytes
            return True
        return False

    @property
    def cells(self) -> tuple[list[int], list[int]]:
        """The packet and byte lists themselves (generated pipeline code counts in them)."""
        return self._packets, self._bytes

    def read(self, index: int) -> tuple[int, int]:
        """(packets, bytes); IndexError if out of range."""
        self._check(index)
        return (self._packets[index], self._bytes[index])

    def write(self, index: int, packets: int, nbytes: int) -> None:
        self._check(index)
        self._packets[index] = packets
        self._bytes[index] = nbytes

    def reset(self, index: int | None = None) -> None:
        """Zero one element, or all of them."""
        if index is None:  # in place: generated code holds the lists
            self._packets[:] = [0] * self.size
            self._bytes[:] = [0] * self.size
        else:
            self.write(index, 0, 0)



class MeterKind(str, enum.Enum):
    packets = "packets"
    bytes = "bytes"


@dataclass(frozen=True)
class MeterRates:
    """trTCM parameters in BMv2 units: rates per microsecond, bursts in packets or bytes."""

    cir: float
    cbs: int
    pir: float
    pbs: int

    @classmethod
    def per_second(cls, cir: float, cburst: int, pir: float, pburst: int) -> MeterRates:
        """From P4Runtime's MeterConfig (rates per second)."""
        return cls(cir / 1e6, cburst, pir / 1e6, pburst)


class _TokenBucket:
    """One of a meter's two buckets, refilled from the tokens earned since the origin."""

    __slots__ = ("tokens", "last")

    def __init__(self) -> None:
        self.tokens = 0
        self.last = 0  # tokens earned from the time origin up to the last refill

    def fill(self, burst: int) -> None:
        self.tokens, self.last = burst, 0

    def take(self, earned: int, burst: int, units: int) -> bool:
        """Refill (capped at `burst`), then take `units` if there are enough."""
        self.tokens = min(self.tokens + earned - self.last, burst)
        self.last = earned
        if self.tokens < units:
            return False
        self.tokens -= units
        return True


def _check_rates(rates: MeterRates) -> None:
    if rates.cir > rates.pir:
        # BMv2 refuses this (INVALID_INFO_RATE_VALUE); the caller keeps the old state.
        raise ValueError("meter CIR must not exceed PIR")
    if min(rates.cir, rates.pir, rates.cbs, rates.pbs) < 0:
        raise ValueError("meter rates and bursts must not be negative")


class Meter:
    """One two-rate three-color meter (an indirect meter's element or a direct meter)."""

    __slots__ = ("kind", "_clock", "_t0_us", "rates", "_peak", "_committed")

    def __init__(self, kind: MeterKind | str, clock: Clock, t0_us: float | None = None) -> None:
        self.kind = MeterKind(kind)
        self._clock = clock
        # BMv2: time origin = meter creation (an array's, for its cells)
        self._t0_us = clock.now_us() if t0_us is None else t0_us
        self.rates: MeterRates | None = None
        self._peak = _TokenBucket()
        self._committed = _TokenBucket()

    def set_rates(self, rates: MeterRates | None) -> None:
        """Configure (buckets start full), or None to unconfigure (always GREEN)."""
        if rates is not None:
            _check_rates(rates)
            self._peak.fill(rates.pbs)
            self._committed.fill(rates.cbs)
        self.rates = rates

    def execute(self, nbytes: int = 0) -> int:
        """Color for a packet arriving now; byte meters use `nbytes`, the ingress length."""
        r = self.rates
        if r is None:
            return GREEN
        elapsed = self._clock.now_us() - self._t0_us
        units = 1 if self.kind is MeterKind.packets else nbytes
        # trTCM: the peak bucket decides RED; only then is the committed one charged.
        if not self._peak.take(int(elapsed * r.pir), r.pbs, units):
            return RED
        if not self._committed.take(int(elapsed * r.cir), r.cbs, units):
            return YELLOW
        return GREEN


class MeterArray(_CellArray):
    """`meter(size, MeterType.kind)`; unconfigured elements return GREEN.

    A cell's Meter is made when it is first configured alone or first executed under
    rates set for every cell (`_all`), so a large array costs nothing until used. That
    is the same meter as one made with the array: every cell's time origin is the
    array's, and configuring fills both buckets, which a refill caps at the burst."""

    __slots__ = ("kind", "_clock", "_t0_us", "_cells", "_all")
    what = "meter"

    def __init__(self, name: str, size: int, kind: MeterKind | str, clock: Clock) -> None:
        if size <= 0:
            raise ValueError("meter size must be positive")
        self.name = name
        self.size = size
        self.kind = MeterKind(kind)
        self._clock = clock
        self._t0_us = clock.now_us()
        self._cells: dict[int, Meter] = {}
        self._all: MeterRates | None = None  # the rates of every cell not in _cells

    def _cell(self, index: int) -> Meter:
        m = self._cells.get(index)
        if m is None:
            m = self._cells[index] = Meter(self.kind, self._clock, self._t0_us)
            m.set_rates(self._all)
        return m

    def execute(self, index: int, nbytes: int = 0, default: int = GREEN) -> int:
        """The color; `default` (the destination's current value) if out of range."""
        if 0 <= index < self.size:
            m = self._cells.get(index)
            if m is None:
                if self._all is None:
                    return GREEN
                m = self._cell(index)
            return m.execute(nbytes)
        return default

    def set_rates(self, cir: float, cbs: int, pir: float, pbs: int,
                  index: int | None = None) -> None:
        """BMv2 meter_set_rates: rates per microsecond, bursts in units; None = all."""
        self._set(MeterRates(cir, cbs, pir, pbs), index)

    def set_rates_per_second(self, cir: float, cburst: int, pir: float, pburst: int,
                             index: int | None = None) -> None:
        """P4Runtime MeterConfig: rates per second."""
        self._set(MeterRates.per_second(cir, cburst, pir, pburst), index)

    def reset_rates(self, index: int | None = None) -> None:
        self._set(None, index)

    def configure(self, rates: MeterRates | None, index: int | None = None) -> None:
        """Set `rates` as given (get_rates returns this object); None = unconfigured."""
        self._set(rates, index)

    def get_rates(self, index: int) -> MeterRates | None:
        self._check(index)
        m = self._cells.get(index)
        return self._all if m is None else m.rates

    def _set(self, rates: MeterRates | None, index: int | None) -> None:
        if index is None:
            if rates is not None:
                _check_rates(rates)
            self._cells.clear()
            self._all = rates
        else:
            self._check(index)
            self._cell(index).set_rates(rates)

