"""Parser: every construct the embedded target accepts, and syntax errors."""

from __future__ import annotations

import pytest

from emu.p4.frontend import P4Error, parse_source
from emu.p4.frontend import ast as A
from emu.p4.frontend.parser import parse_int_literal

CONSTRUCTS = r"""
#include <core.p4>
@pkginfo(arch = "v1model", version = "1.0")
typedef bit<8> byte_t;
type bit<9> port_id_t;
const bit<32> SIZE = 32w1_024;
enum bit<8> Kind { A = 1, B = 8w2, }
enum Plain { X, Y }
error { Oops }
match_kind { special }
header h_t { bit<4> a; int<4> b; bit c; bool d; byte_t e; varbit<16> v; }
header_union u_t { h_t x; h_t y; }
struct s_t { h_t h; h_t[4] stack; u_t u; tuple<bit<8>, bool> tup; }
extern Ext<T> {
    Ext(bit<32> size);
    Ext(bit<32> size, T init);
    T get<I>(in I index);
    abstract void cb(inout T value);
}
extern void ext_fn<T>(in T data, @optional in bit<8> opt);
parser Pt<H>(packet_in b, out H h);
control Ct<H>(inout H h);
package Pkg<H>(Pt<H> p, Ct<H> c);
bit<8> plus1(in bit<8> x) { return x + 1; }
action global_act() { }
parser MyP(packet_in b, out s_t s) {
    value_set<bit<8>>(4) pvs;
    bit<8> tmp = 0;
    state start {
        b.extract(s.h, 32w8);
        b.advance(8);
        tmp = b.lookahead<bit<8>>();
        verify(tmp != 0, error.Oops);
        transition select(s.h.a, s.h.e) {
            (4w1, 8w2): next;
            (4w0 &&& 4w3, 1 .. 5): next;
            (_, pvs): accept;
            (default, _): reject;
        }
    }
    state next {
        b.extract(s.stack.next);
        transition select(s.stack.last.a) { 0: next; default: accept; }
    }
}
control MyC(inout s_t s) {
    @name(".counter_x") bit<8> x = 8w0x0F;
    action a1(in bit<8> d, bit<8> cp) { x = d |+| cp; }
    action a2() { s.h.setInvalid(); exit; }
    table t {
        key = {
            s.h.a : exact @name("hdr_a");
            s.h.e : ternary;
            s.h.isValid() : exact;
        }
        actions = { a1(x); @defaultonly a2; @tableonly global_act; }
        const default_action = a2();
        const entries = {
            (1, 0x0 &&& 0xF, true) : a1(x, 2);
            priority = 10 : (2, _, false) : global_act();
            (default, default, default) : a1(x, 3) @my_note;
        }
        size = 64;
        support_timeout = true;
        custom_prop = 3;
    }
    apply {
        if (t.apply().hit) { x = x << 2; } else if (t.apply().miss) { x = x >> 1; }
        switch (t.apply().action_run) {
            a1:
            a2: { x = 1; }
            default: { }
        }
        bit<16> w = (bit<16>)x ++ 8w1 > 16w5 ? 16w1 : 16w2;
        s.h.a = (bit<4>)x[3:0];
        s.stack.push_front(2);
        s.stack[0].a = s.stack.lastIndex[3:0];
        s.tup = { 8w1, true };
        s_t copy = { h = s.h, stack = s.stack, u = s.u, tup = s.tup };
        s = (s_t){ h = copy.h, stack = copy.stack, u = copy.u, tup = copy.tup };
        x = plus1(x);
        x = -x; x = ~x; x = x * 2 / 1 % 3 - 1;
        x = (x & 1) | (x ^ 2);
        x = x |-| 1;
        x = (x >> 2) + (x << 1);
        ;
        { x = 3; }
        return;
    }
}
"""


