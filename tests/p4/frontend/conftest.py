"""Helpers shared by the front-end tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.p4.frontend import P4Error, check_source

PROGRAMS = Path(__file__).with_name("programs")

#: A v1model skeleton; ``{ingress}`` is the body of the ingress control.
SKELETON = """\
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; bit<32> c; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
{ingress}
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), C(), Ig(), Eg(), C(), D()) main;
"""

#: Line number of ``{ingress}``'s first line in SKELETON.
INGRESS_LINE = SKELETON.splitlines().index("{ingress}") + 1


def ingress_program(body: str) -> str:
    return SKELETON.replace("{ingress}", body)


def check_errors(text: str, filename: str = "prog.p4") -> P4Error:
    with pytest.raises(P4Error) as ei:
        check_source(text, filename)
    return ei.value
