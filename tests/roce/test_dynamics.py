"""Pacing, time dilation, PLB re-pathing: end to end over MemLink in virtual time."""

from __future__ import annotations

import pytest

from emu.roce import dcqcn
from emu.roce.dcqcn import DcqcnParams
from emu.roce.plb import PlbParams
from tests.roce.helpers import is_data, pair


def _mark_all_ce(link) -> None:
    orig = link.b._deliver

    def deliver(frame: bytes) -> None:
        if len(frame) > 42 and frame[42] < 0x11:
            f = bytearray(frame)
            f[15] |= 3
            frame = bytes(f)
        orig(frame)

    link.b._deliver = deliver


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
                "plb": PlbParams(enabled=True, congested_rounds=2, congested_cnps=1,
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


def test_a_rate_increase_retimes_the_packet_waiting_at_the_old_rate():
    """A rate change re-times the gap after the last packet (the HPCC simulator's
    ChangeRate; a NIC rate limiter re-reads its rate): a QP cut to 1 Mb/s and raised
    again 20 us later sends at the new rate, not after the 1 Mb/s gap of ~9 ms."""
    dc = DcqcnParams(alpha_update="per_cnp", rate_reduce_period_ns=0, alpha_init=1.0,
                     alpha_period_ns=1_000_000,
                     alpha_to_rate_shift=10, min_dec_factor=0.0, min_rate_bps=1e6,
                     time_reset_ns=20_000, byte_reset_bytes=0, threshold_f=1,
                     min_time_between_cnps_ns=0)
    sent: list[int] = []
    clk, a, b, qa, qb, _ = pair(rate_bps=10_000_000_000, nic_kw={"dcqcn": dc},
                                qp_kw={"rto_ns": 100_000_000},
                                fate_a=lambda f: (sent.append(clk.now_ns()) if is_data(f)
                                                  else None) or [0])
    wr = qa.post_send(bytes(1_000_000))
    clk.advance(5_000)
    assert qa.rp is not None
    qa.rp.on_cnp()  # alpha 1 with the shift at 10: Rc drops to the 1 Mb/s minimum
    cut = clk.now_ns()
    assert qa.rp.rc * 1.0 == pytest.approx(1e6)
    clk.advance(30_000)  # the increase timer fired at cut + 20 us: Rc = (line + 1 Mb/s)/2
    assert qa.rp.rc > 4e9
    after = [t for t in sent if t > cut + 20_000]
    # at ~5 Gb/s a 1 KB packet takes ~1.8 us: several must have left in the 10 us since
    assert len(after) >= 3, (len(after), [t for t in sent if t > cut])
    clk.run_until_idle()
    assert wr.completed_ns is not None


def test_a_rate_change_retimes_only_the_running_gap_and_never_into_the_past():
    """The re-timed send is at or after the rate change (a send 'in the past' would take
    the late-wakeup catch-up, which is wire time and so would differ with the dilation);
    a gap that has already run out is left alone."""
    from emu.roce.pacing import Pacer

    p = Pacer(1e9, burst_ns=500_000, overhead_bytes=24)
    p.on_send(1000, 0)
    assert p.next_ns == 8192  # 1024 bytes at 1 Gb/s
    p.set_rate(1e8, now_ns=1000)  # ten times slower: the gap becomes 81920 ns
    assert p.next_ns == 81920
    p.set_rate(1e10, now_ns=5000)  # 819 ns at the new rate is past: send now
    assert p.next_ns == 5000
    p.set_rate(1e9, now_ns=6000)  # the gap has run out: nothing to re-time
    assert p.next_ns == 5000
