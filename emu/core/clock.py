"""Clocks with timers: a real-time reactor and a manually advanced virtual clock.

Time is an integer count of nanoseconds since the clock was created, so that
virtual runs are exact and reproducible (no float drift), and v1model
timestamps (microseconds since the switch started) are `now_ns() // 1000`.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import os
import selectors
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from mypy_extensions import mypyc_attr

Callback = Callable[[], None]
_NEVER = 1 << 63  # ns (292 years): later than any timer, for "fire them all"


class TimerHandle:
    """A scheduled callback; `cancel()` keeps it from running."""

    __slots__ = ("when_ns", "_fn", "cancelled")

    def __init__(self, when_ns: int, fn: Callback) -> None:
        self.when_ns = when_ns
        self._fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def _run(self) -> None:
        if not self.cancelled:
            self.cancelled = True  # a handle fires at most once
            self._fn()


# Compiled (emu.core.accel) but subclassed by Python code (tests, emu.switch, emu.roce).
@mypyc_attr(allow_interpreted_subclasses=True)
class Clock(ABC):
    """Time source plus one-shot timers. Callbacks run on the clock's own thread."""

    def __init__(self) -> None:
        # Heap of (when_ns, seq, handle): seq keeps equal-time timers in FIFO order,
        # which is what makes virtual runs deterministic.
        # (VirtualClock.schedule_at puts the callback itself in place of a handle.)
        self._timers: list[tuple[int, int, Any]] = []
        self._seq = itertools.count()

    @abstractmethod
    def now_ns(self) -> int:
        """Nanoseconds since the clock started."""

    def now_us(self) -> int:
        """Microseconds since the clock started (v1model timestamp unit)."""
        return self.now_ns() // 1000

    def call_at(self, when_ns: int, fn: Callback) -> TimerHandle:
        handle = TimerHandle(when_ns, fn)
        heapq.heappush(self._timers, (when_ns, next(self._seq), handle))
        self._wake()
        return handle

    def schedule_at(self, when_ns: int, fn: Callback) -> None:
        """call_at for a callback that is never cancelled: no handle (a virtual clock
        then keeps no TimerHandle per event; the per-packet timers use this)."""
        self.call_at(when_ns, fn)

    def call_later(self, delay_ns: int, fn: Callback) -> TimerHandle:
        return self.call_at(self.now_ns() + max(0, int(delay_ns)), fn)

    def call_soon(self, fn: Callback) -> TimerHandle:
        return self.call_at(self.now_ns(), fn)

    def _wake(self) -> None:
        """Hook for reactors blocked in select(); virtual clocks never block."""
        return None

    def _next_deadline(self) -> int | None:
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)
        return timers[0][0] if timers else None

    def _run_due(self, now_ns: int) -> int:
        """Run every timer due at or before now_ns; returns how many ran."""
        ran = 0
        timers = self._timers
        pop = heapq.heappop
        while timers and timers[0][0] <= now_ns:
            handle = pop(timers)[2]
            if not handle.cancelled:
                handle.cancelled = True  # a handle fires at most once (TimerHandle._run)
                handle._fn()
                ran += 1
        return ran


@mypyc_attr(allow_interpreted_subclasses=True)
class VirtualClock(Clock):
    """A clock that moves only when told to; timers fire in (time, insertion) order."""

    def __init__(self, start_ns: int = 0) -> None:
        super().__init__()
        self._now = start_ns
        # Timers asked for at the current time while the clock is at it (about a third
        # of a virtual run's events: a packet for an idle egress port), in FIFO order:
        # a deque instead of the heap. They all come after the heap's timers due by now
        # (those were scheduled earlier: smaller sequence numbers), so firing the heap's
        # due timers first and then this lane is the heap's own (time, sequence) order.
        self._lane: collections.deque[Any] = collections.deque()
        # A subclass that changes call_at (say, timers firing late) gets its call_at
        # for the handle-less timers too.
        self._own_call_at = type(self).call_at is not VirtualClock.call_at

    def now_ns(self) -> int:
        return self._now

    def call_at(self, when_ns: int, fn: Callback) -> TimerHandle:
        # Clock.call_at without the reactor wake-up: the hot path of every packet event.
        handle = TimerHandle(when_ns, fn)
        if when_ns == self._now:
            self._lane.append(handle)
        else:
            heapq.heappush(self._timers, (when_ns, next(self._seq), handle))
        return handle

    def schedule_at(self, when_ns: int, fn: Callback) -> None:
        # The heap entry holds the callback itself (no TimerHandle): _fire tells the
        # two apart by type. Same sequence counter, so the firing order is unchanged.
        if self._own_call_at:
            self.call_at(when_ns, fn)
        elif when_ns == self._now:
            self._lane.append(fn)
        else:
            heapq.heappush(self._timers, (when_ns, next(self._seq), fn))

    def next_deadline(self) -> int | None:
        """When the earliest pending timer is due (None: no timers): nothing can change
        before then, so a caller may skip straight to it."""
        timers = self._timers
        while timers:
            h = timers[0][2]
            if type(h) is not TimerHandle or not h.cancelled:
                break
            heapq.heappop(timers)
        lane = self._lane
        while lane:
            h = lane[0]
            if type(h) is not TimerHandle or not h.cancelled:
                return timers[0][0] if timers and timers[0][0] < self._now else self._now
            lane.popleft()
        return timers[0][0] if timers else None

    def pending(self) -> int:
        return sum(1 for h in itertools.chain((e[2] for e in self._timers), self._lane)
                   if type(h) is not TimerHandle or not h.cancelled)

    def advance_to(self, t_ns: int) -> int:
        """Move time to t_ns, firing due timers at their own times. Returns timers run."""
        if t_ns < self._now:
            raise ValueError(f"virtual time cannot go back ({t_ns} < {self._now})")
        ran = self._fire(t_ns)
        self._now = t_ns
        return ran

    def _fire(self, until_ns: int | None, max_events: int | None = None) -> int:
        """Run the timers due at or before until_ns (None: all), earliest first, each at
        its own time (never earlier than now), at most max_events of them (None: no
        limit). One loop over the heap and the lane of timers due now: the per-event
        path of every virtual run."""
        ran = 0
        timers = self._timers
        lane = self._lane
        pop = heapq.heappop
        popleft = lane.popleft
        until = _NEVER if until_ns is None else until_ns
        limit = _NEVER if max_events is None else max_events
        while ran < limit:
            now = self._now  # read each time: a callback may advance the clock itself
            if timers and (not lane or timers[0][0] <= now):
                # Popped first and put back (unchanged: same time and sequence number)
                # in the rare case it is not yet due: fewer steps per event than a peek.
                when, _seq, fn = entry = pop(timers)
                if when > until:
                    heapq.heappush(timers, entry)
                    break
            elif lane and now <= until:
                fn = popleft()
                when = now
            else:
                break
            if type(fn) is TimerHandle:
                if fn.cancelled:
                    continue
                fn.cancelled = True  # a handle fires at most once (TimerHandle._run)
                fn = fn._fn
            if when > now:
                self._now = when
            fn()
            ran += 1
        return ran

    def advance(self, delta_ns: int) -> int:
        return self.advance_to(self._now + int(delta_ns))

    def run_until_idle(self, max_ns: int | None = None, max_events: int | None = None) -> int:
        """Fire timers until none remain (or until max_ns, or max_events have run: a
        caller that must not hang on a model that never goes idle). Returns timers run."""
        return self._fire(max_ns, max_events)


