"""Byte-aligned field groups and their struct codes: a group no single code holds joins
the next when together they fill one (Ethernet's source address and EtherType as one
"Q"); extraction, deparsing and hashing keep every field's bits."""

from __future__ import annotations

import struct

from emu.p4.api import P4Switch
from emu.p4.codegen.classes import field_groups, struct_format
from emu.p4.target.program import compile_source

from ..programs import v1model_program


def test_groups_join_into_one_code() -> None:
    g = field_groups([("d", 48), ("s", 48), ("t", 16)])
    assert g == [(48, [("d", 48)]), (64, [("s", 48), ("t", 16)])]
    assert struct_format(g) == ("IHQ", 14)
    # 3 + 1 bytes fill an "I"; 6 + 6 fill none, so they stay apart
    assert [gw for gw, _ in field_groups([("a", 24), ("b", 8)])] == [32]
    assert [gw for gw, _ in field_groups([("a", 48), ("b", 48)])] == [48, 48]
    # sub-byte fields still group up to a byte boundary first
    assert field_groups([("x", 4), ("y", 4), ("z", 16)]) == [(8, [("x", 4), ("y", 4)]), (16, [("z", 16)])]


PROGRAM = v1model_program("""
    apply {
        sm.egress_spec = (bit<9>)hdr.e.t[3:0];
        hash(m.h, HashAlgorithm.identity, 32w0, { hdr.e.s[15:0], hdr.e.t }, 33w0x100000000);
        hdr.e.d = hdr.e.s + 1;
        hdr.e.s = (bit<48>)m.h;
    }""", headers="header e_t { bit<48> d; bit<48> s; bit<16> t; }", fields="e_t e;",
    meta="bit<32> h;", parse="pk.extract(hdr.e);", deparse="pk.emit(hdr.e);")


def test_a_joined_group_extracts_deparses_and_hashes_each_field() -> None:
    prog = compile_source(PROGRAM, "t.p4")
    sw = P4Switch(prog)
    s, t = 0xA1B2C3D4E5F6, 0x8803
    sw.inject(0, struct.pack("!6s6sH", bytes(6), s.to_bytes(6, "big"), t) + b"x")
    sw.run_until_idle()
    (out,) = sw.outputs()
    assert out.port == 3
    d_out = (s + 1).to_bytes(6, "big")
    s_out = ((s & 0xFFFF) << 16 | t).to_bytes(6, "big")  # the identity hash of {s[15:0], t}
    assert out.data == d_out + s_out + t.to_bytes(2, "big") + b"x"
