"""Code generation details: generated source shape, value semantics, helpers."""

from __future__ import annotations

import os
import zlib

import pytest

from emu.p4.api import P4Switch
from emu.p4.target import runtime
from emu.p4.target.program import compile_source
from emu.p4.v1model.hashes import crc16, identity

from ..programs import ingress_apply, v1model_program


def program(fields: str, body: str, decls: str = "", headers: str = "") -> str:
    """One header h_t of `fields` (after `headers`), control I's `decls` and, after egress
    port 1, its `body`."""
    return v1model_program(ingress_apply(body, decls), headers=f"{headers}header h_t {{ {fields} }}",
                           deparse="pk.emit(hdr.h);")


def run(fields: str, body: str, data: bytes, decls: str = "") -> bytes:
    prog = compile_source(program(fields, body, decls), "t.p4")
    sw = P4Switch(prog)
    sw.inject(0, data)
    sw.run_until_idle()
    (out,) = sw.outputs()
    return out.data


def test_one_module_no_ast_walk() -> None:
    prog = compile_source(program("bit<8> a;", "hdr.h.a = 1;"))
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


NAMING = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header o_t { bit<8> x; }
struct H { h_t h; o_t o; }
struct M { bit<8> hash1; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.b = v; }
    table k {
        key = { hdr.o.isValid(): exact; hdr.h.a: ternary @name("alpha"); hdr.h.b[3:0]: exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    table sel {
        key = { hdr.h.a: exact; m.hash1: selector; }
        actions = { set; NoAction; }
        @name("prof") implementation = action_selector(HashAlgorithm.identity, 32w16, 32w8);
    }
    apply { k.apply(); sel.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_key_fields_and_property_instances_use_p4info_names() -> None:
    from emu.p4.frontend import check_source
    from emu.p4.p4info import generate_p4info

    info = generate_p4info(check_source(NAMING))
    sw = P4Switch(compile_source(NAMING))
    p4info_keys = {t.preamble.name: [f.name for f in t.match_fields] for t in info.tables}
    assert p4info_keys["I.k"] == ["hdr.o.$valid$", "alpha", "hdr.h.b[3:0]"]
    for t in info.tables:
        table = sw.table(t.preamble.name)
        assert [f.name for f in table.match_fields] == p4info_keys[t.preamble.name]
    # the anonymous selector is named by the property's @name, as in P4Info
    assert [p.preamble.name for p in info.action_profiles] == ["prof"]
    assert "prof" in sw.sw.action_profiles


def test_fields_wider_than_eight_bytes_extract_emit_and_hash() -> None:
    # a byte-aligned group over 8 bytes goes through struct as "16s" (bytes), not an int
    a = bytes(range(1, 17))
    out = run("bit<128> a; bit<32> c;",
              "hdr.h.a = hdr.h.a + 1; "
              "hash(hdr.h.c, HashAlgorithm.crc32, 32w0, { hdr.h.a }, 32w0xFFFFFFFF);",
              a + bytes(4))
    a1 = (int.from_bytes(a, "big") + 1).to_bytes(16, "big")
    assert out[:16] == a1
    assert int.from_bytes(out[16:], "big") == zlib.crc32(a1) % 0xFFFFFFFF


@pytest.mark.parametrize("fields, data", [
    ("bit<16> a; bit<8> b; bit<40> r;", bytes([0xAB, 0xCD, 0x7E]) + bytes(5)),  # inline
    ("bit<4> a; bit<4> b; bit<56> r;", bytes([0x9C]) + bytes(7)),  # two nibbles: inline
    ("bit<60> a; bit<8> b; bit<60> r;",  # 68 bits: bytes, then the first 8 of them
     bytes(range(0xF1, 0xF9)) + bytes(8)),
    ("bit<12> a; bit<8> b; bit<44> r;", bytes([0x12, 0x34, 0x56]) + bytes(5)),  # 20 bits
])
def test_identity_hash_equals_the_reference_function(fields: str, data: bytes) -> None:
    """The identity hash of a whole-byte list of up to 8 bytes is computed without
    building bytes; every shape must give what hashes.identity gives on the packed list."""
    wa, wb, wr = (int(f.split(">")[0].split("<")[1]) for f in fields.split(";")[:3])
    # Locals, not header fields: a header's fields are packed only while it is valid.
    body = (f"bit<{wa}> x = hdr.h.a; bit<{wb}> y = hdr.h.b; hdr.h.r = 0; "
            "hash(hdr.h.r, HashAlgorithm.identity, 8w3, { x, y }, 64w0xFFFFFFFFFFF1); "
            "hdr.h.a = 0; hdr.h.b = 0;")
    out = run(fields, body, data)
    va = int.from_bytes(data, "big") >> (len(data) * 8 - wa)
    vb = (int.from_bytes(data, "big") >> (len(data) * 8 - wa - wb)) & ((1 << wb) - 1)
    pad = -(wa + wb) % 8  # BMv2 packs a field list MSB first, zero-padded at its end
    packed = (((va << wb) | vb) << pad).to_bytes((wa + wb + pad) // 8, "big")
    want = (3 + identity(packed) % 0xFFFFFFFFFFF1) & ((1 << wr) - 1)
    assert int.from_bytes(out, "big") & ((1 << wr) - 1) == want


def test_keyless_table_runs_its_current_default_and_always_misses() -> None:
    """A keyless table's code reads its default entry without a lookup: a default set
    by the control plane after the switch was built applies, and apply().hit is false."""
    decls = """action put(bit<8> v) { hdr.h.a = v; }
        table t { actions = { put; NoAction; } default_action = put(1); }"""
    body = "if (t.apply().hit) { hdr.h.b = 1; } else { hdr.h.b = 2; }"
    prog = compile_source(program("bit<8> a; bit<8> b;", body, decls), "t.p4")
    sw = P4Switch(prog)
    sw.inject(0, bytes(2))
    sw.run_until_idle()
    sw.table_set_default("t", "put", [7])
    sw.inject(0, bytes(2))
    sw.run_until_idle()
    assert [o.data for o in sw.outputs()] == [bytes([1, 2]), bytes([7, 2])]


def test_counter_and_register_indices_out_of_range_are_ignored() -> None:
    """Inlined counter.count and register.write ignore an index past the end of the
    array (an unsigned index is checked with one comparison)."""
    decls = "counter(4, CounterType.packets) c; register<bit<8>>(4) r; bit<8> v;"
    body = ("c.count((bit<32>) hdr.h.a); r.write((bit<32>) hdr.h.a, hdr.h.b); "
            "r.read(v, 3); hdr.h.a = v;")
    prog = compile_source(program("bit<8> a; bit<8> b;", body, decls), "t.p4")
    sw = P4Switch(prog)
    for a, b in ((3, 9), (4, 5), (200, 7), (255, 6)):
        sw.inject(0, bytes([a, b]))
    sw.run_until_idle()
    assert [o.data[0] for o in sw.outputs()] == [9, 9, 9, 9]
    assert [sw.counter_read("c", i)[0] for i in range(4)] == [0, 0, 0, 1]


@pytest.mark.parametrize("decl, use, message", [
    ("register<bit<32>>(1000000000) r;", "r.write(0, 1);", "register 'I.r' of 1000000000 cells"),
    ("counter(4000000000, CounterType.packets) c;", "c.count(0);", "counter 'I.c' of 4000000000 cells"),
    ("meter(2000000, MeterType.packets) mt; bit<2> k;", "mt.execute_meter(0, k);", "meter 'I.mt' of 2000000 cells"),
])
def test_an_extern_array_too_large_to_allocate_is_a_compile_error(decl: str, use: str, message: str) -> None:
    """The switch allocates every cell when it starts: a register of 10^9 cells once got
    through compilation and ended in a MemoryError there."""
    from emu.p4.frontend import P4Error

    with pytest.raises(P4Error) as ei:
        compile_source(program("bit<8> a;", use, decl), "t.p4")
    (d,) = ei.value.diagnostics
    assert message in d.message and "at most" in d.message
    assert compile_source(program("bit<8> a;", use, decl.replace("1000000000", "1024")
                                  .replace("4000000000", "1024").replace("2000000", "1024")), "t.p4")


def test_an_empty_range_in_a_table_entry_is_a_compile_error_at_the_range() -> None:
    """`255..8w256` is 255..0 once the bound is an 8-bit value (p4c only warns): the
    switch refused the entry when it started, with a traceback; BMv2 will not load it."""
    from emu.p4.frontend import P4Error

    decls = """action a() { }
        table t { key = { hdr.h.a: range; } actions = { a; }
                  const entries = { 255..8w256 : a(); 1..2 : a(); } }"""
    src = program("bit<8> a;", "t.apply();", decls)
    with pytest.raises(P4Error) as ei:
        compile_source(src, "t.p4")
    (d,) = ei.value.diagnostics
    assert "range 255..0 of a table entry matches nothing" in d.message
    line = src.splitlines()[d.line - 1]
    assert line[d.col - 1:].startswith("..8w256")
    assert compile_source(src.replace("255..8w256", "3..8w255"), "t.p4")


@pytest.mark.parametrize("entries, says", [
    # two entries the same once 0x1ff is a bit<8> 0xff, at one priority
    ("priority=5: 0xff &&& 0xff : a(); priority=5: 0x1ff &&& 0xff : a();",
     "entry 2 of table I.t: an entry with that match and priority exists"),
    ("priority=4294967296: 1 &&& 0xff : a();",
     "entry 1 of table I.t: priority must be in 1..2147483647"),
])
def test_an_initial_entry_the_switch_would_refuse_is_a_compile_error(entries: str,
                                                                     says: str) -> None:
    """Such programs compiled, then the switch would not start (a TableError traceback);
    BMv2 will not load them either."""
    from emu.p4.frontend import P4Error

    decls = f"""action a() {{ }}
        table t {{ key = {{ hdr.h.a: ternary; }} actions = {{ a; }} entries = {{ {entries} }} }}"""
    src = program("bit<8> a;", "t.apply();", decls)
    with pytest.raises(P4Error) as ei:
        compile_source(src, "t.p4")
    (d,) = ei.value.diagnostics
    assert says in d.message and d.line == src.count("\n", 0, src.index("entries = {")) + 1


def test_a_key_of_width_0_matches_its_one_value() -> None:
    """p4c and BMv2 take a bit<0> key; the switch refused it when it started."""
    decls = """action set(bit<8> v) { hdr.h.b = v; }
        table t { key = { m.z: exact; hdr.h.a: exact; } actions = { set; }
                  const entries = { (0, 7) : set(9); } }"""
    src = v1model_program(ingress_apply("t.apply();", decls), headers="header h_t { bit<8> a; "
                          "bit<8> b; }", meta="bit<0> z;", deparse="pk.emit(hdr.h);")
    prog = compile_source(src, "t.p4")
    sw = P4Switch(prog)
    for a in (7, 8):
        sw.inject(0, bytes([a, 1]))
    sw.run_until_idle()
    assert [o.data for o in sw.outputs()] == [bytes([7, 9]), bytes([8, 1])]


def test_a_register_of_struct_cells_is_a_compile_error_at_its_declaration() -> None:
    """Its cells were ints: the first write of a struct value (p4c's issue907-bmv2.p4)
    was a pipeline error on every packet. p4c-bm2-ss refuses such a register too."""
    from emu.p4.frontend import P4Error

    decls = "struct S { bit<32> f; }\n"
    with pytest.raises(P4Error) as ei:
        compile_source(program("bit<8> a;", "S s = { 7 }; r.write(0, s);", "register<S>(4) r;")
                       .replace("header h_t", decls + "header h_t", 1), "t.p4")
    (d,) = ei.value.diagnostics
    assert "register 'I.r' with cells of type S" in d.message and (d.line, d.col) > (0, 0)
    assert "not supported by the embedded v1model target" in d.message


def test_lvalue_index_is_evaluated_before_the_right_hand_side() -> None:
    # p4c orders the left side's index first (gauntlet_index_7-bmv2): f() resets i after
    decls = "bit<8> f(inout bit<8> i) { i = 0; return 9; }"
    fields = "bit<8> i; bit<8> x0; bit<8> x1;"
    body = ("e_t[2] st; st[0].setValid(); st[1].setValid(); st[0].v = 0; st[1].v = 0; "
            "st[hdr.h.i].v = f(hdr.h.i); hdr.h.x0 = st[0].v; hdr.h.x1 = st[1].v;")
    prog = compile_source(program(fields, body, decls, headers="header e_t { bit<8> v; }\n"), "t.p4")
    sw = P4Switch(prog)
    sw.inject(0, bytes([1, 0, 0]))
    sw.run_until_idle()
    (o,) = sw.outputs()
    assert o.data == bytes([0, 0, 9])


VARBIT = v1model_program("""
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.ParserInvalidArgument) { hdr.l.err = 6; }
        else if (sm.parser_error == error.HeaderTooShort) { hdr.l.err = 4; }
    }""", headers="header l_t { bit<8> len; bit<8> err; }\nheader v_t { varbit<16> opt; }",
    fields="l_t l; v_t v;", parse="pk.extract(hdr.l); pk.extract(hdr.v, (bit<32>)hdr.l.len);",
    deparse="pk.emit(hdr.l);")


def test_varbit_extract_of_a_fractional_byte_length_is_an_invalid_argument() -> None:
    # BMv2 extracts whole bytes: 7 bits is ParserInvalidArgument, over the maximum HeaderTooShort
    sw = P4Switch(compile_source(VARBIT, "t.p4"))
    for n, err in ((8, 0), (7, 6), (24, 4)):
        sw.inject(0, bytes([n, 0, 0xAA, 0xBB, 0xCC]))
        sw.run_until_idle()
        (o,) = sw.outputs(clear=True)
        assert o.data[:2] == bytes([n, err])


CTOR_BLOCK = v1model_program("""
    Inc() inc;
    Twice(inc) a;
    Twice(inc) b;
    apply { sm.egress_spec = 1; a.apply(hdr.h.x); b.apply(hdr.h.x); }""",
    headers="header h_t { bit<16> x; }", deparse="pk.emit(hdr.h);", decls="""
control step_t(inout bit<16> x);
control Inc(inout bit<16> x) {
    counter(32w4, CounterType.packets) hits;
    apply { x = x + 1; hits.count(32w1); }
}
control Twice(inout bit<16> x)(step_t s) {
    apply { x = x << 1; s.apply(x); }
}""")


def test_control_instance_passed_as_constructor_argument() -> None:
    # issue1566-bmv2's form: both users of `inc` share its counter
    sw = P4Switch(compile_source(CTOR_BLOCK, "t.p4"))
    sw.inject(0, bytes([0, 3]))
    sw.run_until_idle()
    (o,) = sw.outputs()
    assert o.data == ((3 * 2 + 1) * 2 + 1).to_bytes(2, "big")
    assert sw.counter_read("I.inc.hits", 1)[0] == 2


def test_for_loops_with_break_and_continue() -> None:
    decls = """
    action count_odd() {
        hdr.h.b = 0;
        for (bit<8> i = 0; i < hdr.h.a; i = i + 1) {
            if ((i & 1) == 0) { continue; }
            if (i == 7) { break; }
            hdr.h.b = hdr.h.b + 1;
        }
    }"""
    body = "count_odd(); bit<8> n = 0; for (bit<8> j = 0, bit<8> k = 3; j < k; j = j + 1, k = k + 1) " \
           "{ n = n + 1; if (n == 5) { break; } } hdr.h.c = n;"
    assert run("bit<8> a; bit<8> b; bit<8> c;", body, bytes([6, 0, 0]), decls) == bytes([6, 3, 5])
    # odd i below 7 only: 1, 3, 5
    assert run("bit<8> a; bit<8> b; bit<8> c;", body, bytes([20, 0, 0]), decls) == bytes([20, 3, 5])


_SM_EGRESS = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> a; bit<32> b; }
struct H { h_t h; }
struct M { standard_metadata_t copy; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { %s }
}
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _egress_out(body: str) -> tuple[bytes, str]:
    prog = compile_source(_SM_EGRESS % body, "t.p4")
    sw = P4Switch(prog)
    sw.clock.advance(5_000_000)  # timestamps are not 0
    sw.inject(0, bytes(8))
    sw.run_until_idle()
    (out,) = sw.outputs()
    egress = prog.source[prog.source.index("def run_egress"):]
    return out.data, egress


def test_unread_standard_metadata_fields_are_not_set_in_egress() -> None:
    data, egress = _egress_out("hdr.h.a = (bit<32>)sm.egress_port;")
    assert data[:4] == (1).to_bytes(4, "big")
    assert "egress_global_timestamp" not in egress and "enq_qdepth" not in egress


def test_standard_metadata_used_whole_keeps_every_field() -> None:
    # Copied as a struct, then read through the copy: every field must be set.
    data, egress = _egress_out(
        "m.copy = sm; hdr.h.a = m.copy.egress_global_timestamp[31:0]; hdr.h.b = (bit<32>)m.copy.egress_port;")
    assert int.from_bytes(data[:4], "big") == 5000  # us
    assert data[4:8] == (1).to_bytes(4, "big")
    assert "egress_global_timestamp" in egress


def test_standard_metadata_copied_whole_sets_every_field() -> None:
    _, egress = _egress_out("m.copy = sm;")  # no field is named, yet all are read
    for f in ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
              "egress_global_timestamp", "packet_length"):
        assert f"sm.{f} =" in egress


def _module_state() -> dict[str, str]:
    """repr of every mutable module-level value of the code generator's modules."""
    import sys

    out = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith("emu.p4.codegen") and mod is not None:
            for k, v in vars(mod).items():
                if isinstance(v, dict | list | set):
                    out[f"{name}.{k}"] = repr(v)
    return out


def test_lowering_keeps_no_state_between_compilations() -> None:
    """The generated source does not depend on what was compiled before, and lowering
    changes no module-level state (its memo lives in the per-compilation Lowerer)."""
    from emu.p4.codegen import lower
    from emu.p4.frontend import check_source

    exits = program("bit<8> a;", "if (hdr.h.a == 1) { a1(); }", "action a1() { exit; }")
    alone = lower(check_source(exits, "t.p4"))[0]
    lower(check_source(NAMING))  # something else first, then the same program again
    before = _module_state()
    again = lower(check_source(exits, "t.p4"))[0]
    assert _module_state() == before
    assert again == alone


def test_a_program_without_main_is_an_error_at_its_file() -> None:
    """No `main`: the error named `<builtin>:0:0`; it names the program's file."""
    from emu.p4.frontend import P4Error

    with pytest.raises(P4Error) as ei:
        compile_source("#include <core.p4>\nheader h_t { bit<8> a; }\n", "nomain.p4")
    assert str(ei.value).startswith("nomain.p4:1:1: error: program has no 'main' V1Switch"), \
        str(ei.value)
