"""`--rto US` / `rto_us`: each QP's base retransmission timeout, modelled, instead of the
one computed from its path (twice the sum of the base round trip and the worst queueing). A RoCE
NIC's local ACK timeout is milliseconds to seconds (4.096 us x 2^timeout), 1000 times
the path's: a lossy run's tail is then the NIC's timeout, which researchers must be
able to set."""

from __future__ import annotations

import pytest

from emu.cli import build_parser, main
from emu.experiments.commands import config_from_args
from emu.experiments.config import RunConfig, RunConfigError
from emu.experiments.experiment import options
from emu.experiments.plan import plan_run
from emu.experiments.virtual import run_virtual
from emu.experiments.workloads import WorkloadParams

INCAST = WorkloadParams("incast", message_bytes=128 * 1024)  # overflows leaf4's queue


def qp_rtos_ns(cfg: RunConfig) -> set[int]:
    """The QPs' nominal RTOs (the NIC stretches them by the dilation)."""
    return {q.rto_ns for a in plan_run(cfg).agents.values() for q in a.qps}


def test_the_rto_is_modelled_whatever_the_dilation() -> None:
    assert qp_rtos_ns(RunConfig(virtual=True, rto_us=1000.0)) == {1_000_000}
    assert qp_rtos_ns(RunConfig(virtual=True, dilation=100.0, rto_us=1000.0)) == {1_000_000}
    # real time at D = 2000: above the 100 ms wire floor (50 us modelled), so no warning
    real = plan_run(RunConfig(rate_bps=50_000_000, rto_us=1000.0))
    assert {q.rto_ns for a in real.agents.values() for q in a.qps} == {1_000_000}
    assert not any(n.startswith("RTO") for n in real.notes)
    assert len(qp_rtos_ns(RunConfig(virtual=True))) > 1  # by default each path its own


@pytest.mark.parametrize("bad", [0.0, -5.0, float("nan"), float("inf")])
def test_a_bad_rto_is_refused(bad: float) -> None:
    with pytest.raises(RunConfigError, match="rto_us must be a finite number > 0"):
        RunConfig(rto_us=bad).validate()


def test_a_lost_packet_waits_the_given_rto() -> None:
    def flows(rto_us: float | None) -> list[tuple[float, int]]:
        plan = plan_run(RunConfig(virtual=True, progress=False, start_delay_s=0.0, cc="none",
                                  rto_us=rto_us, workload=INCAST))
        s = run_virtual(plan, write=False)
        assert s.ok and s.fabric.drops > 0
        t0 = min(f.start_s for f in s.flows if f.start_s is not None)
        return [((f.end_s - t0) / plan.dilation.factor * 1e6, f.timeouts)
                for f in s.flows if f.end_s is not None]

    own = flows(None)
    assert max(t for t, _n in own) < 200  # the path's RTO: tens of us
    fixed = flows(1000.0)
    assert any(n for _t, n in fixed)
    for fct_us, timeouts in fixed:  # each timeout waits 1 ms (doubled without progress)
        assert 1000.0 * timeouts <= fct_us < 1000.0 * (2 ** timeouts - 1) + 200, \
            (fct_us, timeouts)


def test_command_line_and_experiment_files_take_it(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["run", "clos4", "--virtual", "--rto", "500"])
    assert config_from_args(args).rto_us == 500.0
    assert options()["rto_us"].parse(250) == 250.0
    assert main(["run", "clos4", "--virtual", "--rto", "0", "--dry-run"]) == 1
    assert "rto_us must be a finite number > 0" in capsys.readouterr().err
    # a NIC-like 67 ms (timeout 14) outlasts a budget of 600 s at D = 5000: a virtual
    # run's default grows by the QPs' retry span (47 RTOs with backoff), with no warning
    assert main(["run", "clos4", "--virtual", "--rto", "67108.864", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert not any(ln.startswith("warning:") for ln in out.splitlines())
    assert f"budget {600 + 47 * 67.108864e-3 * 5000:g} s of wire time" in out
    # an explicit one is kept, and warned of
    assert main(["run", "clos4", "--virtual", "--rto", "67108.864", "--timeout", "600",
                 "--dry-run"]) == 0
    warning = next(ln for ln in capsys.readouterr().out.splitlines()
                   if ln.startswith("warning:"))
    assert "budget (600 s of wire time)" in warning and "raise --timeout" in warning
    assert "two retransmission timeouts in a row (1.01e+03 s" in warning


def test_the_path_rto_allows_for_the_links_jitter() -> None:
    """--jitter delays a frame up to NS on every link: the path's RTO, the longest a
    packet and its ACK may take, grows by it on each link of the round trip (clos4
    across the spines: 4 links each way), so the noise does not fire the timer."""
    def rto_ns(jitter_ns: float) -> int:
        plan = plan_run(RunConfig(virtual=True, link_jitter_ns=jitter_ns,
                                  workload=WorkloadParams("incast")))
        return next(q.rto_ns for q in plan.agents["h1"].qps)  # h1 -> h8, leaf1 -> leaf4

    assert rto_ns(20_000.0) - rto_ns(0.0) == pytest.approx(2 * 8 * 20_000, abs=2)


def test_jitter_fires_no_spurious_timeouts() -> None:
    # 20 us on every 1 us link: the permutation's ECMP collisions drop packets, which
    # NAKs recover; before the RTO allowed for the jitter, 18 timeouts fired and the
    # go-back-N resends they started delivered 1070 duplicates
    plan = plan_run(RunConfig(virtual=True, progress=False, link_jitter_ns=20_000.0,
                              workload=WorkloadParams("permutation",
                                                      message_bytes=256 * 1024)))
    s = run_virtual(plan, write=False)
    assert s.ok
    assert sum(f.timeouts for f in s.flows) == 0
    assert s.hosts.duplicates == 0
