"""DCQCN on N:1 incast reproduces the published steady state, for every profile.

Published result (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
SIGCOMM 2015, and the HPCC simulator's DCQCN runs): with RED-style marking at the
bottleneck, N flows into one port converge to the fair share, keep the link busy, and
hold the queue around the marking band instead of filling the buffer.

Scenario: N senders and one receiver on one leaf, 25 Gb/s links with 1 us of delay (the
HPCC simulator's DCQCN parameters are given per 25 Gb/s), 4096-byte RoCE MTU (common in
RoCE deployments; a quarter of the packets to simulate), each profile with its source's
marking (Kmin, Kmax, Pmax) and buffer, unmodified (emu.roce.dcqcn.profile_spec). Each
flow carries 80 ms of its fair share, long against every profile's timers (the slowest,
`paper`, needs about 15 ms to climb back from its first cut with R_AI = 40 Mb/s per
55 us), so "after the first 20% of the transfer" is after the transient of every profile.

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

import pytest

from emu.experiments.incast import IncastRecord, IncastSpec, jain, steady_windows
from emu.roce.dcqcn import PROFILES

from .conftest import incast

LINK_BPS = 25_000_000_000
DURATION_S = 0.080
UTILISATION = {2: 0.95, 8: 0.90}
MTU = 4096

pytestmark = pytest.mark.timeout(900)


def spec(senders: int, profile: str, **kw: object) -> IncastSpec:
    fair_bytes = int(LINK_BPS / senders * DURATION_S / 8)
    return IncastSpec(senders=senders, flow_bytes=fair_bytes, profile=profile,
                      link_rate_bps=LINK_BPS, mtu_bytes=MTU, **kw)  # type: ignore[arg-type]


def steady_rates(rec: IncastRecord) -> dict[int, float]:
    ws = steady_windows(rec)
    assert len(ws) >= 20, f"only {len(ws)} steady windows"
    return {i: sum(rec.rates_bps(i)[w] for w in ws) / len(ws) for i in rec.window_bytes}


def steady_queue_p90(rec: IncastRecord) -> int:
    ws = steady_windows(rec)
    t0 = min(rec.start_ns.values())
    lo, hi = ws.start * rec.window_ns, ws.stop * rec.window_ns
    qs = sorted(q for k, q in enumerate(rec.queue_pkts, start=1)
                if lo <= k * rec.spec.sample_ns - t0 < hi)
    return qs[int(0.9 * (len(qs) - 1))]


# 8:1 under `paper` and `nvidia` misses the per-flow criterion through the profiles'
# own parameters, not an emulator artefact that we found (the evidence, what was ruled
# out and which nvidia values lack a source: docs/dcqcn-profiles.md, "Known behaviour").
# Strict xfails with the measured figures: they fail loudly the day the model or the
# criterion changes.
_UNFAIR = {
    ("paper", 8): "steady means 2.54-3.36 Gb/s against 3.125 (Jain 0.990, 100% utilised): "
                  "every flow gets ~3 CNPs/ms whatever its rate, so only R_AI evens rates out",
    ("nvidia", 8): "steady means 1.76-5.94 Gb/s against 3.125 (Jain 0.85, 97% utilised), "
                   "queue p90 160 pkts (Kmax 96): CNP storms, then back towards an unclamped "
                   "target rate; other marking seeds fill the buffer",
}


@pytest.mark.parametrize("profile,senders", [
    pytest.param(p, n, id=f"{p}-{n}:1",
                 marks=[pytest.mark.xfail(strict=True, reason=_UNFAIR[(p, n)])]
                 if (p, n) in _UNFAIR else [])
    for p in PROFILES for n in (2, 8)])
def test_incast_converges_to_the_fair_share(profile: str, senders: int) -> None:
    """The criteria of the module docstring. Expected to fail at 8:1 (see _UNFAIR):

    - `paper`: the queue sits at the top of the marking band (99% of samples >= 25
      packets, Kmax 30), so most marks are the q >= Kmax ones that every flow in the
      queue gets, and with the 50 us CNP pacing each flow gets ~3 CNPs/ms whether it
      runs at 2.5 or 3.4 Gb/s. With Rt clamped at each CNP and 5 fast-recovery steps,
      a cut's lasting share is small and only R_AI (40 Mb/s per 55 us) moves flows
      towards each other: they hold their levels for tens of ms. The same with other
      switch RNG seeds, +-2% jitter on the timers and a 320 ms transfer (just out);
      with the 1 KB packets of the paper's simulator the run passes (measured after
      the fact, so the scenario is not changed: docs/dcqcn-profiles.md).
    - `nvidia`: CNPs every 2 us per QP and a decrease every 4 us take flows to a few
      Mb/s while the queue of marked packets drains; 300 us later the timer and the
      32 KB byte counter bring them back towards a target rate never clamped below the
      rate before the storm. Some runs hold the queue near the band with two flows at
      4-7 Gb/s, others (other marking seeds) fill the buffer and drop.
    """
    rec = incast(spec(senders, profile))
    assert rec.delivered_ok
    rates = steady_rates(rec)
    fair = rec.fair_share_bps
    report = {i: round(r / 1e9, 2) for i, r in rates.items()}
    for i, r in rates.items():
        assert abs(r - fair) <= 0.10 * fair, (i, report, fair / 1e9)
    assert sum(rates.values()) >= UTILISATION[senders] * LINK_BPS, report
    assert jain(list(rates.values())) >= 0.95, report
    assert steady_queue_p90(rec) <= 1.1 * rec.kmax_pkts, (steady_queue_p90(rec), rec.kmax_pkts)


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
    completion times within 5%, CNP counts within 10% and Jain fairness within 0.03."""
    recs = [incast(IncastSpec(senders=8, flow_bytes=int(LINK_BPS / 8 * 0.010 / 8),
                              profile=profile, link_rate_bps=LINK_BPS, mtu_bytes=MTU,
                              dilation=d))
            for d in (1000.0, 4000.0, 20000.0)]
    assert all(r.delivered_ok for r in recs)
    fct = [r.completion_ns for r in recs]
    cnps = [r.cnps for r in recs]
    fairness = []
    for r in recs:
        ws = range(0, min(len(r.window_bytes[i]) for i in r.window_bytes) - 1)
        means = [sum(r.rates_bps(i)[w] for w in ws) / len(ws) for i in r.window_bytes]
        fairness.append(jain(means))
    assert max(fct) <= 1.05 * min(fct), fct
    assert max(cnps) <= 1.10 * min(cnps), cnps
    assert max(fairness) - min(fairness) <= 0.03, fairness


