"""A RealClock whose timers fire with microsecond precision.

RealClock sleeps in epoll, whose timeout Python rounds up to whole
milliseconds (and the kernel's default 50 us timer slack comes on top), so a port paced at 2000 pps (a 500 us timer) would wake every
~1.2 ms and the traffic manager would run slow. Here every future deadline
also arms a Linux timerfd (absolute CLOCK_MONOTONIC, ns resolution) that the
reactor watches, so the loop wakes on time; the epoll timeout still bounds it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import time

from emu.core.clock import Callback, RealClock, TimerHandle

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = os.O_CLOEXEC
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


PR_SET_TIMERSLACK = 29


class PreciseClock(RealClock):
    """Create it on the thread that will run it: the timer slack is per thread.

    Waking a sleeping thread takes ~50-70 us here, and the traffic manager
    schedules each departure from the actual (late) service time, so lateness
    would lower every configured rate. The timerfd therefore fires `spin_ns`
    early and the loop spins to the exact deadline: up to spin_ns of CPU per
    timer event, only while a port is being paced or a link delay is pending.
    """

    def __init__(self, spin_ns: int = 100_000) -> None:
        super().__init__()
        self.spin_ns = spin_ns
        # Linux delays timer wake-ups by up to 50 us by default (timer slack) to batch
        # them; at 2000 pps that alone would cost 10% of the configured rate.
        _libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
        self._tfd = _libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
        if self._tfd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        self._armed: int | None = None  # the deadline (clock ns) the timerfd is set to
        # The monotonic time at which this clock read 0, for absolute timerfd deadlines.
        self._origin = time.monotonic_ns() - self.now_ns()
        self._spec = _Itimerspec()
        self.add_reader(self._tfd, self._on_timerfd)

    def call_soon(self, fn: Callback) -> TimerHandle:
        # Due now: the loop (or run_due) runs it without a wakeup; no timerfd needed.
        return RealClock.call_at(self, self.now_ns(), fn)

    def call_at(self, when_ns: int, fn: Callback) -> TimerHandle:
        h = super().call_at(when_ns, fn)
        armed = self._armed
        if (armed is None or when_ns < armed) and when_ns > self.now_ns():
            self._arm(when_ns)
        return h

    def run_due(self) -> int:
        """Run the timers due now, from inside a reader callback.

        The traffic manager hands each packet to egress with call_soon; without
        this, the loop would serve one packet per select() turn while a port's
        receive batch (up to 512 frames) fills the 64-packet queue, so an
        unshaped port would tail-drop under load where BMv2's never builds a queue.
        """
        timers = self._timers
        # Called after every received frame: most of the time nothing is due.
        if not timers or timers[0][0] > self.now_ns():
            return 0
        return self._run_due(self.now_ns())

    def _arm(self, when_ns: int) -> None:
        self._armed = when_ns
        t = self._origin + when_ns - self.spin_ns
        self._spec.it_value.tv_sec, self._spec.it_value.tv_nsec = divmod(t, 1_000_000_000)
        _libc.timerfd_settime(self._tfd, _TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None)

    def _on_timerfd(self) -> None:
        try:
            os.read(self._tfd, 8)
        except BlockingIOError:
            pass
        self._armed = None
        nxt = self._next_deadline()
        now = self.now_ns()
        if nxt is not None and now < nxt <= now + self.spin_ns:
            while now < nxt:
                now = self.now_ns()
        self._run_due(now)
        nxt = self._next_deadline()
        if nxt is not None and nxt > self.now_ns():
            self._arm(nxt)

    def close(self) -> None:
        self.remove_reader(self._tfd)
        try:
            os.close(self._tfd)
        except OSError:
            pass
        super().close()
