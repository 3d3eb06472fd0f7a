"""Credit over one link between two host MACs (emu.roce.credit) on a MemLink in virtual
time: the sender never goes beyond the limit it was granted, counts wrap modulo 4096,
a lost update and a lost data frame both heal (periodic re-send, reply on request, ABR
set from the peer's FCTBS), and nothing the credit admitted is lost."""

from __future__ import annotations

from collections.abc import Callable

from emu.core.clock import VirtualClock
from emu.core.credit import MODULO, CreditSettings, blocks, parse_credit
from emu.core.port import FramePort, MemLink
from emu.roce.credit import HostCreditMac, HostCreditParams

RATE = 10_000_000_000
DSCP = {26: 3}
SIZE = 1000  # 16 blocks


class Faulty(FramePort):
    """A link port that drops the frames `drop(frame)` selects (a fault injector) and
    checks `check(frame)` on every frame it sends."""

    def __init__(self, lower: FramePort, drop: Callable[[bytes], bool] = lambda f: False,
                 check: Callable[[bytes], None] = lambda f: None) -> None:
        super().__init__(lower.name)
        self.lower = lower
        self.drop = drop
        self.check = check
        self.dropped: list[bytes] = []
        lower.set_receiver(self._deliver)

    def send(self, frame: bytes) -> bool:
        self.check(frame)
        if self.drop(frame):
            self.dropped.append(frame)
            return True
        return self.lower.send(frame)


def data(seq: int) -> bytes:
    ip = bytes([0x45, 26 << 2]) + bytes(18)
    return (bytes.fromhex("020000000002020000000001") + b"\x08\x00" + ip
            + seq.to_bytes(4, "big")).ljust(SIZE, b"\x00")


class Rig:
    def __init__(self, *, drop_tx=lambda f: False, drop_rx=lambda f: False,
                 settings: CreditSettings | None = None, rx_buffer: int = 8192,
                 drain_bps: float = 2e9) -> None:
        self.clock = VirtualClock()
        link = MemLink(self.clock, rate_bps=RATE, delay_ns=1000)
        cfg = settings or CreditSettings(buffer_bytes=rx_buffer, update_blocks=16)
        self.violations = 0
        self.data_tx: list[int] = []  # send times of data frames
        self.a_port = Faulty(link.a, drop_tx, self._check)
        self.b_port = Faulty(link.b, drop_rx)
        self.tx = HostCreditMac(self.clock, self.a_port,
                                HostCreditParams("02:00:00:00:00:01", RATE, DSCP,
                                                 credit=cfg, hold_frames=100_000))
        self.rx = HostCreditMac(self.clock, self.b_port,
                                HostCreditParams("02:00:00:00:00:02", RATE, DSCP,
                                                 credit=cfg, rx_buffer_bytes=rx_buffer,
                                                 rx_drain_bps=drain_bps))
        self.got: list[int] = []
        self.rx.set_receiver(lambda f: self.got.append(int.from_bytes(f[34:38], "big")))
        self.max_used = 0

    def _check(self, frame: bytes) -> None:
        if frame[12:14] == b"\x88\xb5":
            return
        self.data_tx.append(self.clock.now_ns())
        cr = self.tx.credit  # counted already: the frame must end within the limit
        if (cr.fccl[3] - cr.fctbs[3]) % MODULO > 2048:
            self.violations += 1

    def send(self, n: int, gap_ns: int = 0) -> None:
        for i in range(n):
            if gap_ns:
                self.clock.call_at(i * gap_ns, lambda i=i: self.tx.send(data(i)))
            else:
                assert self.tx.send(data(i))

    def run(self) -> None:
        rx = self.rx.credit
        clock = self.clock
        while (nxt := clock.next_deadline()) is not None:
            clock.advance_to(max(nxt, clock.now_ns()))
            self.max_used = max(self.max_used, rx.used[3])  # after every event


def test_sender_never_exceeds_the_limit_and_counts_wrap():
    r = Rig()
    n = 1000  # 16000 blocks: the counts wrap modulo 4096 almost four times
    r.send(n)
    r.run()
    assert r.violations == 0
    assert r.got == list(range(n))  # nothing lost, in order
    assert r.rx.rx_overrun == 0 and r.rx.credit.overrun[3] == 0
    assert 0 < r.max_used <= r.rx.credit.budget == 8192 // 64
    assert r.tx.credit.blocked_events[3] > 0  # credit, not the line, set the pace
    assert r.tx.credit.fctbs[3] == n * blocks(SIZE) % MODULO == r.rx.credit.abr[3]


