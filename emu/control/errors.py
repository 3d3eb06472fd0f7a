"""Errors of the fabric controller: each names what was wrong and what is allowed."""

from __future__ import annotations


class ControlError(ValueError):
    """A request the controller cannot carry out (bad name, bad parameter, no path)."""


class UnknownSwitchError(ControlError, KeyError):
    def __init__(self, name: str, known: list[str]) -> None:
        shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
        super().__init__(f"unknown switch {name!r} (switches: {shown})")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class UnknownHostError(ControlError, KeyError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown host {name!r} (give a host name or its IPv4 address)")

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownLinkError(ControlError):
    """No link joins the two nodes named."""


class NoPathError(ControlError):
    """A flow (or a destination) has no path through the fabric's working links."""


class ParamError(ControlError):
    """A load-balancing, ECN or QoS parameter out of range."""


class SouthboundError(RuntimeError):
    """A switch rejected or failed a write/read (wraps the target's own error)."""
