"""AST queries used by the lowering passes (no code generation here)."""

from __future__ import annotations

from typing import Any

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    ExternType,
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


def _out_args(params: list[A.Param] | None, args: list[A.Argument]) -> list[A.Expr]:
    """The arguments a call may write: those bound to out/inout parameters, or all of
    them when the callee's parameters are not known."""
    if params is None:
        return [a.value for a in args]
    return [av for p, av in bind_args(params, args) if av is not None and p.direction in ("out", "inout")]


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
            for av in _out_args(params, n.args):
                root(av)
            if params is not None and isinstance(n.func, A.Member) and n.kind == "builtin":
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


def _headers_in(t: object, out: set[int]) -> None:
    """Ids of the header types a value of type `t` holds (itself included)."""
    b = bt(t)  # type: ignore[arg-type]
    if isinstance(b, HeaderType):
        out.add(id(b))
    if isinstance(b, HeaderType | HeaderUnionType | StructType):
        for _f, ft in b.fields:
            _headers_in(ft, out)
    elif isinstance(b, HeaderStackType):
        _headers_in(b.elem, out)


def _copied_out(params: list[A.Param], args: list[A.Argument], written: Any) -> None:
    """Arguments a P4 body's copy-out writes: a scalar (a header field) is written by it;
    an aggregate changes only through the body's own writes to its parts, which the
    walk sees (an `out` one is reset, i.e. invalid)."""
    for p, av in bind_args(params, args):
        if av is not None and p.direction in ("out", "inout") and not isinstance(
                bt(p.type), HeaderType | HeaderUnionType | StructType | HeaderStackType):
            written(av)


def _rewritten_headers(prog: A.Program) -> set[int]:
    """Ids of the header types whose contents may differ from the bytes they were
    extracted from: written anywhere (assignment, out/inout argument of an extern,
    setValid, stack operations) or built from an expression. A header of any other
    type can be deparsed as the bytes it was extracted from (ClassTable `raw`)."""
    return set(_header_writes(prog))


def _header_writes(prog: A.Program) -> dict[int, set[str] | None]:
    """Per header type id that anything may write (see _rewritten_headers): the names
    of its fields written one by one, or None when a whole value may be written (or
    made valid) at once. A field of no type in here keeps its extracted value."""
    out: dict[int, set[str] | None] = {}

    def written(e: A.Expr) -> None:
        held: set[int] = set()
        _headers_in(e.type, held)
        for h in held:
            out[h] = None
        while isinstance(e, A.Member | A.Index | A.Slice):
            inner = e.expr
            b = bt(inner.type)
            if isinstance(b, HeaderType):
                fields = out.setdefault(id(b), set())
                if fields is not None and isinstance(e, A.Member):
                    fields.add(e.name)
                elif fields is not None:
                    out[id(b)] = None
            e = inner

    def whole(t: object) -> None:
        held: set[int] = set()
        _headers_in(t, held)
        for h in held:
            out[h] = None

    for n in _walk(prog):
        if isinstance(n, A.Assign):
            written(n.lhs)
        elif isinstance(n, A.VarDecl) and n.init is not None:
            whole(n.type)
        elif isinstance(n, A.ActionRef) and n.args and n.decl is not None:
            _copied_out(n.decl.params, n.args, written)
        elif isinstance(n, A.StructExpr | A.ListExpr | A.DefaultExpr):
            whole(n.type)
        elif isinstance(n, A.Call):
            t = n.target
            f = n.func
            if n.kind == "builtin":
                if t not in ("isValid", "setInvalid") and isinstance(f, A.Member):
                    written(f.expr)
                continue
            if isinstance(t, A.ActionDecl | A.FunctionDecl | A.ControlDecl | A.ParserDecl):
                ps = t.proto.params if isinstance(t, A.FunctionDecl) else t.params
                _copied_out(ps, n.args, written)
                continue
            if (isinstance(f, A.Member) and f.name in ("extract", "lookahead")
                    and str(bt(f.expr.type)) == "packet_in"):
                continue
            for av in _out_args(t.params if isinstance(t, A.MethodDecl) else None, n.args):
                written(av)
    return out


def _children(n: A.Node) -> Any:
    for k, v in vars(n).items():
        if k in ("type", "const", "ref", "target", "pos", "decl", "name_pos", "type_bindings"):
            continue
        if isinstance(v, A.Node):
            yield v
        elif isinstance(v, list):
            yield from (x for x in v if isinstance(x, A.Node))


def _read_headers(prog: A.Program) -> set[int]:
    """Ids of the header types whose field values the program may read: a field access,
    or a whole value used other than as a path prefix, an argument of a P4 body (whose
    own reads this walk sees), or extract/emit/lookahead. A header of any other type
    need not be decoded at extraction (ClassTable `unread`)."""
    out: set[int] = set()
    stack: list[tuple[A.Node, A.Node | None, A.Node | None]] = [(prog, None, None)]
    while stack:
        n, parent, grand = stack.pop()
        stack.extend((c, n, parent) for c in _children(n))
        if not isinstance(n, A.Expr):
            continue
        if isinstance(n, A.Member):
            b = bt(n.expr.type)
            if isinstance(b, HeaderType) and any(f == n.name for f, _ in b.fields):
                out.add(id(b))
                continue
        held: set[int] = set()
        _headers_in(n.type, held)
        if not held:
            continue
        if isinstance(parent, A.Member | A.Index) and parent.expr is n:
            continue  # a path prefix: the access itself is judged on its own
        if isinstance(parent, A.Assign) and parent.lhs is n:
            continue
        if isinstance(parent, A.Argument) and isinstance(grand, A.Call):
            t = grand.target
            f = grand.func
            if isinstance(t, A.ActionDecl | A.FunctionDecl | A.ControlDecl | A.ParserDecl):
                continue
            if (isinstance(f, A.Member) and f.name in ("extract", "emit", "lookahead")
                    and str(bt(f.expr.type)) in ("packet_in", "packet_out")):
                continue
        out |= held
    return out


