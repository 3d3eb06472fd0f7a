"""Parsing and formatting of link rates (bits/s) and delays (nanoseconds).

Rates: "10Mbps", "1Gbps", "100Kbps", "2.5Gbps", "500bps" or a plain int (bits/s).
Delays: "20us", "1ms", "500ns", "2s", or 0; a bare non-zero number is rejected
because its unit would be a guess.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from emu.core.wire import MAX_MESSAGE_BYTES

_RATE_UNITS = {"bps": 1, "kbps": 10**3, "mbps": 10**6, "gbps": 10**9, "tbps": 10**12}
_DELAY_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9}
_QUANTITY = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]*)?)\s*([A-Za-zµ]*)\s*$")


class UnitError(ValueError):
    """A rate or delay that cannot be parsed; the message is user-facing."""


def _split(value: str) -> tuple[Decimal, str] | None:
    m = _QUANTITY.match(value)
    if not m:
        return None
    try:
        return Decimal(m.group(1)), m.group(2)
    except InvalidOperation:  # pragma: no cover - the regex only admits decimals
        return None


def parse_rate(value: object) -> int:
    """Return a positive rate in bits/s."""
    if isinstance(value, bool):
        raise UnitError(f"bad rate {value!r}: expected e.g. '20Mbps' or bits/s as an integer")
    if isinstance(value, int):
        amount, mult = Decimal(value), 1
    elif isinstance(value, str):
        parts = _split(value)
        # Only the SI prefix is case-insensitive: "MBps" would mean bytes, so "bps" is exact.
        if parts is None or not (parts[1].endswith("bps") or parts[1] == ""):
            raise UnitError(
                f"bad rate {value!r}: expected a number and a unit (bps, Kbps, Mbps, Gbps, Tbps)"
            )
        unit = parts[1].lower() if parts[1] else "bps"
        if unit not in _RATE_UNITS:
            raise UnitError(f"bad rate unit in {value!r}: use bps, Kbps, Mbps, Gbps or Tbps")
        amount, mult = parts[0], _RATE_UNITS[unit]
    else:
        raise UnitError(f"bad rate {value!r}: expected e.g. '20Mbps'")
    bps = amount * mult
    if bps <= 0:
        raise UnitError(f"rate {value!r} must be positive")
    if bps != bps.to_integral_value():
        raise UnitError(f"rate {value!r} is not a whole number of bits/s")
    return int(bps)


def parse_delay(value: object) -> int:
    """Return a non-negative delay in nanoseconds."""
    if isinstance(value, bool):
        raise UnitError(f"bad delay {value!r}: expected e.g. '20us'")
    if isinstance(value, int):
        if value == 0:
            return 0
        raise UnitError(f"delay {value!r} needs a unit: ns, us, ms or s (e.g. '{value}us')")
    if not isinstance(value, str):
        raise UnitError(f"bad delay {value!r}: expected e.g. '20us'")
    parts = _split(value)
    if parts is None:
        raise UnitError(f"bad delay {value!r}: expected a number and a unit (ns, us, ms, s)")
    amount, unit = parts
    if unit == "":
        if amount == 0:
            return 0
        raise UnitError(f"delay {value!r} needs a unit: ns, us, ms or s")
    if unit not in _DELAY_UNITS:
        raise UnitError(f"bad delay unit in {value!r}: use ns, us, ms or s")
    ns = amount * _DELAY_UNITS[unit]
    if ns < 0:
        raise UnitError(f"delay {value!r} must not be negative")
    if ns != ns.to_integral_value():
        raise UnitError(f"delay {value!r} is not a whole number of nanoseconds")
    return int(ns)


_BYTE_UNITS = {"b": 1, "kb": 10**3, "kib": 2**10, "mb": 10**6, "mib": 2**20}
_PKT_UNITS = ("pkt", "pkts", "packet", "packets")
FRAME_OVERHEAD = 18  # Ethernet header and FCS on top of the MTU


def parse_bytes(value: object, mtu: int) -> int:
    """A buffer size in bytes: an integer (bytes), or a number with B, KB, KiB, MB, MiB
    or pkts (packets of `mtu` plus the Ethernet header and FCS)."""
    if isinstance(value, bool):
        raise UnitError(f"bad size {value!r}: expected bytes or e.g. '40KB', '20pkts'")
    if isinstance(value, int):
        amount, mult = Decimal(value), 1
    elif isinstance(value, str) and (parts := _split(value)) is not None:
        amount, unit = parts[0], parts[1].lower()
        if unit in _PKT_UNITS:
            mult = mtu + FRAME_OVERHEAD
        elif unit in _BYTE_UNITS or unit == "":
            mult = _BYTE_UNITS.get(unit, 1)
        else:
            raise UnitError(f"bad size unit in {value!r}: use B, KB, KiB, MB, MiB or pkts")
    else:
        raise UnitError(f"bad size {value!r}: expected bytes or e.g. '40KB', '20pkts'")
    n = amount * mult
    if n < 0:
        raise UnitError(f"size {value!r} must not be negative")
    return int(n.to_integral_value())


_SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def parse_message_size(value: object) -> int:
    """A message size in bytes (`emu run --size`, experiment files): an integer, or a
    number with K, M or G, powers of 1024 as nccl-tests write them ("64K", "1.5M";
    "KB" and "KiB" read the same). A fraction of a byte is cut off."""
    example = "(e.g. 4096, 64K, 1M)"
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    elif isinstance(value, str) and (parts := _split(value)) is not None:
        amount, unit = parts[0], parts[1].upper().removesuffix("B").removesuffix("I")
        if unit not in _SIZE_UNITS:
            raise UnitError(f"not a size: {value!r} {example}")
        n = int(amount * _SIZE_UNITS[unit])
    else:
        raise UnitError(f"not a size: {value!r} {example}")
    if not 1 <= n <= MAX_MESSAGE_BYTES:
        raise UnitError(f"a size must be 1 byte .. 2G - 1 (an RDMA message is under 2 GiB), "
                        f"got {value!r}")
    return n


def _fmt(amount: int, units: list[tuple[int, str]]) -> str:
    """Largest unit not above `amount`, with an exact decimal (1500 ns -> '1.5us')."""
    for mult, name in units:
        if amount >= mult:
            return f"{format((Decimal(amount) / mult).normalize(), 'f')}{name}"
    return f"{amount}{units[-1][1]}"


def format_rate(bps: int) -> str:
    """20_000_000 -> '20Mbps' (inverse of parse_rate for display)."""
    return _fmt(
        bps, [(10**12, "Tbps"), (10**9, "Gbps"), (10**6, "Mbps"), (10**3, "Kbps"), (1, "bps")]
    )


def format_delay(ns: int) -> str:
    """20_000 -> '20us' (inverse of parse_delay for display)."""
    if ns == 0:
        return "0"
    return _fmt(ns, [(10**9, "s"), (10**6, "ms"), (10**3, "us"), (1, "ns")])
