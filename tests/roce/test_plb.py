"""PLB's re-path rules against the published ones (Linux tcp_plb, the SIGCOMM 2022 paper):
M congested rounds when nothing is in flight, N with packets in flight, a timeout re-paths
and suspends congestion re-paths for 1x to 2x of suspend_rto."""

from __future__ import annotations

import json

import pytest

from emu.roce.plb import Plb, PlbParams
from tests.roce.helpers import pair

S = 1_000_000_000


def rounds(plb: Plb, n: int, *, in_flight: bool, congested: bool = True,
           t0: int = 0, cnps: int | None = None, acked: int = 10,
           round_ns: int = 1000) -> list[bool]:
    """n rounds of `acked` packets ending `round_ns` apart from t0, each with `cnps` CNPs
    (default: all its packets marked if congested, none if not); whether on_ack said to
    re-path at each round's end."""
    if plb.round_mark is None:
        plb.on_ack(0, 10, t0 - round_ns)  # the first ACK opens the first round (mark 10)
    out = []
    for _ in range(n):
        mark = plb.round_mark
        assert mark is not None
        c = cnps if cnps is not None else acked if congested else 0
        for k in range(c):  # spread over the round
            plb.on_cnp(t0 - round_ns + k * round_ns // c)
        # the cumulative ACK passes the mark; in flight: 10 PSNs were sent beyond it
        una = max(mark, plb.round_una + acked)
        out.append(plb.on_ack(una, una + 10 if in_flight else una, t0))
        t0 += round_ns
    return out


def test_a_round_is_congested_when_half_its_packets_are_marked() -> None:
    """A round counted as congested after one CNP; Linux asks for tcp_plb_cong_thresh,
    half of the round's packets, carrying CE: 1% marks never re-path, 60% do at N."""
    plb = Plb(PlbParams(enabled=True), seed=1)
    assert not any(rounds(plb, 48, in_flight=True, acked=100, cnps=1))
    plb = Plb(PlbParams(enabled=True), seed=1)
    said = rounds(plb, 24, in_flight=True, acked=100, cnps=60)
    assert [i + 1 for i, x in enumerate(said) if x] == [12, 24]
    half = Plb(PlbParams(enabled=True), seed=1)
    assert not any(rounds(half, 12, in_flight=True, acked=100, cnps=49))
    assert rounds(half, 12, in_flight=True, acked=100, cnps=50)[-1]


def test_a_paced_cnp_stands_for_the_marks_of_its_gap() -> None:
    """With one CNP per 50 us at most (the paper profile's NP) and rounds of 10 us, a
    fully marked flow saw a CNP in one round out of five and never re-pathed; each CNP
    now covers its gap, into the rounds after its own."""
    plb = Plb(PlbParams(enabled=True, cnp_gap_ns=50_000), seed=1)
    said = []
    for r in range(48):
        said += rounds(plb, 1, in_flight=True, acked=100, cnps=1 if r % 5 == 0 else 0,
                       t0=(r + 1) * 10_000, round_ns=10_000)
    assert [i + 1 for i, x in enumerate(said) if x] == [12, 24, 36, 48]
    # marks for a fifth of the time: CNPs 50 us apart, each seen with a 10 us gap
    plb = Plb(PlbParams(enabled=True, cnp_gap_ns=10_000), seed=1)
    said = []
    for r in range(48):
        said += rounds(plb, 1, in_flight=True, acked=100, cnps=1 if r % 5 == 0 else 0,
                       t0=(r + 1) * 10_000, round_ns=10_000)
    assert not any(said)
    plb = Plb(PlbParams(enabled=True, cnp_gap_ns=5_000), seed=1)
    said = rounds(plb, 24, in_flight=True, acked=100, cnps=2, round_ns=10_000)
    assert [i + 1 for i, x in enumerate(said) if x] == [12, 24]
    assert not any(rounds(Plb(PlbParams(enabled=True, cnp_gap_ns=5_000), seed=1), 24,
                          in_flight=True, acked=100, cnps=1, round_ns=20_000))


def test_with_packets_in_flight_it_takes_n_12_congested_rounds() -> None:
    """The emulator re-pathed after 3 congested rounds whatever was in flight: the paper's
    M, which Linux applies only when the sender is idle (no reordering); busy, N = 12."""
    plb = Plb(PlbParams(enabled=True), seed=1)
    said = rounds(plb, 24, in_flight=True)
    assert [i + 1 for i, x in enumerate(said) if x] == [12, 24]


def test_with_nothing_in_flight_it_takes_m_3_congested_rounds() -> None:
    plb = Plb(PlbParams(enabled=True), seed=1)
    assert [i + 1 for i, x in enumerate(rounds(plb, 9, in_flight=False)) if x] == [3, 6, 9]
    off = Plb(PlbParams(enabled=True, idle_congested_rounds=0), seed=1)
    assert not any(rounds(off, 11, in_flight=False)) and rounds(off, 1, in_flight=False)[0]


def test_an_uncongested_round_restarts_the_count() -> None:
    plb = Plb(PlbParams(enabled=True), seed=1)
    assert not any(rounds(plb, 11, in_flight=True))
    assert not any(rounds(plb, 1, in_flight=True, congested=False))
    assert not any(rounds(plb, 11, in_flight=True)) and rounds(plb, 1, in_flight=True)[0]


def test_a_timeout_repaths_and_suspends_congestion_repaths_for_1x_to_2x() -> None:
    p = PlbParams(enabled=True, suspend_after_timeout_ns=60 * S)
    ends = []
    for seed in range(40):
        plb = Plb(p, seed=seed)
        assert plb.on_timeout(5 * S)
        until = plb.suspended_until_ns
        assert until is not None and 65 * S <= until < 125 * S
        ends.append(until)
        # congested rounds while suspended: the count saturates at N, nothing moves
        assert not any(rounds(plb, 30, in_flight=True, t0=until - 40 * S))
        assert not any(rounds(plb, 5, in_flight=False, t0=until - 10 * S))
        # the first round after the suspension re-paths at once (its count is full)
        assert rounds(plb, 1, in_flight=True, t0=until)[0]
        assert plb.suspended_until_ns is None
    assert max(ends) - min(ends) > 30 * S  # spread out: QPs do not re-path in step
    assert not Plb(PlbParams(enabled=True, repath_on_timeout=False), 1).on_timeout(0)
    assert not Plb(PlbParams(), 1).on_timeout(0)


def test_a_timeout_restarts_the_count() -> None:
    plb = Plb(PlbParams(enabled=True, suspend_after_timeout_ns=0), seed=1)
    assert not any(rounds(plb, 11, in_flight=True))
    plb.on_timeout(0)
    assert plb.suspended_until_ns is None  # 0: no suspension
    assert not any(rounds(plb, 11, in_flight=True)) and rounds(plb, 1, in_flight=True)[0]


@pytest.mark.parametrize("bad", [{"idle_congested_rounds": -1},
                                 {"suspend_after_timeout_ns": -1}, {"congested_rounds": 0}])
def test_bad_parameters_are_refused(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="plb"):
        PlbParams(enabled=True, **bad).validate()


def test_the_suspension_is_a_modelled_time_stretched_by_the_dilation() -> None:
    _clk, _a, _b, qa, _qb, _link = pair(nic_kw={
        "dilation": 1000.0, "plb": PlbParams(enabled=True, suspend_after_timeout_ns=2 * S)})
    assert qa.plb.p.suspend_after_timeout_ns == 2000 * S


def test_a_run_configuration_sets_n_and_m_on_every_hosts_qps() -> None:
    from emu.experiments.config import RunConfig, RunConfigError
    from emu.experiments.plan import plan_run
    from emu.roce.config import load_dict

    plan = plan_run(RunConfig(topo="clos4", plb=True, plb_rounds=5, plb_idle_rounds=0))
    for cfg in plan.agents.values():
        back = load_dict(json.loads(json.dumps(cfg.to_dict())))  # as the agent reads it
        assert back.plb == PlbParams(enabled=True, congested_rounds=5, idle_congested_rounds=0)
    assert next(iter(plan_run(RunConfig(topo="clos4")).agents.values())).plb == PlbParams()
    with pytest.raises(RunConfigError, match="plb_rounds"):
        plan_run(RunConfig(topo="clos4", plb_rounds=0))