@mypyc_attr(allow_interpreted_subclasses=True)
class RealClock(Clock):
    """Monotonic wall clock and a single-threaded reactor (timers + readable fds).

    Everything (socket reads, timers) runs on the thread that calls `run()`, so
    switch and host code needs no locks. Other threads hand work over with
    `call_soon_threadsafe`.
    """

    def __init__(self) -> None:
        super().__init__()
        self._t0 = time.monotonic_ns()
        self._sel = selectors.DefaultSelector()
        self._stopping = False
        self._lock = threading.Lock()
        self._pending: list[Callback] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, self._drain_wakeups)
        self._loop_thread: int | None = None

    def now_ns(self) -> int:
        return time.monotonic_ns() - self._t0

    def from_monotonic_ns(self, t: int) -> int:
        """This clock's time at the instant `time.monotonic_ns()` reads `t` (CLOCK_MONOTONIC
        is one clock for every process on the machine, network namespaces included)."""
        return t - self._t0

    def add_reader(self, fd: int, cb: Callback) -> None:
        self._sel.register(fd, selectors.EVENT_READ, cb)

    def remove_reader(self, fd: int) -> None:
        try:
            self._sel.unregister(fd)
        except (KeyError, ValueError):
            pass

    def call_soon_threadsafe(self, fn: Callback) -> None:
        with self._lock:
            self._pending.append(fn)
        self._wake_from_other_thread()

    def stop(self) -> None:
        """Ask `run()` to return; safe from any thread or a signal handler."""
        self._stopping = True
        self._wake_from_other_thread()

    def _wake(self) -> None:
        if self._loop_thread is not None and threading.get_ident() != self._loop_thread:
            self._wake_from_other_thread()

    def _wake_from_other_thread(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except (BlockingIOError, OSError):
            pass  # pipe full: a wakeup is already pending

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        with self._lock:
            pending, self._pending = self._pending, []
        for fn in pending:
            fn()

    def run(self, until: Callable[[], bool] | None = None, timeout_s: float | None = None) -> None:
        """Run timers and readers until stop(), until() is true, or timeout_s elapses.

        A stop() that arrives before run() (say, from a signal handler during
        start-up) is honoured: run() returns at once.
        """
        self._loop_thread = threading.get_ident()
        deadline = None if timeout_s is None else self.now_ns() + int(timeout_s * 1e9)
        try:
            while not self._stopping and not (until is not None and until()):
                now = self.now_ns()
                self._run_due(now)
                if self._stopping or (until is not None and until()):
                    break
                if deadline is not None and now >= deadline:
                    break
                nxt = self._next_deadline()
                wait_ns = None if nxt is None else max(0, nxt - self.now_ns())
                if deadline is not None:
                    left = max(0, deadline - self.now_ns())
                    wait_ns = left if wait_ns is None else min(wait_ns, left)
                if until is not None:
                    # Predicates are polled: cap the sleep so they are seen promptly.
                    wait_ns = 10_000_000 if wait_ns is None else min(wait_ns, 10_000_000)
                for key, _ in self._sel.select(None if wait_ns is None else wait_ns / 1e9):
                    key.data()
        finally:
            self._loop_thread = None
            self._stopping = False

    def close(self) -> None:
        self._sel.close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
