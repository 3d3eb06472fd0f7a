"""An exception escaping the generated pipeline at packet time (issue #16 item 4): the
packet is dropped and counted, the error logged once with its P4 location, and the
switch goes on forwarding."""

from __future__ import annotations

import logging

import pytest

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

# Reading `.last` of an empty header stack in a control: the runtime raises (there is
# no last element), a construct whose failure only shows at packet time.
PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header s_t { bit<8> x; }
struct H { h_t h; s_t[2] s; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1) {
            hdr.h.b = hdr.s.last.x;
        }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_exception_at_packet_time_drops_counts_and_logs_once(
        caplog: pytest.LogCaptureFixture) -> None:
    sw = P4Switch(compile_source(PROGRAM, "stack.p4"))
    with caplog.at_level(logging.ERROR, logger="emu.p4.switch"):
        for i in range(6):
            sw.inject(0, bytes([1 if i % 2 == 0 else 2, 0]))
            sw.run_until_idle()
    assert [o.data for o in sw.outputs()] == [bytes([2, 0])] * 3  # the others go on
    assert sw.drops.get(0, "pipeline_error") == 3
    errors = [r.getMessage() for r in caplog.records if "pipeline error" in r.getMessage()]
    assert len(errors) == 1, errors
    assert "stack.p4:16" in errors[0]
