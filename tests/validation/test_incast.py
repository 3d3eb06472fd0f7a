"""DCQCN on N:1 incast reproduces the published steady state, for every profile.

Published result (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
SIGCOMM 2015, and the HPCC simulator's DCQCN runs): with RED-style marking at the
bottleneck, N flows into one port converge to the fair share, keep the link busy, and
hold the queue around the marking band instead of filling the buffer.

Scenario: N senders and one receiver on one leaf, 25 Gb/s links with 1 us of delay (the
HPCC simulator's DCQCN parameters are given per 25 Gb/s), each profile with its source's
marking (Kmin, Kmax, Pmax), buffer and packet size, unmodified
(emu.roce.dcqcn.profile_spec): 1 KB packets for all three (the simulators' 1000-byte
payloads; a 1500-byte Ethernet MTU's RoCE MTU). Pmax is a probability per packet, so
the source's marking per byte holds only at its packet size: with 4 KB packets (what
this suite used before) the ramp below Kmax marks a quarter as much per byte and the
queue rides at Kmax, where marking ignores a flow's rate (docs/dcqcn-profiles.md,
"Known behaviour"; we saw the effect in measurements, the reason is the sources'). Each
flow carries 320 ms of its fair share, so "after the first 20% of the transfer" (64 ms)
is after the transient of every profile. The longest is `nvidia`'s: its byte counter
raises a flow's rate in proportion to that rate, so the CNP storms of the first ~15 ms
leave the flows' rates apart, and only its timer's increases, the same for every flow,
close the gaps at its decreases: with equal cuts, a time constant of R / v = 187 ms at
8 flows (v = R_AI per time_reset; the staggered test's derivation), an upper bound:
cuts that fall more often on the faster flows close gaps sooner, and in the measured
runs the flows are together after ~20 ms (the README's plot). With 80 ms per flow (16
ms of transient), what this suite used before, one `nvidia` flow stayed 10.3% under the
fair share (2.80-3.63 Gb/s), and `paper` with another marking seed one flow 13% over:
64 ms means still held the transient. `paper` climbs back from a cut in about 15 ms
(R_AI 40 Mb/s per 55 us); `hpcc`'s flows gain the same R_AI per timer whatever their
rates, so its rates stay together from the synchronised start.

How each criterion is measured (fixed here, from the issue):
- rates: bytes delivered to the receiver per flow in windows of 10 base RTTs;
- steady state: from 20% of the transfer (counted from the last sender's start) until
  the first flow completes;
- each flow's rate: its mean over the steady windows, within 10% of the fair share;
- utilisation: the steady windows' summed rates / link rate, >= 95% (2:1), 90% (8:1);
- Jain fairness of the flows' steady rates >= 0.95;
- queue: the receiver's leaf port sampled every 1 us of modelled time; p90 over the
  steady state <= 1.1 x Kmax.
"""

from __future__ import annotations

import math

import pytest

from emu.experiments.incast import IncastRecord, IncastSpec, jain, steady_windows
from emu.roce.dcqcn import PROFILES, profile_spec

from .conftest import incast

LINK_BPS = 25_000_000_000
DURATION_S = 0.320
UTILISATION = {2: 0.95, 8: 0.90}
MTU = 4096

pytestmark = pytest.mark.timeout(900)


def spec(senders: int, profile: str, **kw: object) -> IncastSpec:
    """The source's scenario: its marking, buffer and packet size (profile_spec)."""
    fair_bytes = int(LINK_BPS / senders * DURATION_S / 8)
    mtu = profile_spec(profile, LINK_BPS).mtu_bytes
    return IncastSpec(senders=senders, flow_bytes=fair_bytes, profile=profile,
                      link_rate_bps=LINK_BPS, mtu_bytes=mtu, **kw)  # type: ignore[arg-type]


def steady_rates(rec: IncastRecord) -> dict[int, float]:
    ws = steady_windows(rec)
    assert len(ws) >= 20, f"only {len(ws)} steady windows"
    return {i: rec.mean_rate_bps(i, ws) for i in rec.window_bytes}


def steady_queue_p90(rec: IncastRecord) -> int:
    ws = steady_windows(rec)
    t0 = min(rec.start_ns.values())
    lo, hi = ws.start * rec.window_ns, ws.stop * rec.window_ns
    qs = sorted(q for k, q in enumerate(rec.queue_pkts, start=1)
                if lo <= k * rec.spec.sample_ns - t0 < hi)
    return qs[int(0.9 * (len(qs) - 1))]


