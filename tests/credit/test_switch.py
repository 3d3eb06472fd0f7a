"""Credit in the switch traffic manager (emu.p4.v1model.credit): a lossless egress queue
waits for its peer's credit while other priorities go on, an update serves it again,
the ingress buffer returns credit to the port a packet came from as it leaves, and a
peer sending beyond its credit is dropped and counted; on a fabric, updates and PAUSE
frames never reach the pipeline."""

from __future__ import annotations

from emu.control import QosSettings
from emu.core.clock import VirtualClock
from emu.core.credit import CreditSettings, credit_frame, parse_credit
from emu.core.pfc import FlowControl, pfc_frame
from emu.p4.v1model.credit import CREDIT_OVERRUN, SwitchCreditControl
from emu.p4.v1model.traffic_manager import DropReason, TrafficManager
from emu.sim.fabric import SimFabric
from emu.topo.generators import clos_fabric

RATE = 1e9
OUT, IN = 1, 5
PEER = "02:00:00:00:00:99"
CFG = FlowControl(mode="credit", lossless={3},
                  credit=CreditSettings(buffer_bytes=4096, update_blocks=16))


class Rig:
    def __init__(self, no_credit: frozenset[int] = frozenset()) -> None:
        self.clock = VirtualClock()
        self.out: list[tuple[int, int, int]] = []  # (time, port, priority)
        self.sent: list[tuple[int, object]] = []  # (port, CreditUpdate)
        self.tm = TrafficManager(self.clock, self._deq, default_priority_queues=8,
                                 default_depth_pkts=64)
        self.tm.configure_port(OUT, rate_bps=RATE)
        self.tm.configure_port(IN, rate_bps=RATE)
        self.fc = SwitchCreditControl(self.tm, CFG, self._send, no_credit_ports=no_credit)

    def _deq(self, port: int, pkt: object, info: object) -> None:
        self.out.append((self.clock.now_ns(), port, info.qid))  # type: ignore[attr-defined]

    def _send(self, port: int, frame: bytes) -> None:
        self.sent.append((port, parse_credit(frame)))

    def pkt(self, prio: int = 3, size: int = 1000, ingress: int = IN, port: int = OUT):
        self.fc.ingress, self.fc.arrival = ingress, True
        try:
            return self.tm.enqueue(port, object(), size, prio)
        finally:
            self.fc.ingress, self.fc.arrival = -1, False

    def grant(self, fccl: int, fctbs: int = 0, port: int = OUT) -> None:
        self.fc.on_credit_frame(port, credit_frame(PEER, 3, fctbs, fccl))


def test_lossless_queue_waits_for_credit_other_priorities_go_on():
    r = Rig()
    r.pkt(prio=3)
    r.pkt(prio=0)
    r.clock.advance(100_000)
    assert [q for _, _, q in r.out] == [0]  # no credit yet for priority 3
    r.grant(15)  # 15 blocks: a 1000-byte packet takes 16
    r.clock.advance(100_000)
    assert [q for _, _, q in r.out] == [0]
    r.grant(16)  # a new limit serves the port at once
    r.clock.run_until_idle()
    assert [(t, q) for t, _, q in r.out][1] == (200_000, 3)
    assert r.fc.ports[OUT].fctbs[3] == 16


def test_ingress_returns_credit_as_packets_leave():
    r = Rig()
    r.grant(0)  # the egress has no credit: packets stay in the switch
    for _ in range(4):
        assert r.pkt() is not None
    cp = r.fc.ports[IN]
    assert cp.used[3] == 64 and cp.abr[3] == 64
    assert cp.limit(3) == 64  # full: the limit stands where the peer has got to
    r.sent.clear()
    r.grant(64)  # the egress may send all four
    r.clock.run_until_idle()
    assert cp.used[3] == 0 and len(r.out) == 4
    limits = [u.fccl for p, u in r.sent if p == IN]  # type: ignore[union-attr]
    assert limits and limits[-1] == 64 + 64  # the whole buffer granted again


def test_a_peer_beyond_its_credit_is_dropped_and_counted():
    r = Rig()
    r.grant(0)
    for _ in range(4):
        assert r.pkt() is not None
    assert r.pkt() is None  # a fifth 16-block packet: the 64-block buffer is full
    assert r.tm.drops.get(OUT, CREDIT_OVERRUN) == 1
    assert r.fc.ports[IN].overrun[3] == 1


def test_lossy_priority_keeps_tail_drop_and_ignores_credit():
    r = Rig()
    r.tm.set_queue_depth(OUT, 1)
    for _ in range(3):  # before the port's first service turn: the queue holds one
        r.pkt(prio=0)
    r.clock.run_until_idle()
    assert len(r.out) == 1 and r.tm.drops.get(OUT, DropReason.TAIL_DROP) == 2
    assert IN not in r.fc.ports  # a lossy arrival is no credit business


def test_a_port_without_link_peer_carries_no_credit():
    # the CPU port: nothing would ever grant credit there, nor take updates from it
    r = Rig(no_credit=frozenset({OUT, IN}))
    r.fc.start()
    assert r.sent == []
    r.pkt(prio=3)
    r.clock.run_until_idle()
    assert [q for _, _, q in r.out] == [3] and IN not in r.fc.ports


def test_updates_and_pause_frames_never_reach_the_pipeline():
    fabric = clos_fabric(1, 1, 2)
    sim = SimFabric(fabric, qos=QosSettings.lossless(8), flow_control=CFG)
    leaf = sim.switches["leaf1"]
    outs: list = []
    leaf.on_output(outs.append)
    leaf.inject(1, credit_frame(PEER, 3, 0, 100))
    leaf.inject(1, credit_frame(PEER, 3, 0, 100)[:30])  # malformed: counted
    leaf.inject(1, pfc_frame(PEER, {3: 100}))  # no PFC in credit mode: counted, dropped
    # out of port 1 only the port's own reply to the peer's first update, no pipeline
    # output
    assert [(o.port, o.data[12:14]) for o in outs] == [(1, b"\x88\xb5")]
    assert leaf.drops.total() == 0
    port = leaf.flow_control.counters()["ports"][1]
    assert port["updates_rx"][3] == 1 and port["malformed"] == {"short": 1}
    assert port["fccl"][3] == 100 and port["pause_rx"] == 1