@pytest.mark.parametrize("profile", [
    pytest.param("hpcc", marks=pytest.mark.xfail(strict=True, reason=(
        "3 flows 3 ms after the join: 8.08, 7.52, 9.32 Gb/s against 8.33 (12% off)"))),
    pytest.param("nvidia", marks=pytest.mark.xfail(strict=True, reason=(
        "3 flows 3 ms after the join: 11.27, 11.22, 1.28 Gb/s against 8.33"))),
    pytest.param("paper", marks=pytest.mark.xfail(strict=True, reason=(
        "3 flows 2.75 ms after the join: 6.13, 6.30, 9.72 Gb/s against 8.33"))),
])
def test_staggered_flows_converge_to_the_new_fair_share(profile: str) -> None:
    """A second and a third flow join a running one (DCQCN paper, Section 6.1's
    convergence experiments): after each join the flows reach the new fair share within
    a bound derived from the profile's timers. DCQCN recovers from a cut in F rounds of
    its increase timer (fast recovery halves the gap to the target rate each round), so
    the bound is 10 x F x time_reset; each segment's mean rates, from the join plus the
    bound until the next join, are within 10% of that segment's fair share.

    Not reproduced yet (strict xfail, the measured segments in the reason): DCQCN's
    rates equalise only through its multiplicative cuts, far more slowly than one
    recovery, and a longer stagger needs flows of hundreds of MB, which the host agents
    still hold in memory whole."""
    from emu.roce.dcqcn import profile_spec

    stagger_s = 0.010
    dc = profile_spec(profile, LINK_BPS).dcqcn
    bound_ns = 10 * dc.threshold_f * dc.time_reset_ns
    assert bound_ns < stagger_s * 1e9 / 2
    # flow 1 alone for one stagger, then two, then three flows for at least one stagger
    size = int(LINK_BPS * stagger_s / 8 * (1 + 1 / 2 + 1 / 3) * 1.2)
    rec = incast(IncastSpec(senders=3, flow_bytes=size, profile=profile, mtu_bytes=MTU,
                            link_rate_bps=LINK_BPS, stagger_ns=int(stagger_s * 1e9)))
    assert rec.delivered_ok
    t0 = min(rec.start_ns.values())
    first_end = min(rec.end_ns.values()) - t0
    for active in (2, 3):
        join = (active - 1) * stagger_s * 1e9
        end = min(join + stagger_s * 1e9, first_end)
        ws = range(int((join + bound_ns) // rec.window_ns) + 1, int(end // rec.window_ns))
        assert len(ws) >= 20
        fair = LINK_BPS / active
        means = [sum(rec.rates_bps(i)[w] for w in ws) / len(ws) for i in range(active)]
        for m in means:
            assert abs(m - fair) <= 0.10 * fair, (active, [round(x / 1e9, 2) for x in means])