@pytest.mark.parametrize("profile,senders", [
    pytest.param(p, n, id=f"{p}-{n}:1") for p in PROFILES for n in (2, 8)])
def test_incast_converges_to_the_fair_share(profile: str, senders: int) -> None:
    """The criteria of the module docstring, for every profile at 2:1 and 8:1."""
    check_criteria(incast(spec(senders, profile)), senders)


def check_criteria(rec: IncastRecord, senders: int) -> None:
    assert rec.delivered_ok
    rates = steady_rates(rec)
    fair = rec.fair_share_bps
    report = {i: round(r / 1e9, 2) for i, r in rates.items()}
    for i, r in rates.items():
        assert abs(r - fair) <= 0.10 * fair, (i, report, fair / 1e9)
    assert sum(rates.values()) >= UTILISATION[senders] * LINK_BPS, report
    assert jain(list(rates.values())) >= 0.95, report
    assert steady_queue_p90(rec) <= 1.1 * rec.kmax_pkts, (steady_queue_p90(rec), rec.kmax_pkts)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("seed", [2, 3])
def test_the_8_to_1_criteria_with_other_marking_seeds(profile: str, seed: int) -> None:
    """The 8:1 run with other seeds for the switches' random draws (ECN marking), so that
    passing does not rest on one sequence of marks: with 80 ms per flow `paper` met
    the per-flow band at seed 1 and missed it at seed 3 (one flow 13% over)."""
    check_criteria(incast(spec(8, profile, seed=seed)), 8)


