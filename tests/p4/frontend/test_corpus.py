"""p4c's v1model test programs (not stored in this repo) against the embedded target:
every sample goes through the front end, P4Info and code generation, and every program
of p4c's error corpus is refused, except the few listed below with the reason.

Set P4C_SAMPLES to p4c's testdata/p4_16_samples (the files and what they include); the
error corpus is read from testdata/p4_16_errors beside it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from emu.p4.frontend import P4Error, load_program
from emu.p4.p4info import generate_p4info
from emu.p4.target.program import compile_checked

SAMPLES = os.environ.get("P4C_SAMPLES")

# sample -> what the refusal says. None of them is a program p4c-bm2-ss compiles and the
# target should run: newer syntax than the p4c we agree with (p4test rejects them too),
# another package than V1Switch, user externs, or what p4c-bm2-ss refuses as well.
KNOWN = {
    "array1.p4": "syntax error",  # `bit<8>[16]` arrays: newer than our reference p4c
    "array2.p4": "syntax error",
    "bitwise-and.p4": "no 'main' V1Switch",
    "issue1524.p4": "no 'main' V1Switch",
    "issue2735.p4": "no 'main' V1Switch",
    "issue407-2.p4": "no 'main' V1Switch",
    "issue407-3.p4": "no 'main' V1Switch",
    "issue1304.p4": "is not V1Switch",
    "extern-funcs-bmv2.p4": "extern function 'extern_func'",
    "issue1193-bmv2.p4": "extern 'jnf_counter'",
    "issue1882-1-bmv2.p4": "extern 'ExternCounter'",
    "issue1882-bmv2.p4": "extern 'ExternCounter'",
    "issue2664-bmv2.p4": "extern 'Checksum'",
    "issue3091.p4": "extern 'ValueLookupTable'",
    "issue841.p4": "extern Checksum16",
    # p4c-bm2-ss: "Unsupported type argument for Value Set"
    "pvs-nested-struct.p4": "must be of type bit<W>",
    # p4c-bm2-ss refuses a struct in a register too (p4_16_errors' issue1777-bmv2.p4)
    "issue907-bmv2.p4": "register 'Ing.r' with cells of type S",
}


def _v1model_samples() -> list[str]:
    if not SAMPLES or not os.path.isdir(SAMPLES):
        return []
    # and the programs one directory down (ONOS's fabric.p4, SONiC DASH's pipeline)
    root = Path(SAMPLES)
    return sorted(str(p.relative_to(root)) for p in [*root.glob("*.p4"), *root.glob("*/*.p4")]
                  if p.is_file() and "v1model.p4" in p.read_text(errors="replace"))


@pytest.mark.skipif(not SAMPLES, reason="set P4C_SAMPLES to p4c's testdata/p4_16_samples")
@pytest.mark.parametrize("name", _v1model_samples() or ["-"])
def test_p4c_v1model_sample(name: str) -> None:
    assert SAMPLES is not None
    try:
        checked = load_program(os.path.join(SAMPLES, name), include_dirs=[SAMPLES])
        generate_p4info(checked)
        compile_checked(checked, name)
    except P4Error as e:
        first = e.diagnostics[0].render().splitlines()[0]
        if name in KNOWN and KNOWN[name] in first:
            pytest.xfail(first)
        raise
    assert name not in KNOWN, f"{name} now compiles: take it off the known list"


# p4c's p4_16_errors programs for v1model that the embedded target still accepts, and why
# that is acceptable or still to do. Every other one must be refused.
ACCEPTED_ERRORS = {
    "issue3299.p4": "BMv2 back-end limit (switch in an action): the target supports it",
    "issue-2123_e.p4": "BMv2 back-end limit (select range bounds that are not constants): "
                       "the target supports them",
}


def _v1model_errors() -> list[str]:
    errors = Path(SAMPLES or "-").parent / "p4_16_errors"
    if not errors.is_dir():
        return []
    return sorted(p.name for p in errors.glob("*.p4") if p.is_file()
                  and "v1model.p4" in p.read_text(errors="replace"))


@pytest.mark.skipif(not SAMPLES, reason="set P4C_SAMPLES to p4c's testdata/p4_16_samples")
@pytest.mark.parametrize("name", _v1model_errors() or ["-"])
def test_p4c_v1model_error_program_is_refused(name: str) -> None:
    """p4c refuses each of its testdata/p4_16_errors programs (beside p4_16_samples)."""
    assert SAMPLES is not None
    errors = Path(SAMPLES).parent / "p4_16_errors"
    try:
        checked = load_program(str(errors / name), include_dirs=[str(errors)])
        generate_p4info(checked)
        compile_checked(checked, name)
    except P4Error:
        assert name not in ACCEPTED_ERRORS, f"{name} is now refused: take it off the list"
        return
    if name in ACCEPTED_ERRORS:
        pytest.xfail(ACCEPTED_ERRORS[name])
    pytest.fail(f"{name}: p4c refuses it, the embedded target compiled it")
