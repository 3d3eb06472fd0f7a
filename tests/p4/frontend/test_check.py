"""Checker: diagnostics (exact positions and carets), types, constant folding."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.p4.frontend import ast as A
from emu.p4.frontend import check_source
from emu.p4.frontend import types as T

from .conftest import INGRESS_LINE, check_errors, ingress_program

INVALID = Path(__file__).resolve().parents[1] / "invalid"


def _first(text: str) -> tuple[int, int, str, str]:
    err = check_errors(text)
    d = err.diagnostics[0]
    return d.line, d.col, d.message, d.render()


def test_unknown_name() -> None:
    prog = ingress_program("    apply {\n        hdr.h.a = nosuch + 1;\n    }")
    line, col, msg, text = _first(prog)
    assert (line, col) == (INGRESS_LINE + 1, 19)
    assert msg == "unknown name 'nosuch'"
    assert text.splitlines() == [
        f"prog.p4:{INGRESS_LINE + 1}:19: error: unknown name 'nosuch'",
        "        hdr.h.a = nosuch + 1;",
        "                  ^",
    ]


def test_width_mismatch_in_assignment() -> None:
    prog = ingress_program("    apply {\n        hdr.h.a = hdr.h.b;\n    }")
    line, col, msg, text = _first(prog)
    assert (line, col) == (INGRESS_LINE + 1, 19)
    assert "cannot assign a value of type 'bit<16>' to 'bit<8>' without a cast" in msg
    assert text.splitlines()[-1] == " " * 18 + "^"


def test_width_mismatch_in_arithmetic() -> None:
    prog = ingress_program("    apply {\n        hdr.h.b = hdr.h.b + hdr.h.a;\n    }")
    line, col, msg, _ = _first(prog)
    assert (line, col) == (INGRESS_LINE + 1, 27)
    assert "operands of '+' must have the same type: 'bit<16>' and 'bit<8>'" in msg


def test_bad_cast() -> None:
    prog = ingress_program("    apply {\n        bool b = (bool)hdr.h.a;\n    }")
    line, col, msg, _ = _first(prog)
    assert (line, col) == (INGRESS_LINE + 1, 18)
    assert msg == "cannot cast 'bit<8>' to 'bool'"


def test_assignment_to_const() -> None:
    prog = ingress_program("    const bit<8> K = 3;\n    apply {\n        K = 4;\n    }")
    line, col, msg, _ = _first(prog)
    assert (line, col) == (INGRESS_LINE + 2, 9)
    assert msg == "cannot assign to constant 'K'"


def test_wrong_argument_count() -> None:
    prog = ingress_program(
        "    action a(bit<8> x) { hdr.h.a = x; }\n    apply {\n        a(1, 2);\n        mark_to_drop(std, std);\n    }"
    )
    err = check_errors(prog)
    got = [(d.line, d.col, d.message) for d in err.diagnostics]
    assert got[0][:2] == (INGRESS_LINE + 2, 14)
    assert "action 'a' expects 1 arguments, got 2" in got[0][2]
    assert got[1][:2] == (INGRESS_LINE + 3, 9)
    assert "'mark_to_drop' expects 0 or 1 arguments, got 2" in got[1][2]


def test_several_errors_are_collected() -> None:
    prog = ingress_program(
        "    apply {\n        hdr.h.a = x1;\n        hdr.h.a = x2;\n        hdr.h.zz = 1;\n    }"
    )
    err = check_errors(prog)
    msgs = [d.message for d in err.diagnostics]
    assert msgs == ["unknown name 'x1'", "unknown name 'x2'", "'h_t' has no field 'zz'"]
    assert str(err).count("error:") == 3


def test_unknown_type_state_and_match_kind() -> None:
    prog = ingress_program(
        "    table t { key = { hdr.h.a : fuzzy; } actions = { NoAction; } }\n    apply { t.apply(); }"
    )
    line, col, msg, _ = _first(prog)
    assert msg == "unknown match kind 'fuzzy'"
    assert (line, col) == (INGRESS_LINE, 23)
    bad_state = ingress_program("    apply { }").replace("transition accept;", "transition nowhere;")
    _, _, msg, _ = _first(bad_state)
    assert msg == "unknown state 'nowhere'"
    bad_type = ingress_program("    apply { foo_t x; }")
    _, _, msg, _ = _first(bad_type)
    assert msg == "unknown type 'foo_t'"


def test_unsupported_construct_is_named() -> None:
    prog = ingress_program("    apply {\n        for (bit<8> i in hdr.h.a) { }\n    }")
    _, _, msg, _ = _first(prog)
    assert msg == "'for ... in' loops are not supported by the embedded target"


def test_action_data_and_in_params_are_read_only() -> None:
    prog = ingress_program("    action a(bit<8> x) { x = 1; }\n    apply { }")
    _, _, msg, _ = _first(prog)
    assert msg == "cannot assign to action data parameter 'x'"


def test_types_and_constant_folding() -> None:
    src = ingress_program(
        """    const bit<32> W = 3;
    const bit<(W + 5)> K = 8w200 + 100;
    apply {
        bit<16> v = hdr.h.b + 1;
        bit<24> cat = hdr.h.a ++ hdr.h.b;
        bit<4> sl = hdr.h.c[7:4];
        int<8> neg = -8s3;
        bool t = hdr.h.isValid() && K == 44;
        hdr.h.a = K |+| 100;
    }"""
    )
    cp = check_source(src, "t.p4")
    ig = cp.controls["Ig"].decl
    k = ig.locals[1]
    assert isinstance(k, A.ConstDecl) and k.type == T.BitType(8) and k.value.const == 44
    stmts = ig.body.stmts
    v, cat, sl, neg, t, sat = stmts
    assert v.init.type == T.BitType(16) and v.init.right.type == T.BitType(16)
    assert cat.init.type == T.BitType(24)
    assert sl.init.type == T.BitType(4)
    assert neg.init.type == T.BitType(8, True) and neg.init.const == -3
    assert t.init.type == T.BOOL
    assert sat.rhs.const == 144 and sat.rhs.type == T.BitType(8)
    # Names resolve to what they denote.
    ref = sat.rhs.left.ref
    assert ref.kind == "const" and ref.value == 44
    hdr_ref = v.init.left.expr.expr.ref
    assert hdr_ref.kind == "param" and isinstance(hdr_ref.type, T.StructType)
    h_t = cp.types["h_t"]
    assert isinstance(h_t, T.HeaderType) and h_t.bit_width == 56


def test_enums_and_errors() -> None:
    src = """
