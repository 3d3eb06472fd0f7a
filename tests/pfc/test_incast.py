"""16:1 incast on fabric.p4 in virtual time, congestion control off: without flow
control the receiver's leaf tail-drops; with PFC it pauses its senders instead, never
drops the lossless class, stays within XOFF + headroom per ingress port and priority,
and every message arrives without a retransmission timeout."""

from __future__ import annotations

from emu.control import QosSettings
from emu.core.pfc import FlowControl, PfcThresholds
from emu.roce import wire
from emu.roce.dcqcn import DcqcnParams
from emu.roce.nic import Nic, NicParams
from emu.roce.qp import QpParams
from emu.sim.fabric import SimFabric
from emu.topo.generators import clos_fabric
from emu.topo.model import Defaults

N = 16
RATE = 10_000_000_000
MSG = 48 * 1024
PFC = FlowControl(mode="pfc", lossless={3}, thresholds=PfcThresholds(20_000, 10_000))


def run(fc: FlowControl | None, *, slow_rx: dict | None = None):
    fabric = clos_fabric(1, 1, N + 1, defaults=Defaults(rate_bps=RATE, delay_ns=1000,
                                                        depth_pkts=64, mtu=1500))
    sim = SimFabric(fabric, qos=QosSettings.lossless(8), flow_control=fc)
    hosts = [h.name for h in fabric.hosts]
    rx_host = fabric.host(hosts[-1])
    macs = {h: sim.host_mac(h, **(slow_rx or {} if h == rx_host.name else {})) for h in hosts}
    dc = DcqcnParams(enabled=False)

    def nic(h: str) -> Nic:
        hh = fabric.host(h)
        return Nic(sim.clock, macs[h], NicParams(mac=hh.mac, ip=str(hh.ip), line_rate_bps=RATE,
                                                 dcqcn=dc))

    rx = nic(rx_host.name)
    got, wrs, qps = [], [], []
    for i, h in enumerate(hosts[:-1]):
        hh = fabric.host(h)
        tx = nic(h)
        qa = tx.add_qp(QpParams(100 + i, wire.Path(hh.mac, hh.gateway_mac, str(hh.ip),
                                                   str(rx_host.ip), 50000 + i, 200 + i),
                                rto_ns=2_000_000))
        qb = rx.add_qp(QpParams(200 + i, wire.Path(rx_host.mac, rx_host.gateway_mac,
                                                   str(rx_host.ip), str(hh.ip), 51000 + i,
                                                   100 + i), deliver="none"))
        qb.responder.on_message = got.append
        wrs.append(qa.post_send(bytes(MSG)))
        qps.append(qa)
    sim.run_until_idle(max_ns=2_000_000_000)
    return sim, got, wrs, qps, macs, rx_host


def test_without_flow_control_the_leaf_drops():
    sim, got, wrs, qps, _m, _r = run(None)
    assert sim.switches["leaf1"].drops.reason_total("tail_drop") > 0
    assert sum(q.requester.stats.retx_pkts for q in qps) > 0


def test_pfc_pauses_instead_of_dropping_and_delivers_everything():
    sim, got, wrs, qps, macs, rx_host = run(PFC)
    leaf = sim.switches["leaf1"]
    fc = leaf.flow_control
    assert leaf.drops.total() == 0
    c = fc.counters()
    assert sum(sum(e["pause_tx"]) for e in c["ports"].values()) > 0
    assert all(e["pause_tx"][3] == sum(e["pause_tx"]) for e in c["ports"].values())
    for key, used in c["max_ingress_bytes"].items():
        port, prio = map(int, key.split(":"))
        xoff, _xon, limit = fc.limits(port)
        assert prio == 3 and used <= limit
    assert max(c["max_ingress_bytes"].values()) > PFC.thresholds.xoff_bytes  # XOFF reached
    assert all(fc.headroom_report()[p]["ok"] for p in fc.headroom_report())
    assert len(got) == N and all(w.completed_ns for w in wrs)
    assert sum(q.requester.stats.retx_pkts for q in qps) == 0
    senders = [m for h, m in macs.items() if h != rx_host.name]
    assert all(m.pause.rx[3] > 0 for m in senders)  # every sender was paused
    assert all(m.pause.paused_ns(3) > 0 for m in senders)


def test_slow_receiver_pauses_its_leaf_and_the_leaf_pauses_the_senders():
    slow = {"rx_buffer_bytes": 64_000, "rx_drain_bps": 2e9, "rx_xoff_bytes": 30_000,
            "rx_xon_bytes": 15_000}
    sim, got, wrs, qps, macs, rx_host = run(PFC, slow_rx=slow)
    rxm = macs[rx_host.name]
    assert rxm.pause_tx[3] > 0 and rxm.rx_overflow == 0
    leaf = sim.switches["leaf1"]
    port = rx_host.switch_port
    assert leaf.flow_control.counters()["ports"][port]["pause_rx"][3] > 0
    assert leaf.drops.total() == 0
    assert len(got) == N
    assert sum(q.requester.stats.retx_pkts for q in qps) == 0


def test_mac_control_frames_never_reach_the_pipeline():
    from emu.core.pfc import pfc_frame

    fabric = clos_fabric(1, 1, 2)
    sim = SimFabric(fabric, qos=QosSettings.lossless(8), flow_control=PFC)
    leaf = sim.switches["leaf1"]
    outs: list = []
    leaf.on_output(outs.append)
    leaf.inject(1, pfc_frame("02:00:00:00:00:01", {3: 100}))
    leaf.inject(1, pfc_frame("02:00:00:00:00:01", {3: 1})[:30])  # malformed: counted
    sim.run_until_idle()
    assert outs == [] and leaf.drops.total() == 0
    port = leaf.flow_control.counters()["ports"][1]
    assert port["pause_rx"][3] == 1 and port["malformed"] == {"short": 1}
