"""argparse types for sizes, rates and links, in the topology's units (numeric ones:
emu.core.argtypes)."""

from __future__ import annotations

import argparse

from emu.roce.verbs import ACK_TIMEOUT_MAX


def size(text: str) -> int:
    """'64K', '1M', '4096' -> bytes (K/M/G are powers of 1024)."""
    from emu.topo import UnitError, parse_message_size

    try:
        return parse_message_size(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def rate(text: str) -> int:
    """'25Gbps' -> bits per second."""
    from emu.topo import UnitError, parse_rate

    try:
        return int(parse_rate(text))
    except (UnitError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def link(text: str) -> tuple[str, str]:
    a, sep, b = text.partition(":")
    if not sep or not a or not b:
        raise argparse.ArgumentTypeError(f"expected SWITCH:SWITCH, got {text!r}")
    return a, b


def rates(text: str) -> tuple[int, ...]:
    """'1Mbps,2Mbps' -> bits per second each; at least one."""
    out = tuple(rate(r.strip()) for r in text.split(",") if r.strip())
    if not out:
        raise argparse.ArgumentTypeError(f"expected comma-separated rates, got {text!r}")
    return out


def retry_cnt(text: str) -> int | None:
    """'0'..'7' -> the IBTA retry count; 'inf' -> None (retry until the budget ends)."""
    if text.strip().lower() in ("inf", "none", "unlimited"):
        return None
    if text.strip().isdigit() and 0 <= int(text) <= 7:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected 0..7 (IBTA retry_cnt) or 'inf', got {text!r}")


def ack_timeout(text: str) -> int:
    """'1'..'31' -> an IBTA local ACK timeout exponent (4.096 us x 2^T)."""
    if text.strip().isdigit() and 1 <= int(text) <= ACK_TIMEOUT_MAX:
        return int(text)
    raise argparse.ArgumentTypeError(
        f"expected 1..{ACK_TIMEOUT_MAX} (IBTA local ACK timeout: 4.096 us x 2^T), got {text!r}")
