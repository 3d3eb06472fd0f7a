"""Pacing, time dilation, PLB re-pathing: end to end over MemLink in virtual time."""

from __future__ import annotations

import pytest

from emu.roce import dcqcn
from emu.roce.dcqcn import DcqcnParams
from emu.roce.plb import PlbParams
from tests.roce.helpers import pair


def _mark_all_ce(link) -> None:
    # A tap on B's receiver (the NIC's on_frame): frames are marked before B sees them.
    orig = link.b.receiver

    def deliver(frame: bytes) -> None:
        if len(frame) > 42 and frame[42] < 0x11:
            f = bytearray(frame)
            f[15] |= 3
            frame = bytes(f)
        orig(frame)

    link.b.set_receiver(deliver)


def test_pacing_at_line_rate_without_dcqcn():
    # NIC line rate 1 Gb/s on an infinitely fast link: the NIC alone sets the pace.
    clk, a, b, qa, qb, _ = pair(rate_bps=None, nic_kw={"line_rate_bps": 1e9,
                                                       "dcqcn": DcqcnParams(enabled=False)})
    assert qa.rp is None
    size = 2_000_000
    wr = qa.post_send(bytes(size))
    clk.run_until_idle()
    fct = wr.completed_ns - wr.posted_ns
    wire_bytes = qa.requester.stats.data_pkts_sent * (1024 + 58 + 24)
    assert wire_bytes * 8e9 / fct == pytest.approx(1e9, rel=0.02)


@pytest.mark.parametrize("dilation", [10, 1000])
def test_time_dilation_keeps_the_rate_trajectory(dilation):
    """The same CE-marked transfer at 8 Gb/s and dilated by D: scaled back, the completion
    time, the number of rate decreases and Rc(t) agree (to ns rounding of pacing gaps)."""
    runs = {}
    for d in (1, dilation):
        clk, a, b, qa, qb, link = pair(
            rate_bps=int(8e9 / d), delay_ns=2000 * d,
            nic_kw={"line_rate_bps": 8e9, "dilation": float(d),
                    "dcqcn": dcqcn.profile("nvidia", 8e9)},
            qp_kw={"rto_ns": 10_000_000})
        _mark_all_ce(link)
        wr = qa.post_send(bytes(1_000_000))
        clk.run_until_idle()
        assert wr.completed_ns is not None
        runs[d] = ((wr.completed_ns - wr.posted_ns) / d, qa.rp.decreases,
                   [(t / d, r * d) for t, r in qa.rp.trace])
    (fct1, dec1, tr1), (fct2, dec2, tr2) = runs[1], runs[dilation]
    assert fct2 == pytest.approx(fct1, rel=0.02)
    assert dec2 == pytest.approx(dec1, rel=0.05)

    def rate_at(trace, t):
        r = trace[0][1]
        for tt, rr in trace:
            if tt > t:
                break
            r = rr
        return r

    # Rounding shifts events by up to ~1% of the run by its end, and one increase event
    # can move Rc halfway to an unclamped Rt: match each sample against the reference
    # rates within +-2% of the run around it.
    for k in range(1, 40):
        t = fct1 * k / 40
        lo, hi = t - 0.02 * fct1, t + 0.02 * fct1
        window = [rate_at(tr1, lo)] + [r for tt, r in tr1 if lo < tt <= hi]
        r2 = rate_at(tr2, t)
        assert any(r2 == pytest.approx(r, rel=0.1) for r in window), (t, r2, window)


def test_plb_repaths_after_consecutive_congested_rounds():
    clk, a, b, qa, qb, link = pair(
        rate_bps=10_000_000_000,
        nic_kw={"dcqcn": DcqcnParams(min_time_between_cnps_ns=0),
                "plb": PlbParams(enabled=True, congested_rounds=2,
                                 repath_on_timeout=False)},
        qp_kw={"max_outstanding_pkts": 16})
    _mark_all_ce(link)
    port0 = qa.udp_sport
    data = bytes(200_000)
    got = []
    qb.responder.on_message = got.append
    wr = qa.post_send(data)
    clk.run_until_idle()
    assert wr.completed_ns is not None and got[0].data == data
    reps = qa.requester.stats.repaths
    rounds = qa.plb.rounds
    # every round is congested: a re-path every second round, the streak then restarts
    assert reps >= 1 and reps == rounds // 2
    assert len(qa.sport_history) == reps + 1 and qa.sport_history[-1][1] == qa.udp_sport
    assert qa.udp_sport != port0 or reps >= 2
    assert all(49152 <= p <= 65535 for _, p in qa.sport_history[1:])


