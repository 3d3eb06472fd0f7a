"""Termination signals that unwind like Ctrl-C, so `finally` blocks and context managers
remove what a command created (namespaces, veths, switch processes) when it is killed;
and, for a measuring loop, a stop that waits for the loop's next check (`stop_requests`).
A signal some parent set to be ignored (`nohup`, a background job) stays ignored."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
STOP_SIGNALS = (signal.SIGINT, *TERMINATION_SIGNALS)


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP while cleanup is armed: unwinds like Ctrl-C."""


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(f"signal {signal.Signals(signum).name}")


def arm() -> dict[int, Any]:
    """Make SIGTERM/SIGHUP raise Interrupted; returns the old handlers for `disarm`.
    Outside the main thread (where Python cannot set handlers) nothing changes."""
    return _install(TERMINATION_SIGNALS, _raise_interrupted)


def _install(sigs: tuple[int, ...], handler: Any) -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, handler) for sig in sigs
            if signal.getsignal(sig) is not signal.SIG_IGN}


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


def interrupt_name(exc: KeyboardInterrupt) -> str:
    """"Ctrl-C", or the signal an Interrupted names (for the run's notes)."""
    return "Ctrl-C" if type(exc) is KeyboardInterrupt else (str(exc) or "a signal")


class StopRequest:
    """What `stop_requests` recorded: the first stop signal, if one came."""

    def __init__(self) -> None:
        self.signum: int | None = None

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def describe(self) -> str:
        """"Ctrl-C" or "signal SIGTERM" (for the run's notes)."""
        if self.signum is None:
            return ""
        if self.signum == signal.SIGINT:
            return "Ctrl-C"
        return f"signal {signal.Signals(self.signum).name}"


@contextlib.contextmanager
def stop_requests() -> Iterator[StopRequest]:
    """Within the block the first SIGINT/SIGTERM/SIGHUP is only recorded; the loop stops
    at its next check of `.requested`. Raising it at once would cut whatever call the
    main thread is in (a gRPC read, an admin exchange) and could leave that channel
    unusable for the final reading: a gRPC channel so cut once hung a stopped run until
    its timeout. A second signal raises as before (KeyboardInterrupt, or Interrupted),
    for a loop stuck in such a call."""
    stop = StopRequest()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.signum is None:
            stop.signum = signum
        elif signum == signal.SIGINT:
            raise KeyboardInterrupt
        else:
            _raise_interrupted(signum, frame)

    old = _install(STOP_SIGNALS, on_signal)
    try:
        yield stop
    finally:
        disarm(old)
