"""N:1 incast through an ECN-marking bottleneck: DCQCN bounds the queue (dcqcn.md)."""

from __future__ import annotations

from emu.core.clock import VirtualClock
from emu.core.port import MemLink
from emu.roce import dcqcn, wire
from emu.roce.dcqcn import DcqcnParams
from emu.roce.nic import Nic, NicParams
from emu.roce.qp import QpParams
from tests.roce.helpers import EcnSwitch

RATE = 10_000_000_000


def run_incast(dc: DcqcnParams, n: int = 4, size: int = 3_000_000):
    clk = VirtualClock()
    sw = EcnSwitch(clk, RATE, kmin=20, kmax=80, depth_pkts=300)
    rx_mac, rx_ip = "02:00:00:00:09:00", "10.5.0.100"
    link = MemLink(clk, rate_bps=RATE, delay_ns=1000, overhead_bytes=24)
    rx = Nic(clk, link.a, NicParams(mac=rx_mac, ip=rx_ip, line_rate_bps=RATE, dcqcn=dc))
    sw.attach(rx_mac, link.b)
    senders, got = [], []
    for i in range(n):
        mac, ip = f"02:00:00:00:09:{i + 1:02x}", f"10.5.0.{i + 1}"
        lk = MemLink(clk, rate_bps=RATE, delay_ns=1000, overhead_bytes=24)
        nic = Nic(clk, lk.a, NicParams(mac=mac, ip=ip, line_rate_bps=RATE, dcqcn=dc))
        sw.attach(mac, lk.b)
        qa = nic.add_qp(QpParams(100 + i, wire.Path(mac, rx_mac, ip, rx_ip, 50000 + i, 200 + i),
                                 max_outstanding_pkts=512, rto_ns=2_000_000))
        qb = rx.add_qp(QpParams(200 + i, wire.Path(rx_mac, mac, rx_ip, ip, 51000 + i, 100 + i),
                                deliver="none"))
        qb.responder.on_message = got.append
        senders.append((qa, qa.post_send(bytes(size))))
    clk.run_until_idle(max_ns=10_000_000_000)
    fcts = [wr.completed_ns - wr.posted_ns for _, wr in senders if wr.completed_ns]
    return sw, senders, got, fcts, wire.mac_bytes(rx_mac), rx


def test_dcqcn_bounds_the_incast_queue():
    """4:1 at line rate with the paper's parameters: no drops, queue below the buffer."""
    n, size = 4, 3_000_000
    sw, senders, got, fcts, rx, _nic = run_incast(dcqcn.profile("paper", RATE), n, size)
    assert len(got) == n and len(fcts) == n
    assert sw.max_q[rx] < 300 and sw.drops == 0  # never reaches the buffer limit
    assert sw.marked > 0 and all(qa.rp is not None and qa.rp.decreases > 0 for qa, _ in senders)
    # the bottleneck stays busy: total bytes over the last completion ~ line rate
    util = n * size * 8e9 / max(fcts) / RATE
    assert util > 0.6
    assert all(qa.requester.stats.timeouts == 0 for qa, _ in senders)


def test_without_dcqcn_the_queue_fills_and_drops():
    sw, senders, got, fcts, rx, _nic = run_incast(DcqcnParams(enabled=False), 4, 3_000_000)
    assert len(got) == 4  # still delivered, by retransmission
    assert sw.max_q[rx] == 300 and sw.drops > 0
    assert sum(qa.requester.stats.retx_pkts for qa, _ in senders) > 0



def test_cc_off_runs_no_notification_point():
    """Issue #13.6: with DCQCN off the receiver still sent CNPs on CE marks."""
    sw, senders, got, _fcts, _rx, nic = run_incast(DcqcnParams(enabled=False), 4, 1_000_000)
    assert len(got) == 4 and sw.marked > 0
    rx_qps = list(nic.qps.values())
    assert all(qp.responder.np is None for qp in rx_qps)
    assert sum(qp.responder.stats.ecn_marked_rcvd for qp in rx_qps) > 0  # marks still counted
    assert sum(qp.responder.stats.cnps_sent for qp in rx_qps) == 0
    assert all(qa.rp is None and qa.requester.stats.cnps_rcvd == 0 for qa, _ in senders)
