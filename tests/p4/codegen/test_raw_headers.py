"""Headers never rewritten after extraction deparse as their extracted bytes; every way
of writing a header's contents makes its type re-packed from the fields."""

from __future__ import annotations

import pytest

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

from ..programs import ingress_apply, v1model_program

FRAME = bytes([0x11, 0xF0, 0x85, 0xAB, 0xCD]) + b"payload"


def _run(body: str, decls: str = "", subs: str = "", tables: list[tuple[str, str]] = (),
         ) -> tuple[bytes, str]:
    src = v1model_program(
        ingress_apply(body, decls), decls=subs, meta="bit<8> m;", fields="a_t a; b_t b;",
        headers="header a_t { bit<8> x; int<8> s; bool f; bit<7> y; }\nheader b_t { bit<16> v; }",
        parse="pk.extract(hdr.a); pk.extract(hdr.b);", deparse="pk.emit(hdr.a); pk.emit(hdr.b);")
    prog = compile_source(src, "t.p4")
    sw = P4Switch(prog)
    for table, action in tables:
        sw.table_set_default(table, action, [])
    sw.inject(0, FRAME)
    sw.run_until_idle()
    (out,) = sw.outputs()
    return out.data, prog.source


def test_untouched_headers_deparse_as_their_bytes() -> None:
    out, src = _run("m.m = hdr.a.x + (bit<8>)hdr.b.v;")
    assert out == FRAME
    deparse = src[src.index("def deparse("):]
    assert "_raw" in deparse and ".pack(" not in deparse.split("\ndef ")[0]


@pytest.mark.parametrize(("body", "decls", "subs", "want"), [
    ("hdr.a.x = 1;", "", "", bytes([0x01, 0xF0, 0x85, 0xAB, 0xCD])),
    ("hdr.b = {16w7};", "", "", bytes([0x11, 0xF0, 0x85, 0, 7])),
    # a scalar inout argument of an action, copied out into the field
    ("set(hdr.b.v);", "action set(inout bit<16> v) { v = 2; }", "", bytes([0x11, 0xF0, 0x85, 0, 2])),
    # an out argument of an extern
    ("random(hdr.b.v, 16w5, 16w5);", "", "", bytes([0x11, 0xF0, 0x85, 0, 5])),
    # a sub-control writing through its own parameter
    ("S.apply(hdr.a);", "", "control S(inout a_t h) { apply { h.y = 0; } }",
     bytes([0x11, 0xF0, 0x80, 0xAB, 0xCD])),
    # a whole header from a local initialised from an expression
    ("b_t t = {16w9}; hdr.b = t;", "", "", bytes([0x11, 0xF0, 0x85, 0, 9])),
])
def test_written_headers_deparse_their_fields(body: str, decls: str, subs: str,
                                              want: bytes) -> None:
    out, _ = _run(body, decls, subs)
    assert out == want + b"payload"


def test_table_action_argument_writes_the_field() -> None:
    decls = """action set(inout bit<16> v) { v = 3; }
        table t { key = { hdr.a.x: exact; } actions = { set(hdr.b.v); } default_action = set(hdr.b.v); }"""
    out, _ = _run("t.apply();", decls)
    assert out == bytes([0x11, 0xF0, 0x85, 0, 3]) + b"payload"


def test_a_header_nothing_reads_is_not_decoded() -> None:
    out, src = _run("hdr.a.x = 1;")
    assert out == bytes([0x01, 0xF0, 0x85, 0xAB, 0xCD]) + b"payload"
    start = src.index("def _ex", src.index("class C2_b_t"))
    extract = src[start:src.index("def _emit", start)]
    assert "unpack_from" not in extract and "self.v =" not in extract


def test_a_header_read_as_a_whole_value_is_decoded() -> None:
    # The identity hash of {hdr.b} reads b's fields without naming one.
    out, _ = _run("hash(hdr.a.x, HashAlgorithm.identity, 8w0, {hdr.b}, 9w256);")
    assert out == bytes([0xCD, 0xF0, 0x85, 0xAB, 0xCD]) + b"payload"