#include <core.p4>
enum bit<8> Op { ADD = 1, SUB = 0x2 }
enum Color { RED, GREEN }
error { MyError }
control c(inout bit<8> x, out bool ok) {
    apply {
        Op o = Op.SUB;
        Color col = Color.GREEN;
        x = (bit<8>)Op.SUB;
        ok = col == Color.RED;
        error e = error.MyError;
    }
}
"""
    cp = check_source(src, "e.p4")
    assert cp.errors[-1] == "MyError"
    op = cp.types["Op"]
    assert isinstance(op, T.EnumType) and op.values == {"ADD": 1, "SUB": 2} and op.bit_width == 8
    body = cp.controls["c"].decl.body.stmts
    assert body[0].init.const == 2 and body[0].init.ref.kind == "enum_member"
    assert body[2].rhs.const == 2
    assert body[4].init.type == T.ERROR and body[4].init.ref.kind == "error_member"


def test_table_checks() -> None:
    prog = ingress_program(
        """    action set(bit<8> v) { hdr.h.a = v; }
    action other() { }
    table t {
        key = { hdr.h.a : ternary; }
        actions = { set; }
        default_action = other();
    }
    apply { t.apply(); }"""
    )
    _, _, msg, _ = _first(prog)
    assert msg == "default action 'other' is not in the actions list of table 't'"


def test_generic_extern_binding() -> None:
    prog = "#define V1MODEL_VERSION 20200408\n" + ingress_program(
        """    register<bit<16>, bit<8>>(256) r;
    apply {
        bit<16> v;
        r.read(v, hdr.h.a);
        hash(hdr.h.b, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.c }, 16w1024);
    }"""
    )
    cp = check_source(prog, "g.p4")
    stmts = cp.controls["Ig"].decl.body.stmts
    read = stmts[1].call
    assert read.kind == "extern_method" and read.type_bindings["T"] == T.BitType(16)
    h = stmts[2].call
    assert h.kind == "extern_function" and h.type_bindings["D"] == T.TupleType((T.BitType(8), T.BitType(32)))
    bad = prog.replace("r.read(v, hdr.h.a);", "r.read(hdr.h.a, hdr.h.a);")
    _, _, msg, _ = _first(bad)
    assert "must have type 'bit<16>', not 'bit<8>'" in msg


def test_direct_parser_invocation_and_min_size() -> None:
    src = """
