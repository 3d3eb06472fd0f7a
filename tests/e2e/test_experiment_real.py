"""`emu experiment --real`: each point on Mininet in real time, one after the other.

What a real-time point's figures are worth depends on this machine's CPU (each run
judges itself: summary.txt's fidelity line), so the report must carry that verdict:
the test asserts that it does, whichever way this machine's runs go.
"""

from __future__ import annotations

import csv
import textwrap
from pathlib import Path

import pytest

from emu.experiments.sweep import run_experiment_file

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.usefixtures("e2e_ready", "no_leftovers")]


def test_real_points_run_and_the_report_carries_their_fidelity(tmp_path: Path) -> None:
    f = tmp_path / "small.yaml"
    f.write_text(textwrap.dedent("""
        name: small
        base: {topology: clos4, workload: permutation, size: 16K, recovery: sr}
        grid:
          lb: [ecmp, spray]
        seeds: [1]
        timeout: 300
        """))
    results = tmp_path / "results"
    assert run_experiment_file(f, results=results, real=True) == 0
    out = results / "experiments" / "small"
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert [r["point"] for r in rows] == ["lb=ecmp,seed=1", "lb=spray,seed=1"]
    assert all(r["status"] == "done" and r["flows_verified"] == "8" for r in rows)
    bound = [r["point"] for r in rows if r["cpu_bound"] == "True"]
    assert all(r["cpu_bound"] in ("True", "False") for r in rows)
    for r in rows:  # each row's verdict is its run's own
        (run,) = [d for d in (out / "points" / r["point"]).iterdir() if d.is_dir()]
        verdict = (run / "summary.txt").read_text()
        assert ("fidelity: CPU-BOUND" in verdict) == (r["point"] in bound)
    report = (out / "report.md").read_text()
    assert ("ran CPU-bound" in report) == bool(bound)
    for p in bound:
        assert f"`{p}`" in report
