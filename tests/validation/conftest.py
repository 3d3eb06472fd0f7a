"""The congestion-control validation suite: published DCQCN behaviour reproduced in
virtual time (emu.experiments.incast), deterministically. Each test names the result
it reproduces; its thresholds are the issue's, fixed here, never tuned per run."""

from __future__ import annotations

import functools

import pytest

from emu.experiments.incast import IncastRecord, IncastSpec, run_incast

# The longest runs (modelled seconds of traffic), longest first: under `make test`
# (pytest -n) they start at once, each on its own CPU, instead of last behind the rest.
LONGEST = ("test_staggered_flows_converge_to_the_new_fair_share[hpcc]",
           "test_staggered_flows_converge_to_the_new_fair_share[paper]")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST)}
    items.sort(key=lambda item: rank.get(item.name, len(rank)))


@pytest.fixture(scope="session", autouse=True)
def fabric_p4_compiles() -> None:
    from emu.sim.fabric import compile_fabric

    compile_fabric()


@functools.lru_cache(maxsize=64)
def incast(spec: IncastSpec) -> IncastRecord:
    """Runs are deterministic: tests that judge the same scenario share one run."""
    return run_incast(spec)
