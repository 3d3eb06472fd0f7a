"""Realistic programs written for this project load and check cleanly."""

from __future__ import annotations

import pytest

from emu.p4.frontend import ast as A
from emu.p4.frontend import load_program
from emu.p4.frontend import types as T

from .conftest import PROGRAMS


@pytest.mark.parametrize("name", ["ipv4_ecmp_ecn.p4", "stacks_varbit.p4", "stateful.p4", "shadowing.p4", "corner_cases.p4"])
def test_program_checks(name: str) -> None:
    cp = load_program(str(PROGRAMS / name))
    assert set(cp.pipeline) == {"p", "vr", "ig", "eg", "ck", "dep"}
    assert cp.main is not None and cp.main.name == "main"


def test_router_structure_for_codegen() -> None:
    cp = load_program(str(PROGRAMS / "ipv4_ecmp_ecn.p4"))
    ig = cp.controls["FabricIngress"]
    assert [t.name for t in ig.tables] == ["ipv4_lpm", "ecmp_nexthop"]
    lpm = ig.tables[0]
    key = lpm.prop("key")
    assert key is not None and key.keys[0].expr.type == T.BitType(32)
    acts = lpm.prop("actions")
    assert acts is not None and all(isinstance(a.decl, A.ActionDecl) for a in acts.actions)
    grp = next(a for a in ig.actions if a.name == "set_ecmp_group")
    assert [p.direction for p in grp.params] == ["", ""]  # control-plane action data
    hash_call = grp.body.stmts[2].call
    assert hash_call.kind == "extern_function" and hash_call.target.name == "hash"
    assert hash_call.type_bindings["O"] == T.BitType(16)
    eg = cp.controls["FabricEgress"].decl
    cond = eg.body.stmts[0].cond
    assert cond.type == T.BOOL and cond.right.right.type == T.BitType(19)
    assert cp.constants["TYPE_IPV4"] == 0x0800
    std = cp.types["standard_metadata_t"]
    assert isinstance(std, T.StructType)
    widths = {n: t.bit_width for n, t in std.fields}
    assert widths["ingress_port"] == 9 and widths["enq_qdepth"] == 19 and widths["priority"] == 3
    assert widths["ingress_global_timestamp"] == 48 and widths["mcast_grp"] == 16
    assert cp.pipeline["ig"] is ig.decl


def test_stacks_and_varbit_types() -> None:
    cp = load_program(str(PROGRAMS / "stacks_varbit.p4"))
    hdrs = cp.types["headers_t"]
    assert isinstance(hdrs, T.StructType)
    mpls = hdrs.field_type("mpls")
    assert isinstance(mpls, T.HeaderStackType) and mpls.size == 4 and mpls.bit_width == 128
    ipv4 = hdrs.field_type("ipv4")
    assert isinstance(ipv4, T.HeaderType) and ipv4.bit_width == 160 and ipv4.max_bit_width == 480
    assert ipv4.field_type("options") == T.VarbitType(320)


def test_stateful_externs() -> None:
    cp = load_program(str(PROGRAMS / "stateful.p4"))
    ig = cp.controls["Ig"]
    regs = {i.name: i.type for i in ig.instances}
    reg = regs["flow_packets"]
    assert isinstance(reg, T.ExternType) and reg.type_args == {"T": T.BitType(32), "I": T.BitType(16)}
    meta = cp.types["meta_t"]
    assert isinstance(meta, T.StructType)
    fl = meta.decl.fields[0].annotations[0]
    assert fl.name == "field_list" and fl.args == [1]


def _walk(node: object, seen: set[int]):  # type: ignore[no-untyped-def]
    """Yield every AST node reachable from ``node``."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, A.Node):
        yield node
        for name in node.__dataclass_fields__:
            if name in ("type", "const", "ref", "target", "decl", "type_bindings"):
                continue
            yield from _walk(getattr(node, name), seen)
    elif isinstance(node, list | tuple):
        for x in node:
            yield from _walk(x, seen)


@pytest.mark.parametrize("name", ["ipv4_ecmp_ecn.p4", "stacks_varbit.p4", "stateful.p4", "shadowing.p4", "corner_cases.p4"])
def test_every_expression_is_typed_and_every_name_resolved(name: str) -> None:
    cp = load_program(str(PROGRAMS / name))
    untyped = []
    unresolved = []
    for n in _walk(cp.program, set()):
        if isinstance(n, A.Expr) and n.type is None and not isinstance(n, A.TypeNameExpr):
            untyped.append((n.pos, type(n).__name__))
        if isinstance(n, A.NameRef) and n.ref is None:
            unresolved.append((n.pos, n.name))
        if isinstance(n, A.Call) and not n.kind:
            unresolved.append((n.pos, "call"))
    assert untyped == [] and unresolved == []


def test_refs_name_their_owner() -> None:
    cp = load_program(str(PROGRAMS / "ipv4_ecmp_ecn.p4"))
    ig = cp.controls["FabricIngress"]
    grp = next(a for a in ig.actions if a.name == "set_ecmp_group")
    first = grp.body.stmts[0]  # meta.ecmp_base = base;
    assert first.rhs.ref.kind == "param" and first.rhs.ref.owner is grp
    assert first.lhs.expr.ref.kind == "param" and first.lhs.expr.ref.owner is ig.decl
    assert ig.locals["ipv4_lpm"].owner is ig.decl and ig.locals["ipv4_lpm"].kind == "table"
    assert cp.error_code("NoError") == 0 and cp.error_code("HeaderTooShort") == 4
