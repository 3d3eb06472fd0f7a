"""Real agent result lines, produced once per session by host agents in virtual time;
Ctrl-C for the tests that press it."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.plan import RunPlan, plan_run
from emu.experiments.workloads import WorkloadParams

from .agentsim import run_agents


def _run(kind: str, size: int, depth: int, **cfg: Any) -> tuple[RunPlan, dict[str, list[dict[str, Any]]]]:
    plan = plan_run(RunConfig(workload=WorkloadParams(kind, message_bytes=size), **cfg))  # type: ignore[arg-type]
    rate = plan.fabric.links[0].rate_bps
    return plan, run_agents(plan.fabric, plan.agents, rate_bps=rate, depth_pkts=depth)


@pytest.fixture(scope="session")
def allreduce_run() -> tuple[RunPlan, dict[str, list[dict[str, Any]]]]:
    return _run("allreduce", 32 * 1024, 64, recovery="sr")


@pytest.fixture(scope="session")
def incast_run() -> tuple[RunPlan, dict[str, list[dict[str, Any]]]]:
    # A shallow receiver queue: the star drops, so retransmissions are real.
    return _run("incast", 64 * 1024, 8, cc="none")


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this test, as Ctrl-C does in a terminal, also
    when pytest was started with SIGINT ignored (a background job of a non-interactive
    shell, as some CI runners start it): Python then keeps the inherited SIG_IGN, and a
    test that delivers SIGINT to itself would wait for an interrupt that never comes."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
