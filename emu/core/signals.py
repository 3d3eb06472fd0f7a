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


def interrupt_name(exc: KeyboardInterrupt) -> str:
    """"Ctrl-C", or the signal an Interrupted names (for the run's notes)."""
    return "Ctrl-C" if type(exc) is KeyboardInterrupt else (str(exc) or "a signal")


class StopRequest:
    """The first stop signal a block below saw, if one came."""

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


class _Handler:
    """A signal handler that notes the first signal in `stop`."""

    def __init__(self, stop: StopRequest) -> None:
        self.stop = stop

    def _first(self, signum: int) -> bool:
        if self.stop.signum is None:
            self.stop.signum = signum
            return True
        return False


class _Unwinder(_Handler):
    """`unwinding_on_termination`'s handler: notes the signal and raises."""

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self._first(signum)
        _raise_interrupted(signum, frame)


class _Recorder(_Handler):
    """`stop_requests`' handler: notes the first stop signal, raises on the second."""

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self._first(signum):
            return
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        _raise_interrupted(signum, frame)


@contextlib.contextmanager
def unwinding_on_termination() -> Iterator[StopRequest]:
    """Within the block, SIGTERM/SIGHUP raise Interrupted (a KeyboardInterrupt); the
    first is also recorded, for a caller under code that takes any KeyboardInterrupt
    for Ctrl-C and goes on (Mininet's CLI)."""
    stop = StopRequest()
    old = _install(TERMINATION_SIGNALS, _Unwinder(stop))
    try:
        yield stop
    finally:
        disarm(old)


@contextlib.contextmanager
def stop_requests() -> Iterator[StopRequest]:
    """Within the block the first SIGINT/SIGTERM/SIGHUP is only recorded; the loop stops
    at its next check of `.requested`. Raising it at once would cut whatever call the
    main thread is in (a gRPC read, an admin exchange) and could leave that channel
    unusable for the final reading: a gRPC channel so cut once hung a stopped run until
    its timeout. A second signal raises as before (KeyboardInterrupt, or Interrupted),
    for a loop stuck in such a call. Nested in another such block (a CLI command that
    runs a workload), a signal the inner one recorded is the outer one's too."""
    stop = StopRequest()
    old = _install(STOP_SIGNALS, _Recorder(stop))
    try:
        yield stop
    finally:
        outer = old.get(stop.signum) if stop.signum is not None else None
        disarm(old)
        if isinstance(outer, _Handler) and stop.signum is not None:
            outer._first(stop.signum)