#include <core.p4>
header h_t { bit<8> a; bit<16> b; }
struct hs { h_t h; }
parser Sub(packet_in pkt, inout hs hdr) {
    state start { pkt.extract(hdr.h); transition accept; }
}
parser Top(packet_in pkt, out hs hdr) {
    bit<7> n;
    state start {
        Sub.apply(pkt, hdr);
        n = hdr.h.minSizeInBytes();
        transition accept;
    }
}
"""
    cp = check_source(src, "d.p4")
    st = cp.parsers["Top"].decl.states[0].stmts
    assert st[0].call.kind == "apply" and st[0].call.target is cp.parsers["Sub"].decl
    assert st[1].rhs.const == 3 and st[1].rhs.type == T.BitType(7)


def test_serializable_enum_keys_accept_underlying_values() -> None:
    prog = ingress_program(
        """    action a() { }
    table t {
        key = { meta.m : exact; hdr.h.a : ternary; }
        actions = { a; }
        const entries = { (1, 0x10 &&& 0xF0) : a(); }
    }
    apply { t.apply(); }"""
    ).replace("struct meta_t { bit<8> m; }", "enum bit<8> E { X = 1 }\nstruct meta_t { E m; }")
    check_source(prog, "e.p4")


def test_static_assert() -> None:
    ok = '#include <core.p4>\nconst bool ok = static_assert(2 + 2 == 4, "math");\n'
    cp = check_source(ok, "s.p4")
    assert cp.constants["ok"] is True
    bad = ok.replace("2 + 2 == 4", "1 > 2")
    line, col, msg, _ = _first(bad)
    assert (line, col) == (2, 17) and msg == "static assertion failed: math"


def test_package_arguments_must_match_kinds() -> None:
    prog = ingress_program("    apply { }").replace("V1Switch(P(), C(), Ig(),", "V1Switch(P(), C(), P(),")
    line, col, msg, _ = _first(prog)
    assert msg == "argument 'ig' of 'V1Switch' must be a control, not parser 'P'"
    prog = ingress_program("    apply { }").replace("V1Switch(P(), C(), Ig(),", "V1Switch(P(), Ig(), Ig(),")
    _, _, msg, _ = _first(prog)
    assert msg == "argument 'vr' of 'V1Switch': control 'Ig' has 3 parameters, 'VerifyChecksum' needs 2"


def test_verify_only_in_parsers() -> None:
    prog = ingress_program("    apply {\n        verify(true, error.NoMatch);\n    }")
    line, col, msg, _ = _first(prog)
    assert (line, col, msg) == (INGRESS_LINE + 1, 9, "'verify' can only be called in a parser")


_STACK_PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header s_t { bit<8> v; }
struct headers_t { s_t[2] s; }
struct meta_t { bit<32> i; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.s.next); meta.i = hdr.s.lastIndex; transition accept; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { USE }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), C(), Ig(), Eg(), C(), D()) main;
"""


@pytest.mark.parametrize("use, member", [
    ("meta.i = hdr.s.lastIndex;", "lastIndex"),
    ("meta.i = (bit<32>)hdr.s.last.v;", "last"),
    ("hdr.s.next.v = 1;", "next"),
])
def test_stack_cursor_members_only_in_parsers(use: str, member: str) -> None:
    """lastIndex, last and next follow the parser's cursor: p4c rejects them in a
    control, and so must the checker (the parser above uses them legally)."""
    prog = _STACK_PROGRAM.replace("USE", use)
    line, col, msg, _ = _first(prog)
    assert (line, col) == (11, 13 + use.index("hdr.s"))
    assert msg == f"'{member}' of a header stack can only be used in a parser"
    assert "Ig" in check_source(_STACK_PROGRAM.replace("USE", "")).controls


def test_const_entries_cannot_have_priorities() -> None:
    """p4c rejects `priority = N:` under `const entries`; so does the checker, at the value."""
    body = ("    action a() { }\n"
            "    table t {\n"
            "        key = { hdr.h.a: ternary; }\n"
            "        actions = { a; }\n"
            "        const entries = {\n"
            "            priority = 3: 1 &&& 1 : a();\n"
            "        }\n"
            "    }\n"
            "    apply { t.apply(); }")
    line, col, msg, _ = _first(ingress_program(body))
    assert (line, col) == (INGRESS_LINE + 5, 24)
    assert msg == "table 't': 'const entries' cannot have priorities"
    # Without `const` the same entry is fine.
    check_source(ingress_program(body.replace("const entries", "entries")), "prog.p4")


def test_a_control_cannot_be_instantiated_at_top_level() -> None:
    """p4c: "cannot instantiate at top-level"; the checker once accepted it."""
    prog = (INVALID / "control_instance_at_top_level.p4").read_text()
    err = check_errors(prog)
    (d,) = err.diagnostics
    assert (d.line, d.col) == (17, 7)
    assert d.message == "'ig': a control cannot be instantiated at top level"


def test_an_optional_package_parameter_may_be_left_out() -> None:
    """p4c's issue1304 sample: `package Switch(Pipeline p0, @optional Pipeline p1)` with
    one argument (the checker once required every parameter)."""
    prog = """
control C(inout bit<8> x);
package Pipe(C c);
package Switch(Pipe p0, @optional Pipe p1);
control Id(inout bit<8> x) { apply { } }
Switch(Pipe(Id())) main;
"""
    assert check_source(prog).main is not None
    err = check_errors(prog.replace("Switch(Pipe(Id())) main", "Switch() main"))
    assert err.diagnostics[0].message == "package 'Switch' expects 2 arguments, got 0"


# Found in p4c's p4_16_errors corpus (issue2496, issue4136, width_e) and by hand: each
# once ended in a Python exception (a 4,300-digit int conversion, a negative shift count,
# a MemoryError) instead of an error at the construct.
@pytest.mark.parametrize("stmt, col, message", [
    ("bit<12301923123132> x = 0;", 13, "width 12301923123132 is too large (at most 2048 bits, as p4c)"),
    ("hdr.h.c = (bit<32>) 99999999999w1;", 29, "width 99999999999 is too large"),
    ("hdr.h.a = 7[1:-1];", 23, "slice bound -1 is negative"),
    ("hdr.h.c = (bit<32>) (1985245330 << 903012108);", 41,
     "the constant '1985245330 << 903012108' is wider than 2048 bits"),
    ("hdr.h.c = (bit<32>) 7[90000000000:0];", 29, "slice [90000000000:0] is wider than 2048 bits"),
    ("h_t[1000000000] s;", 13, "a header stack of 1000000000 elements is not supported by the embedded target"),
])
def test_oversized_constructs_are_errors_at_their_place(stmt: str, col: int, message: str) -> None:
    line, c, msg, _ = _first(ingress_program(f"    apply {{\n        {stmt}\n    }}"))
    assert (line, c) == (INGRESS_LINE + 1, col)
    assert msg.startswith(message)


