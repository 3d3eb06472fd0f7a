"""DCQCN reaction/notification point trajectories under a VirtualClock."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from emu.core.clock import VirtualClock
from emu.roce import dcqcn, wire
from emu.roce.dcqcn import DcqcnParams, NotificationPoint, ReactionPoint
from emu.roce.pacing import Dilation
from emu.roce.qp import QueuePair
from tests.roce.helpers import pair

LINE = 100e9


def test_cnp_decrease_and_alpha_step_by_step():
    clk = VirtualClock()
    p = DcqcnParams(g=1 / 16, alpha_init=1.0, alpha_period_ns=1000, rate_reduce_period_ns=0,
                    time_reset_ns=10**9, byte_reset_bytes=0, alpha_update="per_cnp",
                    clamp_target_rate=True)
    rp = ReactionPoint(p, LINE, clk)
    rc, rt, alpha = LINE, LINE, 1.0
    last = 0  # time of the last alpha update
    # CNPs at irregular times: check the equations after each one.
    for t in (0, 500, 3_700, 3_900, 20_000, 20_999):
        clk.advance_to(t)
        alpha *= (1 - p.g) ** ((t - last) // 1000)  # decay: one step per full period
        rp.on_cnp()
        rt = rc
        rc = max(p.min_rate_bps, rc * (1 - alpha / 2))
        alpha = (1 - p.g) * alpha + p.g
        last = t
        assert rp.rc == pytest.approx(rc, rel=1e-12)
        assert rp.rt == pytest.approx(rt, rel=1e-12)
        assert rp.alpha == pytest.approx(alpha, rel=1e-12)
    # alpha decays once per full period without a CNP
    clk.advance_to(20_999 + 5_500)
    assert rp.alpha == pytest.approx(alpha * (1 - p.g) ** 5, rel=1e-12)


def test_increase_stages_timer_and_byte_counter():
    clk = VirtualClock()
    p = DcqcnParams(g=1 / 256, alpha_init=1.0, alpha_period_ns=1000, rate_reduce_period_ns=0,
                    time_reset_ns=300_000, byte_reset_bytes=10_000, threshold_f=2,
                    ai_rate_bps=5e6, hai_rate_bps=50e6, min_rate_bps=1e6,
                    alpha_update="per_cnp", clamp_target_rate=True)
    rp = ReactionPoint(p, LINE, clk)
    rp.on_cnp()
    rc, rt = rp.rc, rp.rt
    assert rc == pytest.approx(LINE / 2)
    i = j = 0

    def expect_step():
        # QCN stages, i and j counting this event: fast recovery for F events of either
        # counter, hyper once both have passed F
        nonlocal rc, rt
        if min(i, j) > p.threshold_f:
            rt += (min(i, j) - p.threshold_f) * p.hai_rate_bps
        elif max(i, j) > p.threshold_f:
            rt += p.ai_rate_bps
        rt = min(rt, LINE)
        rc = min(LINE, (rt + rc) / 2)
        assert rp.rc == pytest.approx(rc, rel=1e-12) and rp.rt == pytest.approx(rt, rel=1e-12)
        assert (rp.i, rp.j) == (i, j)

    # byte events: each 10 kB sent is one stage (j)
    for _ in range(3):
        rp.on_sent(9_999)
        assert rp.j == j
        rp.on_sent(1)
        j += 1
        expect_step()
    # timer events every 300 us since the CNP (i): fast recovery, additive, then hyper
    for step in range(1, 4):
        clk.advance_to(300_000 * step)
        i += 1
        expect_step()
    for _ in range(3):
        rp.on_sent(10_000)
        j += 1
        expect_step()
    # a new CNP resets the stages and the timer
    rp.on_cnp()
    assert (rp.i, rp.j, rp.bytes) == (0, 0, 0)
    assert rp.rt == pytest.approx(rc)


def test_min_rate_first_cnp_rate_and_reduce_period():
    clk = VirtualClock()
    p = DcqcnParams(rate_on_first_cnp_bps=10e9, min_rate_bps=4e9, rate_reduce_period_ns=4000,
                    alpha_update="per_cnp")
    rp = ReactionPoint(p, LINE, clk)
    rp.on_cnp()
    assert rp.rc == 10e9
    clk.advance(1000)
    rp.on_cnp()  # within the reduce period: its decrease is suppressed
    assert rp.rc == 10e9 and rp.cnps_ignored == 1
    for _ in range(50):
        clk.advance(4000)
        rp.on_cnp()
    assert rp.rc == 4e9  # never below min_rate


def test_per_period_first_cnp_rate_and_one_decrease_per_period():
    clk = VirtualClock()
    p = DcqcnParams(rate_on_first_cnp_bps=10e9, min_rate_bps=4e9, rate_reduce_period_ns=4000)
    rp = ReactionPoint(p, LINE, clk)
    rp.on_cnp()
    assert rp.rc == rp.rt == 10e9 and rp.decreases == 0  # the decrease waits for the check
    clk.advance(1000)
    rp.on_cnp()  # same decrease period: merged into the pending decrease
    assert rp.cnps_ignored == 1
    clk.advance_to(4000)
    assert rp.decreases == 1 and rp.rc < 10e9
    for _ in range(50):
        clk.advance(4000)
        rp.on_cnp()
    clk.advance(4000)
    assert rp.rc == 4e9 and rp.decreases == 51  # never below min_rate


def test_recovers_to_line_rate_and_stops_timers():
    clk = VirtualClock()
    rp = ReactionPoint(dcqcn.profile("nvidia"), LINE, clk)
    rp.on_cnp()
    clk.advance(4000)  # the decrease check of the period that saw the CNP
    assert rp.rc < LINE
    clk.run_until_idle()  # timers stop once the line rate is reached
    assert rp.rc == LINE and not rp.active
    assert all(b <= LINE for _, b in rp.trace)


def test_profiles_and_scaling():
    for name in dcqcn.PROFILES:
        dcqcn.profile(name, 100e9).validate()
    h = dcqcn.profile("hpcc", 100e9)
    assert h.ai_rate_bps == pytest.approx(20e6) and h.byte_reset_bytes == 0
    with pytest.raises(ValueError):
        dcqcn.profile("nope")
    # D = 5000: 100 Gbps as 20 Mbps; durations x5000; bytes unchanged; floor clamps
    d = Dilation(5000, timer_resolution_ns=10_000_000, nominal_line_rate_bps=100e9,
                 mtu_frame_bytes=1106)
    assert d.wire_line_rate_bps == pytest.approx(20e6)
    sp, clamped = dcqcn.scaled(dcqcn.profile("nvidia"), d, d.floor_ns())
    assert sp.time_reset_ns == 300_000 * 5000
    assert sp.alpha_period_ns == 10_000_000 and clamped == ["alpha_period_ns"]  # 5 ms < 10 ms
    assert sp.rate_reduce_period_ns == 20_000_000
    assert sp.ai_rate_bps == pytest.approx(1000.0) and sp.byte_reset_bytes == 32767
    assert d.floor_ns() == 10_000_000
    assert Dilation(5000, 0, 100e9, 1102).floor_ns() == int(1102 * 8 * 1e9 / 20e6)  # a packet time


def test_a_positive_time_never_scales_to_zero_no_limit():
    """Under a dilation below 1 a modelled 1 us became 0 ns on the wire: 0 means 'no
    limit' to the CNP pacing, and a zero alpha period failed validation in the NIC."""
    d = Dilation(1e-4)
    p = dcqcn.profile("nvidia")
    sp, clamped = dcqcn.scaled(p, d, 0)
    sp.validate()
    for name in ("alpha_period_ns", "min_time_between_cnps_ns"):
        assert getattr(p, name) > 0 and getattr(sp, name) >= 1 and name in clamped
    zero = dcqcn.scaled(DcqcnParams(min_time_between_cnps_ns=0), d, 0)[0]
    assert zero.min_time_between_cnps_ns == 0  # zero stays zero