def test_plb_quiet_without_congestion():
    clk, a, b, qa, qb, link = pair(nic_kw={"plb": PlbParams(enabled=True, congested_rounds=1)})
    wr = qa.post_send(bytes(300_000))
    clk.run_until_idle()
    assert wr.completed_ns is not None and qa.requester.stats.repaths == 0
    assert qa.plb.rounds >= 1


def test_two_qps_share_one_nic_and_port():
    """QPs are demultiplexed by destination QPN; paced QPs share the line rate fairly."""
    from emu.roce import wire
    from emu.roce.qp import QpParams
    from tests.roce.helpers import IP_A, IP_B, MAC_A, MAC_B

    clk, a, b, qa, qb, link = pair(rate_bps=10_000_000_000,
                                   nic_kw={"dcqcn": DcqcnParams(enabled=False)})
    qa2 = a.add_qp(QpParams(0x33, wire.Path(MAC_A, MAC_B, IP_A, IP_B, 50001, 0x44),
                            deliver="bytes"))
    qb2 = b.add_qp(QpParams(0x44, wire.Path(MAC_B, MAC_A, IP_B, IP_A, 50002, 0x33),
                            deliver="bytes"))
    got1, got2 = [], []
    qb.responder.on_message = got1.append
    qb2.responder.on_message = got2.append
    w1 = qa.post_send(b"1" * 400_000)
    w2 = qa2.post_send(b"2" * 400_000)
    clk.run_until_idle()
    assert [m.data for m in got1] == [b"1" * 400_000] and [m.data for m in got2] == [b"2" * 400_000]
    # round robin: both finish at about the same time, each at about half the line rate
    assert abs(w1.completed_ns - w2.completed_ns) < 0.05 * w1.completed_ns
    assert sum(a.drops.values()) == 0 and sum(b.drops.values()) == 0


def _cut_to_1mbps_then_raised(retime: bool) -> int:
    """Completion time of 64 KB whose QP is cut to 1 Mb/s after a few packets and raised
    to ~5 Gb/s by the increase timer 10 us later."""
    dc = DcqcnParams(alpha_update="per_cnp", rate_reduce_period_ns=0, rate_on_first_cnp_bps=1e6,
                     min_rate_bps=1e6, time_reset_ns=10_000, byte_reset_bytes=0,
                     retime_pacing=retime)
    clk, a, b, qa, qb, _ = pair(rate_bps=10_000_000_000, nic_kw={"dcqcn": dc})
    wr = qa.post_send(bytes(64 * 1024))
    clk.advance(2_000)  # a few packets at the line rate
    sent = qa.requester.stats.data_pkts_sent
    assert 0 < sent < 64
    qa.on_cnp()  # Rc = 1 Mb/s; the increase timer raises it 10 us later
    clk.run_until_idle()
    assert qa.rp is not None and qa.rp.increases >= 1
    rates = [r for _, r in qa.rp.trace]
    assert min(rates) == 1e6 and rates[rates.index(1e6) + 1] > 4e9
    assert wr.completed_ns is not None
    return wr.completed_ns - wr.posted_ns


def test_a_raised_rate_retimes_the_gap_after_the_last_packet():
    """With `retime_pacing` (nvidia), a QP cut to 1 Mb/s and raised to ~5 Gb/s sends on
    at the raised rate: the gap after the packet sent before the cut is re-timed at the
    new rate. Before, that gap kept its 1 Mb/s length (8.8 ms for a 1 KB frame) and the
    QP sat idle long after it had recovered. Without it (hpcc, paper: their simulators'
    rule) the new rate applies from the next packet, after that gap."""
    # the rest of 64 KB at >= 5 Gb/s takes ~0.1 ms; one 1 Mb/s gap alone is 8.8 ms
    assert _cut_to_1mbps_then_raised(True) < 1_000_000
    assert _cut_to_1mbps_then_raised(False) > 8_000_000


def test_a_raised_rate_gives_no_catch_up_burst():
    """Re-timing at a raised rate makes a slot that is already past due now, not earlier:
    the catch-up allowance (`burst_ns`) is for late wakeups, and crediting the time spent
    at the old rate would send a burst above the new rate (and would not scale with the
    time dilation, since the allowance is in wire time)."""
    from emu.roce.pacing import Pacer

    p = Pacer(1e6, burst_ns=5_000, overhead_bytes=24)
    p.on_send(1000, 0)  # next slot 8.2 ms later at 1 Mb/s
    assert p.next_ns == 8_192_000
    p.set_rate(1e9)
    assert p.next_ns == 8_192_000  # set_rate alone: from the next packet on
    p.retime(100_000)  # re-timed: 8192 ns after the last slot, long past
    assert p.next_ns == 100_000
    p.on_send(1000, 100_000)
    assert p.next_ns == 100_000 + 8_192  # one gap at the new rate, from now
