from __future__ import annotations

import socket
import threading

import pytest

from emu.core import RealClock, VirtualClock


def test_virtual_timers_fire_at_their_own_time_in_order() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, int]] = []
    clock.call_at(300, lambda: seen.append(("c", clock.now_ns())))
    clock.call_at(100, lambda: seen.append(("a", clock.now_ns())))
    clock.call_later(200, lambda: seen.append(("b", clock.now_ns())))
    assert clock.advance(250) == 2
    assert seen == [("a", 100), ("b", 200)]
    assert clock.now_ns() == 250
    clock.advance(50)
    assert seen[-1] == ("c", 300)


def test_virtual_equal_times_keep_insertion_order_and_cancel_works() -> None:
    clock = VirtualClock()
    seen: list[int] = []
    handles = [clock.call_at(10, lambda i=i: seen.append(i)) for i in range(5)]
    handles[2].cancel()
    clock.run_until_idle()
    assert seen == [0, 1, 3, 4]
    assert clock.pending() == 0


def test_virtual_timers_scheduled_from_callbacks_run_in_same_advance() -> None:
    clock = VirtualClock()
    ticks: list[int] = []

    def tick() -> None:
        ticks.append(clock.now_ns())
        if len(ticks) < 5:
            clock.call_later(1_000, tick)

    clock.call_soon(tick)
    clock.advance(10_000)
    assert ticks == [0, 1_000, 2_000, 3_000, 4_000]
    assert clock.now_us() == 10


def test_virtual_clock_refuses_to_go_back() -> None:
    clock = VirtualClock(start_ns=5)
    with pytest.raises(ValueError):
        clock.advance_to(4)


def test_run_until_idle_bounded() -> None:
    clock = VirtualClock()
    seen: list[int] = []
    clock.call_at(100, lambda: seen.append(1))
    clock.call_at(1_000, lambda: seen.append(2))
    clock.run_until_idle(max_ns=500)
    assert seen == [1] and clock.pending() == 1


def test_real_clock_timers_readers_and_threadsafe_calls() -> None:
    clock = RealClock()
    order: list[str] = []
    a, b = socket.socketpair()
    try:
        a.setblocking(False)

        def on_read() -> None:
            order.append("read:" + a.recv(100).decode())
            clock.stop()

        clock.add_reader(a.fileno(), on_read)
        clock.call_later(2_000_000, lambda: order.append("t2"))
        clock.call_later(1_000_000, lambda: order.append("t1"))
        clock.call_later(5_000_000, lambda: b.send(b"x"))
        threading.Thread(target=lambda: clock.call_soon_threadsafe(
            lambda: order.append("thread"))).start()
        clock.run(timeout_s=5)
        assert order.index("t1") < order.index("t2") < order.index("read:x")
        assert "thread" in order
    finally:
        clock.close()
        a.close()
        b.close()


def test_real_clock_run_until_predicate() -> None:
    clock = RealClock()
    hits: list[int] = []

    def tick() -> None:
        hits.append(1)
        clock.call_later(100_000, tick)

    clock.call_soon(tick)
    clock.run(until=lambda: len(hits) >= 10, timeout_s=5)
    clock.close()
    assert len(hits) >= 10


def test_real_clock_stop_before_run_is_honoured() -> None:
    clock = RealClock()
    ran: list[int] = []
    clock.call_later(50_000_000, lambda: ran.append(1))
    clock.stop()
    clock.run(timeout_s=5)  # returns at once, the 50 ms timer has not fired
    assert ran == []
    clock.run(timeout_s=0.2)  # a later run() starts fresh
    clock.close()
    assert ran == [1]


def test_handle_less_timers_share_the_order_of_handled_ones() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, int]] = []
    clock.schedule_at(20, lambda: seen.append(("s20", clock.now_ns())))
    first = clock.call_at(10, lambda: seen.append(("h10", clock.now_ns())))
    clock.schedule_at(10, lambda: seen.append(("s10", clock.now_ns())))
    clock.call_at(20, lambda: seen.append(("h20", clock.now_ns())))
    first.cancel()
    assert clock.pending() == 3
    assert clock.next_deadline() == 10
    assert clock.run_until_idle() == 3
    assert seen == [("s10", 10), ("s20", 20), ("h20", 20)]
    assert clock.next_deadline() is None


def test_a_subclass_call_at_applies_to_handle_less_timers() -> None:
    class Late(VirtualClock):
        def call_at(self, when_ns, fn):  # type: ignore[no-untyped-def]
            return super().call_at(when_ns + 5, fn)

    clock = Late()
    seen: list[int] = []
    clock.schedule_at(10, lambda: seen.append(clock.now_ns()))
    clock.run_until_idle()
    assert seen == [15]


def test_timers_due_now_keep_the_time_and_insertion_order() -> None:
    # Timers asked for at the current time take a FIFO lane instead of the heap: they
    # must still fire after the heap's timers due by then (scheduled earlier), after a
    # timer put in the past, and in the order asked, handles or not.
    clock = VirtualClock()
    seen: list[str] = []

    def first() -> None:
        seen.append("first")
        clock.schedule_at(10, lambda: seen.append("now-1"))
        h = clock.call_at(10, lambda: seen.append("cancelled"))
        clock.call_at(10, lambda: (seen.append("now-2"),
                                   clock.schedule_at(10, lambda: seen.append("now-3"))))
        h.cancel()
        clock.schedule_at(5, lambda: seen.append(f"past@{clock.now_ns()}"))
        assert clock.next_deadline() == 5
        assert clock.pending() == 5

    clock.schedule_at(10, first)
    clock.schedule_at(10, lambda: seen.append("heap"))
    clock.schedule_at(11, lambda: seen.append("later"))
    assert clock.run_until_idle() == 7
    assert seen == ["first", "past@10", "heap", "now-1", "now-2", "now-3", "later"]
    assert clock.now_ns() == 11


def test_timers_due_now_wait_for_their_turn_outside_a_run() -> None:
    clock = VirtualClock()
    clock.advance_to(20)
    seen: list[int] = []
    clock.call_soon(lambda: seen.append(clock.now_ns()))
    assert clock.next_deadline() == 20 and clock.pending() == 1 and seen == []
    assert clock.run_until_idle(max_ns=19) == 0  # not due before 19
    assert clock.advance(0) == 1 and seen == [20]
    assert clock.next_deadline() is None


def test_run_until_idle_stops_after_max_events() -> None:
    """A model that reschedules itself forever at one instant never goes idle; the
    event budget still ends the call, with the rest left pending."""
    clock = VirtualClock()
    ran: list[int] = []

    def again() -> None:
        ran.append(clock.now_ns())
        clock.schedule_at(clock.now_ns(), again)

    clock.schedule_at(5, again)
    assert clock.run_until_idle(max_events=1000) == 1000
    assert ran == [5] * 1000
    assert clock.next_deadline() == 5
    assert clock.run_until_idle(max_events=3) == 3 and len(ran) == 1003
