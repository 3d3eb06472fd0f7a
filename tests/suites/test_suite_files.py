"""The suite files in experiments/ are experiment files (docs/experiments.md): only the
known top-level keys, options that name a run or workload setting, and each says what
result it expects and which test checks it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.workloads import WorkloadParams

from .common import EXPERIMENTS, suite

SUITES = ["ecmp-polarization", "lb-collectives", "spray-recovery", "link-failure",
          "dcqcn-incast", "oversubscription", "qp-scaling", "lossless-incast", "nic-timeouts"]
TOP = {"name", "description", "base", "grid", "seeds", "timeout"}
ALIASES = {"topology", "topo", "size", "window", "rate", "fail_after", "fail_link", "lb",
           "cc", "recovery", "workload", "hosts", "iterations", "incast_senders"}
OPTIONS = ALIASES | {f.name for f in dataclasses.fields(RunConfig)} | \
    {f.name for f in dataclasses.fields(WorkloadParams)} - {"seed", "kind"}


def options(data: dict[str, Any]) -> list[str]:
    names = list(data.get("base") or {})
    for axis, values in (data.get("grid") or {}).items():
        if axis in OPTIONS:
            names.append(axis)
        else:  # a set axis: mappings of options
            names.extend(k for v in values for k in v)
    return names


@pytest.mark.parametrize("name", SUITES)
def test_suite_file_is_an_experiment_with_its_expectation(name: str) -> None:
    data = suite(name)
    assert set(data) <= TOP
    assert data["name"] == name
    unknown = [o for o in options(data) if o not in OPTIONS]
    assert not unknown, f"{name}: unknown options {unknown}"
    text = (EXPERIMENTS / f"{name}.yaml").read_text()
    assert "# Expected" in text
    test = text.split("tests/suites/", 1)[1].split(")")[0].split(";")[0].strip()
    assert (EXPERIMENTS.parent / "tests" / "suites" / test).exists(), test


@pytest.mark.parametrize("name", SUITES)
def test_suite_topologies_load(name: str) -> None:
    from emu.topo import load_topology

    data = suite(name)
    topos = [data["base"].get("topology")] + list(data.get("grid", {}).get("topology", []))
    topos += [v.get("topology") for vals in data.get("grid", {}).values()
              for v in vals if isinstance(v, dict)]
    for t in {t for t in topos if t}:
        assert load_topology(t).hosts
