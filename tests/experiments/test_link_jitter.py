"""Timing jitter in virtual time (`--jitter`, RunConfig.link_jitter_ns, emu.core.MemLink).

Without it the 7:1 clos4 incast is in lockstep: senders at one rate keep the order in
which their packets reach the full queue, so at every seed one sender never loses a
packet, and every seed finishes its slowest flow within 160 us. Real-time runs of the
same incast (whose CPU sends frames up to half a frame time late) lost packets of every
flow and took 350 us: the virtual run's outcome was the model's lockstep, not the
fabric's (phase effects). 10 ns of jitter breaks it.
"""

from __future__ import annotations

import pytest

from emu.experiments.config import RunConfig, RunConfigError
from emu.experiments.plan import plan_run
from emu.experiments.summary import RunSummary
from emu.experiments.workloads import WorkloadParams

pytestmark = pytest.mark.timeout(300)


def incast(seed: int, jitter_ns: float) -> RunSummary:
    from emu.experiments.virtual import run_virtual

    wl = WorkloadParams("incast", message_bytes=64 * 1024, seed=seed)
    return run_virtual(plan_run(RunConfig(virtual=True, progress=False, workload=wl,
                                          link_jitter_ns=jitter_ns)), write=False)


def test_without_jitter_the_incast_is_in_lockstep_and_jitter_breaks_it() -> None:
    seeds = (1, 2, 3, 4)
    exact = [incast(s, 0.0) for s in seeds]
    jittered = [incast(s, 10.0) for s in seeds]
    assert all(s.ok for s in [*exact, *jittered])

    def spared(s: RunSummary) -> set[str]:
        return {f.id for f in s.flows if f.retx_pkts == 0}

    # lockstep: at every seed one flow escapes every loss
    assert all(len(spared(s)) == 1 for s in exact)
    # with jitter, which flows lose is drawn: most seeds spare none
    assert sum(1 for s in jittered if not spared(s)) >= 2
    assert max(f.fct_nominal_s for s in jittered for f in s.flows) > \
        1.5 * max(f.fct_nominal_s for s in exact for f in s.flows)
    notes = [n for n in exact[0].notes if "without timing jitter" in n]
    assert notes and "--jitter" in notes[0]
    assert not any("without timing jitter" in n for n in jittered[0].notes)


def test_jitter_is_seeded() -> None:
    a, b = incast(2, 10.0), incast(2, 10.0)
    assert [(f.id, f.fct_nominal_s, f.retx_pkts) for f in a.flows] == \
        [(f.id, f.fct_nominal_s, f.retx_pkts) for f in b.flows]


def test_jitter_is_for_virtual_runs_only(capsys: pytest.CaptureFixture[str]) -> None:
    from emu.cli import main

    with pytest.raises(RunConfigError, match="link_jitter_ns"):
        RunConfig(link_jitter_ns=10.0).validate()
    with pytest.raises(RunConfigError, match="link_jitter_ns must be a finite number >= 0"):
        RunConfig(virtual=True, link_jitter_ns=-1.0).validate()
    assert main(["run", "clos4", "--jitter", "10", "--dry-run"]) == 1
    assert "is for virtual runs" in capsys.readouterr().err
    assert main(["run", "clos4", "--virtual", "--jitter", "10", "--dry-run"]) == 0


def test_an_experiment_report_warns_of_points_in_lockstep() -> None:
    """A virtual point that tail-dropped without jitter is marked in metrics.csv
    (`lockstep`) and the report says how many there are above its table; with jitter
    the metric is False and the run's heading names the jitter."""
    from emu.experiments.points import point_metrics
    from emu.experiments.report_md import PointResult, report_text
    from emu.experiments.summary import render_text

    exact, jittered = incast(1, 0.0), incast(1, 10.0)
    assert point_metrics(exact).flat["lockstep"] is True
    assert point_metrics(jittered).flat["lockstep"] is False
    assert "jitter 10 ns" in render_text(jittered).splitlines()[0]

    class Exp:
        name, description, base, axes, seeds = "x", "", {}, ["link_jitter_ns"], [1]

    def point(jitter: float, s: RunSummary) -> PointResult:
        return PointResult(f"link_jitter_ns={jitter:g},seed=1", f"link_jitter_ns={jitter:g}",
                           1, "done", "", {"link_jitter_ns": f"{jitter:g}"}, True,
                           point_metrics(s).flat, {}, {})

    text = report_text(Exp(), [point(0, exact), point(10, jittered)], [])  # type: ignore[arg-type]
    assert "**Timing: 1 of 2 completed points tail-dropped in virtual time without " \
        "timing jitter**" in text
    assert "Timing:" not in report_text(Exp(), [point(10, jittered)], [])  # type: ignore[arg-type]