def test_a_shift_of_a_sized_value_past_its_width_folds_to_zero() -> None:
    """`(bit<8>)1 << 4000000000000` is 0 in P4; folding it must not build a huge int."""
    cp = check_source(ingress_program("    apply {\n        hdr.h.a = 8w1 << 4000000000000;\n    }"))
    stmt = cp.controls["Ig"].decl.body.stmts[0]
    assert stmt.rhs.const == 0


# Programs from p4c's p4_16_errors corpus (named in each case) that p4c rejects and the
# checker once accepted; each now gets an error of its own.
@pytest.mark.parametrize("src, message", [
    # constructor-with-duplicate-parameter-names
    ("control C();\npackage P(C c, C c);", "duplicate parameter 'c'"),
    # decl-function-with-duplicate-type-paramter-names
    ("void f<t, t>(in t a) {}", "duplicate type parameter 't'"),
    # name-duplicate-type-parameter-names-2
    ("struct S<T, T> { T a; }", "duplicate type parameter 'T'"),
    # dup-param2
    ("control MyIngress<p>(inout bit<32> x)(bit<32> p) { apply {} }", "duplicate name 'p'"),
    # default-param, parameter-type-illformed
    ("extern void f(out bit<32> x = 0);", "out parameter 'x' cannot have a default value"),
    ("extern void f(@optional bit<32> y = 0);", "optional parameter 'y' cannot have a default value"),
    # string-e, issue2354
    ("extern void f(in string s);", "parameter 's' of type string cannot have a direction"),
    ("extern void f(in int v);", "parameter 'v' of type int must be directionless"),
    # decl-table-with-multiple-keys, table-action-duplicate-actions, missing_actions
    ("action a() {}\ncontrol c() { table t { key = {} key = {} actions = { a; } } apply {} }",
     "table 't' has more than one 'key' property"),
    ("action a() {}\ncontrol c() { table t { actions = { a; a; } } apply {} }",
     "table 't' lists action 'a' twice"),
    ("control c() { table t { key = {} } apply {} }", "table 't' has no 'actions' property"),
    # entries-keyless, table-entries-decl-order
    ("action a() {}\ncontrol c() { table t { actions = { a; } const entries = { _ : a(); } } apply {} }",
     "table 't' has entries but no key"),
    ("action a() {}\ncontrol c(in bit<8> k) { table t { actions = { a; } const entries = { 1 : a(); }"
     " key = { k : exact; } } apply {} }", "table 't': entries must come after the key"),
    # div0, div1
    ("control c(inout bit<8> a) { apply { a = a / 0; } }", "division by zero"),
    ("control c(inout bit<8> a) { apply { a = a % -1; } }", "operator '%' on negative constants"),
    # issue2206, shift-int-non-const
    ("control c(inout bit<8> a) { apply { a = (bit<8>) (1 << a); } }",
     "a shift of an unsized integer needs a constant shift amount"),
    # function_e1, function_e2
    ("bit<8> m(in bit<8> x) { if (x > 1) { return x; } }\n",
     "function 'm' does not return a value on every path"),
    ("action a() {}\nvoid f() { a(); }", "functions cannot call actions"),
    # issue2597
    ("control S() { apply {} }\ncontrol c() { S() s; action a() { s.apply(); } apply { a(); } }",
     "a control cannot be applied inside an action"),
    # issue2373
    ("parser P(packet_in p) { state start { transition s1; } state s1 { transition start; } }",
     "parser 'P' never reaches the accept or reject state"),
    # init-entries-error1-bmv2, init-entries-error2-bmv2, init-entries-error3-bmv2, issue1580
    ("action a() {}\ncontrol c(in bit<8> k) { table t { key = { k : exact; } actions = { a; }"
     " entries = { priority = 10 : 1 : a(); } } apply {} }", "its key match kinds need no priorities"),
    ("action a() {}\ncontrol c(in bit<8> k) { table t { key = { k : ternary; } actions = { a; }"
     " entries = { 1 : a(); priority = 4 : 2 : a(); } } apply {} }", "the first entry must have a priority"),
    ("action a() {}\ncontrol c(in bit<8> k) { table t { key = { k : ternary; } actions = { a; }"
     " priority_delta = 10; entries = { priority = 12 : 1 : a(); 2 : a(); 3 : a(); } } apply {} }",
     "entry priorities computed with priority_delta go below zero"),
    ("action a() {}\ncontrol c(in bit<8> k) { table t { key = { k : exact; } actions = { @defaultonly a; }"
     " const entries = { 1 : a(); } } apply {} }", "action 'a' is @defaultonly in table 't'"),
    # table-entries-lpm-2, table-entries-optional-2-bmv2
    ("action a() {}\ncontrol c(in bit<8> k) { table t { key = { k : lpm; } actions = { a; }"
     " const entries = { 0x11 &&& 0xE1 : a(); } } apply {} }", "'0x11 &&& 0xe1' is not a prefix of a 8-bit lpm key"),
    ("action a() {}\ncontrol c(in bit<8> k) { table t { key = { k : lpm; } actions = { a; }"
     " const entries = { 0x100 &&& 0xF0 : a(); } } apply {} }", "is not a prefix of a 8-bit lpm key"),
    ("action a() {}\ncontrol c(in bit<8> k) { table t { key = { k : optional; } actions = { a; }"
     " const entries = { 0xaa &&& 0xf0 : a(); } } apply {} }", "an optional key's entry is a value or '_'"),
    # psa-type-hdr, tuple-newtype, serenum-type, string-e1
    ("header h_t { bit<8> a; }\ntype h_t T;", "'type T' must be over bit<W>, int<W>, bool or a type"),
    ("type bit<16> B;\nenum B E { A = 1 }", "enum underlying type must be bit<W> or int<W>, not 'B'"),
    ("struct S { string s; }", "field 's' of struct 'S' cannot have type 'string'"),
    # stmt-switch-with-duplicate-labels, issue2335, issue2354-1
    ("control c(in bit<4> v) { apply { switch (v) { 1: {} 1: {} default: {} } } }", "duplicate switch label"),
    ("control c() { apply { int x = 0; } }", "variable 'x' cannot have type int"),
    ("control c() { action a(int x) {} apply { a(1); } }", "action parameter 'x' cannot have type int"),
    # select-struct, select-varbits
    ("header h_t { bit<8> a; }\nparser P(packet_in p, out h_t h) {\n"
     "  state start { transition select(h) { default: accept; } } }", "a value of type 'h_t' cannot be used in select"),
    # issue3589, issue3291-1
    ("action a() {}\ncontrol c() { table t { actions = { a; } } apply { if (t == t) {} } }",
     "values of type 'table t' cannot be compared"),
    # table-entries-error
    ("action a(bit<8> x) {}\ncontrol c(in bit<8> k) { table t { key = { k : exact; } actions = { a; }"
     " const entries = { 0 : a(1); 1 : a(2); 0 : a(3); } } apply {} }", "table 't': duplicate entry key"),
    # issue394, param
    ("extern E { E(); bool get(); }\ncontrol c(out bool b) { E e; apply { b = e.get(); } }",
     "variable 'e' cannot have type 'E': instantiate it"),
    ("extern E { E(); void call(); }\ncontrol c() { action a(E e) { e.call(); } E() i; apply { a(i); } }",
     "action parameter 'e' cannot have type 'E'"),
    # issue5094-type-bmv2
    ("type bit<8> T;\ncontrol c(inout bit<32> a, in T n) { apply { a = a << n; } }",
     "shift amount cannot have type 'T'"),
    # issue122, issue2835-bmv2
    ("bit<8> f() { return 1; }\nparser P(packet_in p, in bit<8> v) {\n"
     "  state start { transition select(v) { f(): accept; default: reject; } } }",
     "f: no function calls allowed in a select case"),
    ("action a(in bit<8> x) {}\ncontrol c(in bit<8> k) { table s { actions = { a(1); } }\n"
     "  table t { key = { k : exact; } actions = { a(s.apply().hit ? 8w1 : 8w2); } } apply { t.apply(); } }",
     "s.apply: table invocation in action argument"),
    # action-bind, issue1542: a directional argument bound in the actions list
    ("control c(inout bit<32> x) { bit<32> y; action a(inout bit<32> b, bit<32> d) { b = d; }\n"
     "  table t { actions = { a(x); } default_action = a(y, 0); } apply { t.apply(); } }",
     "argument for 'b' of action 'a' does not match the one in the actions list"),
    ("action m(in bit<32> g) {}\ncontrol c(in bit<8> k) {\n"
     "  table t { key = { k : exact; } actions = { m(1); } const entries = { 1 : m(2); } }\n"
     "  apply { t.apply(); } }",
     "argument for 'g' of action 'm' does not match the one in the actions list"),
    # extract, extract1, issue477, issue478, twovarbit, issue4146, issue600: core.p4's
    # packet_in and packet_out methods (p4c's checkCoreMethods)
    ("parser P(packet_in p, out bit<32> h) { state start { p.extract(h); transition accept; } }",
     "extract: argument must be a header, not 'bit<32>'"),
    ("header H { bit<8> f; }\nparser P(packet_in p, out H[2] h) {\n"
     "  state start { p.extract(h); transition accept; } }",
     "extract: argument must be a header, not 'H[2]'"),
    ("header H { bit<32> f; }\nparser P(packet_in p, out H h) {\n"
     "  state start { p.extract(h, 32); transition accept; } }",
     "extract(hdr, size): the header has no varbit field"),
    ("header H { bit<8> f; varbit<8> g; }\nparser P(packet_in p, out H h) {\n"
     "  state start { p.extract(h); transition accept; } }",
     "extract: a header with a varbit field is extracted with its size"),
    ("header H { varbit<120> x; varbit<120> u; }\nparser P(packet_in p, out H h) {\n"
     "  state start { p.extract(h, 100); transition accept; } }",
     "extract: header 'H' has more than one varbit field ('x' and 'u')"),
    ("parser P(packet_in p) { state start { p.lookahead<void>(); transition accept; } }",
     "lookahead: 'void' is not a type to look ahead at"),
    ("header H { varbit<8> g; }\nparser P(packet_in p, out H x) {\n"
     "  state start { x = p.lookahead<H>(); transition accept; } }",
     "lookahead: type argument 'H' must be a fixed-width type"),
    ("struct S { bit<8> f; }\ncontrol D(packet_out p, in S s) { apply { p.emit(s); } }",
     "emit: argument must be a header, stack or union, or a struct or tuple of such types"),
    # issue3623-2, issue3623-3: a serializable enum's switch labels are its members
    ("enum bit<4> e { a = 1 }\ncontrol c(in e v) { apply { switch (v) { 4w1: default: {} } } }",
     "a switch on 'e' takes labels of that enum, not of type 'bit<4>'"),
    ("enum bit<4> e { a = 1 }\ncontrol c(in e v) { apply { switch (v) { e.a: {} 1: {} } } }",
     "a switch on 'e' takes labels of that enum, not of type 'int'"),
    # extern, issue3787, issue3813, issue3814, issue4140, string-e2, issue2454, issue3808:
    # p4c's parameter rules (checkParameters, checkNamedArgs), also once a generic
    # parameter's type is known
    ("extern X {}\ncontrol c(in X x) { apply {} }",
     "parameter 'x' of extern type 'X' cannot have a direction"),
    ("extern Y {}\ncontrol c1(in Y x);",
     "parameter 'x' of extern type 'Y' cannot have a direction"),
    ("control C();\ncontrol c(in C k) { apply {} }",
     "parameter 'k' with a direction cannot have type control 'C'"),
    ("bit<1> f(@optional bit<1> a) { return a; }",
     "optional parameter 'a' is not allowed here"),
    ("control g(in bit<1> t)(@optional bit<1> tt) { apply {} }",
     "optional parameter 'tt' is not allowed here"),
    ("extern E { E(); }\nE() main;",
     "'main' must be an instance of a package, not of 'E'"),
    ("extern void f<T>(in T data);\ncontrol c() { apply { f(\"hi\"); } }",
     "argument for 'data' of 'f' has type 'string': a parameter with a direction cannot take it"),
    ("control C() { apply {} }\nextern void f<T>(T t);\ncontrol D() { C() c; apply { f(c); } }",
     "argument for 't' of 'f' cannot have type 'C'"),
    ("action NoAction() {}\nextern void f<T>(in T a);\n"
     "control c() { table t { actions = { NoAction; } } apply { f<_>(t); } }",
     "argument for 'a' of 'f' cannot have type 'table t'"),
    # issue2544_recursive, issue3197-e: these used to crash the compiler with a
    # RecursionError (the struct's width, the function's inlining) instead of an error
    ("struct S { S x; }", "struct 'S' cannot contain itself (field 'x')"),
    ("struct G<T> { T x; }\nstruct S { G<S> g; }", "struct 'S' cannot contain itself (field 'g')"),
    ("header H { bit<8> f; }\nstruct S { tuple<H, S> t; }", "struct 'S' cannot contain itself (field 't')"),
    ("bit<8> f(in bit<8> a) { return f(a); }", "function 'f' cannot call itself"),
    ("action a() { a(); }", "action 'a' cannot call itself"),
    # issue3170, issue3293, issue3305: a generic aggregate without its type arguments
    ("header t<T> { T y; }\ntypedef t ty;", "generic header 't' needs type arguments <T>"),
    ("struct t1<T> { T f; }\nextern t1 f();", "generic struct 't1' needs type arguments <T>"),
    ("struct s<T> { T f; }\nstruct s1<T> { T f; }\nvoid g() { s<s1> v; }",
     "generic struct 's1' needs type arguments <T>"),
    # spec-issue1297-string-cat-err-2-anno, -err-3-anno
    ('@name(4)\nvoid fn() {}', "@name takes one string literal"),
    ('@deprecated("a" | "b")\nvoid fn() {}', "@deprecated takes one string literal"),
    ('header H { @name bit<8> f; }', "@name takes one string literal"),
    # issue473: an entry's or default action's action data comes from the control plane
    ("control c(inout bit<32> x) { action b(inout bit<32> v, bit<8> d) { v = v + (bit<32>)d; }\n"
     "  table t { actions = { b(x); } default_action = b(x, (bit<8>)x); } apply { t.apply(); } }",
     "argument for 'd' of action 'b' must be a compile-time constant"),
    # issue3656
    ("action a() {}\ncontrol c() { apply { a<bit<1>>(); } }",
     "action 'a' takes no type arguments"),
    # div3 (its divisor a parameter): p4c's mid end has no run-time division or modulo
    ("control c(inout bit<8> a, in bit<8> b) { apply { a = a / b; } }\n"
     "control C(inout bit<8> a, in bit<8> b);\npackage P(C c);\nP(c()) main;",
     "'/' could not be evaluated at compile time"),
    ("header H { bit<8> a; }\ncontrol c(inout H h) { apply { h.a = h.a % 3; } }\n"
     "control C(inout H h);\npackage P(C c);\nP(c()) main;",
     "'%' could not be evaluated at compile time"),
    # issue2544_shadowing1: p4c makes this one shadowing an error
    ("struct S { bit<8> f; }\ncontrol c(inout S h) { apply { S h = h; } }",
     "declaration of 'h' shadows a parameter 'h'"),
    ("bit<8> f(in bit<8> x) { const bit<8> x = 1; return x; }",
     "declaration of 'x' shadows a parameter 'x'"),
    # default_action1: `.b` is the top-level action, the list's `b` the control's
    ("action b() {}\ncontrol c() { action a() {} action b() {}\n"
     "  table t { actions = { a; b; } default_action = .b(); } apply { t.apply(); } }",
     "'.b' and 'b' refer to different actions"),
    # issue2033: an initial action is checked against the list written before it
    ("control c() { action nop() {}\n"
     "  table t { default_action = nop; actions = { nop; } } apply { t.apply(); } }",
     "table 't' has no actions list before its 'default_action'"),
])
def test_p4c_error_corpus_programs_are_rejected(src: str, message: str) -> None:
    err = check_errors("#include <core.p4>\n" + src)
    assert any(message in d.message for d in err.diagnostics), [d.message for d in err.diagnostics]


