"""The in-process handle takes the names P4Info gives: an action parameter by its @name
(found crosschecking p4c's name_annotations_to_p4info-bmv2.p4 with random entries: the
handle knew parameters only by their source names and refused what BMv2 took), and
range and optional matches as the P4Runtime handle sends them."""

from __future__ import annotations

from pathlib import Path

from emu.control import TableEntry
from emu.control.inprocess import InProcessSwitchHandle
from emu.core.clock import VirtualClock
from emu.p4.api import P4Switch
from emu.p4.frontend import load_program
from emu.p4.p4info import generate_p4info
from emu.p4.tables import OptionalMatch, Range

PROGRAMS = Path(__file__).resolve().parents[1] / "p4" / "stf_programs"
MATCH_KINDS = PROGRAMS / "match_kinds.p4"


def test_entries_by_p4info_names_with_range_and_optional_keys():
    p4info = generate_p4info(load_program(str(MATCH_KINDS), [str(PROGRAMS)]))
    rewrite = next(a for a in p4info.actions if a.preamble.name == "I.rewrite")
    assert [p.name for p in rewrite.params] == ["v", "delta"]
    sw = P4Switch.from_file(str(MATCH_KINDS), [str(PROGRAMS)], clock=VirtualClock())
    h = InProcessSwitchHandle("s1", sw)
    h.insert_entry(TableEntry("I.t_range", {"hdr.h.a": Range(0x100, 0x1FF)}, "I.rewrite",
                              {"v": 0x33, "delta": 2}, priority=5))
    h.insert_entry(TableEntry("I.t_opt", {"hdr.h.b": OptionalMatch(9)}, "I.set_port",
                              {"port": 2}, priority=5))
    frame = bytes.fromhex("000000000001000000000002123401500007000b00000000000000")
    sw.inject(0, frame)
    sw.run_until_idle()
    (out,) = sw.outputs(clear=True)
    # range hit: c = 0x33, b = 7 + 2 = 9, so the optional entry on b = 9 hits: port 2
    assert out.port == 2
    assert bytes(out.data)[14:19] == bytes.fromhex("0150000933")