def test_all_constructs_parse() -> None:
    prog = parse_source(CONSTRUCTS, "constructs.p4")
    names = [d.name for d in prog.decls]
    for expected in ["byte_t", "port_id_t", "SIZE", "Kind", "Plain", "h_t", "u_t", "s_t", "Ext",
                     "ext_fn", "Pt", "Ct", "Pkg", "plus1", "global_act", "MyP", "MyC"]:
        assert expected in names
    by = {d.name: d for d in prog.decls}
    assert isinstance(by["port_id_t"], A.TypedefDecl) and by["port_id_t"].new_type
    kind = by["Kind"]
    assert isinstance(kind, A.EnumDecl) and kind.members == ["A", "B"] and kind.underlying is not None
    ext = by["Ext"]
    assert isinstance(ext, A.ExternDecl) and ext.type_params == ["T"]
    assert [m.is_ctor for m in ext.methods] == [True, True, False, False]
    assert ext.methods[3].abstract and ext.methods[2].type_params == ["I"]
    pkginfo = prog.decls[[type(d).__name__ for d in prog.decls].index("TypedefDecl")]
    assert pkginfo.annotations[0].name == "pkginfo"
    assert pkginfo.annotations[0].kv == {"arch": "v1model", "version": "1.0"}
    ctl = by["MyC"]
    assert isinstance(ctl, A.ControlDecl)
    x = ctl.locals[0]
    assert x.annotations[0].name == "name" and x.annotations[0].args == [".counter_x"]
    t = ctl.locals[3]
    assert isinstance(t, A.TableDecl)
    key = t.prop("key")
    assert key is not None and [k.match_kind for k in key.keys] == ["exact", "ternary", "exact"]
    assert key.keys[0].annotations[0].args == ["hdr_a"]
    acts = t.prop("actions")
    assert acts is not None and [a.name for a in acts.actions] == ["a1", "a2", "global_act"]
    assert acts.actions[1].annotations[0].name == "defaultonly"
    entries = t.prop("entries")
    assert entries is not None and entries.is_const and len(entries.entries) == 3
    assert isinstance(entries.entries[1].priority, A.IntLit) and entries.entries[1].priority.value == 10
    assert isinstance(entries.entries[0].keyset, A.ListExpr)
    assert isinstance(entries.entries[0].keyset.items[1], A.Mask)
    assert t.prop("default_action").is_const  # type: ignore[union-attr]
    sw = ctl.body.stmts[1]
    assert isinstance(sw, A.Switch) and sw.cases[0].body is None and isinstance(sw.cases[2].label, A.DefaultExpr)
    parser = by["MyP"]
    assert isinstance(parser, A.ParserDecl) and isinstance(parser.locals[0], A.ValueSetDecl)
    sel = parser.states[0].transition.select  # type: ignore[union-attr]
    assert sel is not None and isinstance(sel.cases[1].keyset.items[1], A.Range)  # type: ignore[attr-defined]
    assert isinstance(sel.cases[3].keyset.items[0], A.DefaultExpr)  # type: ignore[attr-defined]


def test_list_is_a_keyword_that_may_name_things() -> None:
    """P4's grammar lets `list` (a type keyword) name declarations and members, as p4c
    does: SONiC DASH's v1model pipeline (p4c's dash-pipeline-v1model-bmv2.p4 sample)
    declares `match_kind { list, range_list }` and was a syntax error here."""
    from emu.p4.frontend import check_source

    src = """#include <core.p4>
match_kind { list, range_list }
header h_t { bit<8> list; }
control c(inout h_t h) { apply { h.list = 1; } }
control C(inout h_t h);
package top(C c);
top(c()) main;
"""
    check_source(src, "list.p4")
    prog = parse_source("match_kind { list, range_list }", "m.p4")
    assert list(prog.decls[0].members) == ["list", "range_list"]  # type: ignore[attr-defined]


def test_shift_vs_nested_type_arguments() -> None:
    src = "extern E<T> { E(); }\ncontrol c(inout bit<8> x) { E<bit<8>>() e; apply { x = x >> 1; x = x>>2; } }"
    prog = parse_source(src, "s.p4")
    ctl = prog.decls[-1]
    assert isinstance(ctl, A.ControlDecl)
    inst = ctl.locals[0]
    assert isinstance(inst, A.Instantiation) and isinstance(inst.typeref, A.NamedTypeRef)
    stmts = ctl.body.stmts
    assert all(isinstance(s, A.Assign) and isinstance(s.rhs, A.Binary) and s.rhs.op == ">>" for s in stmts)


@pytest.mark.parametrize(
    "text,value,width,signed",
    [("8w5", 5, 8, False), ("0x1F", 31, None, False), ("0b1010", 10, None, False), ("0o17", 15, None, False),
     ("1_000", 1000, None, False), ("4s3", 3, 4, True), ("16w0xFF_FF", 65535, 16, False), ("0d99", 99, None, False)],
)
def test_integer_literals(text: str, value: int, width: int | None, signed: bool) -> None:
    assert parse_int_literal(text) == (value, width, signed)


def test_syntax_error_has_position_and_caret() -> None:
    src = "header h_t { bit<8> a; }\ncontrol c(inout h_t h) {\n    apply { h.a = 1 }\n}\n"
    with pytest.raises(P4Error) as ei:
        parse_source(src, "bad.p4")
    d = ei.value.diagnostics[0]
    assert (d.file, d.line, d.col) == ("bad.p4", 3, 21)
    assert d.message.startswith("syntax error: unexpected '}'; expected")
    assert "';'" in d.message
    assert d.render().splitlines()[1:] == ["    apply { h.a = 1 }", " " * 20 + "^"]


def test_syntax_error_in_included_file_names_that_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "inc.p4").write_text("\nheader h { bit<8> a }\n")
    with pytest.raises(P4Error) as ei:
        parse_source('#include "inc.p4"\n', str(tmp_path / "main.p4"))
    d = ei.value.diagnostics[0]
    assert d.file.endswith("inc.p4") and (d.line, d.col) == (2, 21)


def test_parse_speed_is_reasonable() -> None:
    import time

    body = "\n".join(f"    action a{i}(bit<8> v) {{ x = x + v; }}" for i in range(200))
    src = f"#include <core.p4>\ncontrol c(inout bit<8> x) {{\n{body}\n    apply {{ }}\n}}\n"
    parse_source(src, "warm.p4")
    t0 = time.perf_counter()
    parse_source(src, "big.p4")
    assert time.perf_counter() - t0 < 1.0
