"""Shared by the suite tests: one virtual run of a RunConfig, and the suite files.

The tests drive RunConfig / plan_run / run_virtual directly (not the experiment runner),
each with the scenario of its file in experiments/, so a failing claim points at the
fabric, not at the runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from emu.experiments.config import RunConfig
from emu.experiments.plan import RunPlan, plan_run
from emu.experiments.summary import RunSummary

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"


def run(cfg: RunConfig, **kw: Any) -> tuple[RunPlan, RunSummary]:
    from emu.experiments.virtual import run_virtual

    plan = plan_run(RunConfig(**{**cfg.__dict__, "virtual": True, "progress": False,
                                 "start_delay_s": 0.0, **kw}))
    return plan, run_virtual(plan, write=False)


def suite(name: str) -> dict[str, Any]:
    data = yaml.safe_load((EXPERIMENTS / f"{name}.yaml").read_text())
    assert isinstance(data, dict)
    return data


def per_host_gbps(plan: RunPlan, s: RunSummary) -> float:
    """Message size over the slowest flow's completion, modelled (a permutation's
    per-host throughput: the step ends with its last flow)."""
    fcts = [f.fct_nominal_s for f in s.flows]
    assert all(t is not None for t in fcts)
    return plan.config.workload.message_bytes * 8 / max(fcts) / 1e9  # type: ignore[type-var]


def busbw_gbps(s: RunSummary) -> float:
    (c,) = s.collectives
    assert c.busbw_nominal_Bps is not None
    return c.busbw_nominal_Bps * 8 / 1e9
