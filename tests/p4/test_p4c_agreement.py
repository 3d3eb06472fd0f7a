"""Every P4 program in the repository gets the same verdict from the embedded front end
and from p4c: p4test for every program, and p4c-bm2-ss (BMv2's compiler, with its
own back-end limits) for the programs that run on BMv2.

A program the embedded target accepts and p4c rejects would run here and fail on
BMv2 (and the reverse would reject a valid program); either is a failure, shown
with the other side's error text. The programs under tests/p4/invalid/ are
deliberately invalid: both must reject them. Skipped when p4c is not on PATH.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emu.p4.frontend import P4Error, load_program

ROOT = Path(__file__).resolve().parents[2]
INVALID = Path(__file__).with_name("invalid")


def _programs() -> list[Path]:
    progs = sorted(ROOT.glob("p4src/*.p4"))
    progs += sorted(p for p in (ROOT / "tests").rglob("*.p4") if "include" not in p.parts)
    return progs


PROGRAMS = _programs()
P4TEST = shutil.which("p4test")
P4C_BM2_SS = shutil.which("p4c-bm2-ss")
needs_p4c = pytest.mark.skipif(P4TEST is None or P4C_BM2_SS is None,
                               reason="p4test and p4c-bm2-ss not on PATH (a p4c build)")

# The programs that run on BMv2 (TARGET=bmv2 runs, tests/targets, crosscheck).
ON_BMV2 = {ROOT / "p4src" / "fabric.p4", ROOT / "tests" / "targets" / "programs" / "portfwd.p4"}

# p4test's own mid end (not p4c-bm2-ss's) has a pass that mistypes a header union's
# isValid() in a condition ("Field u is not a member of structure"); the front end
# and BMv2's compiler accept the program, so that pass stays out of the check.
P4TEST_ARGS = ["--excludeMidendPasses", "P4::FlattenHeaderUnion"]


def _embedded(path: Path) -> str | None:
    """None if the embedded front end accepts `path`, else its diagnostics."""
    try:
        load_program(str(path))
    except P4Error as exc:
        return str(exc)
    return None


def _p4c(cmd: list[str], tmp: Path) -> str | None:
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, timeout=300, check=False)
    return None if r.returncode == 0 else (r.stderr or r.stdout).strip() or f"exit {r.returncode}"


def test_the_repository_programs_are_all_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PROGRAMS}
    assert "p4src/fabric.p4" in names
    assert "tests/p4/frontend/programs/stacks_varbit.p4" in names
    assert len([n for n in names if not n.startswith("tests/p4/invalid/")]) == 34
    assert not any("/include/" in n for n in names)
    assert all(p in PROGRAMS for p in ON_BMV2)


@needs_p4c
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_embedded_and_p4c_agree(path: Path, tmp_path: Path) -> None:
    assert P4TEST is not None and P4C_BM2_SS is not None
    expect_valid = INVALID not in path.parents
    ours = _embedded(path)
    p4test = _p4c([P4TEST, *P4TEST_ARGS, str(path)], tmp_path)
    verdicts = {"embedded front end": ours, "p4test": p4test}
    if path in ON_BMV2:
        verdicts["p4c-bm2-ss"] = _p4c([P4C_BM2_SS, "-o", str(tmp_path / "out.json"), str(path)],
                                      tmp_path)
    wrong = {k: v for k, v in verdicts.items() if (v is None) != expect_valid}
    if wrong:
        lines = [f"{path.relative_to(ROOT)} should be {'accepted' if expect_valid else 'rejected'}:"]
        for k, v in verdicts.items():
            lines.append(f"--- {k}: {'accepts' if v is None else 'rejects'}")
            if v is not None:
                lines.append(v[:3000])
        pytest.fail("\n".join(lines))
