from __future__ import annotations

from emu.core import MemLink, VirtualClock


def _collect(port, clock):  # type: ignore[no-untyped-def]
    got: list[tuple[int, bytes]] = []
    port.set_receiver(lambda f: got.append((clock.now_ns(), f)))
    return got


def test_serialisation_and_delay_timing() -> None:
    clock = VirtualClock()
    link = MemLink(clock, rate_bps=8_000_000, delay_ns=20_000)  # 1 byte per us
    got = _collect(link.b, clock)
    for i in range(3):
        assert link.a.send(bytes([i]) * 1000)
    clock.run_until_idle()
    # 1000 B at 8 Mb/s = 1 ms each, back to back, plus 20 us propagation.
    assert [t for t, _ in got] == [1_020_000, 2_020_000, 3_020_000]
    assert [f[0] for _, f in got] == [0, 1, 2]
    assert link.b.stats.rx_frames == 3 and link.a.stats.tx_bytes == 3000


def test_idle_link_restarts_from_now() -> None:
    clock = VirtualClock()
    link = MemLink(clock, rate_bps=8_000_000)
    got = _collect(link.b, clock)
    link.a.send(b"x" * 100)
    clock.advance(1_000_000)
    link.a.send(b"y" * 100)
    clock.run_until_idle()
    assert [t for t, _ in got] == [100_000, 1_100_000]


def test_tail_drop_at_queue_depth() -> None:
    clock = VirtualClock()
    link = MemLink(clock, rate_bps=1_000_000, queue_depth_pkts=4)
    got = _collect(link.b, clock)
    results = [link.a.send(bytes([i]) * 125) for i in range(10)]
    assert results == [True] * 4 + [False] * 6
    assert link.a.stats.tx_drops == 6
    clock.advance(1_000_000)  # exactly one frame serialised: room for one more
    assert link.a.send(b"z" * 125)
    assert not link.a.send(b"z" * 125)
    clock.run_until_idle()
    assert len(got) == 5


def test_directions_are_independent_and_fifo() -> None:
    clock = VirtualClock()
    link = MemLink(clock, rate_bps=None, delay_ns=1_000)
    got_b = _collect(link.b, clock)
    got_a = _collect(link.a, clock)
    for i in range(50):
        link.a.send(i.to_bytes(2, "big"))
        link.b.send((1000 + i).to_bytes(2, "big"))
    clock.run_until_idle()
    assert [int.from_bytes(f, "big") for _, f in got_b] == list(range(50))
    assert [int.from_bytes(f, "big") for _, f in got_a] == list(range(1000, 1050))
    assert all(t == 1_000 for t, _ in got_a + got_b)


def test_link_down_loses_frames_in_flight() -> None:
    clock = VirtualClock()
    link = MemLink(clock, rate_bps=8_000_000, delay_ns=10_000)
    got = _collect(link.b, clock)
    link.a.send(b"a" * 1000)
    link.set_up(False)
    assert not link.a.send(b"b" * 1000)
    clock.run_until_idle()
    assert got == []
    link.set_up(True)
    link.a.send(b"c" * 10)
    clock.run_until_idle()
    assert [f for _, f in got] == [b"c" * 10]


def test_no_receiver_counts_drop() -> None:
    clock = VirtualClock()
    link = MemLink(clock)
    link.a.send(b"q")
    clock.run_until_idle()
    assert link.b.stats.rx_drops == 1


def test_delayed_port_sends_later_and_receives_at_once() -> None:
    """The host -> switch direction of a Mininet host link (emu.core.port.DelayedPort):
    frames reach the wire `delay_ns` after the NIC sent them; arrivals are not delayed."""
    from emu.core.port import DelayedPort

    clock = VirtualClock()
    link = MemLink(clock, rate_bps=None, delay_ns=0)
    host = DelayedPort(clock, link.a, 5_000)
    got_b: list[int] = []
    got_host: list[int] = []
    link.b.set_receiver(lambda f: got_b.append(clock.now_ns()))
    host.set_receiver(lambda f: got_host.append(clock.now_ns()))
    assert host.send(b"x" * 60)
    clock.run_until_idle()
    assert got_b == [5_000]
    link.b.send(b"y" * 60)
    clock.run_until_idle()
    assert got_host == [5_000]  # received the moment it arrived
    assert host.stats is link.a.stats and host.stats.tx_frames == 1


def test_delayed_port_with_a_rate_serialises_like_a_memlink() -> None:
    """With the link's rate, a frame reaches the wire after its serialisation and the
    delay, one frame after another, when a MemLink of that rate would deliver it: a
    Mininet host's frames used to arrive a frame time early, which shortened DCQCN's
    feedback loop in real time (fewer ECN marks and CNPs than in virtual time)."""
    from emu.core.port import DelayedPort

    def arrivals(make: str) -> list[int]:
        clock = VirtualClock()
        if make == "memlink":
            link = MemLink(clock, rate_bps=8_000_000, delay_ns=5_000, overhead_bytes=24)
            port = link.a
        else:
            link = MemLink(clock, rate_bps=None, delay_ns=0)
            port = DelayedPort(clock, link.a, 5_000, rate_bps=8_000_000, overhead_bytes=24)
        got: list[int] = []
        link.b.set_receiver(lambda f: got.append(clock.now_ns()))
        for size in (976, 40, 976):  # a full frame, an ACK right behind it, another
            assert port.send(b"x" * size)
        clock.run_until_idle()
        return got

    # 1000 wire bytes at 8 Mb/s: 1 ms; 64 bytes: 64 us
    assert arrivals("delayed") == arrivals("memlink") == [1_005_000, 1_069_000, 2_069_000]


def test_jitter_delays_each_frame_within_its_bound_and_keeps_the_order() -> None:
    import random

    def arrivals(seed: int) -> list[int]:
        clock = VirtualClock()
        link = MemLink(clock, rate_bps=8_000_000_000, delay_ns=1_000, jitter_ns=500,
                       rng=random.Random(seed))
        got = _collect(link.b, clock)
        for i in range(200):
            link.a.send(bytes([i % 256]) * 100)  # 100 ns each, back to back
        clock.run_until_idle()
        assert [f[0] for _, f in got] == [i % 256 for i in range(200)]  # FIFO
        return [t for t, _ in got]

    times = arrivals(1)
    earliest = [(i + 1) * 100 + 1_000 for i in range(200)]
    late = [t - e for t, e in zip(times, earliest, strict=True)]
    assert all(t >= e for t, e in zip(times, earliest, strict=True))
    assert times == sorted(times)
    # at most the jitter late, except where the frame ahead arrived later still
    assert all(d <= 500 or times[i] == times[i - 1] for i, d in enumerate(late))
    assert len(set(late)) > 50  # drawn, not one fixed delay
    assert arrivals(1) == times and arrivals(2) != times  # seeded


def test_no_jitter_is_the_exact_timing() -> None:
    clock = VirtualClock()
    link = MemLink(clock, rate_bps=8_000_000, delay_ns=20_000, jitter_ns=0)
    got = _collect(link.b, clock)
    for i in range(3):
        link.a.send(bytes([i]) * 1000)
    clock.run_until_idle()
    assert [t for t, _ in got] == [1_020_000, 2_020_000, 3_020_000]
