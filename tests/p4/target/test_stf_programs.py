"""Our own P4 + STF programs (tests/p4/stf_programs), run through the STF runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.p4.stf.runner import run_stf

PROGRAMS = Path(__file__).resolve().parents[1] / "stf_programs"
CASES = sorted(p.stem for p in PROGRAMS.glob("*.stf"))


@pytest.mark.parametrize("name", CASES)
def test_stf_program(name: str) -> None:
    result = run_stf(PROGRAMS / f"{name}.p4", PROGRAMS / f"{name}.stf")
    assert result.ok, "\n".join(result.problems) + "\n" + result.report


def test_expectations_are_checked(tmp_path: Path) -> None:
    """A wrong expectation must fail (the runner is not vacuous)."""
    stf = (PROGRAMS / "semantics.stf").read_text().replace(
        "expect 1 01 07 09", "expect 1 01 08 09", 1)
    wrong = tmp_path / "wrong.stf"
    wrong.write_text(stf)
    result = run_stf(PROGRAMS / "semantics.p4", wrong)
    assert not result.ok
    assert "port 1" in result.report


def test_unexpected_packet_on_a_named_port_fails(tmp_path: Path) -> None:
    """A port named by `packet` must emit nothing that is not expected."""
    stf = (PROGRAMS / "parser_paths.stf").read_text().replace("packet 0 30 00 AA BB", "packet 1 30 00 AA BB", 1)
    extra = tmp_path / "extra.stf"
    extra.write_text(stf)
    result = run_stf(PROGRAMS / "parser_paths.p4", extra)
    assert result.ok  # the output still goes to port 1, where it is expected first
    stf2 = (PROGRAMS / "parser_paths.stf").read_text() + "packet 0 30 00\n"
    extra.write_text(stf2)
    assert not run_stf(PROGRAMS / "parser_paths.p4", extra).ok
