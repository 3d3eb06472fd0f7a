"""Code generation details: generated source shape, value semantics, helpers."""

from __future__ import annotations

import os

from emu.p4.api import P4Switch
from emu.p4.target import runtime
from emu.p4.target.program import compile_source
from emu.p4.v1model.hashes import crc16

SKELETON = """
#include <core.p4>
#include <v1model.p4>
header h_t {{ {fields} }}
struct H {{ h_t h; }}
struct M {{ }}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {{
    state start {{ pk.extract(hdr.h); transition accept; }}
}}
control VC(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    {decls}
    apply {{ sm.egress_spec = 1; {body} }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pk, in H hdr) {{ apply {{ pk.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def run(fields: str, body: str, data: bytes, decls: str = "") -> bytes:
    prog = compile_source(SKELETON.format(fields=fields, body=body, decls=decls), "t.p4")
    sw = P4Switch(prog)
    sw.inject(0, data)
    sw.run_until_idle()
    (out,) = sw.outputs()
    return out.data


def test_one_module_no_ast_walk() -> None:
    prog = compile_source(SKELETON.format(fields="bit<8> a;", body="hdr.h.a = 1;", decls=""))
    src = prog.source
    for fn in ("def parse(", "def verify(", "def ingress(", "def egress(", "def compute(",
               "def deparse("):
        assert src.count(fn) == 1
    assert "hdr.h.a = 1" in src


def test_unsigned_wraps_and_signed_arithmetic() -> None:
    out = run("bit<8> a; int<8> s; bit<8> c;",
              "hdr.h.a = hdr.h.a + 8w10; hdr.h.s = hdr.h.s * 2; hdr.h.c = (bit<8>)(hdr.h.s >> 1);",
              bytes([250, 0xC0, 0]))
    assert out == bytes([4, 0x80, 0xC0])


def test_shift_by_width_or_more_is_zero() -> None:
    out = run("bit<8> a; bit<8> n;", "hdr.h.a = hdr.h.a << hdr.h.n;", bytes([0xFF, 9]))
    assert out == bytes([0, 9])


def test_slices_assign_in_place() -> None:
    out = run("bit<16> a;", "hdr.h.a[11:4] = 8w0xAB;", bytes([0xF0, 0x0F]))
    assert out == bytes([0xFA, 0xBF])


def test_out_param_starts_invalid() -> None:
    decls = "action mk(out h_t x) { x.a = 5; }"
    out = run("bit<8> a;", "h_t t; t.setValid(); t.a = 9; mk(t); if (!t.isValid()) { hdr.h.a = 7; }",
              bytes([1]), decls)
    assert out == bytes([7])


def test_fast_crc16_matches_reference() -> None:
    for n in range(0, 64):
        data = os.urandom(n)
        assert runtime.crc16(data) == crc16(data)


def test_cached_hash_is_transparent() -> None:
    h = runtime.cached(crc16, limit=4)
    for n in range(20):
        data = bytes([n, n + 1])
        assert h(data) == crc16(data) == h(data)
