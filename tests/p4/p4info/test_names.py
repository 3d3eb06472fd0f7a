"""Key field names and qualified names, as p4c writes them into P4Info."""

from __future__ import annotations

import pytest

from emu.p4 import names
from emu.p4.frontend import check_source

SOURCE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; @name("renamed") bit<8> b; @name(".abs") bit<8> c; }
header_union u_t { h_t x; h_t y; }
struct headers_t { h_t h; h_t[2] stack; u_t u; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action n() { }
    table t {
        key = {
            hdr.h.a : exact;
            hdr.h.b : exact;
            hdr.h.c : exact;
            hdr.stack[1].a : exact;
            hdr.h.a[3:0] : exact;
            hdr.h.isValid() : exact;
            hdr.u.isValid() : exact;
            hdr.h.a & 0xf0 : ternary;
            meta.m : exact @name("my_key");
        }
        actions = { n; }
    }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_key_field_names() -> None:
    prog = check_source(SOURCE, "names.p4")
    table = prog.controls["I"].tables[0]
    keys = table.prop("key").keys  # type: ignore[union-attr]
    assert [names.key_field_name(k.expr, k.annotations) for k in keys] == [
        "hdr.h.a",
        "hdr.h.renamed",  # a field's @name replaces its name
        "abs",  # an absolute field @name drops the prefix
        "hdr.stack[1].a",
        "hdr.h.a[3:0]",
        "hdr.h.$valid$",
        "hdr.u.$valid$",
        "hdr.h.a & 0xf0",
        "my_key",
    ]


def test_complex_key_raises() -> None:
    prog = check_source(SOURCE.replace("meta.m : exact @name(\"my_key\")", "meta.m + 1 : exact"), "n.p4")
    key = prog.controls["I"].tables[0].prop("key").keys[-1]  # type: ignore[union-attr]
    with pytest.raises(names.KeyNameError):
        names.key_field_name(key.expr, key.annotations)


def test_qualify() -> None:
    class Anno:
        def __init__(self, name: str, *args: object) -> None:
            self.name, self.args = name, list(args)

    assert names.qualify("MyIngress", "ipv4_lpm") == "MyIngress.ipv4_lpm"
    assert names.qualify("MyIngress", "t", [Anno("name", "x")]) == "MyIngress.x"
    assert names.qualify("MyIngress", "t", [Anno("name", ".top")]) == "top"
    assert names.qualify(None, "NoAction") == "NoAction"
