"""The parser's state machine starts at `start` wherever it is declared. Found by
crosschecking p4c's issue-2123.p4 with random frames against BMv2: its `start` comes
last and a state with two predecessors first, and the loop began in that state."""

from __future__ import annotations

from emu.core.clock import VirtualClock
from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> kind; }
header b_t { bit<8> v; }
struct H { a_t a; b_t b; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state join { pk.extract(hdr.b); transition accept; }    // two predecessors
    state one { transition join; }
    state two { transition join; }
    state start {
        pk.extract(hdr.a);
        transition select(hdr.a.kind) { 1: one; 2: two; default: accept; }
    }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.b.isValid()) { hdr.b.v = hdr.b.v + 1; }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.a); pk.emit(hdr.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_parsing_begins_at_start_declared_last() -> None:
    sw = P4Switch(compile_source(PROGRAM), VirtualClock())
    for frame in (bytes([1, 7]), bytes([2, 7]), bytes([9, 7])):
        sw.inject(0, frame)
    sw.run_until_idle()
    # kinds 1 and 2 reach `join` (b extracted, incremented); 9 accepts with a only.
    assert [o.data for o in sw.outputs()] == [bytes([1, 8]), bytes([2, 8]), bytes([9, 7])]
