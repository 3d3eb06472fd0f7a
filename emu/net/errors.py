"""The error type of the Mininet layer: one line a user can act on."""

from __future__ import annotations


class NetError(RuntimeError):
    """Building, checking or tearing down the emulated network failed."""
