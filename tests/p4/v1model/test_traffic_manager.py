"""Traffic manager behaviour in virtual time."""

from __future__ import annotations

import pytest

from emu.core.clock import VirtualClock
from emu.p4.v1model.traffic_manager import DequeueInfo, DropCounters, DropReason, TrafficManager

MS = 1_000_000  # ns


class Sink:
    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.out: list[tuple[int, int, object, DequeueInfo]] = []  # (t_ns, port, pkt, info)

    def __call__(self, port: int, pkt: object, info: DequeueInfo) -> None:
        self.out.append((self.clock.now_ns(), port, pkt, info))

    def times(self) -> list[int]:
        return [t for t, *_ in self.out]

    def pkts(self) -> list[object]:
        return [p for _, _, p, _ in self.out]


def make(**kw: object) -> tuple[VirtualClock, Sink, TrafficManager]:
    clock = VirtualClock()
    sink = Sink(clock)
    return clock, sink, TrafficManager(clock, sink, **kw)  # type: ignore[arg-type]


def test_bit_rate_serialisation_one_frame_per_ms() -> None:
    clock, sink, tm = make()
    tm.configure_port(1, rate_bps=8_000_000)
    for i in range(5):
        assert tm.enqueue(1, i, 1000) is not None
    clock.run_until_idle()
    assert sink.times() == [0, 1 * MS, 2 * MS, 3 * MS, 4 * MS]
    assert sink.pkts() == [0, 1, 2, 3, 4]
    # deq_timedelta = waiting time in us; deq_qdepth = packets left behind.
    assert [i.deq_timedelta for *_, i in sink.out] == [0, 1000, 2000, 3000, 4000]
    assert [i.deq_qdepth for *_, i in sink.out] == [4, 3, 2, 1, 0]