def test_divisions_p4c_reduces_or_may_fold() -> None:
    """By a power of two (a shift or a mask), of zero, of values copy propagation or
    instantiation could make constant, and anywhere in a program without main (p4c then
    runs no mid end)."""
    src = """#include <core.p4>
header H { bit<8> a; bit<8> b; }
control c(inout H h)(bit<8> n) {
    bit<8> four = 4;
    action act(bit<8> d) { h.a = h.a / d; }
    apply { h.a = h.a / 4; h.b = h.b % 8; h.a = 8w0 / h.b; h.b = h.a / four; h.a = h.a % n; act(2); }
}
control C(inout H h);
package P(C c);
P(c(8)) main;
"""
    check_source(src)
    check_source("#include <core.p4>\ncontrol c(inout bit<8> a, in bit<8> b) { apply { a = a / b; } }\n")


def test_what_packet_in_and_packet_out_take() -> None:
    """Headers (with their size when they hold a varbit), unions, stacks, and structs or
    lists of them; a header type may hold two varbit fields as long as it is not
    extracted (p4c checks the extraction)."""
    check_source("""#include <core.p4>
header A { bit<8> f; }
header V { bit<8> n; varbit<64> opt; }
header T { varbit<8> x; varbit<8> y; }
header_union U { A a; V v; }
struct Hs { A a; A[2] s; U u; V v; }
parser P(packet_in p, out Hs h) {
    state start {
        p.extract(h.a);
        p.extract(h.s.next);
        p.extract(h.v, (bit<32>)h.a.f);
        bit<8> peek = p.lookahead<bit<8>>();
        A ahead = p.lookahead<A>();
        transition accept;
    }
}
control D(packet_out p, in Hs h) { apply { p.emit(h); p.emit(h.s); p.emit(h.u); p.emit({h.a, h.v}); } }
""")


