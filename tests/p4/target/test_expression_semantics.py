"""Expression semantics found wrong through p4c's corpus, checked on our own programs."""

from __future__ import annotations

import pytest

from emu.core.clock import VirtualClock
from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

from ..programs import v1model_program

_PROGRAM = v1model_program("""
    apply {
        sm.egress_spec = 1;
        // Left to right: the left operand is read before the call writes it.
        hdr.h.b = hdr.h.a + bump(hdr.h.a);
        // A bool from comparing with a negative int literal: -1 is 8w255 here.
        hdr.h.c = (8w255 == -1) ? 8w1 : 8w0;
        hdr.h.d = (hdr.h.d != -2) ? 8w1 : 8w0;
    }""", headers="header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }", decls="""
bit<8> bump(inout bit<8> x) {
    x = 10;
    return 1;
}""")


def _run(frame: bytes) -> bytes:
    sw = P4Switch(compile_source(_PROGRAM), VirtualClock())
    sw.inject(0, frame)
    sw.run_until_idle()
    return sw.outputs()[0].data


def test_binary_operands_evaluate_left_to_right() -> None:
    out = _run(bytes([3, 0, 0, 0]))
    assert out[0] == 10          # the call's write to a
    assert out[1] == 3 + 1       # a read before the call: 3, not 10


def test_int_literal_compares_after_conversion() -> None:
    assert _run(bytes([0, 0, 0, 0xFE]))[2:] == bytes([1, 0])  # 255 == -1; 0xFE == -2
    assert _run(bytes([0, 0, 0, 0x02]))[3] == 1


# lookahead<T>() gave a signed field or scalar its bits unsigned (int<4> 0xF read as 15,
# not -1; BMv2 sign-extends), found by crosscheck against BMv2.
_LOOKAHEAD = v1model_program(
    "    apply { sm.egress_spec = 1; }",
    headers="""header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct la_t { bit<4> u; int<4> s; bool f; bit<7> rest; }""",
    parse="""la_t l = pk.lookahead<la_t>();
        int<8> sv = pk.lookahead<int<8>>();
        hdr.h.setValid();
        hdr.h.a = (bit<8>)(int<8>)l.s;
        hdr.h.b = (bit<8>)(sv >> 4);
        hdr.h.c = l.f ? 8w1 : 8w0;""")


def test_lookahead_sign_extends_signed_fields_and_scalars() -> None:
    sw = P4Switch(compile_source(_LOOKAHEAD), VirtualClock())
    sw.inject(0, bytes([0xFF, 0x80]))
    sw.inject(0, bytes([0x35, 0x7F]))
    sw.run_until_idle()
    first, second = (o.data for o in sw.outputs())
    assert first[:3] == bytes([0xFF, 0xFF, 1])   # s = -1, sv = -1 >> 4 = -1, f = 1
    assert second[:3] == bytes([0x05, 0x03, 0])  # s = 5, sv = 0x35 >> 4 = 3, f = 0


# setValid() on an invalid header kept its old field values; BMv2's add_header zeroes
# them (p4c's gauntlet_set_invalid-bmv2.p4 and gauntlet_hdr_assign_2-bmv2.p4, crosschecked).
_SET_VALID = v1model_program("""
    apply {
        sm.egress_spec = 1;
        hdr.h.a = 7;
        hdr.h.setInvalid();
        hdr.h.setValid();      // was invalid: a and b are 0 again
        hdr.g.b = 9;
        hdr.g.setValid();      // valid already: a and b kept
    }""", headers="header h_t { bit<8> a; bit<8> b; }", fields="h_t h; h_t g;",
    parse="pk.extract(hdr.h); pk.extract(hdr.g);")


def test_set_valid_zeroes_an_invalid_header_and_keeps_a_valid_one() -> None:
    sw = P4Switch(compile_source(_SET_VALID), VirtualClock())
    sw.inject(0, bytes([1, 2, 3, 4]))
    sw.run_until_idle()
    assert sw.outputs()[0].data == bytes([0, 0, 3, 9])


