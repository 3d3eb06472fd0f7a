"""The reaction point rules NVIDIA documents for its DCQCN parameters (DOCA 'DCQCN CC
Parameters'; docs/dcqcn-profiles.md): target-rate clamping (clamp_tgt_rate,
clamp_tgt_rate_after_time_inc), the alpha-to-rate shift (rpg_gd) and the bound on one
decrease (rpg_min_dec_fac)."""

from __future__ import annotations

import dataclasses

import pytest

from emu.core.clock import VirtualClock
from emu.roce import dcqcn
from emu.roce.dcqcn import DcqcnParams, ReactionPoint

LINE = 100e9


def decreased_once(p: DcqcnParams) -> tuple[VirtualClock, ReactionPoint]:
    """A QP after the decrease of its first CNP (at t=0; decrease due at t=4 us)."""
    clk = VirtualClock()
    rp = ReactionPoint(p, LINE, clk)
    rp.on_cnp()
    clk.advance_to(4_000)
    assert rp.decreases == 1 and rp.rt == LINE and rp.rc < LINE
    return clk, rp


def test_byte_counter_increase_clamps_the_next_decrease():
    """clamp_tgt_rate 0 with clamp_tgt_rate_after_time_inc 1 (NVIDIA defaults): a CNP after
    a byte-counter increase sets Rt = Rc. The model clamped only after a timer increase,
    so Rt stayed at the line rate and the 32 KB counter kept pulling Rc back up to it."""
    clk, rp = decreased_once(dcqcn.profile("nvidia", LINE))
    rp.on_sent(32767)  # one byte-counter event: fast recovery, Rt unchanged
    assert rp.j == 1 and rp.i == 0 and rp.rt == LINE
    rc = rp.rc
    clk.advance_to(5_000)
    rp.on_cnp()
    clk.advance_to(8_000)
    assert rp.decreases == 2
    assert rp.rt == rc  # clamped to the rate before this decrease
    assert rp.rc < rc


def test_no_clamp_without_an_increase_since_the_previous_decrease():
    """Back-to-back decreases with no increase between them keep Rt."""
    clk, rp = decreased_once(dcqcn.profile("nvidia", LINE))
    clk.advance_to(5_000)
    rp.on_cnp()
    clk.advance_to(8_000)
    assert rp.decreases == 2 and rp.rt == LINE


@pytest.mark.parametrize("after_timer", [True, False])
def test_timer_increase_clamps_only_with_after_time_inc(after_timer):
    """clamp_tgt_rate_after_time_inc decides whether a timer increase clamps the next
    decrease; a byte-counter increase always does (previous test)."""
    p = dataclasses.replace(dcqcn.profile("nvidia", LINE), byte_reset_bytes=0,
                            clamp_after_timer_increase=after_timer)
    clk, rp = decreased_once(p)
    clk.advance_to(4_000 + 300_000)  # one timer event
    assert rp.i == 1
    rc = rp.rc
    rp.on_cnp()
    clk.advance_to(308_000)
    assert rp.decreases == 2
    assert rp.rt == (rc if after_timer else LINE)


def test_a_byte_counter_increase_clamps_even_when_a_timer_increase_followed():
    """clamp_tgt_rate_after_time_inc 0: a byte-counter increase, then a timer one, then
    a CNP. The rule (ns3-rdma rpr_cnm_received: clamp if the byte stage is non-zero)
    clamps after any byte-counter increase since the previous decrease; the model looked
    only at the last increase, a timer one, and left Rt at the line rate."""
    p = dataclasses.replace(dcqcn.profile("nvidia", LINE), clamp_after_timer_increase=False)
    clk, rp = decreased_once(p)
    rp.on_sent(32767)  # byte-counter event: j = 1, fast recovery
    clk.advance_to(4_000 + 300_000)  # timer event: i = 1
    assert (rp.i, rp.j) == (1, 1)
    rc = rp.rc
    rp.on_cnp()
    clk.advance_to(308_000)
    assert rp.decreases == 2
    assert rp.rt == rc  # 87.75 Gb/s; it stayed at 100
    cut = rp.rc
    clk.advance_to(308_000 + 300_000)  # one fast-recovery timer event towards Rt
    assert rp.rc == pytest.approx((rc + cut) / 2, rel=1e-12)  # 82.8 Gb/s; it was 88.9


