"""PFC in the traffic manager: ingress accounting (XOFF/XON hysteresis, headroom,
refresh), paused egress queues (quanta, reload, per-priority), lossy tail drop, and
the watchdog."""

from __future__ import annotations

from emu.core.clock import VirtualClock
from emu.core.pfc import (
    FlowControl,
    PfcThresholds,
    WatchdogSettings,
    parse_mac_control,
    pfc_frame,
    quanta_ns,
)
from emu.p4.v1model.buffer import HEADROOM_OVERFLOW, WATCHDOG_DROP, SwitchFlowControl
from emu.p4.v1model.traffic_manager import DropReason, TrafficManager

RATE = 1e9  # a quantum is 512 ns
OUT, IN = 1, 5
SRC = "02:00:00:00:00:99"


class Rig:
    def __init__(self, watchdog: WatchdogSettings | None = None, depth: int = 4) -> None:
        self.clock = VirtualClock()
        self.out: list[tuple[int, int, int]] = []  # (time, port, priority)
        self.sent: list[tuple[int, int, object]] = []  # (time, port, MacControl)
        self.tm = TrafficManager(self.clock, self._deq, default_priority_queues=8,
                                 default_depth_pkts=depth)
        self.tm.configure_port(OUT, rate_bps=RATE)
        self.tm.configure_port(IN, rate_bps=RATE)
        cfg = FlowControl(mode="pfc", lossless={3},
                          thresholds=PfcThresholds(3000, 1000, headroom=2000),
                          watchdog=watchdog or WatchdogSettings())
        self.fc = SwitchFlowControl(self.tm, cfg, self._send)

    def _deq(self, port: int, pkt: object, info: object) -> None:
        self.out.append((self.clock.now_ns(), port, info.qid))  # type: ignore[attr-defined]

    def _send(self, port: int, frame: bytes) -> None:
        self.sent.append((self.clock.now_ns(), port, parse_mac_control(frame)))

    def pkt(self, prio: int = 3, size: int = 1000, ingress: int = IN, port: int = OUT):
        self.fc.ingress = ingress
        return self.tm.enqueue(port, object(), size, prio)

    def pause(self, prio: int, quanta: int, port: int = OUT) -> None:
        self.fc.on_mac_control(port, pfc_frame(SRC, {prio: quanta}))


def test_xoff_pause_headroom_then_xon_resume():
    r = Rig()
    r.pause(3, 0xFFFF)  # the egress queue is held, so the ingress buffer fills
    for _ in range(3):
        assert r.pkt() is not None
    assert r.sent == []  # 3000 bytes: at XOFF, not above
    assert r.pkt() is not None  # 4000 > XOFF: PAUSE out of the ingress port
    assert [(p, m.vector, m.quanta[3]) for _, p, m in r.sent] == [(IN, 0b1000, 0xFFFF)]
    assert r.pkt() is not None  # the headroom absorbs what is still in flight
    assert r.pkt() is None  # beyond XOFF + headroom (5000): a lossless drop, counted
    assert r.tm.drops.get(OUT, HEADROOM_OVERFLOW) == 1
    assert len(r.sent) == 1  # no PAUSE per packet
    r.pause(3, 0)  # resume the egress: the buffer drains at 1 Gbit/s
    r.clock.run_until_idle()
    pauses = [(m.quanta[3], t) for t, _, m in r.sent]
    # hysteresis: the resume only once the count is at XON (1000 bytes left queued)
    assert [q for q, _ in pauses] == [0xFFFF, 0]
    assert len(r.out) == 5 and r.fc.max_used[IN * 8 + 3] == 5000
    assert r.fc.used[IN * 8 + 3] == 0


def test_pause_is_refreshed_while_above_xon():
    r = Rig()
    r.pause(3, 0xFFFF)
    for _ in range(4):
        r.pkt()
    period = quanta_ns(0xFFFF, RATE) // 2
    for _ in range(3):  # the egress stays paused (its peer refreshes too)
        r.clock.advance(period)
        r.pause(3, 0xFFFF)
    times = [t for t, _, m in r.sent if m.quanta[3]]
    assert times == [0, period, 2 * period, 3 * period]
    assert all(m.quanta[3] for _, _, m in r.sent)  # still above XON: no resume


def test_paused_queue_waits_for_the_quanta_and_a_new_pause_reloads():
    r = Rig()
    r.pause(3, 10)  # 5120 ns
    r.pkt()
    r.clock.advance(2000)
    assert r.out == []
    r.pause(3, 10)  # reload at 2000: until 7120, not 10240
    r.clock.run_until_idle()
    assert r.out == [(7120, OUT, 3)]


def test_other_priorities_go_on():
    r = Rig()
    r.pause(3, 0xFFFF)
    r.pkt(prio=3)
    r.pkt(prio=0)
    r.clock.advance(100_000)
    assert [q for _, _, q in r.out] == [0]
    r.pause(3, 0)
    r.clock.run_until_idle()
    assert [q for _, _, q in r.out] == [0, 3]


