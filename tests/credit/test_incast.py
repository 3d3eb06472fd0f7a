"""Credit mode on the 16:1 incast of tests/pfc/test_incast.py (fabric.p4, virtual time,
congestion control off): the lossless class is lossless without a single PAUSE frame,
every message arrives without a retransmission, and no sender ever exceeds the limit
its leaf granted (the leaf's ingress buffers never overrun)."""

from __future__ import annotations

from emu.core.credit import CreditSettings
from emu.core.pfc import FlowControl
from emu.p4.target.switch import V1ModelSwitch

from ..pfc.test_incast import N, run  # the same 16:1 incast harness

CREDIT = FlowControl(mode="credit", lossless={3},
                     credit=CreditSettings(buffer_bytes=16 * 1024, update_blocks=24))


def test_credit_incast_is_lossless_without_any_pause_frame():
    sim, got, wrs, qps, macs, rx_host = run(CREDIT)
    leaf = sim.switches["leaf1"]
    c = leaf.flow_control.counters()
    assert leaf.drops.total() == 0
    assert len(got) == N and all(w.completed_ns for w in wrs)
    assert sum(q.requester.stats.retx_pkts for q in qps) == 0
    # no PAUSE anywhere: none received by the leaf nor by any host
    assert all(e["pause_rx"] == 0 for e in c["ports"].values())
    assert all(m.pause_rx == 0 for m in macs.values())
    # credit did the work: senders waited for it, and no buffer ever overran
    senders = [m for h, m in macs.items() if h != rx_host.name]
    assert all(m.credit.blocked_events[3] > 0 for m in senders)
    budget = CREDIT.credit.buffer_blocks
    assert 0 < max(c["max_ingress_blocks"].values()) <= budget
    assert all(sum(e.get("overrun", [0])) == 0 for e in c["ports"].values())
    # every block a sender counted arrived: FCTBS == ABR on each link end at rest
    for h, m in macs.items():
        port = sim.fabric.host(h).switch_port
        leaf_end = leaf.flow_control.ports[port]
        assert leaf_end.abr[3] == m.credit.fctbs[3]
        assert m.credit.abr[3] == leaf_end.fctbs[3]
        assert leaf_end.used[3] == 0


def test_credit_off_path_unchanged_without_flow_control():
    sim, got, wrs, qps, _m, _r = run(None)
    leaf = sim.switches["leaf1"]
    assert leaf.flow_control is None
    # off, the per-packet path is the plain one: no wrapper on receive or enqueue
    assert leaf.sw.receive.__func__ is V1ModelSwitch.receive
    assert leaf.sw.tm.flow_control is None  # enqueue hands packets to it only when set
    assert leaf.drops.reason_total("tail_drop") > 0  # the same incast drops without it


def test_slow_receiver_holds_its_leaf_back_by_credit():
    slow = {"rx_buffer_bytes": 16 * 1024, "rx_drain_bps": 2e9}
    sim, got, wrs, qps, macs, rx_host = run(CREDIT, slow_rx=slow)
    rxm = macs[rx_host.name]
    leaf = sim.switches["leaf1"]
    leaf_end = leaf.flow_control.ports[rx_host.switch_port]
    assert rxm.rx_overrun == 0 and 0 < rxm.rx_max <= 256
    assert leaf_end.blocked_events[3] > 0  # the leaf waited for the receiver's credit
    assert leaf.drops.total() == 0
    assert len(got) == N and sum(q.requester.stats.retx_pkts for q in qps) == 0