def test_dcqcn_cuts_drops_without_losing_utilisation() -> None:
    """DCQCN (SIGCOMM 2015, Section 6: ECN marking with DCQCN keeps queues from
    overflowing) against no congestion control on the same 8:1 incast and buffer: the
    buffer must overflow without congestion control (>= 1% of packets dropped), DCQCN
    must cut those drops by >= 90% and keep the utilisation within 5% of it."""
    short = dict(senders=8, flow_bytes=int(LINK_BPS / 8 * 0.010 / 8), link_rate_bps=LINK_BPS,
                 mtu_bytes=MTU)
    none = incast(IncastSpec(cc="none", **short))  # type: ignore[arg-type]
    dc = incast(IncastSpec(cc="dcqcn", **short))  # type: ignore[arg-type]
    assert none.delivered_ok and dc.delivered_ok
    sent_pkts = 8 * -(-short["flow_bytes"] // dc.spec.mtu_bytes)
    assert none.drops >= 0.01 * sent_pkts, (none.drops, sent_pkts)
    assert dc.drops <= 0.10 * none.drops, (dc.drops, none.drops)

    def utilisation(rec: IncastRecord) -> float:  # over the whole transfer
        return 8 * rec.spec.flow_bytes * 8 / (rec.completion_ns / 1e9) / LINK_BPS

    assert utilisation(dc) >= utilisation(none) - 0.05, (utilisation(dc), utilisation(none))
    assert none.cnps == 0 and dc.cnps > 0  # no notification point without CC (#13 item 6)


@pytest.mark.parametrize("profile", ["hpcc", "paper"])
def test_the_same_nominal_incast_at_three_dilations(profile: str) -> None:
    """Time dilation is a slow-motion replay (docs/topology.md): rates / D, delays and
    timers x D. The same nominal 8:1 incast at D = 1000, 4000 and 20000 gives nominal
    completion times within 5%, CNP counts within 10% and Jain fairness within 0.03,
    each the mean over three marking seeds. Per run the slot times of paced rates round
    to whole wire ns, a sub-ns modelled difference between dilations, and an 8:1 incast
    is chaotic: such a difference can swap two events and send one run onto another
    trajectory (paper, seed 1: 13.92 ms at D = 20000 and 16000, 13.22 ms at 1000, 4000,
    8000 and 19000; seeds 2 and 3 agree to the ns at all three)."""
    def run(d: float, seed: int) -> IncastRecord:
        return incast(IncastSpec(senders=8, flow_bytes=int(LINK_BPS / 8 * 0.010 / 8),
                                 profile=profile, link_rate_bps=LINK_BPS, mtu_bytes=MTU,
                                 dilation=d, seed=seed))

    fct, cnps, fairness = [], [], []
    for d in (1000.0, 4000.0, 20000.0):
        recs = [run(d, seed) for seed in (1, 2, 3)]
        assert all(r.delivered_ok for r in recs)
        fct.append(sum(r.completion_ns for r in recs) / 3)
        cnps.append(sum(r.cnps for r in recs) / 3)
        jains = []
        for r in recs:
            ws = range(0, min(len(r.window_bytes[i]) for i in r.window_bytes) - 1)
            jains.append(jain([r.mean_rate_bps(i, ws) for i in r.window_bytes]))
        fairness.append(sum(jains) / 3)
    assert max(fct) <= 1.05 * min(fct), fct
    assert max(cnps) <= 1.10 * min(cnps), cnps
    assert max(fairness) - min(fairness) <= 0.03, fairness


def convergence_bound_s(profile: str, active: int, link_bps: float) -> float:
    """How long `active` flows may take to reach the fair share after one joins, from the
    profile's parameters at `link_bps`: tau (1 + ln(10 N)), the derivation in the
    staggered test."""
    dc = profile_spec(profile, link_bps).dcqcn
    fair = link_bps / active
    ai, t = dc.ai_rate_bps, dc.time_reset_ns * 1e-9
    if dc.alpha_update == "per_cnp":
        f, g, k_alpha = dc.threshold_f, dc.g, dc.alpha_period_ns * 1e-9

        def alpha(k: float) -> float:  # alpha at a CNP, one CNP per k timer periods
            m = k * t / k_alpha
            return g * (1 - g) ** m / (1 - (1 - g) ** (m + 1))

        def excess(n: float) -> float:  # Rt gained minus lost per cycle, in units of R_AI
            return n - 1 + 2 ** -n - fair / ai * alpha(f + n) / 2 * 2 ** -(f + n)

        lo, hi = 0.0, 64.0  # excess(0) < 0 < excess(64)
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
        cycle = (f + lo) * t
        # the model's preconditions: CNP pacing and the byte counter do not bind
        assert cycle >= dc.min_time_between_cnps_ns * 1e-9
        assert fair * cycle / 8 < dc.byte_reset_bytes
        tau = cycle * fair / (ai * (lo - 1 + 2 ** -lo))
    else:
        # Only the timer's increases count: the byte counter's, R_AI per byte_reset sent,
        # are proportional to a flow's rate, so they widen a difference as much as they
        # raise the rates (see the staggered test's docstring).
        tau = fair / (ai / t)
    return tau * (1 + math.log(10 * active))


def stagger_s(profile: str) -> float:
    """Each segment lasts 1.2 x the larger bound (its last sixth is measured), in whole
    10 ms: at 10 Gb/s nvidia 1.44 s, paper 870 ms, hpcc 3.6 s."""
    bound = max(convergence_bound_s(profile, n, STAGGER_LINK_BPS) for n in (2, 3))
    return math.ceil(1.2 * bound * 100) / 100


# The staggered scenario runs at 10 Gb/s: hpcc's bound is seconds of modelled time at
# any rate (its R_AI scales with the link rate, so tau = R / v does not), and at 10 Gb/s
# those seconds are 2.5 x fewer packets than at 25 Gb/s.
STAGGER_LINK_BPS = 10_000_000_000


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("profile", PROFILES)
def test_staggered_flows_converge_to_the_new_fair_share(profile: str) -> None:
    """A second and a third flow join a running one (DCQCN paper, Section 6.1's
    convergence experiments): after each join the flows reach the new fair share within
    a bound derived from the profile's parameters; each segment's mean rates, from the
    join plus the bound until the next join, are within 10% of that segment's fair share.

    The bound. DCQCN equalises rates only at decreases: a decrease scales a flow's Rc by
    (1 - alpha/2) and sets Rt = Rc (paper: every CNP; nvidia, hpcc: the first after an
    increase), while an increase event adds the same R_AI (or R_HAI) to every flow's Rt
    and moves Rc halfway to Rt, which keeps the differences between flows. Over a steady
    congestion cycle a flow's Rt loses at the clamp what its increases added; the part
    of that loss that is a share of the flow's rate (what is left of the cut) shrinks
    the difference between two flows by that share per cycle, so the difference decays
    as exp(-t/tau) with tau = cycle / share (the AIMD argument; the paper's Section 5
    fluid model has the same fixed point). After a join the difference is at most the
    line rate, N fair shares, and 10% of a fair share is reached after tau ln(10 N); the
    aggregate, cut by the join, climbs back within another tau. bound = tau (1 + ln(10 N)).

    nvidia, hpcc (per-period decreases, bursts of cuts a few timer periods apart; fast
    recovery is F = 1 timer event or 2 byte-counter events, short against that): the
    share is the Rt gained per cycle over R from increases that are the same for every
    flow, so tau = R / v with v = R_AI per time_reset. The byte counter's increases
    (R_AI per byte_reset sent) come at a rate proportional to a flow's rate: like the
    cuts they scale a difference with the rates, and cannot close it (fluid model: dR_i/dt
    = a + b R_i - k R_i; the sum is steady when k - b = a / R, so a difference decays as
    exp(-a t / R) whatever b). This bound used to count them in v (nvidia: tau 45 / 42 ms,
    bound 178 / 183 ms, which its 3-flow segment then missed, one flow 10.6% over).
    Hyper increase (R_HAI after F events without a decrease) only shortens tau, and so
    do marks that fall more often on a faster flow (cuts more often for it): both left
    out, the bound is the slowest case. At 10 Gb/s:
      nvidia  v = 5 Mb/s / 300 us = 0.0167 Gb/s per ms: tau 300, 200 ms -> bound 1.2 s,
              0.88 s
      hpcc    v = 2 Mb/s / 300 us (R_AI 5 Mb/s x 10/25; no byte counter) = 0.0067 Gb/s
              per ms: tau 750, 500 ms -> bound 3.0, 2.2 s (the same at any rate)
    paper (a decrease at every CNP): F = 5 fast-recovery events of 55 us take most of a
    cycle, so the cycle itself is derived. With n additive events after them (cycle
    (F + n) x 55 us, alpha at its stationary value for one CNP per cycle, g = 1/256 per
    55 us), the cut R alpha/2 is halved F + n times and each additive event halves the
    lag too: stationarity (Rt gains n R_AI, loses R_AI (1 - 2^-n) + R alpha/2 2^-(F+n))
    gives, at 10 Gb/s, n = 0.50 (2 flows), 0.39 (3); cycles of 303, 297 us; alpha
    0.152, 0.155; the share R_AI (n - 1 + 2^-n) / R = 0.17%, 0.18% per cycle: tau 181,
    161 ms -> bound 0.72 s, 0.71 s (at 25 Gb/s: tau 253, 215 ms; measured there in a
    140 ms stagger: 2.7-2.8 CNPs per ms per flow, alpha 0.14). CNP pacing (50 us) and
    the 10 MiB byte counter do not bind in such cycles.

    Each segment lasts 1.2 x the larger bound (stagger_s), and its mean is taken from
    the join plus the bound to the next join. Flow 1 runs alone for 1 ms, then flow 2
    joins, and flow 3 one segment later; each carries 1.2 x its fair share of its
    segments (as 1 GiB messages; payloads are generated as sent, so size costs no
    memory), so the three end together after the last segment. Links of 10 Gb/s
    (STAGGER_LINK_BPS) and each profile's packet size, marking and buffer, as in the
    incast tests: up to 7 s of modelled traffic (hpcc), slow.
    """
    stagger = stagger_s(profile)
    s_ns = stagger * 1e9
    # flow 1 alone only long enough to run at line rate; then flow 2 joins, and flow 3 one
    # stagger later; each carries 1.2 x its fair share of its segments: they end together
    lead_s = 0.001
    link = STAGGER_LINK_BPS
    c = link / 8
    sizes = (int(1.2 * c * (lead_s + stagger * (1 / 2 + 1 / 3))),
             int(1.2 * c * stagger * (1 / 2 + 1 / 3)), int(1.2 * c * stagger / 3))
    starts = (0, int(lead_s * 1e9), int(lead_s * 1e9 + s_ns))
    rec = incast(IncastSpec(senders=3, flow_bytes=max(sizes), flow_bytes_each=sizes,
                            start_ns_each=starts, profile=profile,
                            mtu_bytes=profile_spec(profile, link).mtu_bytes,
                            link_rate_bps=link, max_modelled_ns=int(4 * s_ns)))
    assert rec.delivered_ok
    t0 = min(rec.start_ns.values())
    first_end = min(rec.end_ns.values()) - t0
    for active in (2, 3):
        bound_ns = convergence_bound_s(profile, active, link) * 1e9
        assert bound_ns < s_ns
        join = starts[active - 1]
        end = min(join + s_ns, first_end)
        ws = range(int((join + bound_ns) // rec.window_ns) + 1, int(end // rec.window_ns))
        assert len(ws) >= 20
        fair = link / active
        means = [rec.mean_rate_bps(i, ws) for i in range(active)]
        print(f"{profile}, {active} flows: segment means "
              f"{[round(x / 1e9, 2) for x in means]} Gb/s (fair {fair / 1e9:.2f})")
        for m in means:
            assert abs(m - fair) <= 0.10 * fair, (active, [round(x / 1e9, 2) for x in means])
