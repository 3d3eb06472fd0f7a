"""What the checker records for forms the lowering relies on (regressions of front-end gaps
that codegen once worked around)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.p4.frontend import P4Error, check_source, load_program
from emu.p4.frontend import ast as A
from emu.p4.target.program import compile_source

from .conftest import check_errors, ingress_program

FORMS = Path(__file__).resolve().parents[1] / "stf_programs" / "frontend_forms.p4"


def _calls(node: object) -> list[A.Call]:
    out: list[A.Call] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(n)
        elif isinstance(n, A.Node):
            if isinstance(n, A.Call):
                out.append(n)
            for k, v in vars(n).items():
                if k not in ("type", "ref", "target", "decl", "pos", "type_bindings"):
                    stack.append(v)
    return out


def test_named_v1switch_arguments_pair_by_name() -> None:
    cp = load_program(str(FORMS))
    # main passes them as (dep=, ck=, eg=, ig=, vr=, p=): the reverse of the parameter order
    assert {k: d.name for k, d in cp.pipeline.items()} == {
        "p": "P", "vr": "VC", "ig": "I", "eg": "E", "ck": "C", "dep": "D"}


def test_function_call_target_is_the_function_declaration() -> None:
    cp = load_program(str(FORMS))
    calls = [c for c in _calls(cp.program) if c.kind == "function"]
    assert calls and all(isinstance(c.target, A.FunctionDecl) for c in calls)
    assert calls[0].target is cp.functions["twice_plus"]


def test_direct_type_application_refers_to_the_control() -> None:
    cp = load_program(str(FORMS))
    applies = [c for c in _calls(cp.program)
               if isinstance(c.func, A.Member) and isinstance(c.func.expr, A.NameRef)
               and c.func.expr.name == "Sub"]
    assert len(applies) == 1
    ref = applies[0].func.expr.ref
    assert ref is not None and ref.kind == "type"
    assert ref.decl is cp.controls["Sub"].decl


def test_widening_assignment_needs_a_cast() -> None:
    # p4c rejects bit<N> = bit<M> for N != M in P4_16 since p4c#516 (2017); the stored
    # arith-bmv2.p4 that relies on an implicit cast predates that.
    err = check_errors(ingress_program("    apply {\n        hdr.h.b = hdr.h.a + hdr.h.a;\n    }"))
    assert "cannot assign a value of type 'bit<8>' to 'bit<16>' without a cast" in str(err)


OWN_PACKAGE = """
#include <core.p4>
header h_t { bit<16> f; }
struct Headers { h_t h; }
parser p(packet_in pkt, out Headers hdr) { state start { pkt.extract(hdr.h); transition accept; } }
control ingress(inout Headers h) { apply { } }
control deparser(packet_out pkt, in Headers h) { apply { pkt.emit(h); } }
parser Parser(packet_in b, out Headers hdr);
control Ingress(inout Headers hdr);
control Deparser(packet_out b, in Headers hdr);
package top(Parser p, Ingress ig, Deparser dep);
top(p(), ingress(), deparser()) main;
"""


def test_program_with_its_own_architecture_checks_but_is_not_v1model() -> None:
    # Valid P4 (p4c's front end accepts gauntlet_optional-bmv2.p4); like p4c's simple_switch
    # back end, the v1model target needs a V1Switch main.
    cp = check_source(OWN_PACKAGE)
    assert cp.main is not None and set(cp.pipeline) == {"p", "ig", "dep"}
    with pytest.raises(P4Error, match="main package 'top' is not V1Switch"):
        compile_source(OWN_PACKAGE)


def test_break_outside_a_loop_is_an_error() -> None:
    err = check_errors(ingress_program("    apply {\n        break;\n    }"))
    assert "'break' outside a loop" in str(err)
