"""DCQCN per profile: alpha under continuous congestion, fast-recovery stage counts, and a
replay of the HPCC simulator's Mellanox model (docs/dcqcn-profiles.md)."""

from __future__ import annotations

import dataclasses

import pytest

from emu.core.clock import VirtualClock
from emu.core.units import Dilation
from emu.roce import dcqcn
from emu.roce.dcqcn import DcqcnParams, ReactionPoint

LINE = 100e9


def cnp_storm(p: DcqcnParams, every_ns: int = 500, until_ns: int = 200_000) -> ReactionPoint:
    """A CNP every `every_ns` from t=0 to `until_ns` inclusive."""
    clk = VirtualClock()
    rp = ReactionPoint(p, LINE, clk)
    for t in range(0, until_ns + 1, every_ns):
        clk.advance_to(t)
        rp.on_cnp()
    return rp


@pytest.mark.parametrize("name", ["nvidia", "hpcc"])
def test_alpha_stays_high_under_continuous_cnps(name):
    """Defect 2: CNPs whose decrease is suppressed still mark their alpha period, so with a
    CNP in every period alpha never decays (it fell to about 0.45 in 200 us before)."""
    rp = cnp_storm(dcqcn.profile(name, LINE))
    assert rp.alpha > 0.99
    assert rp.cnps == 401
    # one decrease per rate_reduce_period that saw a CNP: 200 us / 4 us periods
    assert 49 <= rp.decreases <= 50
    assert rp.cnps_ignored == rp.cnps - rp.decreases - 1  # the last one is still pending
    assert rp.rc == rp.p.min_rate_bps  # alpha near 1 halves the rate 50 times


def test_alpha_paper_rule_per_cnp():
    """The paper's rule: each CNP decreases with the current alpha, then alpha = (1-g)alpha+g;
    alpha decays only after a full alpha period (55 us) without a CNP."""
    p = dcqcn.profile("paper", LINE)
    rp = cnp_storm(p)
    assert rp.alpha == pytest.approx(1.0)  # 1 is the fixed point of (1-g)a + g
    assert rp.decreases == rp.cnps == 401  # no reduce period: every CNP decreases
    # with a reduce period the decreases are suppressed but alpha still follows each CNP
    q = dataclasses.replace(p, rate_reduce_period_ns=4_000, alpha_init=0.5)
    rp = cnp_storm(q, every_ns=500, until_ns=2_000)  # CNPs at 0, 0.5, 1, 1.5, 2 us
    assert rp.decreases == 1 and rp.cnps_ignored == 4
    a = 0.5
    for _ in range(5):
        a = (1 - 1 / 256) * a + 1 / 256
    assert rp.alpha == pytest.approx(a, rel=1e-12)


@pytest.mark.parametrize("stages", ["timer_and_bytes", "timer_only"])
@pytest.mark.parametrize("f", [1, 5])
def test_fast_recovery_runs_f_steps(stages, f):
    """Defect 4: F fast-recovery events after a decrease (it ran F-1), then additive."""
    clk = VirtualClock()
    p = DcqcnParams(g=1 / 256, alpha_init=1.0, time_reset_ns=300_000, byte_reset_bytes=0,
                    threshold_f=f, ai_rate_bps=5e6, hai_rate_bps=50e6,
                    alpha_update="per_cnp", rate_reduce_period_ns=0, clamp_target_rate=True,
                    increase_stages=stages)
    rp = ReactionPoint(p, LINE, clk)
    rp.on_cnp()
    rp.on_cnp()  # a second decrease clamps Rt below the line rate, so increases show
    rt = rp.rt
    assert rt == LINE / 2 and rp.rc == LINE / 4
    fast = 0
    for k in range(1, f + 3):
        before = rp.rc
        clk.advance_to(300_000 * k)
        if rp.rt == rt:
            assert rp.rc == (rt + before) / 2
            fast += 1
        else:
            break
    assert fast == f
    assert rp.rt == rt + 5e6  # the first step after them is additive