# A variable initialised from a header, or a conditional choosing between headers,
# aliased its source: a write through the variable changed the header itself
# (p4c's gauntlet_complex_initialization-bmv2.p4, crosschecked with random frames).
_ALIAS = {
    "control local": "    h_t c = hdr.h;\n    apply { sm.egress_spec = 1; c.a = 9; hdr.h.b = c.a; }",
    "statement": "    apply { sm.egress_spec = 1; h_t c = hdr.h; c.a = 9; hdr.h.b = c.a; }",
    "conditional": "    apply { sm.egress_spec = 1; h_t c = hdr.h.a == 1 ? hdr.h : hdr.h; c.a = 9;"
                   " hdr.h.b = c.a; }",
    "assigned conditional": "    apply { sm.egress_spec = 1; h_t c; c = hdr.h.a == 1 ? hdr.h : hdr.h;"
                            " c.a = 9; hdr.h.b = c.a; }",
}


@pytest.mark.parametrize("case", sorted(_ALIAS))
def test_a_variable_is_a_copy_of_the_header_it_was_given(case: str) -> None:
    sw = P4Switch(compile_source(v1model_program(_ALIAS[case])), VirtualClock())
    sw.inject(0, bytes([1, 2]))
    sw.run_until_idle()
    assert sw.outputs()[0].data == bytes([1, 9])  # a unchanged; b from the copy


# Assigning an invalid header (here the copy-out of an `out` parameter never written)
# replaced the fields too; BMv2's assign_header only makes the target invalid, so a later
# read of its (undefined) fields sees the old values there (p4c's
# gauntlet_invalid_hdr_assign-bmv2.p4, crosschecked with random frames).
_INVALID_ASSIGN = v1model_program("""
    apply {
        sm.egress_spec = 1;
        never_written(hdr.h);
        hdr.g.a = hdr.h.a;
    }""", headers="header h_t { bit<8> a; bit<8> b; }", fields="h_t h; h_t g;",
    parse="pk.extract(hdr.h); pk.extract(hdr.g);", decls="void never_written(out h_t x) { }")


def test_assigning_an_invalid_header_keeps_the_target_fields() -> None:
    sw = P4Switch(compile_source(_INVALID_ASSIGN), VirtualClock())
    sw.inject(0, bytes([1, 2, 3, 4]))
    sw.run_until_idle()
    assert sw.outputs()[0].data == bytes([1, 4])  # h invalid (not emitted); g.a = old h.a


# A parameter's default `{ 0, 7 }` of struct type stayed a tuple: reading a field of it
# raised at run time and every packet was dropped (p4c's issue2303.p4, crosschecked).
_DEFAULT_STRUCT = v1model_program(
    "    Set() s;\n    apply { sm.egress_spec = 1; s.apply(hdr.h); }",
    decls="""struct pair_t { bit<8> x; bit<8> y; }
control Set(inout h_t h, in pair_t p = { 0, 7 }) {
    apply { h.a = p.y; }
}""")


def test_a_struct_default_argument_is_a_struct() -> None:
    sw = P4Switch(compile_source(_DEFAULT_STRUCT), VirtualClock())
    sw.inject(0, bytes([1, 2]))
    sw.run_until_idle()
    assert sw.outputs()[0].data == bytes([7, 2])


# A struct field of tuple type started as the integer 0, so writing into it raised and
# every packet was dropped (p4c's issue4057.p4, crosschecked); a copy of such a struct,
# or a variable given the whole tuple (which used to share them), must not share the
# headers inside the tuple.
_TUPLE_FIELD = v1model_program("""
    apply {
        sm.egress_spec = 1;
        m.t.n[0][1].v = hdr.h.a;
        M c = m;
        c.t.n[0][1].v = 99;
        tuple<e_t[2], bool> d = m.t.n;
        d[0][1].v = 98;
        hdr.h.b = m.t.n[0][1].v + (m.t.n[1] ? 8w1 : 8w0);
    }""", headers="""header h_t { bit<8> a; bit<8> b; }
header e_t { bit<8> v; }
struct holder_t { tuple<e_t[2], bool> n; }""", meta="holder_t t;")


def test_a_tuple_field_starts_as_its_defaults_and_is_copied() -> None:
    sw = P4Switch(compile_source(_TUPLE_FIELD), VirtualClock())
    sw.inject(0, bytes([5, 0]))
    sw.run_until_idle()
    assert sw.outputs()[0].data == bytes([5, 5])  # written through m, not the copies c, d

