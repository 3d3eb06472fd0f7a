"""`emu crosscheck --entries FILE.stf`: an STF file's table set-up as writes for both
sides, read back from the STF runner's tables (so STF names, values and priorities mean
what they mean in `emu stf`) and its replication engine as multicast groups and clone
sessions; wildcards omitted as P4Runtime requires, the program's own entries left to
it, other set-up listed as left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emu import crosscheck as X
from emu.control import (
    CloneSession,
    Lpm,
    MemorySwitchHandle,
    MulticastGroup,
    TableEntry,
    Ternary,
)
from emu.crosscheck.programming import DefaultAction
from emu.p4.tables import Optional, Range

from ..p4.programs import v1model_program

PROGRAMS = Path(__file__).resolve().parents[1] / "p4" / "stf_programs"
MATCH_KINDS = PROGRAMS / "match_kinds.p4"
PORTS = [0, 1, 2, 3]


def test_entries_of_every_match_kind_come_back_as_p4runtime_writes():
    setup = X.stf_programming(PROGRAMS / "match_kinds.stf", MATCH_KINDS, [PROGRAMS], PORTS)
    # STF order; the ternary/range entries added first get the higher priority, as in
    # `emu stf`; t_const's const entry stays the program's
    top = 1 << 20
    assert setup.entries == [
        TableEntry("I.t_range", {"hdr.h.a": Range(0x10, 0x20)}, "I.set_port", {"port": 2}, top),
        TableEntry("I.t_range", {"hdr.h.a": Range(0x100, 0x1FF)}, "I.rewrite",
                   {"v": 0x33, "delta": 2}, top - 1),
        TableEntry("I.t_opt", {"hdr.h.b": Optional(5)}, "I.set_port", {"port": 3}, top),
        TableEntry("I.t_opt", {"hdr.h.c": Ternary(0x70, 0xF0)}, "I.rewrite",
                   {"v": 1, "delta": 0x100}, top - 1),
        TableEntry("I.t_lpm", {"hdr.h.d": Lpm(0x0A000000, 8)}, "I.tag", {"bit_": 0x10}),
    ]
    assert setup.defaults == [] and setup.notes == []
    setup.apply(MemorySwitchHandle("s1"))  # they are writes the control API takes


def test_default_actions_replication_remove_all_and_refused_commands(tmp_path):
    stf = tmp_path / "t.stf"
    stf.write_text("add t_lpm h.d:0x0A000000/8 tag(bit_:0x10)\n"
                   "setdefault t_opt tag(bit_:0x20)\n"
                   "remove all\n"
                   "add t_lpm h.d:0x0B000000/8 tag(bit_:0x11)\n"
                   "setdefault t_range set_port(port:3)\n"
                   "mc_mgrp_create 1\n"
                   "mc_node_create 7 1 2\n"
                   "mc_node_associate 1 0\n"
                   "mirroring_add 5 2\n"
                   "set_queue_depth 10\n"
                   "packet 0 00\n")
    setup = X.stf_programming(stf, MATCH_KINDS, [PROGRAMS], PORTS)
    assert setup.entries == [TableEntry("I.t_lpm", {"hdr.h.d": Lpm(0x0B000000, 8)}, "I.tag",
                                        {"bit_": 0x11})]
    # `remove all` removes entries, not default actions (as `emu stf` runs it)
    assert setup.defaults == [DefaultAction("I.t_range", "I.set_port", {"port": 3}),
                              DefaultAction("I.t_opt", "I.tag", {"bit_": 0x20})]
    # the node's rid is each copy's instance; a mirroring session sends one copy
    assert setup.replication == [MulticastGroup(1, ((1, 7), (2, 7))),
                                 CloneSession(5, ((2, 0),))]
    assert setup.notes == ["t.stf: set-up left out (crosscheck carries table entries, default "
                           "actions, multicast groups and clone sessions): SetQueueDepth x1"]
    handle = MemorySwitchHandle("s1")
    setup.apply(handle)
    assert handle.multicast_groups[1].replicas == ((1, 7), (2, 7)) and 5 in handle.clone_sessions
    stf.write_text("add t_lpm h.d:0x0A000000/8 tag(bit_:0x10)\nadd t_nowhere h.d:1 tag(bit_:1)\n")
    with pytest.raises(ValueError, match=r"t\.stf:2: .*t_nowhere"):
        X.stf_programming(stf, MATCH_KINDS, [PROGRAMS], PORTS)


def test_a_runtime_file_carries_multicast_groups_and_clone_sessions(tmp_path):
    """The p4lang tutorials' runtime format: multicast_group_entries and
    clone_session_entries beside table_entries."""
    f = tmp_path / "runtime.json"
    f.write_text(json.dumps({
        "table_entries": [],
        "multicast_group_entries": [{"multicast_group_id": 1, "replicas": [
            {"egress_port": 1, "instance": 1}, {"egress_port": 2, "instance": 1}]}],
        "clone_session_entries": [{"clone_session_id": 100, "replicas": [
            {"egress_port": 3, "instance": 0}], "packet_length_bytes": 64}]}))
    setup = X.runtime_programming(f, MATCH_KINDS, [PROGRAMS], PORTS)
    assert setup.replication == [MulticastGroup(1, ((1, 1), (2, 1))),
                                 CloneSession(100, ((3, 0),), 0, 64)]


def test_the_programs_own_initial_entries_are_not_written_again(tmp_path):
    """A table's mutable `entries` are the program's, on both sides already: only the
    STF's own entries are writes, and removing the program's is named as left out."""
    p4 = tmp_path / "init.p4"
    p4.write_text(v1model_program("""
    action set_b(bit<8> v) { hdr.h.b = v; }
    table t { key = { hdr.h.a: exact; } actions = { set_b; NoAction; }
              entries = { 1: set_b(0x11); } default_action = NoAction(); }
    apply { sm.egress_spec = 1; t.apply(); }"""))
    stf = tmp_path / "init.stf"
    stf.write_text("add t hdr.h.a:2 set_b(v:0x22)\n")
    setup = X.stf_programming(stf, p4, [], PORTS)
    assert setup.entries == [TableEntry("I.t", {"hdr.h.a": 2}, "I.set_b", {"v": 0x22})]
    assert setup.notes == []
    stf.write_text("remove all\nadd t hdr.h.a:2 set_b(v:0x22)\n")
    setup = X.stf_programming(stf, p4, [], PORTS)
    assert setup.entries == [TableEntry("I.t", {"hdr.h.a": 2}, "I.set_b", {"v": 0x22})]
    assert setup.notes[0].endswith("removal of the program's initial entries x1")


@pytest.mark.timeout(120)
def test_side_a_stops_a_packet_that_never_lets_the_switch_go_idle(tmp_path: Path):
    """Found by fuzzing P4 programs: side A ran a program whose clones clone again until
    killed; it stops after its event budget with PipelineBusy (a RuntimeError, which
    `emu crosscheck` reports in one line)."""
    from emu.crosscheck.sides import compile_side_a, run_in_process
    from emu.p4.api import PipelineBusy

    from ..p4.programs import e2e_clone_program

    prog, stf = tmp_path / "loop.p4", tmp_path / "loop.stf"
    stf.write_text("mirroring_add 5 2\n")
    packets = [X.Packet(0, b"\x01")]
    prog.write_text(e2e_clone_program("sm.instance_type == 0"))
    setup = X.stf_programming(stf, prog, [], PORTS)
    assert setup.replication == [CloneSession(5, ((2, 0),))]
    outputs = run_in_process(compile_side_a(prog, []), setup, packets, [])[0]
    assert outputs == [[(1, b"\x01"), (2, b"\x01")]]
    prog.write_text(e2e_clone_program("true"))
    with pytest.raises(PipelineBusy, match="embedded target, packet 1 of 1: the switch was "
                                           "still busy after 100,000 events"):
        run_in_process(compile_side_a(prog, []), setup, packets, [])