def test_idle_port_sends_at_once_busy_port_waits() -> None:
    clock, sink, tm = make()
    tm.configure_port(1, rate_bps=8_000_000)
    tm.enqueue(1, "a", 1000)
    clock.advance(MS // 2)
    tm.enqueue(1, "b", 1000)  # the transmitter is busy until 1 ms
    clock.advance(10 * MS)
    tm.enqueue(1, "c", 1000)  # idle again: leaves now
    clock.run_until_idle()
    assert sink.times() == [0, MS, 10 * MS + MS // 2]
    assert sink.out[1][3].deq_timedelta == 500


def test_enq_qdepth_grows_and_65th_is_tail_dropped() -> None:
    clock, sink, tm = make()
    tm.configure_port(2, rate_bps=1_000_000)
    results = [tm.enqueue(2, i, 100) for i in range(65)]
    assert [r.enq_qdepth for r in results[:64] if r] == list(range(64))
    assert results[64] is None
    assert tm.drops.get(2, DropReason.TAIL_DROP) == 1
    assert tm.occupancy(2) == (64, 6400)
    clock.run_until_idle()
    assert len(sink.out) == 64
    assert tm.occupancy(2) == (0, 0)
    assert tm.stats(2).deq_pkts == 64


def test_timestamps_are_clock_microseconds() -> None:
    clock, sink, tm = make()
    clock.advance(1_234_567)
    r = tm.enqueue(3, "x", 64)
    assert r is not None and r.enq_timestamp == 1234 and r.qid == 0
    clock.run_until_idle()
    assert sink.out[0][3].enq_timestamp == 1234


def test_strict_priority_serves_high_before_low() -> None:
    clock, sink, tm = make()
    tm.configure_port(1, rate_bps=8_000_000, priority_queues=8)
    tm.enqueue(1, "first", 1000, priority=0)
    clock.advance(1)  # "first" is now on the wire; the rest queue behind it
    tm.enqueue(1, "low1", 1000, priority=0)
    tm.enqueue(1, "low2", 1000, priority=1)
    r = tm.enqueue(1, "high", 1000, priority=7)
    # enq_qdepth counts the packet's own priority queue (BMv2's
    # egress_buffers.size(port, priority)): none ahead of "high", though the port holds 2.
    assert r is not None and r.enq_qdepth == 0 and r.qid == 7
    assert tm.enqueue(1, "low3", 1000, priority=0).enq_qdepth == 1  # type: ignore[union-attr]
    clock.run_until_idle()
    assert sink.pkts() == ["first", "high", "low2", "low1", "low3"]
    assert [i.qid for *_, i in sink.out] == [0, 7, 1, 0, 0]
    assert [i.deq_qdepth for *_, i in sink.out] == [0, 0, 0, 1, 0]
    # Out-of-range priority is dropped like BMv2 does.
    assert tm.enqueue(1, "bad", 100, priority=8) is None
    assert tm.drops.get(1, DropReason.PRIORITY_OUT_OF_RANGE) == 1


def test_depth_is_per_priority_queue() -> None:
    _, _, tm = make()
    tm.configure_port(1, rate_pps=1, priority_queues=2, depth_pkts=2)
    assert tm.enqueue(1, 1, 1, priority=0) and tm.enqueue(1, 2, 1, priority=0)
    assert tm.enqueue(1, 3, 1, priority=0) is None
    assert tm.enqueue(1, 4, 1, priority=1) is not None
    tm.set_queue_depth(1, 3, priority=0)
    assert tm.enqueue(1, 5, 1, priority=0) is not None
    assert tm.queue_occupancy(1, 0) == (3, 3)


def test_pps_mode() -> None:
    clock, sink, tm = make()
    tm.configure_port(4, rate_pps=1000)
    for i in range(3):
        tm.enqueue(4, i, 1500)
    clock.run_until_idle()
    assert sink.times() == [0, MS, 2 * MS]
    # A non-integral period does not drift: 3 pps -> 333333, 666666, 1000000 ns.
    clock2, sink2, tm2 = make()
    tm2.set_queue_rate(None, rate_pps=3)
    for i in range(4):
        tm2.enqueue(9, i, 64)
    clock2.run_until_idle()
    assert sink2.times() == [0, 333_333_333, 666_666_666, 1_000_000_000]


def test_rate_change_takes_effect_on_next_packet() -> None:
    clock, sink, tm = make()
    tm.configure_port(1, rate_bps=8_000_000)
    for i in range(3):
        tm.enqueue(1, i, 1000)
    clock.advance(MS // 2)  # packet 0 is on the wire until 1 ms
    tm.set_queue_rate(1, rate_bps=16_000_000)
    clock.run_until_idle()
    # Packet 1 still waits for packet 0 (old rate); it then takes 0.5 ms at the new rate.
    assert sink.times() == [0, MS, MS + MS // 2]


def test_unlimited_idle_port_dequeues_inside_enqueue() -> None:
    clock, sink, tm = make()
    for i in range(10):
        tm.enqueue(5, i, 100)
        tm.enqueue(6, 100 + i, 100)
    # Delivered at once, in order, and no queue ever builds (BMv2's egress thread).
    assert [p for _, port, p, _ in sink.out if port == 5] == list(range(10))
    assert [p for _, port, p, _ in sink.out if port == 6] == [100 + i for i in range(10)]
    assert {info.enq_qdepth for *_, info in sink.out} == {0}
    assert tm.stats(5).enq_pkts == tm.stats(5).deq_pkts == 10
    assert clock.pending() == 0  # no timer was needed


def test_deferred_unlimited_ports_deliver_fifo_on_next_turn() -> None:
    clock, sink, tm = make(immediate=False)
    for i in range(10):
        tm.enqueue(5, i, 100)
        tm.enqueue(6, 100 + i, 100)
    assert sink.out == []  # nothing is delivered inside enqueue()
    clock.run_until_idle()
    assert sink.times() == [0] * 20
    assert [p for _, port, p, _ in sink.out if port == 5] == list(range(10))
    assert [p for _, port, p, _ in sink.out if port == 6] == [100 + i for i in range(10)]
    assert [info.enq_qdepth for _, port, _, info in sink.out if port == 5] == list(range(10))


def test_packets_enqueued_by_the_dequeue_callback_follow_on_the_clock() -> None:
    clock = VirtualClock()
    seen: list[tuple[object, int]] = []
    tm: TrafficManager

    def on_dequeue(port: int, pkt: object, info: DequeueInfo) -> None:
        seen.append((pkt, info.enq_qdepth))
        if pkt == "a":  # e.g. an egress clone: enqueued while "a" is being sent
            tm.enqueue(1, "a-clone", 100)
            tm.enqueue(1, "b", 100)

    tm = TrafficManager(clock, on_dequeue)
    tm.enqueue(1, "a", 100)
    assert [p for p, _ in seen] == ["a"]  # not recursively inside the callback
    clock.run_until_idle()
    assert seen == [("a", 0), ("a-clone", 0), ("b", 1)]


def test_set_queue_rate_and_depth_for_all_ports_and_defaults() -> None:
    clock, sink, tm = make()
    tm.enqueue(1, "a", 1000)
    clock.run_until_idle()
    tm.set_queue_rate(None, rate_bps=8_000_000)
    tm.set_queue_depth(None, 1)
    assert tm.port_config(1)["rate_bps"] == 8_000_000
    assert tm.port_config(7)["depths_pkts"] == [1]  # new ports get the new defaults
    assert tm.enqueue(7, "x", 1000) is not None
    assert tm.enqueue(7, "y", 1000) is None
    tm.set_queue_rate(7)  # no rate: unlimited again
    assert tm.port_config(7)["rate_bps"] is None


def test_callback_may_enqueue_again() -> None:
    clock = VirtualClock()
    seen: list[object] = []

    def on_deq(port: int, pkt: object, info: DequeueInfo) -> None:
        seen.append(pkt)
        if pkt == "a":
            tm.enqueue(port, "b", 1000)

    tm = TrafficManager(clock, on_deq)
    tm.configure_port(1, rate_bps=8_000_000)
    tm.enqueue(1, "a", 1000)
    clock.run_until_idle()
    assert seen == ["a", "b"]
    assert clock.now_ns() == MS


def test_drop_counters() -> None:
    d = DropCounters()
    d.count(1, DropReason.PIPELINE_DROP)
    d.count(1, DropReason.TAIL_DROP, 2)
    d.count(2, DropReason.TAIL_DROP)
    assert d.port_total(1) == 3 and d.reason_total(DropReason.TAIL_DROP) == 3 and d.total() == 4
    assert d.snapshot()[(2, "tail_drop")] == 1
    d.reset()
    assert d.total() == 0


def test_config_errors() -> None:
    _, _, tm = make()
    with pytest.raises(ValueError):
        tm.configure_port(1, rate_bps=1, rate_pps=1)
    with pytest.raises(ValueError):
        tm.configure_port(1, priority_queues=0)
    tm.configure_port(1, rate_pps=1)
    tm.enqueue(1, "a", 1)
    tm.enqueue(1, "b", 1)
    with pytest.raises(RuntimeError):
        tm.configure_port(1)


@pytest.mark.parametrize("rates", [
    {"rate_bps": float("nan")}, {"rate_pps": float("inf")}, {"rate_bps": -1},
    {"rate_bps": 0.4},  # rounds to 0, which would silently remove the limit
    {"rate_pps": 1e-300},
])
def test_rates_that_are_not_a_rate_are_refused(rates: dict[str, float]) -> None:
    clock, sink, tm = make()
    tm.set_queue_rate(1, rate_pps=1000)
    with pytest.raises(ValueError, match="rate_"):
        tm.set_queue_rate(1, **rates)
    with pytest.raises(ValueError, match="rate_"):
        tm.configure_port(2, **rates)
    tm.enqueue(1, "a", 100)
    tm.enqueue(1, "b", 100)
    clock.run_until_idle()
    assert sink.times() == [0, MS]  # still paced at 1000 pps: the refusal changed nothing


def test_a_priority_beyond_the_ports_queues_is_refused_and_changes_nothing() -> None:
    _, _, tm = make()
    tm.configure_port(1, priority_queues=4, depth_pkts=10)
    tm.configure_port(2, priority_queues=2, depth_pkts=10)
    for bad in (-1, 2, 99):  # -1 once set the last queue (a Python index)
        with pytest.raises(ValueError, match="priority"):
            tm.set_queue_depth(None, 5, priority=bad)
    assert tm.port_config(1)["depths_pkts"] == [10] * 4
    assert tm.port_config(2)["depths_pkts"] == [10] * 2
    tm.set_queue_depth(1, 5, priority=3)
    assert tm.port_config(1)["depths_pkts"] == [10, 10, 10, 5]


class LateClock(VirtualClock):
    """A virtual clock whose timers fire `late_ns` after their time, like a busy reactor."""

    def __init__(self, late_ns: int) -> None:
        super().__init__()
        self.late_ns = late_ns

    def call_at(self, when_ns, fn):  # type: ignore[no-untyped-def]
        return super().call_at(when_ns + self.late_ns, fn)


def test_late_wakeups_do_not_lower_the_configured_rate() -> None:
    clock = LateClock(late_ns=300_000)  # every wake-up 0.3 ms late
    sink = Sink(clock)
    tm = TrafficManager(clock, sink)
    tm.configure_port(1, rate_pps=1000, depth_pkts=200)
    for i in range(100):
        tm.enqueue(1, i, 100)
    clock.run_until_idle()
    times = sink.times()
    assert sink.pkts() == list(range(100))
    # 100 packets at 1000 pps take ~99 ms; with the lateness compounding they would
    # take ~129 ms. Departures follow the schedule, not the late wake-ups.
    assert times[-1] - times[0] <= 100 * MS


def test_wakeups_later_than_the_catch_up_bound_keep_the_rate() -> None:
    """Turns 3 ms late, beyond the 1 ms catch-up bound, on a port sending a packet every
    10 ms (a 2.5 Mb/s wire at dilation 10000 sends a 4 KB frame every 13 ms, and a busy
    switch daemon wakes up several ms late): each turn used to lose the 2 ms past the
    bound, so the link ran 20% below its rate and a real-time incast's bottleneck was
    slower than in virtual time."""
    clock = LateClock(late_ns=3 * MS)
    sink = Sink(clock)
    tm = TrafficManager(clock, sink, max_catchup_ns=1 * MS)
    tm.configure_port(1, rate_pps=100, depth_pkts=200)
    for i in range(20):
        tm.enqueue(1, i, 100)
    clock.run_until_idle()
    times = sink.times()
    assert sink.pkts() == list(range(20))
    # 19 gaps of 10 ms: 190 ms (228 ms when each late turn lost 2 ms)
    assert times[-1] - times[0] <= 190 * MS


def test_catch_up_after_a_stall_is_bounded() -> None:
    clock = LateClock(late_ns=0)
    sink = Sink(clock)
    tm = TrafficManager(clock, sink, max_catchup_ns=2 * MS)
    tm.configure_port(1, rate_pps=1000, depth_pkts=200)
    for i in range(50):
        tm.enqueue(1, i, 100)  # the first service timer is set now, on time
    clock.late_ns = 19 * MS  # ...the next one (due at 1 ms) fires at 20 ms: a stall
    clock.advance(1)
    clock.late_ns = 0
    clock.run_until_idle()
    times = sink.times()
    assert times[:2] == [0, 20 * MS]
    # The late turn's packet keeps its slot (1 ms) and only 2 ms more of the 19 ms
    # backlog is caught up: 4 packets leave at 20 ms, then the port is back to one
    # packet per ms.
    assert sum(1 for t in times if t == 20 * MS) == 4
    assert times[5] - times[4] == 1 * MS


class _LateClock(VirtualClock):
    """Timers fire `late_ns` after their time, as a busy process's real clock does."""

    def __init__(self, late_ns: int) -> None:
        super().__init__()
        self.late_ns = late_ns

    def call_at(self, when_ns, fn):  # type: ignore[no-untyped-def]
        return super().call_at(when_ns + self.late_ns, fn)


def test_lag_is_zero_on_time_and_measures_late_service_turns() -> None:
    clock, sink, tm = make()
    tm.configure_port(1, rate_bps=8_000_000)
    for i in range(3):
        tm.enqueue(1, i, 1000)
    clock.run_until_idle()
    assert tm.take_max_lag_ns() == 0

    late = _LateClock(5 * MS)
    tm2 = TrafficManager(late, Sink(late))
    tm2.configure_port(1, rate_bps=8_000_000)
    for i in range(3):
        tm2.enqueue(1, i, 1000)
    late.run_until_idle()
    assert tm2.take_max_lag_ns() == 5 * MS
    assert tm2.take_max_lag_ns() == 0  # taking it resets it


def test_ports_serialise_independently_of_each_other() -> None:
    # BMv2 serves every egress port's queues on their own: a slow port's transmitter
    # must never hold back a faster port's departures, nor the other way round.
    def departures(ports: tuple[int, ...]) -> dict[int, list[int]]:
        clock, sink, tm = make()
        tm.configure_port(1, rate_bps=8_000_000)  # 1000-byte frame: 1 ms
        tm.configure_port(2, rate_bps=4_000_000)  # the same frame: 2 ms
        for i in range(6):  # one frame per port every 0.5 ms, interleaved
            for port in ports:
                tm.enqueue(port, (port, i), 1000)
            clock.advance(MS // 2)
        clock.run_until_idle()
        return {port: [t for t, p, *_ in sink.out if p == port] for port in ports}

    both = departures((1, 2))
    assert both[1] == departures((1,))[1] == [i * MS for i in range(6)]
    assert both[2] == departures((2,))[2] == [i * 2 * MS for i in range(6)]


def test_wire_overhead_is_serialised_with_each_frame() -> None:
    """A port of the fabric serialises frame + preamble, FCS and gap (24 B) as the
    hosts' NIC pacers count them; the library default (0) times the frame alone."""
    clock, sink, tm = make(wire_overhead_bytes=24)
    tm.configure_port(1, rate_bps=8_000_000)
    for i in range(3):
        tm.enqueue(1, i, 976)
    clock.run_until_idle()
    assert sink.times() == [0, MS, 2 * MS]