def test_a_resumed_queue_sends_at_the_link_rate_not_a_catch_up_burst():
    r = Rig()
    r.pause(3, 0xFFFF)
    for _ in range(3):
        r.pkt()
    r.clock.advance(500_000)  # paused long: that idle time is no backlog
    r.pause(3, 0)
    r.clock.run_until_idle()
    assert [t for t, _, _ in r.out] == [500_000, 508_000, 516_000]  # 1000 B at 1 Gbit/s


def test_lossy_priority_keeps_tail_drop():
    r = Rig(depth=2)
    r.pause(0, 0xFFFF)
    assert r.pkt(prio=0) and r.pkt(prio=0)
    assert r.pkt(prio=0) is None
    assert r.tm.drops.get(OUT, DropReason.TAIL_DROP) == 1
    assert r.sent == []  # lossy: never paused upstream


def test_watchdog_drop_flushes_and_restores():
    wd = WatchdogSettings(enabled=True, detection_ns=100_000, restoration_ns=50_000,
                          action="drop")
    r = Rig(watchdog=wd)
    r.pause(3, 0xFFFF)  # 33.5 ms at 1G: a storm unless refreshed away
    r.pkt()
    r.clock.advance(100_001)
    c = r.fc.counters()
    assert c["watchdog"][f"{OUT}:3"]["detected"] == 1
    assert r.tm.drops.get(OUT, WATCHDOG_DROP) == 1 and r.tm.queue_occupancy(OUT, 3) == (0, 0)
    assert r.pkt() is None  # arrivals for the stormed queue are dropped too
    for _ in range(3):  # PAUSE keeps arriving every 40 us: no restoration
        r.clock.advance(40_000)
        r.pause(3, 0xFFFF)
        assert r.fc.storms[OUT * 8 + 3].stormed
    r.clock.advance(50_001)  # quiet for the restoration time
    assert not r.fc.storms[OUT * 8 + 3].stormed and r.fc.counters()["watchdog"][f"{OUT}:3"][
        "restored"] == 1
    assert r.pkt() is not None


def test_watchdog_forward_ignores_pause():
    wd = WatchdogSettings(enabled=True, detection_ns=100_000, restoration_ns=50_000,
                          action="forward")
    r = Rig(watchdog=wd)
    r.pause(3, 0xFFFF)
    r.pkt()
    r.clock.advance(100_001)
    assert len(r.out) == 1  # sent although paused
    r.pause(3, 0xFFFF)
    r.pkt()
    r.clock.advance(10_000)  # behind the first one's 8 us on the wire
    assert len(r.out) == 2


def test_watchdog_alert_only_counts():
    wd = WatchdogSettings(enabled=True, detection_ns=100_000, action="alert")
    r = Rig(watchdog=wd)
    r.pause(3, 0xFFFF)
    r.pkt()
    r.clock.advance(200_000)
    assert r.out == [] and r.fc.counters()["watchdog"][f"{OUT}:3"]["detected"] == 1


def test_reaction_allowance_adds_what_the_link_carries_to_the_headroom():
    """Real-time runs: a daemon behind schedule reads frames late; the computed headroom
    grows by the bytes the link carries in `reaction_ns` (and the report says so)."""
    from emu.core.pfc import headroom_bytes

    def need(fc: FlowControl) -> int | None:
        tm = TrafficManager(VirtualClock(), lambda *a: None)
        sfc = SwitchFlowControl(tm, fc, lambda port, frame: None,
                                links={1: (20e6, 5_000_000, 1500)})
        return sfc.headroom_report()[1]["needed"]

    base = headroom_bytes(20e6, 5_000_000, 1500)
    assert need(FlowControl(mode="pfc")) == base
    assert need(FlowControl(mode="pfc", reaction_ns=40_000_000)) == base + 100_000
    assert FlowControl.from_dict(FlowControl(mode="pfc", reaction_ns=7).to_dict()).reaction_ns == 7


def test_watchdog_alert_ends_when_the_queue_is_no_longer_paused():
    """SONiC restores an alert at the first poll where the storm condition fails
    (pfc_detect_*.lua), not after restoration time (pfc_restore.lua skips alert).
    Here: at the moment the last PAUSE expires, or a resume arrives."""
    wd = WatchdogSettings(enabled=True, detection_ns=100_000, restoration_ns=200_000_000,
                          action="alert")
    r = Rig(watchdog=wd)
    for t in range(0, 1_000_000, 200_000):  # 1000 quanta (512 us) every 200 us to 800 us
        r.clock.advance(t - r.clock.now_ns())
        r.pause(3, 1000)
    r.clock.run_until_idle()
    assert [(t, what) for t, what, *_ in r.fc.events] == [(100_000, "storm"),
                                                         (1_312_000, "restored")]
    # a new storm ended by a zero-quanta resume ends there
    start = r.clock.now_ns()
    r.pause(3, 0xFFFF)
    r.clock.advance(150_000)
    r.pause(3, 0)
    assert [(t - start, what) for t, what, *_ in r.fc.events[2:]] == [
        (100_000, "storm"), (150_000, "restored")]
    assert r.fc.counters()["watchdog"][f"{OUT}:3"] == {
        "detected": 2, "restored": 2, "dropped": 0, "stormed": False}
