"""The same P4Runtime requests to BMv2's server (simple_switch_grpc) and ours: every
answer agrees but the listed ones, where BMv2 departs from the P4Runtime spec (or the
spec leaves the code open) and ours follows it (emu/runtime/README.md, "Where the
server differs from BMv2's"). Found this way: a direct meter read with only a table id
was INVALID_ARGUMENT; direct counter reads named the entry with its idle timeout; an
empty byte string was INVALID_ARGUMENT, not the spec's OUT_OF_RANGE. Found by
scripts/p4runtime_fuzz.py: a read by an invalid key (a ternary value outside its mask)
answered nothing, not INVALID_ARGUMENT; an INSERT naming a missing member, or a group
of a profile without selector, was ALREADY_EXISTS when the key was taken."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from emu.crosscheck.sides import SwitchProcess, switch_process

from ..conftest import needs_root
from ..targets.params import requires_bmv2
from .p4rt_requests import Ids, Requests, answer, cp_requests, ecmp_requests

TESTS = Path(__file__).resolve().parents[1]
OUT_OF_RANGE = "the spec's code for a byte string that does not fit (Bytestrings)"
SPEC_ALWAYS_REJECTS_EMPTY = "the spec: an empty byte string is always rejected, OUT_OF_RANGE"
NON_ZERO_ID = "the spec: member and group ids are non-zero"
DONT_CARE = "the spec: a don't-care match is omitted, never sent as its full range"
MISSING = "the spec's code for a group's missing member (it names none for an entry's)"
IN_USE = "the spec's code for a member or group still referenced"
FILTERS = "BMv2 ignores a read's action, controller_metadata and metadata filters: the " \
          "spec's Wildcard Reads filter on them"

# label -> why ours answers otherwise (ours first, then BMv2's answer)
DIFFERENT = {
    "cp": {
        "key wider than its field": f"OUT_OF_RANGE, BMv2 INVALID_ARGUMENT: {OUT_OF_RANGE}",
        "param wider than its field": f"OUT_OF_RANGE, BMv2 INVALID_ARGUMENT: {OUT_OF_RANGE}",
        "range bound wider than its field":
            f"OUT_OF_RANGE, BMv2 INVALID_ARGUMENT: {OUT_OF_RANGE}",
        "negative priority": "INVALID_ARGUMENT, BMv2 UNKNOWN from its target: a priority "
                             "is a positive int32",
        "read by priority": "BMv2 reads an omitted range field back as its full range: "
                            f"{DONT_CARE} (read-write symmetry)",
        "missing member": f"NOT_FOUND, BMv2 INVALID_ARGUMENT: {MISSING}",
        "missing member for a taken key": f"NOT_FOUND, BMv2 INVALID_ARGUMENT: {MISSING}",
        "read every table by priority": "INVALID_ARGUMENT, BMv2 ignores the priority: the "
                                        "spec: a read of every table takes no other filter",
        "read by action": FILTERS,
        "read by an action of no table": f"INVALID_ARGUMENT: {FILTERS}",
        "read by controller_metadata": FILTERS,
        "read by metadata": FILTERS,
        "delete a member in use": f"FAILED_PRECONDITION, BMv2 UNKNOWN: {IN_USE}",
        "the default entry of an indirect table":
            "PERMISSION_DENIED, BMv2 INVALID_ARGUMENT: the spec's code for a constant "
            "default action (an indirect table's is a const NoAction)",
        "read a counter past its size": "OUT_OF_RANGE, BMv2 UNKNOWN: the spec's code",
        "empty key": f"OUT_OF_RANGE, BMv2 takes it as 0: {SPEC_ALWAYS_REJECTS_EMPTY}",
        "empty param": f"OUT_OF_RANGE, BMv2 takes it as 0: {SPEC_ALWAYS_REJECTS_EMPTY}",
        "range covering every value": f"INVALID_ARGUMENT, BMv2 takes it: {DONT_CARE}",
        "member id 0": f"INVALID_ARGUMENT, BMv2 takes it: {NON_ZERO_ID}",
        "group in a profile without selector":
            "INVALID_ARGUMENT, BMv2 takes it: a profile without selector has no groups",
    },
    "ecmp": {
        "missing group": f"NOT_FOUND, BMv2 INVALID_ARGUMENT: {MISSING}",
        "delete a group in use": f"FAILED_PRECONDITION, BMv2 UNKNOWN: {IN_USE}",
        "delete a member in a group": f"FAILED_PRECONDITION, BMv2 UNKNOWN: {IN_USE}",
        "group id 0": f"INVALID_ARGUMENT, BMv2 takes it: {NON_ZERO_ID}",
    },
}


PROGRAMS: dict[str, tuple[Path, Requests]] = {
    "cp": (TESTS / "runtime" / "p4" / "cp.p4", cp_requests),
    "ecmp": (TESTS / "switch" / "p4" / "ecmp_ecn.p4", ecmp_requests),
}


def compare_with_bmv2(program: Path, build: Path,
                      observe: Callable[[SwitchProcess], list[tuple[str, str]]],
                      known: Mapping[str, str]) -> list[tuple[str, str]]:
    """`observe` on a BMv2 switch and on ours running `program`: (label, outcome) pairs
    in the same order. Fails listing every label whose outcomes differ, unless `known`
    says why, and every known one that agrees; returns ours."""
    seen = {}
    for side in ("bmv2", "embedded"):
        with switch_process(side, program, build) as sw:
            seen[side] = observe(sw)
    report = [f"{label}: embedded {ours!r}, bmv2 {bmv2!r}"
              for (label, ours), (_, bmv2) in zip(seen["embedded"], seen["bmv2"], strict=True)
              if (ours != bmv2) != (label in known)]
    assert not report, "\n".join(report)
    return seen["embedded"]


@needs_root
@requires_bmv2
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_p4runtime_answers_agree_with_bmv2(name: str, tmp_path: Path) -> None:
    program, requests = PROGRAMS[name]

    def observe(sw: SwitchProcess) -> list[tuple[str, str]]:
        assert sw.client.p4info is not None
        return [(op.label, answer(sw.client, op)) for op in requests(Ids(sw.client.p4info))]

    compare_with_bmv2(program, tmp_path, observe, DIFFERENT[name])
