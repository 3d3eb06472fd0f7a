"""Compare our P4Info with p4c's for p4c's own sample programs.

p4c is not installable here, so its outputs are read from a directory named by
``P4C_SAMPLES`` holding ``<name>.p4`` next to ``<name>.p4info.txtpb`` (p4c's
testdata/p4_16_samples/ and testdata/p4_16_samples_outputs/ files; we commit
no copies). The files come from several p4c versions, so the expected side is
normalised to the version we emulate before comparing:

* ``initial_default_action_id: N`` (a pre-release spelling) becomes
  ``initial_default_action { action_id: N }``;
* the ``@corelib`` annotation newer p4c adds to NoAction is dropped (our
  core.p4 does not carry it);
* outputs older than ``initial_default_action`` / ``has_initial_entries`` get
  those fields removed from our side as well.

Run as a script for a report: ``P4C_SAMPLES=/tmp/p4c-samples python -m tests.p4.p4info.p4c_compare``.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from emu.p4.frontend import P4Error, load_program
from emu.p4.p4info import generate_p4info


def samples_dir() -> Path | None:
    d = os.environ.get("P4C_SAMPLES")
    return Path(d) if d else None


def sample_pairs(d: Path) -> list[tuple[Path, Path]]:
    out = []
    # and one directory down (ONOS's fabric.p4, SONiC DASH's and PINS's pipelines, ...)
    for exp in sorted([*d.glob("*.p4info.txtpb"), *d.glob("*/*.p4info.txtpb")]):
        src = exp.parent / (exp.name[: -len(".p4info.txtpb")].removesuffix(".p4") + ".p4")
        if src.exists():
            out.append((src, exp))
    return out


def load_expected(path: Path) -> p4info_pb2.P4Info:
    text = path.read_text()
    text = re.sub(r"initial_default_action_id: (\d+)", r"initial_default_action { action_id: \1 }", text)
    msg = p4info_pb2.P4Info()
    text_format.Parse(text, msg)
    for a in msg.actions:
        kept = [x for x in a.preamble.annotations if x != "@corelib"]
        del a.preamble.annotations[:]
        a.preamble.annotations.extend(kept)
    return msg


def align_version(ours: p4info_pb2.P4Info, expected: p4info_pb2.P4Info) -> None:
    """Drop from ours the fields an older p4c never wrote."""
    if expected.tables and not any(t.HasField("initial_default_action") for t in expected.tables):
        for t in ours.tables:
            t.ClearField("initial_default_action")
    if expected.tables and not any(t.has_initial_entries for t in expected.tables):
        if any(t.is_const_table for t in expected.tables):
            for t in ours.tables:
                t.ClearField("has_initial_entries")


def compare(src: Path, expected_path: Path, include_dirs: tuple[str, ...] = ()) -> list[str]:
    """Unified diff lines (p4c vs ours); empty when they agree."""
    expected = load_expected(expected_path)
    try:
        ours = generate_p4info(load_program(str(src), include_dirs))
    except P4Error as exc:
        return [f"error: {line}" for line in str(exc).splitlines()[:3]]
    align_version(ours, expected)
    a = text_format.MessageToString(expected).splitlines()
    b = text_format.MessageToString(ours).splitlines()
    return list(difflib.unified_diff(a, b, "p4c", "emu", lineterm="", n=2))


def main() -> int:
    d = samples_dir()
    if d is None:
        print("set P4C_SAMPLES to a directory of p4c samples and outputs", file=sys.stderr)
        return 2
    bad = 0
    for src, exp in sample_pairs(d):
        diff = compare(src, exp)
        print(f"{src.stem}: {'same' if not diff else 'DIFFERENT'}")
        for line in diff:
            print("    " + line)
        bad += bool(diff)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
