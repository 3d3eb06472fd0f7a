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

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from emu.crosscheck.sides import veth_ports
from emu.runtime.client import P4RuntimeClient
from emu.targets import SwitchSpec, get_target

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


@dataclass
class Side:
    """A switch of one target on ports 1 and 2 (veth pairs in namespace `ns`; the
    host ends in `host_end`), its pipeline set by `client`, the primary (0,1)."""

    client: P4RuntimeClient
    ns: str
    host_end: dict[int, str]


@contextlib.contextmanager
def switch_side(target_name: str, program: Path, build: Path) -> Iterator[Side]:
    target = get_target(target_name)
    pipe = target.compile(program, build / target_name, (program.parent,))
    sockdir = tempfile.mkdtemp(prefix="emup4rt-")
    try:
        with veth_ports([1, 2]) as (ns, sw_end, host_end):
            spec = SwitchSpec("s1", 1, dict(sw_end), f"unix:{sockdir}/p4rt.sock", netns=ns)
            with target.start(spec, pipe) as proc:
                proc.wait_ready(120)
                client = P4RuntimeClient(spec.grpc_addr, 1)
                try:
                    info = pipe.load_p4info()
                    client.set_pipeline(info, pipe.device_config())
                    client.p4info = info
                    yield Side(client, ns, dict(host_end))
                finally:
                    client.close()
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


PROGRAMS: dict[str, tuple[Path, Requests]] = {
    "cp": (TESTS / "runtime" / "p4" / "cp.p4", cp_requests),
    "ecmp": (TESTS / "switch" / "p4" / "ecmp_ecn.p4", ecmp_requests),
}


@needs_root
@requires_bmv2
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_p4runtime_answers_agree_with_bmv2(name: str, tmp_path: Path) -> None:
    program, requests = PROGRAMS[name]
    answers = {}
    for side in ("bmv2", "embedded"):
        with switch_side(side, program, tmp_path) as sw:
            client = sw.client
            assert client.p4info is not None
            ops = requests(Ids(client.p4info))
            answers[side] = [answer(client, op) for op in ops]
    known = DIFFERENT[name]
    report = []
    for op, ours, bmv2 in zip(ops, answers["embedded"], answers["bmv2"], strict=True):
        if (ours != bmv2) != (op.label in known):
            report.append(f"{op.label}: embedded {ours!r}, bmv2 {bmv2!r}")
    assert not report, "\n".join(report)
