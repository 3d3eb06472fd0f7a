"""The headers' bytes right after parsing (PacketState.base_len, from which egress's
packet_length follows when headers are added or removed) are the parser's cursor only
when the parser did nothing but extract each header once (analysis._parse_len_is_cursor);
otherwise the valid headers are summed."""

from __future__ import annotations

import pytest

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header a_t {{ bit<8> x; bit<8> y; }}
header b_t {{ bit<16> v; }}
struct H {{ a_t a; b_t b; }}
struct M {{ bit<8> m; }}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {{
    {states}
}}
control VC(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    apply {{ sm.egress_spec = 1; hdr.b.setInvalid(); }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    apply {{ hdr.a.y = (bit<8>)sm.packet_length; }}
}}
control CC(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pk, in H hdr) {{ apply {{ pk.emit(hdr.a); pk.emit(hdr.b); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
PLAIN = "state start { pk.extract(hdr.a); pk.extract(hdr.b); transition accept; }"
ADVANCE = "state start { pk.extract(hdr.a); pk.advance(16); pk.extract(hdr.b); transition accept; }"
LOOP = """state start { pk.extract(hdr.a); transition select(hdr.a.x) { 1: start; default: last; } }
    state last { pk.extract(hdr.b); transition accept; }"""


@pytest.mark.parametrize(("states", "frame", "cursor"), [
    (PLAIN, bytes([5, 0, 0xAA, 0xBB]), True),
    (ADVANCE, bytes([5, 0, 1, 2, 0xAA, 0xBB]), False),  # 2 bytes skipped, no header
    (LOOP, bytes([1, 0, 5, 0, 0xAA, 0xBB]), False),  # a extracted twice, kept once
])
def test_packet_length_counts_the_headers_removed(states: str, frame: bytes, cursor: bool) -> None:
    prog = compile_source(PROGRAM.format(states=states), "t.p4")
    sw = P4Switch(prog)
    sw.inject(0, frame + b"payload")
    sw.run_until_idle()
    (out,) = sw.outputs()
    # b (2 bytes) removed in ingress: packet_length is the frame's length less 2
    length = len(frame) + 7 - 2
    assert out.data == bytes([5, length]) + b"payload"
    assert ("ps.base_len = o\n" in prog.source) is cursor
