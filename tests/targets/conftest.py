"""Fixtures for target tests: `target` (parametrized over TARGETS) and `switches`,
a factory that starts switch processes and always stops them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from emu.targets import CompiledPipeline, SwitchProcess, SwitchSpec, SwitchTarget, get_target

from .params import TARGETS

PROGRAMS = Path(__file__).parent / "programs"
PORTFWD = PROGRAMS / "portfwd.p4"


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest) -> SwitchTarget:
    return get_target(request.param)


@pytest.fixture
def switches() -> Iterator[Callable[[SwitchTarget, SwitchSpec, CompiledPipeline], SwitchProcess]]:
    started: list[SwitchProcess] = []

    def start(target: SwitchTarget, spec: SwitchSpec, pipeline: CompiledPipeline
              ) -> SwitchProcess:
        p = target.start(spec, pipeline)
        started.append(p)
        return p

    try:
        yield start
    finally:
        for p in started:
            p.stop()
            assert not p.alive()


def pid_gone(pid: int) -> bool:
    """True if no process `pid` exists (zombies of other parents count as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