def test_hpcc_replay_against_hand_derivation():
    """The HPCC simulator's Mellanox model (rdma-hw.cc), 100 Gbps, hpcc profile:
    g = 1/256, alpha period 1 us, decrease check every 4 us from the first CNP, timer
    300 us, F = 1, R_AI = 5 Mb/s x 4 = 20 Mb/s, R_HAI = 50 Mb/s x 4 = 200 Mb/s,
    min rate 1 Gb/s, target rate clamped only after a timer increase.
    Every expected value below is worked out by hand from those rules."""
    clk = VirtualClock()
    p = dcqcn.profile("hpcc", LINE)
    assert (p.g, p.alpha_period_ns, p.rate_reduce_period_ns, p.time_reset_ns) == (
        1 / 256, 1_000, 4_000, 300_000)
    assert (p.threshold_f, p.ai_rate_bps, p.hai_rate_bps, p.min_rate_bps) == (1, 20e6, 200e6, 1e9)
    rp = ReactionPoint(p, LINE, clk)
    q, g = 255 / 256, 1 / 256  # alpha decay factor (1-g) and gain

    def check(rc: float, rt: float, alpha: float) -> None:
        assert rp.rc == pytest.approx(rc, rel=1e-12)
        assert rp.rt == pytest.approx(rt, rel=1e-12)
        assert rp.alpha == pytest.approx(alpha, rel=1e-12)

    # t = 0: first CNP. alpha = 1; this CNP does not mark its alpha period; rate unchanged
    # (rate on first CNP = 1.0 x rate); a decrease check is due at 4 us.
    rp.on_cnp()
    check(100e9, 100e9, 1.0)
    # t = 2.5 us: second CNP. Alpha periods ending at 1 and 2 us saw no CNP:
    # alpha = q^2 = 0.99220...; this CNP marks the period ending at 3 us and is merged
    # into the pending decrease.
    clk.advance_to(2_500)
    rp.on_cnp()
    assert rp.cnps_ignored == 1
    check(100e9, 100e9, q**2)
    # t = 4 us: alpha period 3 us had a CNP, 4 us did not:
    # a1 = (q * q^2 + g) * q = 0.98835730...
    # then the decrease: no timer increase yet, so Rt stays 100e9;
    # rc1 = 100e9 * (1 - a1/2) = 50.5821347e9. Timer next at 304 us.
    a1 = (q**3 + g) * q
    rc1 = 100e9 * (1 - a1 / 2)
    clk.advance_to(4_000)
    assert rp.decreases == 1
    check(rc1, 100e9, a1)
    assert rc1 == pytest.approx(50.5821347e9)
    # t = 304 us: timer, stage 0 < F: fast recovery, rc2 = (100e9 + rc1)/2 = 75.2910674e9
    rc2 = (100e9 + rc1) / 2
    clk.advance_to(304_000)
    check(rc2, 100e9, a1 * q**300)
    # t = 305.5 us: third CNP. 301 periods (5..305 us) without CNP: alpha = a1 q^301;
    # the CNP marks the period ending at 306 us; the decrease check is the next 4 us
    # boundary from t=0 after 305.5 us: 308 us.
    clk.advance_to(305_500)
    rp.on_cnp()
    check(rc2, 100e9, a1 * q**301)
    # t = 308 us: period 306 us had the CNP, 307 and 308 us did not:
    # a2 = (a1 q^301 * q + g) * q^2 = 0.30460761...
    # the timer fired since the last decrease, so Rt = Rc = rc2 (clamp);
    # rc3 = rc2 (1 - a2/2) = 63.8239515e9. Timer next at 608 us, stage 0.
    a2 = (a1 * q**302 + g) * q**2
    rt = rc2
    rc3 = rc2 * (1 - a2 / 2)
    clk.advance_to(308_000)
    assert rp.decreases == 2
    check(rc3, rt, a2)
    assert rc3 == pytest.approx(63.8239515e9)
    # t = 608 us: stage 0 < F: fast recovery, rc4 = (rt + rc3)/2 = 69.5575094e9
    rc4 = (rt + rc3) / 2
    clk.advance_to(608_000)
    check(rc4, rt, a2 * q**300)
    # t = 908 us: stage 1 = F: additive, Rt = rc2 + 20e6 = 75.3110674e9;
    # rc5 = (Rt + rc4)/2 = 72.4342884e9
    rt += 20e6
    rc5 = (rt + rc4) / 2
    clk.advance_to(908_000)
    check(rc5, rt, a2 * q**600)
    # t = 1208 us: stage 2 > F: hyper, Rt += 200e6 = 75.5110674e9; rc6 = 73.9726779e9
    rt += 200e6
    rc6 = (rt + rc5) / 2
    clk.advance_to(1_208_000)
    check(rc6, rt, a2 * q**900)
    # t = 1508 us: stage 3: hyper again with the same fixed step, Rt = 75.7110674e9;
    # rc7 = 74.8418726e9
    rt += 200e6
    rc7 = (rt + rc6) / 2
    clk.advance_to(1_508_000)
    check(rc7, rt, a2 * q**1200)
    assert rc7 == pytest.approx(74.8418726e9)
    assert (rp.cnps, rp.cnps_ignored, rp.decreases, rp.increases) == (3, 1, 2, 5)


