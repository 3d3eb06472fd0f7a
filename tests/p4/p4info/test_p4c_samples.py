"""Our P4Info against p4c's own outputs for its sample programs.

Skipped unless P4C_SAMPLES names a directory with p4c's `<name>.p4` samples and
their `<name>.p4info.txtpb` outputs (see p4c_compare.py for the normalisation).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .p4c_compare import compare, sample_pairs, samples_dir

_DIR = samples_dir()
_PAIRS = sample_pairs(_DIR) if _DIR is not None and _DIR.is_dir() else []


@pytest.mark.skipif(_DIR is None, reason="set P4C_SAMPLES to a directory of p4c samples and outputs")
@pytest.mark.parametrize("src,expected", _PAIRS,
                         ids=[str(p[0].relative_to(_DIR)) for p in _PAIRS] if _DIR else [])
def test_same_as_p4c(src: Path, expected: Path) -> None:
    diff = compare(src, expected)
    assert not diff, "\n".join(diff)
