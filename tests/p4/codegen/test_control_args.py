"""Sub-control arguments: inout structs are used in place when nothing can observe the
difference, and copied (copy-in/copy-out) when another argument aliases them."""

from __future__ import annotations

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

from ..programs import ingress_apply, v1model_program


def _run(subs: str, insts: str, body: str, data: bytes) -> tuple[bytes | None, str]:
    src = v1model_program(ingress_apply(body, insts), meta="bit<8> x;", decls=subs,
                          deparse="pk.emit(hdr.h);")
    prog = compile_source(src, "t.p4")
    sw = P4Switch(prog)
    sw.inject(0, data)
    sw.run_until_idle()
    outs = sw.outputs()
    return (outs[0].data if outs else None), prog.source


def test_distinct_inout_structs_are_not_copied() -> None:
    subs = """control S(inout H h, inout M mm, inout standard_metadata_t s) {
        apply { h.h.a = h.h.a + 1; mm.x = 3; s.egress_spec = 2; h.h.b = mm.x; } }"""
    out, src = _run(subs, "S() s;", "s.apply(hdr, m, sm);", bytes([7, 0]))
    assert out == bytes([8, 3])
    ingress = src[src.index("def ingress("):src.index("def egress(")]
    assert ".copy()" not in ingress and ".set(" not in ingress


def test_exit_in_sub_control_keeps_writes_made_before_it() -> None:
    subs = """control S(inout H h) { apply { h.h.a = 5; exit; } }"""
    out, _ = _run(subs, "S() s;", "s.apply(hdr); hdr.h.b = 9;", bytes([1, 2]))
    assert out == bytes([5, 2])


def test_aliased_arguments_keep_copy_semantics() -> None:
    # h.h and x are the same caller header: each is a copy, and the copy-outs happen in
    # parameter order (x last), so x's unchanged `a` wins and its `b` holds the old h.h.a.
    subs = """control S(inout H h, inout h_t x) { apply { h.h.a = 1; x.b = h.h.a; } }"""
    out, _ = _run(subs, "S() s;", "s.apply(hdr, hdr.h);", bytes([7, 0]))
    assert out == bytes([7, 1])


def test_in_argument_reading_an_inout_one_sees_the_value_at_the_call() -> None:
    subs = """control S(inout h_t x, in bit<8> old) { apply { x.a = 9; x.b = old; } }"""
    out, _ = _run(subs, "S() s;", "s.apply(hdr.h, hdr.h.a);", bytes([4, 0]))
    assert out == bytes([9, 4])


def test_whole_parameter_assignment_writes_the_callers_header_in_place() -> None:
    subs = """control S(inout h_t x) { apply {
        h_t t; t.setValid(); t.a = 9; t.b = 8; x = t; t.a = 1; } }"""
    out, _ = _run(subs, "S() s;", "s.apply(hdr.h); hdr.h.b = hdr.h.b + 1;", bytes([0, 0]))
    assert out == bytes([9, 9])