def test_hpcc_hyper_increase_on_the_timer_alone():
    """Defect 3: with no byte counter the hpcc profile still reaches hyper increase (R_HAI
    per timer event past F) and so returns to line rate."""
    clk = VirtualClock()
    p = dcqcn.profile("hpcc", LINE)
    assert p.byte_reset_bytes == 0
    rp = ReactionPoint(p, LINE, clk)
    # Drive the rates down: bursts of CNPs (one per us: one decrease per 4 us) down to the
    # minimum rate, each followed by one timer event (fast recovery to halfway to Rt) so
    # that the next burst's first decrease clamps Rt to that halfway rate.
    for _ in range(6):
        for _ in range(200):
            rp.on_cnp()
            clk.advance(1_000)
        clk.advance(4_000)
        assert rp.rc == p.min_rate_bps
        clk.advance_to(rp.last_decrease_ns + p.time_reset_ns)
    rp.on_cnp()
    clk.advance(4_000)
    assert rp.rt < 0.05 * LINE and rp.rc < rp.rt
    steps = []
    while rp.active:
        rt = rp.rt
        clk.advance(p.time_reset_ns)
        steps.append(rp.rt - rt)
    assert steps[0] == 0  # fast recovery (F = 1)
    assert steps[1] == pytest.approx(p.ai_rate_bps)
    assert steps[2] == pytest.approx(p.hai_rate_bps) and steps[3] == pytest.approx(p.hai_rate_bps)
    hyper = [s for s in steps[2:] if s]  # Rt stops at the line rate: the last step is short
    assert all(s == pytest.approx(p.hai_rate_bps) for s in hyper[:-1]) and hyper[-1] <= p.hai_rate_bps
    # back at line rate after about (100 - 3) Gb/s / 200 Mb/s hyper steps; additive steps
    # alone (20 Mb/s) would need ten times as many
    assert rp.rc == LINE and len(steps) < 600


def test_profile_specs():
    for name in dcqcn.PROFILES:
        for rate in (25e9, 100e9, 400e9):
            s = dcqcn.profile_spec(name, rate)
            assert s.name == name and s.dcqcn == dcqcn.profile(name, rate)
            assert 0 < s.kmin_bytes < s.kmax_bytes <= s.buffer_bytes and 0 < s.pmax <= 1
            assert s.ack_class in ("qp", "cnp") and s.sources
            assert s.min_time_between_cnps_ns == s.dcqcn.min_time_between_cnps_ns
    h = dcqcn.profile_spec("hpcc", 100e9)
    assert (h.kmin_bytes, h.kmax_bytes, h.pmax) == (400_000, 1_600_000, 0.2)
    assert h.buffer_bytes == 32 * 1024 * 1024
    assert (h.dcqcn.alpha_update, h.dcqcn.increase_stages, h.dcqcn.clamp_target_rate) == (
        "per_period", "timer_only", False)
    n = dcqcn.profile_spec("nvidia", 100e9)
    assert (n.cnp_dscp, n.cnp_pcp, n.ack_class) == (48, 6, "qp")
    assert dcqcn.profile("paper").alpha_update == "per_cnp"
    with pytest.raises(ValueError, match="line rate"):
        dcqcn.profile_spec("hpcc", 0)
    with pytest.raises(ValueError, match="unknown DCQCN profile"):
        dcqcn.profile_spec("nope", 100e9)


@pytest.mark.parametrize("bad, msg", [
    ({"alpha_update": "sometimes"}, "alpha_update"),
    ({"increase_stages": "bytes"}, "increase_stages"),
    ({"rate_reduce_period_ns": 0}, "rate_reduce_period_ns"),
    ({"increase_stages": "timer_only", "byte_reset_bytes": 1000}, "byte_reset_bytes"),
])
def test_model_parameters_validated(bad, msg):
    with pytest.raises(ValueError, match=msg):
        DcqcnParams(**bad).validate()


def test_scaled_keeps_the_model_fields():
    sp, _ = dcqcn.scaled(dcqcn.profile("hpcc", 100e9), Dilation(1000), 0)
    assert (sp.alpha_update, sp.increase_stages, sp.clamp_target_rate) == (
        "per_period", "timer_only", False)
    assert sp.rate_reduce_period_ns == 4_000_000 and sp.hai_rate_bps == pytest.approx(200e3)