def test_initial_actions_that_match_the_actions_list() -> None:
    """What p4c's validateActionInitializer accepts: the list's bound arguments again
    (by value, or the same lvalue written anew), named arguments, a top-level action
    listed with its leading dot."""
    src = """#include <core.p4>
action g() {}
struct S { bit<8> f0; bit<8> f1; }
control struct_arg() {  // issue3671: struct components compared by name
    action s(in S v) {}
    table t { actions = { s({ f0 = 1, f1 = 2 }); } default_action = s({ f1 = 2, f0 = 1 }); }
    apply { t.apply(); }
}
control c(inout bit<32> x, in bit<8> k) {
    action a(inout bit<32> b, bit<32> d) { b = d; }
    action m(in bit<32> v, bit<8> e) {}
    table t { key = { k : exact; } actions = { a(x); m(0x10); .g; }
              default_action = a(x, 0);
              const entries = { 1 : m(16, 2); 2 : m(e = 3, v = 16); 3 : .g(); } }
    table u { actions = { g; } default_action = g(); }
    struct_arg() s;
    apply { t.apply(); u.apply(); s.apply(); }
}
"""
    check_source(src)


def test_priorities_p4c_accepts() -> None:
    """Priorities from the first entry on, counting down by priority_delta to zero."""
    src = """#include <core.p4>
action a() {}
control c(in bit<8> k) {
    table t { key = { k : ternary; } actions = { a; } priority_delta = 5;
              entries = { priority = 10 : 1 : a(); 2 : a(); priority = 7 : 3 : a(); } }
    table l { key = { k : lpm; } actions = { a; } const entries = { 0x10 &&& 0xF0 : a(); 7 : a(); } }
    apply { t.apply(); l.apply(); }
}
parser P(packet_in p) { state start { transition select(p.lookahead<bit<8>>()) { 1: s1; } }
                        state s1 { transition select(p.lookahead<bit<8>>()) { 1: s1; default: accept; } } }
"""
    assert "c" in check_source(src).controls