def test_a_lost_update_heals_and_no_frame_is_lost():
    # One update from the receiver, the one granting credit after the sender first
    # ran out, is lost. Without a re-send the sender would wait for ever (the
    # receiver's buffer is then empty, so it has nothing more to say by itself).
    settings = CreditSettings(buffer_bytes=4096, update_blocks=64)
    lost: list[int] = []
    rig: list[Rig] = []

    def drop_update(frame: bytes) -> bool:
        u = parse_credit(frame)
        if isinstance(u, str) or lost or not rig or not rig[0].tx.credit.blocked[3]:
            return False
        lost.append(r.clock.now_ns())
        return True

    r = Rig(drop_rx=drop_update, settings=settings, rx_buffer=4096)
    rig.append(r)
    r.send(40)
    r.run()
    assert len(r.b_port.dropped) == 1
    assert r.got == list(range(40)) and r.violations == 0
    assert r.rx.rx_overrun == 0
    assert r.rx.credit.requests_rx[3] >= 1  # healed: the waiting sender asked again
    assert r.tx.credit.fctbs[3] == r.rx.credit.abr[3] == 40 * blocks(SIZE) % MODULO
    # the sender resumed within one re-send period (plus the request's round trip)
    resumed = min(t for t in r.data_tx if t > lost[0])
    assert resumed - lost[0] <= r.tx.credit.period_ns() + 2 * 1000 + 2 * 100


def test_a_lost_data_frame_gives_its_credit_back():
    # A frame lost on the wire never reaches the buffer: the next update carries the
    # sender's count, the receiver sets its count of received blocks to it, and the
    # whole buffer is granted again.
    seen = []

    def drop_tenth(frame: bytes) -> bool:
        if frame[12:14] != b"\x08\x00":
            return False
        seen.append(frame)
        return len(seen) == 10

    r = Rig(drop_tx=drop_tenth)
    r.send(100)
    r.run()
    assert r.got == [i for i in range(100) if i != 9]
    rx, tx = r.rx.credit, r.tx.credit
    assert tx.fctbs[3] == rx.abr[3] == 100 * blocks(SIZE) % MODULO
    assert rx.used[3] == 0 and tx.fccl[3] == rx.limit(3)
    assert (tx.fccl[3] - tx.fctbs[3]) % MODULO == rx.budget  # the whole buffer again


class TurnClock(VirtualClock):
    """A virtual clock that keeps the handles of the MAC's transmit turns (`_flush`)."""

    def __init__(self) -> None:
        super().__init__()
        self.turns: list = []
        self.most = 0

    def call_at(self, when_ns, fn):  # type: ignore[no-untyped-def, override]
        h = super().call_at(when_ns, fn)
        if getattr(fn, "__name__", "") == "_flush":
            self.turns = [t for t in self.turns if not t.cancelled] + [h]
            self.most = max(self.most, len(self.turns))
        return h


def test_one_transmit_turn_at_a_time_with_two_lossless_priorities():
    # Regression: credit for one priority arriving while the MAC was sending held frames
    # of another started a second chain of transmit turns (five at once here).
    clock = TurnClock()
    link = MemLink(clock, rate_bps=RATE, delay_ns=1000)
    dscp = {26: 3, 34: 5}
    cfg = CreditSettings(buffer_bytes=4096, update_blocks=16)
    both = frozenset({3, 5})
    tx = HostCreditMac(clock, link.a, HostCreditParams("02:00:00:00:00:01", RATE, dscp,
                                                       lossless=both, credit=cfg,
                                                       hold_frames=10_000))
    rx = HostCreditMac(clock, link.b, HostCreditParams("02:00:00:00:00:02", RATE, dscp,
                                                       lossless=both, credit=cfg,
                                                       rx_buffer_bytes=4096,
                                                       rx_drain_bps=4e9))
    got: list[bytes] = []
    rx.set_receiver(got.append)
    for i in range(400):
        f = bytearray(data(i))
        f[15] = (26 if i % 2 else 34) << 2
        assert tx.send(bytes(f))
    clock.run_until_idle()
    assert len(got) == 400 and rx.rx_overrun == 0
    assert tx.held_frames > 0 and clock.most == 1