def _parse_len_is_cursor(p: A.ParserDecl) -> bool:
    """True when, right after the parser ran on fresh (invalid) headers, the bytes of
    the valid headers are the bytes its cursor advanced, so the packet path needs no
    sum over the headers: it only extracts (no advance, sub-parser, validity change
    or header assignment), each into a header of its `hdr` struct or an element of a
    stack there (no union member, no local), no header twice (distinct extract
    statements, no state loop)."""
    hdr = p.params[1] if len(p.params) > 1 else None
    seen: set[str] = set()
    for n in _walk(p):
        if isinstance(n, A.Assign):
            held: set[int] = set()
            _headers_in(n.lhs.type, held)
            if held:
                return False
        elif isinstance(n, A.Call):
            f = n.func
            if isinstance(f, A.Member) and str(bt(f.expr.type)) == "packet_in":
                if f.name == "lookahead":
                    continue
                key = _extract_key(n.args[0].value, hdr) if f.name == "extract" and n.args else None
                if key is None or (key in seen and not key.endswith(".next")):
                    return False
                seen.add(key)
            elif n.kind in ("function", "action", "apply") or n.kind == "builtin" and n.target in (
                    "setValid", "setInvalid", "push_front", "pop_front"):
                return False  # a body this walk does not see, or a validity change
    graph = {s.name: _targets(s) for s in p.states}
    state: dict[str, int] = {}  # 1 on the DFS stack, 2 done

    def loops(s: str) -> bool:
        if state.get(s) == 1:
            return True
        if state.get(s) == 2 or s not in graph:
            return False
        state[s] = 1
        if any(loops(t) for t in graph[s]):
            return True
        state[s] = 2
        return False

    return not loops("start")


def _extract_key(e: A.Expr, hdr: A.Param | None) -> str | None:
    """`f`, `s.next` or `s[i]` for a header `hdr.f` or an element of a stack `hdr.s`
    (a header type's, not a union's), else None."""
    def is_hdr(x: A.Expr) -> bool:
        return isinstance(x, A.NameRef) and x.ref is not None and x.ref.decl is hdr

    if isinstance(e, A.Member) and is_hdr(e.expr) and isinstance(bt(e.type), HeaderType):
        return e.name
    stack = e.expr if isinstance(e, A.Member | A.Index) else None
    if not (isinstance(stack, A.Member) and is_hdr(stack.expr)):
        return None
    st = bt(stack.type)
    if not (isinstance(st, HeaderStackType) and isinstance(bt(st.elem), HeaderType)):
        return None
    if isinstance(e, A.Member) and e.name == "next":
        return stack.name + ".next"
    if isinstance(e, A.Index) and e.index.const is not None:
        return f"{stack.name}[{e.index.const}]"
    return None


def _direct_meter_targets(prog: A.Program) -> tuple[dict[int, A.Expr], set[int]]:
    """Where BMv2 writes each direct meter's color. p4c-bm2-ss turns `read(dst)` into the
    meter's result target and drops the call (it refuses two destinations); BMv2 then
    writes the color into `dst` on every hit of the table, before its action, whichever
    action that is. For each direct_meter whose reads all name one field of the
    control's parameters or locals: (meter declaration id -> that lvalue, the ids of
    its read calls, which do nothing themselves). Otherwise (p4c-bm2-ss refuses the
    program) each read writes the color where it stands, as the v1model text reads."""
    targets: dict[int, A.Expr] = {}
    hoisted: set[int] = set()
    for c in prog.decls:
        if not isinstance(c, A.ControlDecl):
            continue
        scope = {id(p) for p in c.params} | {id(d) for d in c.locals if isinstance(d, A.VarDecl)}
        reads: dict[int, list[tuple[A.Call, A.Expr | None]]] = {}
        for n in _walk([c.locals, c.body]):
            if not (isinstance(n, A.Call) and n.kind == "extern_method" and isinstance(n.func, A.Member)
                    and n.func.name == "read" and isinstance(n.func.expr, A.NameRef)
                    and n.func.expr.ref is not None and isinstance(n.target, A.MethodDecl)):
                continue
            rt = bt(n.func.expr.type)
            if isinstance(rt, ExternType) and rt.name == "direct_meter":
                dst = bind_args(n.target.params, n.args)[0][1]
                reads.setdefault(id(n.func.expr.ref.decl), []).append((n, dst))
        for meter, calls in reads.items():
            keys = {_lvalue_key(dst, scope) for _, dst in calls}
            first = calls[0][1]
            if len(keys) == 1 and None not in keys and first is not None:
                targets[meter] = first
                hoisted |= {id(call) for call, _ in calls}
    return targets, hoisted


def _lvalue_key(e: A.Expr | None, scope: set[int]) -> tuple[Any, ...] | None:
    """`a.b.c` as a comparable key when `a` is declared in `scope`; None otherwise."""
    if isinstance(e, A.NameRef):
        return ("name", id(e.ref.decl)) if e.ref is not None and id(e.ref.decl) in scope else None
    if isinstance(e, A.Member):
        base = _lvalue_key(e.expr, scope)
        return None if base is None else (base, e.name)
    return None