def test_a_function_may_end_in_a_switch_or_if_that_always_returns() -> None:
    src = """#include <core.p4>
bit<8> f(in bit<8> x) {
    if (x == 0) { return 1; } else { if (x == 1) { return 2; } else { return 3; } }
}
bit<8> g(in bit<8> x) { { return x; } }
void h(in bit<8> x) { if (x == 0) { return; } }
"""
    assert check_source(src).functions.keys() >= {"f", "g", "h"}


def test_builtin_methods_are_allowed_in_select_cases() -> None:
    """p4c refuses calls in a keyset but for builtins such as isValid and minSizeInBits."""
    src = """#include <core.p4>
header h_t { bit<8> a; }
parser P(packet_in p, out h_t h, in bool b, in bit<32> n) {
    state start { transition select(b, n) { (h.isValid(), h.minSizeInBits()): accept;
                                             default: reject; } }
}
"""
    check_source(src)


@pytest.mark.parametrize("version,message", [
    ("-6419018", "V1MODEL_VERSION must be a non-negative number"),  # issue5296_invalid_version
    ("20000101", "V1MODEL_VERSION 20000101 is an unknown v1model version"),  # issue5296_unknown_version
    ("20250101", "V1MODEL_VERSION 20250101 is an unknown v1model version"),
])
def test_v1model_version_must_be_one_p4c_knows(version: str, message: str) -> None:
    err = check_errors(f"#include <core.p4>\n#define V1MODEL_VERSION {version}\n#include <v1model.p4>\n")
    assert any(message in d.message for d in err.diagnostics), [d.message for d in err.diagnostics]


