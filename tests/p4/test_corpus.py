"""p4c's v1model STF tests (testdata/p4_16_samples/*-bmv2.p4 + .stf) through run_stf.

Skipped unless P4C_SAMPLES names a directory holding the .p4/.stf pairs (and the files
they include). We keep no copies of p4c's tests in this repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from emu.p4.frontend import P4Error
from emu.p4.stf.runner import run_stf

SAMPLES = os.environ.get("P4C_SAMPLES")
CASES = sorted(p.stem for p in Path(SAMPLES).glob("*-bmv2.stf")) if SAMPLES else []

pytestmark = pytest.mark.skipif(not SAMPLES, reason="set P4C_SAMPLES to p4c's p4_16_samples")


# Checked against p4c's samples at commit 34b86e9bac (2026): every case the target supports
# passes (the unsupported ones skip with the reason). A case that fails for a reason other
# than an emulator bug goes here with that reason.
# Strict: a fix makes them fail loudly, so they leave this list when they pass.
KNOWN: dict[str, str] = {}


def _case(name: str) -> object:
    if name in KNOWN:
        return pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN[name], strict=True))
    return name


@pytest.mark.parametrize("name", [_case(n) for n in CASES] or ["none"])
def test_p4c_stf(name: str) -> None:
    assert SAMPLES is not None
    base = Path(SAMPLES)
    p4 = base / f"{name}.p4"
    if not p4.exists():
        pytest.skip("no .p4 for this .stf")
    try:
        result = run_stf(p4, base / f"{name}.stf", include_dirs=(str(base),))
    except P4Error as e:
        if "not supported by the embedded" in str(e):
            pytest.skip(f"unsupported: {str(e).splitlines()[0]}")
        raise
    assert result.ok, "\n".join(result.problems) + "\n" + result.report