def test_notification_point_rate_limit():
    np = NotificationPoint(50_000)
    sent = [t for t in range(0, 200_000, 1_000) if np.on_ce(t)]
    assert sent == [0, 50_000, 100_000, 150_000]
    assert np.suppressed == 200 - 4
    np0 = NotificationPoint(0)
    assert all(np0.on_ce(t) for t in range(10))


def _all_marked_run(dc: DcqcnParams) -> tuple[list[int], QueuePair, QueuePair]:
    """A 2 MB message A -> B at 10 Gb/s with every data frame CE-marked on the way: the
    times B sends its CNPs, and both QPs."""
    cnp_times: list[int] = []
    holder: list[VirtualClock] = []

    def fate_b(frame: bytes) -> list[int]:
        if len(frame) > 42 and frame[42] == wire.OP_CNP:
            cnp_times.append(holder[0].now_ns())
        return [0]

    clk, a, b, qa, qb, link = pair(rate_bps=10_000_000_000, nic_kw={"dcqcn": dc},
                                   fate_b=fate_b)
    holder.append(clk)
    # mark every data frame CE on the way A -> B by a tap on B's receiver
    orig = link.b.receiver
    assert orig is not None

    def deliver(frame: bytes) -> None:
        if len(frame) > 42 and frame[42] < 0x11:
            f = bytearray(frame)
            f[15] |= 3
            frame = bytes(f)
        orig(frame)

    link.b.set_receiver(deliver)
    wr = qa.post_send(bytes(2_000_000))
    clk.run_until_idle()
    assert wr.completed_ns is not None
    return cnp_times, qa, qb


def test_cnp_per_qp_at_most_once_per_interval_end_to_end():
    """All data CE-marked on the link: B sends at most one CNP per 2 us (the nvidia
    profile's pacing), A slows down. The first packets come at the line rate, ~0.9 us
    apart, so the pacing must hold some back (the bound here was dur // 50 us + 1, which
    even unpaced CNPs met)."""
    dc = dcqcn.profile("nvidia", 10e9)
    interval = dc.min_time_between_cnps_ns
    assert interval == 2_000
    cnp_times, qa, qb = _all_marked_run(dc)
    rs = qb.responder.stats
    sent = rs.cnps_sent
    assert sent == len(cnp_times) >= 1
    gaps = [t1 - t0 for t0, t1 in itertools.pairwise(cnp_times)]
    # never closer than the interval, and as close as it while packets come faster
    # (the first gaps are ~2.02 us; with 50 us pacing none is below 50 us)
    assert interval <= min(gaps) < 2 * interval
    assert qb.responder.np is not None and qb.responder.np.suppressed >= 1  # 16 of 1954
    assert sent + qb.responder.np.suppressed == rs.ecn_marked_rcvd
    assert qa.requester.stats.cnps_rcvd == sent
    assert qa.rp is not None and qa.rp.decreases >= 1
    assert rs.ecn_marked_rcvd == rs.data_pkts_rcvd


def test_without_cnp_pacing_every_marked_packet_gets_a_cnp():
    """The same run with the pacing off: CNPs closer than 2 us, none held back (what the
    test above tells apart from the paced run)."""
    dc = dataclasses.replace(dcqcn.profile("nvidia", 10e9), min_time_between_cnps_ns=0)
    cnp_times, _qa, qb = _all_marked_run(dc)
    assert min(t1 - t0 for t0, t1 in itertools.pairwise(cnp_times)) < 2_000
    assert qb.responder.stats.cnps_sent == qb.responder.stats.ecn_marked_rcvd
