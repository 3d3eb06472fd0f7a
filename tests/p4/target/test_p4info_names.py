"""Every P4Info object of our own programs is found in the switch under its P4Info name,
and table key fields carry the P4Info match-field names, in order (what the P4Runtime
server and the STF runner rely on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.p4.api import P4Switch
from emu.p4.frontend import load_program
from emu.p4.p4info import generate_p4info
from emu.p4.target.program import compile_checked

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = sorted([*ROOT.glob("stf_programs/*.p4"), *ROOT.glob("p4info/programs/*.p4")])


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_p4info_names_resolve_in_the_switch(path: Path) -> None:
    cp = load_program(str(path))
    info = generate_p4info(cp)
    program = compile_checked(cp, path.name)
    sw = P4Switch(program).sw
    keys = {t["name"]: [k["name"] for k in t["keys"] if k["match_kind"] != "selector"]
            for t in program.info.tables}
    for t in info.tables:
        assert t.preamble.name in sw.tables
        assert keys[t.preamble.name] == [m.name for m in t.match_fields]
    for a in info.actions:
        assert a.preamble.name in program.info.actions
    for kind, objects in (("counters", sw.counters), ("direct_counters", sw.direct_counters),
                          ("meters", sw.meters), ("direct_meters", sw.direct_meters),
                          ("registers", sw.registers), ("value_sets", sw.value_sets),
                          ("action_profiles", sw.action_profiles)):
        for o in getattr(info, kind):
            assert o.preamble.name in objects, f"{kind} {o.preamble.name}"
