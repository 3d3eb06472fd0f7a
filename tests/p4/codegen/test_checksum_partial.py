"""verify_checksum keeps the partial sum of the fields nothing writes after parsing and
update_checksum adds the others to it (ExternLowerer.csum_sum): every way of writing a
field or a whole header must make update see the current values."""

from __future__ import annotations

import struct

import pytest

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source
from emu.p4.v1model.hashes import csum16

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<16> a; bit<8> b; bit<8> c; bit<16> d; bit<16> ck; }}
struct H {{ h_t h; }}
struct M {{ bit<16> v; }}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {{
    state start {{ pk.extract(hdr.h); transition accept; }}
}}
control VC(inout H hdr, inout M m) {{
    apply {{ verify_checksum(hdr.h.isValid(), {{ hdr.h.a, hdr.h.b, hdr.h.c, hdr.h.d }},
                             hdr.h.ck, HashAlgorithm.csum16); }}
}}
{subs}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    {decls}
    apply {{
        if (sm.checksum_error == 1) {{ mark_to_drop(sm); return; }}
        sm.egress_spec = 1;
        hdr.h.c = hdr.h.c - 1;
        {body}
    }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ {egress} }} }}
control CC(inout H hdr, inout M m) {{
    apply {{ update_checksum(hdr.h.isValid(), {{ hdr.h.a, hdr.h.b, hdr.h.c, hdr.h.d }},
                             hdr.h.ck, HashAlgorithm.csum16); }}
}}
control D(packet_out pk, in H hdr) {{ apply {{ pk.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _frame(a: int, b: int, c: int, d: int, ck: int | None = None) -> bytes:
    body = struct.pack("!HBBH", a, b, c, d)
    return body + struct.pack("!H", csum16(body) if ck is None else ck) + b"pay"


def _run(frame: bytes, body: str = "", decls: str = "", subs: str = "", egress: str = ""
         ) -> tuple[list[bytes], str]:
    prog = compile_source(PROGRAM.format(body=body, decls=decls, subs=subs, egress=egress), "t.p4")
    sw = P4Switch(prog)
    sw.inject(0, frame)
    sw.run_until_idle()
    return [o.data for o in sw.outputs()], prog.source


def test_update_reuses_the_verified_sum_of_unwritten_fields() -> None:
    (out,), src = _run(_frame(0x1234, 7, 9, 0xBEEF))
    assert out == _frame(0x1234, 7, 8, 0xBEEF)  # c written, the checksum follows
    assert "._csp0 = " in src and "if _cs" in src  # the partial sum is in use
    # a wrong checksum is still caught (the sum verify compares is the whole one)
    assert _run(_frame(0x1234, 7, 9, 0xBEEF, ck=0x1111))[0] == []


@pytest.mark.parametrize(("body", "decls", "subs", "egress", "want"), [
    ("hdr.h.a = 5;", "", "", "", _frame(5, 7, 8, 0xBEEF)),
    ("", "", "", "hdr.h.d = 3;", _frame(0x1234, 7, 8, 3)),
    # a scalar inout argument of an action, copied out into the field
    ("set(hdr.h.d);", "action set(inout bit<16> v) { v = 2; }", "", "", _frame(0x1234, 7, 8, 2)),
    # an out argument of an extern
    ("random(hdr.h.a, 16w6, 16w6);", "", "", "", _frame(6, 7, 8, 0xBEEF)),
    # a sub-control writing through its own parameter
    ("S.apply(hdr.h);", "", "control S(inout h_t x) { apply { x.b = 1; } }", "",
     _frame(0x1234, 1, 8, 0xBEEF)),
    # a whole header assigned
    ("hdr.h = {16w1, 8w2, 8w3, 16w4, 16w0};", "", "", "", _frame(1, 2, 3, 4)),
    ("h_t t = hdr.h; t.d = 9; hdr.h = t;", "", "", "", _frame(0x1234, 7, 8, 9)),
])
def test_every_kind_of_write_reaches_the_update(body: str, decls: str, subs: str,
                                                egress: str, want: bytes) -> None:
    (out,), _ = _run(_frame(0x1234, 7, 9, 0xBEEF), body, decls, subs, egress)
    assert out == want


def test_header_written_whole_sums_every_field() -> None:
    (out,), src = _run(_frame(0x1234, 7, 9, 0xBEEF), "hdr.h.setValid();")
    assert out == _frame(0x1234, 7, 8, 0xBEEF)
    assert "_csp" not in src


def test_verify_over_fields_that_pack_through_temporaries() -> None:
    """48-bit fields at an odd byte offset pack as two struct codes each, through a
    temporary; the temporaries of the slow path (a leaf's header invalid) were emitted
    between `else:` and its body: an IndentationError at compile time."""
    src = (PROGRAM.replace("header h_t {{ bit<16> a; bit<8> b; bit<8> c; bit<16> d; bit<16> ck; }}",
                           "header h_t {{ bit<8> a; bit<48> b; bit<48> c; bit<8> d; bit<16> ck; }}")
           .format(body="", decls="", subs="", egress=""))
    prog = compile_source(src, "t.p4")
    body = struct.pack("!B", 1) + (0x0A0B0C0D0E0F).to_bytes(6, "big") + \
        (0x112233445566).to_bytes(6, "big") + b"\x07"
    sw = P4Switch(prog)
    for ck in (csum16(body), csum16(body) ^ 1):
        sw.inject(0, body + struct.pack("!H", ck) + b"pay")
    sw.run_until_idle()
    (out,) = [o.data for o in sw.outputs()]  # the bad checksum is dropped
    # ingress writes c - 1, update_checksum follows
    want = body[:7] + (0x112233445565).to_bytes(6, "big") + b"\x07"
    assert out == want + struct.pack("!H", csum16(want)) + b"pay"
