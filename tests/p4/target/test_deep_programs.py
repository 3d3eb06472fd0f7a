"""Deeply nested P4 source: long operator chains compile and compute what P4 says, and a
program nested past the front end's limit gets a positioned error, not a crash.

Nested control flow: 300 nested if statements (or conditional expressions, or calls of
functions inlined into each other) ended in Python's IndentationError ("too many levels
of indentation") from the generated code; as deep as the target can compile runs, and
deeper is an error at the P4 line.

Found by feeding the front end hostile programs: a chain of 500 additions ended in a
RecursionError (the parse tree's transformer), one of 120 in Python's "too many nested
parentheses" from the generated code; p4c compiles both.
"""

from __future__ import annotations

import threading

import pytest

from emu.core.clock import VirtualClock
from emu.p4.api import P4Switch
from emu.p4.frontend import P4Error, check_source
from emu.p4.frontend.parser import MAX_NESTING
from emu.p4.target.program import MAX_INDENT_LEVELS, compile_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct metadata { }
parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.b = SUM;
        hdr.h.c = NOT;
        if (ALL) { hdr.h.d = 1; }
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _program(n: int) -> str:
    return (PROGRAM.replace("SUM", " + ".join(["hdr.h.a"] * n))
            .replace("NOT", "~" * n + "hdr.h.a")
            .replace("ALL", " && ".join(["hdr.h.a != 0"] * n)))


@pytest.mark.parametrize("n", [3, 120, 500, 900])
def test_long_chains_compute_what_p4_says(n: int) -> None:
    sw = P4Switch(compile_source(_program(n), f"chain{n}.p4"), VirtualClock())
    for a in (0, 3, 0xFF):
        sw.inject(0, bytes([a, 0, 0, 0]))
        sw.run_until_idle()
        (out,) = sw.outputs(clear=True)
        expect_not = a if n % 2 == 0 else ~a & 0xFF
        assert out.data == bytes([a, n * a & 0xFF, expect_not, int(a != 0)])


def test_a_deep_program_compiles_in_a_thread() -> None:
    """The P4Runtime server compiles a `p4-source` config in a worker thread."""
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(compile_source(_program(900), "t.p4")))
    t.start()
    t.join()
    assert result and result[0] is not None


def test_nesting_past_the_limit_is_a_positioned_error() -> None:
    src = _program(3).replace("hdr.h.b = hdr.h.a + hdr.h.a + hdr.h.a;",
                              "hdr.h.b = " + "~" * (MAX_NESTING + 10) + "hdr.h.a;")
    with pytest.raises(P4Error) as ei:
        check_source(src, "deep.p4")
    (d,) = ei.value.diagnostics
    assert d.file == "deep.p4" and d.line == 14
    assert f"nests more than {MAX_NESTING} levels" in d.message


def _nested_ifs(n: int) -> str:
    body = "if (hdr.h.a != 0) { " * n + "hdr.h.d = 7;" + " }" * n
    return (PROGRAM.replace("if (ALL) { hdr.h.d = 1; }", body)
            .replace("SUM", "hdr.h.a").replace("NOT", "hdr.h.a"))


@pytest.mark.parametrize("n", [2, 90, 95])
def test_nested_if_statements_run(n: int) -> None:
    sw = P4Switch(compile_source(_nested_ifs(n), f"ifs{n}.p4"), VirtualClock())
    for a, d in ((0, 0), (5, 7)):
        sw.inject(0, bytes([a, 0, 0, 0]))
        sw.run_until_idle()
        (out,) = sw.outputs(clear=True)
        assert out.data == bytes([a, a, a, d])


@pytest.mark.parametrize("src", [
    _nested_ifs(300),
    PROGRAM.replace("hdr.h.b = SUM;", "hdr.h.b = " + "hdr.h.a == 1 ? 8w1 : (" * 400 + "8w0"
                    + ")" * 400 + ";").replace("NOT", "hdr.h.a").replace("ALL", "true"),
    PROGRAM.replace("control VC", "bit<8> f0(in bit<8> v) { return v; }\n" + "".join(
        f"bit<8> f{i}(in bit<8> v) {{ if (v == {i}) {{ return 0; }} return f{i - 1}(v); }}\n"
        for i in range(1, 200)) + "control VC").replace("SUM", "f199(hdr.h.a)")
    .replace("NOT", "hdr.h.a").replace("ALL", "true"),
], ids=["if-statements", "conditional-expressions", "inlined-functions"])
def test_control_flow_nested_past_what_the_target_compiles_is_a_positioned_error(src: str) -> None:
    with pytest.raises(P4Error) as ei:
        compile_source(src, "deep.p4")
    (d,) = ei.value.diagnostics
    assert d.file == "deep.p4" and d.line > 0
    assert f"nested more than {MAX_INDENT_LEVELS} levels deep" in d.message
