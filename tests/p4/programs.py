"""Small v1model programs for the compiler and target tests, from one template: the
headers a test needs, a parser that extracts them, an ingress control of the test's
own text, every other block empty and a deparser that emits them."""

from __future__ import annotations

import string

_TEMPLATE = string.Template("""
#include <core.p4>
#include <v1model.p4>
$headers
struct H { $fields }
struct M { $meta}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { $parse transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
${decls}control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
$ingress
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { $egress }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { $deparse } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""")


def v1model_program(ingress: str, *, headers: str = "header h_t { bit<8> a; bit<8> b; }",
                    fields: str = "h_t h;", meta: str = "", decls: str = "",
                    parse: str = "pk.extract(hdr.h);", deparse: str = "pk.emit(hdr);",
                    egress: str = "apply { }") -> str:
    """The program with `ingress` (declarations and the apply block) as control I.

    `headers` declares the header types and `fields` the members of struct H, which
    `parse` extracts and `deparse` emits; `meta` the members of struct M; `decls` stands
    between the parser and control I (sub-controls, functions, extra types); `egress` is
    control E's body."""
    return _TEMPLATE.substitute(headers=headers, fields=fields, meta=f"{meta} " if meta else "",
                                parse=parse, decls=decls.strip("\n") + "\n" if decls.strip() else "",
                                ingress=ingress.strip("\n"), deparse=deparse, egress=egress)


def ingress_apply(body: str, decls: str = "") -> str:
    """Control I's text for tests that only fill its locals and apply block: egress port
    1, then `body`."""
    return f"    {decls}\n    apply {{ sm.egress_spec = 1; {body} }}"


def e2e_clone_program(when: str) -> str:
    """Every packet to port 1; egress clones it to session 5 when `when` holds (with
    `true`, the clones too: a loop that never ends, on BMv2 as well)."""
    return v1model_program("    apply { sm.egress_spec = 1; }", headers="header h_t { bit<8> a; }",
                           fields="h_t h;",
                           egress=f"apply {{ if ({when}) {{ clone(CloneType.E2E, 5); }} }}")