def test_the_same_macs_on_the_real_clock():
    # The host agent runs this code on a RealClock: the same link, credit-paced.
    from emu.core.clock import RealClock

    clock = RealClock()
    try:
        link = MemLink(clock, rate_bps=1_000_000_000, delay_ns=20_000)
        cfg = CreditSettings(buffer_bytes=4096, update_blocks=16)
        tx = HostCreditMac(clock, link.a, HostCreditParams("02:00:00:00:00:01", 1e9, DSCP,
                                                           credit=cfg, hold_frames=1000))
        rx = HostCreditMac(clock, link.b, HostCreditParams("02:00:00:00:00:02", 1e9, DSCP,
                                                           credit=cfg, rx_buffer_bytes=4096,
                                                           rx_drain_bps=5e8))
        got: list[int] = []
        rx.set_receiver(lambda f: got.append(int.from_bytes(f[34:38], "big")))
        clock.call_soon(lambda: [tx.send(data(i)) for i in range(200)])
        clock.run(until=lambda: len(got) == 200, timeout_s=30)
        assert got == list(range(200))
        assert rx.rx_overrun == 0 and rx.rx_max <= 64
        assert tx.credit.blocked_events[3] > 0
        assert tx.credit.fctbs[3] == rx.credit.abr[3] == 200 * blocks(SIZE) % MODULO
    finally:
        clock.close()


def test_a_lost_update_is_sent_again_by_the_periodic_refresh():
    # The receiver's buffer still holds packets (drained slowly) when its update is
    # lost: its own refresh re-sends the same limit, unasked, before new credit exists.
    lost: list[int] = []
    after: list[tuple[int, int]] = []  # (FCCL, flags) of the updates sent after the loss
    rig: list[Rig] = []

    def drop_update(frame: bytes) -> bool:
        u = parse_credit(frame)
        if isinstance(u, str) or not rig:
            return False
        if lost:
            after.append((u.fccl, u.flags))
            return False
        if not rig[0].rx.credit.used[3]:
            return False
        lost.append(u.fccl)
        return True

    r = Rig(drop_rx=drop_update, settings=CreditSettings(buffer_bytes=4096, update_blocks=16),
            rx_buffer=4096, drain_bps=1e8)
    rig.append(r)
    r.send(20)
    r.run()
    assert len(r.b_port.dropped) == 1
    assert after[0] == (lost[0], 0)  # the next update: the same limit again
    assert r.got == list(range(20)) and r.violations == 0 and r.rx.rx_overrun == 0


def test_a_port_counts_how_long_it_waited_for_credit() -> None:
    """The credit counterpart of PFC's paused time: from the frame that found too little
    credit to the update that granted more, a wait still running included."""
    from emu.core.credit import CreditPort, credit_frame

    clock = VirtualClock()
    port = CreditPort(clock, lambda f: True, "02:00:00:00:00:01", CreditSettings(),
                      frozenset({3}), RATE)
    peer = "02:00:00:00:00:02"
    clock.advance(500)
    assert not port.can_send(3, SIZE)  # nothing granted before the peer's first update
    clock.advance(1_000)
    assert port.counters()["blocked_ns"][3] == 1_000  # still waiting
    port.on_frame(credit_frame(peer, 3, 0, blocks(SIZE)))
    clock.advance(7_000)
    c = port.counters()
    assert c["blocked_ns"][3] == 1_000 and c["blocked"][3] == 1
    assert port.can_send(3, SIZE)
    assert sum(c["blocked_ns"]) == 1_000  # the other priorities never waited


def test_a_port_that_comes_up_late_gets_credit_without_waiting_for_a_timer() -> None:
    """A host's agent starts after its leaf's daemon announced credit to nobody: the
    leaf answers the host's first update at once, so the host's first frame goes out a
    round trip after it came up, not after its re-send timer and a request (7.3 us
    modelled on a real-time clos4 run)."""
    from emu.core.credit import CreditPort

    clock = VirtualClock()
    delay = 1_000
    ends: dict[str, CreditPort] = {}
    up = {"leaf": True, "host": False}

    def wire(to: str) -> Callable[[bytes], bool]:
        def send(frame: bytes) -> bool:
            if up[to]:
                clock.call_later(delay, lambda: ends[to].on_frame(frame))
            return True
        return send

    ends["leaf"] = CreditPort(clock, wire("host"), "02:00:00:00:00:01", CreditSettings(),
                              frozenset({3}), RATE)
    ends["leaf"].announce()  # to nobody: the host is not up
    clock.run_until_idle()
    clock.advance(1_000_000)
    up["host"] = True
    host = ends["host"] = CreditPort(clock, wire("leaf"), "02:00:00:00:00:02",
                                     CreditSettings(), frozenset({3}), RATE)
    host.announce()
    t0 = clock.now_ns()
    clock.advance(2 * delay)
    assert host.can_send(3, SIZE) and clock.now_ns() - t0 == 2 * delay
    assert host.period_ns() > 2 * delay  # the timer would have come later
