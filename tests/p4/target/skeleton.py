"""A v1model program around one ingress control, for target tests: one header h_t
(bit<8> a, b) extracted and emitted, every other block empty, egress_spec left to the
ingress text."""

from __future__ import annotations

_TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
INGRESS
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def one_ingress_program(ingress: str) -> str:
    """The program with `ingress` (declarations and the apply block) as control I."""
    return _TEMPLATE.replace("INGRESS", ingress.strip("\n"))