@pytest.mark.parametrize("version", ["20180101", "20200408", "20190101"])
def test_v1model_versions_p4c_knows_are_accepted(version: str) -> None:
    check_source(f"#include <core.p4>\n#define V1MODEL_VERSION {version}\n#include <v1model.p4>\n")


# Found by differential fuzzing against p4test: a value_set keyset of another type than
# the select's (or of another number of fields) was accepted, and its keys compared
# against values of the wrong width.
@pytest.mark.parametrize("name, message", [
    ("value_set_width_mismatch",
     "'match' case label 'vs' has type 'bit<16>' which does not match the expected type 'bit<8>'"),
    ("value_set_fields_mismatch",
     "value_set 'vs' of type 'pair_t' cannot match the 3 expressions of the select"),
])
def test_a_value_set_keyset_has_the_type_of_the_select(name: str, message: str) -> None:
    err = check_errors((INVALID / f"{name}.p4").read_text(), f"{name}.p4")
    d = err.diagnostics[0]
    assert (d.line, d.col, d.message) == (13, 13, message)


@pytest.mark.parametrize("decl, keys", [
    ("value_set<bit<8>>(4) vs;", "hdr.h.a"),
    ("struct one_t { bit<16> b; }", "hdr.h.b"),  # a one-field struct for one key
    ("struct in_t { bit<16> b; } struct two_t { bit<8> a; in_t i; }", "hdr.h.a, hdr.h.b"),
])
def test_value_sets_of_the_select_type_flattened_are_accepted(decl: str, keys: str) -> None:
    """As p4c (its pvs-struct-1-bmv2.p4, pvs-nested-struct.p4): a struct value set,
    nested structs flattened, has one field per select expression."""
    text = (INVALID / "value_set_width_mismatch.p4").read_text()
    if decl.startswith("struct"):
        text = text.replace("struct pair_t", decl + "\nstruct pair_t")
        elem = decl.split()[1] if "two_t" not in decl else "two_t"
        decl = f"value_set<{elem}>(4) vs;"
    text = text.replace("value_set<bit<16>>(4) vs;", decl).replace("select(hdr.h.a)", f"select({keys})")
    assert check_source(text, "ok.p4")


def test_a_package_argument_has_the_parameter_directions_of_its_slot() -> None:
    """Found by differential fuzzing against p4test: a checksum control with a
    directionless `hdr` was accepted for V1Switch's `inout H hdr` (p4c: "Cannot unify
    ... because they have different directions")."""
    name = "package_param_direction"
    err = check_errors((INVALID / f"{name}.p4").read_text(), f"{name}.p4")
    d = err.diagnostics[0]
    assert (d.line, d.col) == (16, 32)
    assert d.message == ("argument 'ck' of 'V1Switch': parameter 'hdr' of control 'CC' is "
                         "directionless, 'ComputeChecksum' declares 'hdr' inout")
