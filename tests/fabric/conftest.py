"""Fabric tests: fabric.p4 on the embedded target, switches joined by MemLinks on a
VirtualClock (emu.sim.fabric), programmed by the real controller."""

from __future__ import annotations

import importlib.util

import pytest

from emu.p4.frontend import P4Error


def _target_problem() -> str | None:
    if importlib.util.find_spec("emu.p4.api") is None:
        return "emu.p4.api (the embedded P4Switch) is not there yet"
    from emu.sim.fabric import compile_fabric

    try:
        compile_fabric()
    except P4Error as exc:
        if "not supported by the embedded v1model target" in str(exc):
            return f"the embedded target cannot compile fabric.p4 yet: {exc}"
        raise
    return None


_PROBLEM = _target_problem()

requires_target = pytest.mark.skipif(_PROBLEM is not None, reason=_PROBLEM or "")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/fabric/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(requires_target)
