"""Our own P4 + STF programs (tests/p4/stf_programs), run through the STF runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.p4.stf.runner import run_stf

from ..programs import e2e_clone_program

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


# Found by fuzzing the STF files: a command the switch refuses ended the run with a bare
# KeyError / AlreadyExists / ValueError traceback, without the file or line.
@pytest.mark.parametrize("name, line, why", [
    ("tables", "add no_such_table h.addr:0x0A000000/8 route(r:1, port:1)", "no table named"),
    ("tables", "add lpm h.addr:0x0A000000/8 route(r:1, port:1)", "exists"),  # again
    ("replication", "mc_node_destroy 42", "no multicast node with handle 42"),
    ("replication", "mc_mgrp_create 7", "already exists"),
    ("meters", "meter_set_rates by_bytes 999999 0.1:1 0.1:1", "index"),
    ("value_sets", "pvs_remove etypes 0x4321", "not a member"),
])
def test_a_refused_command_is_an_error_at_its_line(tmp_path: Path, name: str, line: str,
                                                   why: str) -> None:
    from emu.p4.stf.model import StfError

    lines = (PROGRAMS / f"{name}.stf").read_text().splitlines()
    at = next(i for i, t in enumerate(lines) if t and not t.startswith("#")) + 2
    lines.insert(at - 1, line)  # right after the first command
    bad = tmp_path / "bad.stf"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(StfError) as ei:
        run_stf(PROGRAMS / f"{name}.p4", bad)
    assert (ei.value.filename, ei.value.line) == (str(bad), at)
    assert why in ei.value.message


@pytest.mark.parametrize("line, why", [
    ("meter_set_rates by_bytes 0 0.1:1", "usage"),  # a two-rate meter takes two pairs
    ("meter_set_rates by_bytes 0 nan:1 0.1:1", "bad rate:burst"),
    ("packet ² 00", "bad port"),  # "²".isdigit() is true, int() refuses it
])
def test_malformed_commands_are_syntax_errors(tmp_path: Path, line: str, why: str) -> None:
    from emu.p4.stf.model import StfError
    from emu.p4.stf.parser import parse_stf

    with pytest.raises(StfError, match=why) as ei:
        parse_stf(f"wait\n{line}\n", "t.stf")
    assert ei.value.line == 2


# Found by fuzzing P4 programs: an egress that E2E-clones every packet, its clones too,
# never goes idle (on BMv2 as well); `python -m emu.p4 stf` ran until killed.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("loops", [False, True])
def test_a_packet_that_never_lets_the_switch_go_idle_is_an_error_at_its_line(
        tmp_path: Path, loops: bool) -> None:
    from emu.p4.stf.model import StfError

    prog = tmp_path / "loop.p4"
    prog.write_text(e2e_clone_program("true" if loops else "sm.instance_type == 0"))
    stf = tmp_path / "loop.stf"
    stf.write_text("mirroring_add 5 2\n\npacket 0 01\nexpect 1 01\n")
    if not loops:  # the original is cloned, its clone is not
        result = run_stf(prog, stf)
        assert result.ok, result.report
        assert result.outputs == {1: [b"\x01"], 2: [b"\x01"]}
        return
    with pytest.raises(StfError) as ei:
        run_stf(prog, stf)
    assert (ei.value.filename, ei.value.line) == (str(stf), 3)
    assert "still busy after 100,000 events" in ei.value.message