def test_clamp_target_rate_clamps_every_decrease():
    p = dataclasses.replace(dcqcn.profile("nvidia", LINE), clamp_target_rate=True)
    clk, rp = decreased_once(p)
    rc = rp.rc
    clk.advance_to(5_000)
    rp.on_cnp()
    clk.advance_to(8_000)
    assert rp.rt == rc


@pytest.mark.parametrize("shift, bound", [
    (11, 0.0),   # rpg_gd 11: Rc (1 - alpha/2)
    (10, 0.0),   # rpg_gd 10: Rc (1 - alpha)
    (10, 0.5),   # rpg_min_dec_fac 50: one decrease keeps at least half
    (11, 0.75),  # a bound above 1 - alpha/2 wins
])
def test_decrease_factor_shift_and_bound(shift, bound):
    p = dataclasses.replace(dcqcn.profile("nvidia", LINE), alpha_to_rate_shift=shift,
                            min_dec_factor=bound)
    _, rp = decreased_once(p)
    # the first decrease uses initial_alpha_value 1023/1024 after the four alpha period
    # ends up to it (none saw a CNP: the first CNP only initialises alpha)
    a = (1023 / 1024) * (1 - p.g) ** 4
    assert rp.rc == pytest.approx(LINE * max(1 - a * 2.0 ** (10 - shift), bound), rel=1e-12)


def test_min_dec_factor_100_percent_prevents_decreases():
    p = dataclasses.replace(dcqcn.profile("nvidia", LINE), min_dec_factor=1.0)
    clk = VirtualClock()
    rp = ReactionPoint(p, LINE, clk)
    rp.on_cnp()
    clk.advance_to(4_000)
    assert rp.decreases == 1 and rp.rc == LINE


def test_nvidia_profile_is_the_documented_defaults():
    p = dcqcn.profile("nvidia", 25e9)
    assert (p.g, p.alpha_init, p.alpha_period_ns, p.rate_reduce_period_ns) == (
        5 / 1024, 1023 / 1024, 1_000, 4_000)
    assert (p.min_rate_bps, p.rate_on_first_cnp_bps) == (1e6, 0.0)
    assert (p.alpha_to_rate_shift, p.min_dec_factor) == (11, 0.5)
    assert (p.clamp_target_rate, p.clamp_after_timer_increase) == (False, True)
    assert (p.time_reset_ns, p.byte_reset_bytes, p.threshold_f) == (300_000, 32767, 1)
    assert (p.ai_rate_bps, p.hai_rate_bps) == (5e6, 50e6)
    for name in ("hpcc", "paper"):  # their sources have no bound on a decrease
        assert dcqcn.profile(name).min_dec_factor == 0.0


def test_dcqcn_params_defaults_are_the_nvidia_profile():
    """DcqcnParams documents its defaults as the NVIDIA profile, but its CNP pacing was
    50 us (the paper's) against the profile's 2 us: a bare NicParams paced CNPs 25x
    slower than the profile it claims to be."""
    assert DcqcnParams().min_time_between_cnps_ns == 2_000
    for rate in (25e9, 100e9):
        assert DcqcnParams() == dcqcn.profile("nvidia", rate)


@pytest.mark.parametrize("bad, msg", [
    ({"alpha_to_rate_shift": 12}, "alpha_to_rate_shift"),
    ({"alpha_to_rate_shift": 9}, "alpha_to_rate_shift"),
    ({"min_dec_factor": 1.5}, "min_dec_factor"),
])
def test_new_parameters_validated(bad, msg):
    with pytest.raises(ValueError, match=msg):
        DcqcnParams(**bad).validate()
