"""Termination signals that unwind like Ctrl-C, so `finally` blocks and context managers
remove what a command created (namespaces, veths, switch processes) when it is killed."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP while cleanup is armed: unwinds like Ctrl-C."""


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(f"signal {signal.Signals(signum).name}")


def arm() -> dict[int, Any]:
    """Make SIGTERM/SIGHUP raise Interrupted; returns the old handlers for `disarm`.
    Outside the main thread (where Python cannot set handlers) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, _raise_interrupted) for sig in TERMINATION_SIGNALS}


def disarm(old: dict[int, Any]) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)
    old.clear()


@contextlib.contextmanager
def unwinding_on_termination() -> Iterator[None]:
    """Within the block, SIGTERM/SIGHUP raise Interrupted (a KeyboardInterrupt)."""
    old = arm()
    try:
        yield
    finally:
        disarm(old)
