"""Parametrization over the switch targets present on this machine.

    from tests.targets.params import TARGETS

    @pytest.mark.parametrize("target_name", TARGETS)
    def test_something(target_name): ...

or take the `target` fixture of tests/targets/conftest.py (a SwitchTarget). A
target whose tools are missing is still collected and skipped with the target's
own one-line message (for BMv2: which of p4c / simple_switch_grpc /
simple_switch_CLI is missing and how to get them), so reports show what did not run.
"""

from __future__ import annotations

import functools

import pytest

from emu.targets import TARGET_NAMES, get_target


@functools.cache
def missing_reason(name: str) -> str | None:
    """Why target `name` cannot run here (None: it can)."""
    target = get_target(name)
    missing = target.missing()
    return target.unavailable_message(missing) if missing else None


def target_param(name: str) -> object:
    reason = missing_reason(name)
    return pytest.param(name, id=name,
                        marks=pytest.mark.skipif(reason is not None, reason=reason or ""))


TARGETS = [target_param(n) for n in TARGET_NAMES]

requires_bmv2 = pytest.mark.skipif(missing_reason("bmv2") is not None,
                                   reason=missing_reason("bmv2") or "")
