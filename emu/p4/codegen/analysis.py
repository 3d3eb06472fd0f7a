"""AST queries used by the lowering passes (no code generation here)."""

from __future__ import annotations

from typing import Any

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    StructType,
)

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


def _walk(node: Any) -> Any:
    """All AST nodes under `node` (statements and expressions)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(n)
            continue
        if not isinstance(n, A.Node):
            continue
        yield n
        for k, v in vars(n).items():
            if k in ("type", "const", "ref", "target", "pos", "decl", "name_pos", "type_bindings"):
                continue
            if isinstance(v, A.Node | list):
                stack.append(v)


def _has_return(body: A.Stmt) -> bool:
    return any(isinstance(n, A.Return) for n in _walk(body))


# id(body) -> (body, result): the body is kept so that a reused id of a freed node from an
# earlier program never hits (that made lowering depend on what was compiled before).
_EXIT_MEMO: dict[int, tuple[Any, bool]] = {}


def _may_exit(body: Any) -> bool:
    """Whether `exit` can run inside `body` (through calls and table actions)."""
    key = id(body)
    hit = _EXIT_MEMO.get(key)
    if hit is not None and hit[0] is body:
        return hit[1]
    _EXIT_MEMO[key] = (body, False)
    r = False
    for n in _walk(body):
        if isinstance(n, A.Exit):
            r = True
        elif isinstance(n, A.Call):
            t = n.target
            if isinstance(t, A.ActionDecl):
                r = _may_exit(t.body)
            elif isinstance(t, A.FunctionDecl):
                r = _may_exit(t.body)
            elif isinstance(t, A.ControlDecl):
                r = _may_exit(t.body)
            elif isinstance(t, A.TableDecl):
                ap = t.prop("actions")
                r = any(_may_exit(ar.decl.body) for ar in (ap.actions if ap else []) if ar.decl is not None)
        if r:
            break
    _EXIT_MEMO[key] = (body, r)
    return r


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
