"""AST queries used by the lowering passes (no code generation here)."""

from __future__ import annotations

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    StructType,
)

from .astwalk import _walk
from .base import bind_args, bt


# ---------------------------------------------------------------------- AST queries
def _targets(s: A.ParserState) -> list[str]:
    tr = s.transition
    if tr is None:
        return []
    if tr.state is not None:
        return [tr.state]
    if tr.select is not None:
        return [c.state for c in tr.select.cases]
    return []


def _has_return(body: A.Stmt) -> bool:
    return any(isinstance(n, A.Return) for n in _walk(body))


def _written(body: A.Stmt) -> set[int]:
    """Declarations written in `body` (assigned, or passed to out/inout parameters)."""
    out: set[int] = set()

    def root(e: A.Expr) -> None:
        while isinstance(e, A.Member | A.Index | A.Slice):
            e = e.expr
        if isinstance(e, A.NameRef) and e.ref is not None and e.ref.decl is not None:
            out.add(id(e.ref.decl))

    for n in _walk(body):
        if isinstance(n, A.Assign):
            root(n.lhs)
        elif isinstance(n, A.Call):
            t = n.target
            params = None
            if isinstance(t, A.MethodDecl):
                params = t.params
            elif isinstance(t, A.ActionDecl):
                params = t.params
            elif isinstance(t, A.FunctionDecl):
                params = t.proto.params
            elif isinstance(t, A.ControlDecl | A.ParserDecl):
                params = t.params
            if params is None:
                for a in n.args:
                    root(a.value)
                continue
            for p, av in bind_args(params, n.args):
                if av is not None and p.direction in ("out", "inout"):
                    root(av)
            if isinstance(n.func, A.Member) and n.kind == "builtin":
                root(n.func.expr)
    return out


def _unpadded(members: list[tuple[str, int]]) -> str:
    """MSB-first concatenation of in-range values (no end padding)."""
    expr = members[0][0]
    for code, w in members[1:]:
        expr = f"(({expr}) << {w}) | {code}"
    return expr


def _static_length(prog: A.Program) -> bool:
    """True when no control adds or removes headers (packet_length then never changes)."""
    for n in _walk(prog):
        if isinstance(n, A.ControlDecl):
            for m in _walk(n):
                if isinstance(m, A.Call) and m.kind == "builtin" and m.target in (
                        "setValid", "setInvalid", "push_front", "pop_front"):
                    return False
                if isinstance(m, A.Assign) and isinstance(
                        bt(m.lhs.type), HeaderType | HeaderStackType | HeaderUnionType | StructType):
                    return False
                if isinstance(m, A.Call) and m.kind in ("action", "function", "apply"):
                    continue
    return True
