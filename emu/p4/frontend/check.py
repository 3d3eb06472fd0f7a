"""Semantic checks: name resolution, types, widths, constant folding.

Input: an ``ast.Program``.  Output: a :class:`CheckedProgram`; the AST is
annotated in place so that a code generator can walk it directly:

* every ``ast.Expr`` gets ``.type`` (a ``types.Type``) and, when it is a
  compile-time constant, ``.const`` (int or bool; enum members fold to their
  value for serializable enums, else to the member name);
* every ``ast.NameRef`` (and ``ast.Member`` that does not select a field)
  gets ``.ref``, a :class:`Ref` saying what the name denotes;
* every ``ast.Call`` gets ``.kind`` / ``.target`` / ``.type_bindings``;
* ``Param``/``VarDecl``/``ConstDecl``/``Instantiation``/``ValueSetDecl`` get
  ``.type``; ``ActionRef.decl`` is the ActionDecl a table names.

Ref.kind values: "local" (VarDecl), "param" (Param; ``decl.direction == ""``
in an action means control-plane action data), "const" (ConstDecl),
"action", "table", "instance" (Instantiation of an extern / parser / control),
"value_set", "extern_function", "function", "enum_member", "error_member",
"match_kind", "state", "parser", "control" (a declaration used as a type).

Unlike p4c, literal-width rules are those of the P4_16 spec: an unsized
literal adopts the width of the other operand, and two sized operands must
agree exactly (no implicit widening).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import ast as A
from .diagnostics import DiagnosticSink, P4Error
from .types import (
    BOOL,
    DONTCARE,
    ERROR,
    INT,
    MATCH_KIND,
    STRING,
    VOID,
    ActionEnumType,
    ActionType,
    ApplyResultType,
    BitType,
    BlockType,
    BoolType,
    DontCareType,
    EnumType,
    ErrorType,
    ExternType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    IntType,
    MethodType,
    NewType,
    StructLikeType,
    StructType,
    TableType,
    TupleType,
    Type,
    TypeOfType,
    TypeVar,
    VarbitType,
    VoidType,
    strip_newtype,
)


@dataclass(eq=False)
class Ref:
    """What a name denotes.  See the module docstring for ``kind`` values."""

    kind: str
    name: str
    decl: Any = field(default=None, repr=False)
    type: Type | None = None
    value: Any = None  # folded value of constants / enum members
    # For "param"/"local"/"const"/"instance"/"table"/"action": the declaration that owns
    # the name (ParserDecl, ControlDecl, ActionDecl, FunctionDecl), None at top level.
    owner: Any = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"Ref({self.kind} {self.name}: {self.type})"


@dataclass
class BlockInfo:
    """A parser or control declaration with its resolved local names."""

    decl: A.ParserDecl | A.ControlDecl
    kind: str  # "parser" | "control"
    locals: dict[str, Ref] = field(default_factory=dict)

    @property
    def tables(self) -> list[A.TableDecl]:
        return [d for d in self.decl.locals if isinstance(d, A.TableDecl)]

    @property
    def actions(self) -> list[A.ActionDecl]:
        return [d for d in self.decl.locals if isinstance(d, A.ActionDecl)]

    @property
    def instances(self) -> list[A.Instantiation]:
        return [d for d in self.decl.locals if isinstance(d, A.Instantiation)]


@dataclass
class CheckedProgram:
    """The checked program handed to lowering/code generation.

    ``program``          annotated AST (see module docstring)
    ``types``            global named types (typedefs resolved)
    ``constants``        global constant values
    ``errors``           error members in declaration order (index = error code)
    ``match_kinds``      declared match kinds
    ``externs``          extern object declarations by name
    ``extern_functions`` extern function overloads by name
    ``actions``          top-level actions (NoAction, ...)
    ``functions``        top-level functions
    ``parsers`` / ``controls``  BlockInfo per declaration name
    ``main``             the top-level package instantiation named ``main``
    ``pipeline``         for a V1Switch main: parameter name (p, vr, ig, eg,
                         ck, dep) -> the ParserDecl/ControlDecl passed
    ``warnings``         non-fatal diagnostics
    """

    program: A.Program
    types: dict[str, Type]
    constants: dict[str, Any]
    errors: list[str]
    match_kinds: list[str]
    externs: dict[str, A.ExternDecl]
    extern_functions: dict[str, list[A.MethodDecl]]
    actions: dict[str, A.ActionDecl]
    functions: dict[str, A.FunctionDecl]
    parsers: dict[str, BlockInfo]
    controls: dict[str, BlockInfo]
    instances: dict[str, A.Instantiation]
    main: A.Instantiation | None
    pipeline: dict[str, A.ParserDecl | A.ControlDecl]
    warnings: list[Any] = field(default_factory=list)

    def error_code(self, name: str) -> int:
        """Numeric value of ``error.<name>`` (declaration order, NoError = 0), as BMv2 numbers them."""
        return self.errors.index(name)


class Scope:
    def __init__(self, parent: Scope | None = None, kind: str = "block") -> None:
        self.parent = parent
        self.kind = kind
        self.values: dict[str, Ref] = {}
        self.types: dict[str, Type] = {}

    def lookup(self, name: str) -> Ref | None:
        s: Scope | None = self
        while s is not None:
            r = s.values.get(name)
            if r is not None:
                return r
            s = s.parent
        return None

    def lookup_type(self, name: str) -> Type | None:
        s: Scope | None = self
        while s is not None:
            t = s.types.get(name)
            if t is not None:
                return t
            s = s.parent
        return None


_HEADER_METHODS = {"isValid", "setValid", "setInvalid"}
_STACK_METHODS = {"push_front", "pop_front"}
_UNSUPPORTED_MSG = "is not supported by the embedded target"


class _Abort(Exception):
    """Stops checking one declaration after an error was recorded."""


class Checker:
    def __init__(self, sink: DiagnosticSink | None = None) -> None:
        self.sink = sink or DiagnosticSink()
        self.glob = Scope(None, "global")
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.externs: dict[str, A.ExternDecl] = {}
        self.extern_functions: dict[str, list[A.MethodDecl]] = {}
        self.actions: dict[str, A.ActionDecl] = {}
        self.functions: dict[str, A.FunctionDecl] = {}
        self.parsers: dict[str, BlockInfo] = {}
        self.controls: dict[str, BlockInfo] = {}
        self.instances: dict[str, A.Instantiation] = {}
        self.constants: dict[str, Any] = {}
        # Context while checking bodies.
        self.block: BlockInfo | None = None
        self.return_type: Type | None = None
        self.in_action = False
        self.in_parser = False
        self.owner: Any = None  # innermost parser/control/action/function being checked
        self.loops = 0  # nesting depth of for loops (break/continue need one)

    # ================================================================ entry
    def check(self, prog: A.Program) -> CheckedProgram:
        for d in prog.decls:
            try:
                self.decl_global(d)
            except _Abort:
                pass
        main = self.instances.get("main")
        pipeline: dict[str, A.ParserDecl | A.ControlDecl] = {}
        if main is not None and isinstance(main.type, BlockType) and main.type.kind == "package":
            pdecl = main.type.decl
            by_name = {p.name: p for p in pdecl.params}
            for i, a in enumerate(main.args):
                # named arguments (V1Switch(p = ..., ig = ...)) pair by name, others by position
                p = by_name.get(a.name) if a.name else (pdecl.params[i] if i < len(pdecl.params) else None)
                if p is None:
                    continue
                v = a.value
                if isinstance(v, A.CtorCall) and isinstance(v.type, BlockType):
                    if isinstance(v.type.decl, A.ParserDecl | A.ControlDecl):
                        pipeline[p.name] = v.type.decl
                elif isinstance(v, A.NameRef) and v.ref is not None and v.ref.kind == "instance":
                    t = v.ref.type
                    if isinstance(t, BlockType) and isinstance(t.decl, A.ParserDecl | A.ControlDecl):
                        pipeline[p.name] = t.decl
        self.sink.raise_if_errors()
        return CheckedProgram(
            prog,
            dict(self.glob.types),
            self.constants,
            self.errors,
            self.match_kinds,
            self.externs,
            self.extern_functions,
            self.actions,
            self.functions,
            self.parsers,
            self.controls,
            self.instances,
            main,
            pipeline,
            [d for d in self.sink.diagnostics if d.severity != "error"],
        )

    # ================================================================ helpers
    def err(self, node: A.Node | A.Pos, msg: str) -> None:
        pos = node if isinstance(node, A.Pos) else node.pos
        self.sink.error(pos, msg)

    def fatal(self, node: A.Node | A.Pos, msg: str) -> _Abort:
        self.err(node, msg)
        return _Abort()

    def declare(self, scope: Scope, name: str, ref: Ref, node: A.Node) -> None:
        if ref.owner is None and scope is not self.glob:
            ref.owner = self.owner
        old = scope.values.get(name)
        if old is not None and not (old.kind in ("extern_function", "action") and ref.kind == old.kind):
            self.err(node, f"redeclaration of '{name}'")
            return
        scope.values[name] = ref

    def declare_type(self, scope: Scope, name: str, t: Type, node: A.Node) -> None:
        if name in scope.types:
            self.err(node, f"redeclaration of type '{name}'")
            return
        scope.types[name] = t

    # ================================================================ types
    def resolve_type(self, tr: A.TypeRef, scope: Scope) -> Type:
        if isinstance(tr, A.BaseTypeRef):
            k = tr.kind
            if k in ("bit", "int", "varbit"):
                if tr.width is None:
                    return BitType(1) if k == "bit" else INT
                w = self.const_int(tr.width, scope, "width")
                if w < 0 or (k == "int" and w == 0):
                    raise self.fatal(tr.width, f"invalid width {w} for {k}")
                if k == "varbit":
                    return VarbitType(w)
                return BitType(w, k == "int")
            return {
                "bool": BOOL, "error": ERROR, "string": STRING, "match_kind": MATCH_KIND,
                "void": VOID, "_": DONTCARE,
            }[k]
        if isinstance(tr, A.NamedTypeRef):
            t = (self.glob if tr.top_level else scope).lookup_type(tr.name)
            if t is None:
                raise self.fatal(tr, f"unknown type '{tr.name}'")
            if tr.args:
                args = [self.resolve_type(a, scope) for a in tr.args]
                return self.specialize(t, args, tr)
            return t
        if isinstance(tr, A.StackTypeRef):
            elem = self.resolve_type(tr.elem, scope)
            size = self.const_int(tr.size, scope, "header stack size")
            if size <= 0:
                raise self.fatal(tr.size, "header stack size must be positive")
            if not isinstance(strip_newtype(elem), HeaderType | HeaderUnionType):
                self.err(tr, f"header stack element type must be a header, not '{elem}'")
            return HeaderStackType(elem, size)
        if isinstance(tr, A.TupleTypeRef):
            return TupleType(tuple(self.resolve_type(a, scope) for a in tr.args))
        raise self.fatal(tr, "unknown type form")

    def specialize(self, t: Type, args: list[Type], node: A.Node) -> Type:
        if isinstance(t, ExternType):
            params = t.decl.type_params
            # As p4c: all of them or none (none: inferred from the constructor's arguments).
            if len(args) != len(params):
                raise self.fatal(node, f"'{t.name}' takes {len(params)} type arguments, got {len(args)}")
            binding: dict[str, Type] = {}
            for p, a in zip(params, args, strict=False):
                if not isinstance(a, DontCareType):
                    binding[p] = a
            return ExternType(t.name, t.decl, binding)
        if isinstance(t, BlockType):
            params = t.decl.type_params
            return BlockType(t.name, t.kind, t.decl, dict(zip(params, args, strict=False)))
        if isinstance(t, StructLikeType) and t.decl is not None and t.decl.type_params:
            binding = dict(zip(t.decl.type_params, args, strict=False))
            fields = [(n, self.subst(ft, binding)) for n, ft in t.fields]
            return type(t)(f"{t.name}<{', '.join(map(str, args))}>", fields, t.decl)
        raise self.fatal(node, f"type '{t}' is not generic")

    def subst(self, t: Type, binding: dict[str, Type]) -> Type:
        if isinstance(t, TypeVar):
            return binding.get(t.name, t)
        if isinstance(t, HeaderStackType):
            return HeaderStackType(self.subst(t.elem, binding), t.size)
        if isinstance(t, TupleType):
            return TupleType(tuple(self.subst(e, binding) for e in t.elems))
        if isinstance(t, ExternType) and t.type_args:
            return ExternType(t.name, t.decl, {k: self.subst(v, binding) for k, v in t.type_args.items()})
        if isinstance(t, BlockType) and t.type_args:
            return BlockType(t.name, t.kind, t.decl, {k: self.subst(v, binding) for k, v in t.type_args.items()})
        return t

    def same_type(self, a: Type, b: Type) -> bool:
        if a is b or a == b:
            return True
        if isinstance(a, StructLikeType) and isinstance(b, StructLikeType):
            return a.decl is not None and a.decl is b.decl and a.name == b.name
        if isinstance(a, ExternType) and isinstance(b, ExternType):
            return a.decl is b.decl
        if isinstance(a, BlockType) and isinstance(b, BlockType):
            return a.decl is b.decl
        if isinstance(a, TupleType) and isinstance(b, TupleType):
            return len(a.elems) == len(b.elems) and all(self.same_type(x, y) for x, y in zip(a.elems, b.elems, strict=True))
        return False

    # ================================================================ constants
    def const_int(self, e: A.Expr, scope: Scope, what: str) -> int:
        self.expr(e, scope)
        v = e.const
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fatal(e, f"{what} must be a compile-time integer constant")
        return v

    # ================================================================ global declarations
    def decl_global(self, d: A.Decl) -> None:
        g = self.glob
        if isinstance(d, A.ErrorDecl):
            for m in d.members:
                if m in self.errors:
                    self.err(d, f"duplicate error member '{m}'")
                else:
                    self.errors.append(m)
        elif isinstance(d, A.MatchKindDecl):
            for m in d.members:
                if m in self.match_kinds:
                    self.err(d, f"duplicate match_kind '{m}'")
                else:
                    self.match_kinds.append(m)
                    self.declare(g, m, Ref("match_kind", m, d, MATCH_KIND, m), d)
        elif isinstance(d, A.HeaderDecl):
            self.aggregate(d, g)
        elif isinstance(d, A.EnumDecl):
            self.enum(d, g)
        elif isinstance(d, A.TypedefDecl):
            base = self.resolve_type(d.typeref, g)
            self.declare_type(g, d.name, NewType(d.name, base) if d.new_type else base, d)
        elif isinstance(d, A.ConstDecl):
            self.const_decl(d, g)
            self.constants[d.name] = d.value.const
        elif isinstance(d, A.ExternDecl):
            self.externs[d.name] = d
            self.declare_type(g, d.name, ExternType(d.name, d), d)
            inner = Scope(g)
            for tp in d.type_params:
                inner.types[tp] = TypeVar(tp, d)
            for method in d.methods:
                self.prototype(method, inner)
        elif isinstance(d, A.MethodDecl):
            self.prototype(d, g)
            self.extern_functions.setdefault(d.name, []).append(d)
            if d.name not in g.values:
                g.values[d.name] = Ref("extern_function", d.name, self.extern_functions[d.name])
        elif isinstance(d, A.ParserTypeDecl):
            self.declare_type(g, d.name, BlockType(d.name, d.kind, d), d)
        elif isinstance(d, A.ActionDecl):
            self.actions[d.name] = d
            self.declare(g, d.name, Ref("action", d.name, d, ActionType(d)), d)
            self.action(d, g)
        elif isinstance(d, A.FunctionDecl):
            self.function(d, g)
        elif isinstance(d, A.ParserDecl):
            self.declare_type(g, d.name, BlockType(d.name, "parser", d), d)
            self.parser(d, g)
        elif isinstance(d, A.ControlDecl):
            self.declare_type(g, d.name, BlockType(d.name, "control", d), d)
            self.control(d, g)
        elif isinstance(d, A.Instantiation):
            self.instantiation(d, g)
            self.instances[d.name] = d
        else:
            self.err(d, f"'{type(d).__name__}' {_UNSUPPORTED_MSG} at top level")

    def prototype(self, m: A.MethodDecl, scope: Scope) -> None:
        """Resolve a prototype's parameter types (generic ones stay TypeVars)."""
        inner = Scope(scope)
        for tp in m.type_params:
            inner.types[tp] = TypeVar(tp, m)
        for p in m.params:
            try:
                p.type = self.resolve_type(p.typeref, inner)
            except _Abort:
                p.type = DONTCARE
        if m.return_type is not None:
            try:
                self.resolve_type(m.return_type, inner)
            except _Abort:
                pass

    def aggregate(self, d: A.HeaderDecl, scope: Scope) -> None:
        cls = {"header": HeaderType, "header_union": HeaderUnionType, "struct": StructType}[d.kind]
        t = cls(d.name, [], d)
        self.declare_type(scope, d.name, t, d)
        inner = Scope(scope)
        for tp in d.type_params:
            inner.types[tp] = TypeVar(tp, d)
        seen: set[str] = set()
        for f in d.fields:
            try:
                ft = self.resolve_type(f.typeref, inner)
            except _Abort:
                continue
            if f.name in seen:
                self.err(f, f"duplicate field '{f.name}' in {d.kind} '{d.name}'")
            seen.add(f.name)
            base = strip_newtype(ft)
            fixed_struct = isinstance(base, StructType) and base.bit_width is not None
            if d.kind == "header" and not (fixed_struct or isinstance(base, BitType | VarbitType | BoolType | EnumType | TypeVar)):
                self.err(f.typeref, f"header field '{f.name}' cannot have type '{ft}'")
            if d.kind == "header" and isinstance(base, EnumType) and base.underlying is None:
                self.err(f.typeref, f"header field '{f.name}' needs a serializable enum, not '{ft}'")
            if d.kind == "header_union" and not isinstance(base, HeaderType):
                self.err(f.typeref, f"header_union member '{f.name}' must be a header, not '{ft}'")
            t.fields.append((f.name, ft))

    def enum(self, d: A.EnumDecl, scope: Scope) -> None:
        under: BitType | None = None
        if d.underlying is not None:
            ut = strip_newtype(self.resolve_type(d.underlying, scope))
            if not isinstance(ut, BitType):
                raise self.fatal(d.underlying, f"enum underlying type must be bit<W> or int<W>, not '{ut}'")
            under = ut
        t = EnumType(d.name, list(d.members), under, {}, d)
        if under is not None:
            for m, v in zip(d.members, d.values, strict=True):
                self.expr(v, scope, under)
                if v.const is None or isinstance(v.const, bool):
                    self.err(v, f"value of enum member '{m}' must be a compile-time constant")
                    continue
                t.values[m] = under.wrap(int(v.const))
        if len(set(d.members)) != len(d.members):
            self.err(d, f"duplicate member in enum '{d.name}'")
        self.declare_type(scope, d.name, t, d)

    def const_decl(self, d: A.ConstDecl, scope: Scope) -> None:
        t = self.resolve_type(d.typeref, scope)
        d.type = t
        self.expr(d.value, scope, t)
        self.coerce(d.value, t, "initialize")
        if d.value.const is None:
            self.err(d.value, f"initializer of constant '{d.name}' is not a compile-time constant")
        self.declare(scope, d.name, Ref("const", d.name, d, t, d.value.const), d)

    # ================================================================ blocks
    def params(self, params: list[A.Param], scope: Scope, owner: Any = None) -> None:
        for p in params:
            try:
                p.type = self.resolve_type(p.typeref, scope)
            except _Abort:
                p.type = DONTCARE
            if p.default is not None:
                self.expr(p.default, scope, p.type)
            self.declare(scope, p.name, Ref("param", p.name, p, p.type, owner=owner), p)

    def parser(self, d: A.ParserDecl, g: Scope) -> None:
        info = BlockInfo(d, "parser")
        self.parsers[d.name] = info
        s = Scope(g, "parser")
        for tp in d.type_params:
            s.types[tp] = TypeVar(tp, d)
        self.params(d.params, s, d)
        self.params(d.ctor_params, s, d)
        states = {"accept", "reject"}
        for st in d.states:
            if st.name in states:
                self.err(st, f"redeclaration of state '{st.name}'")
            states.add(st.name)
        for st in d.states:
            s.values.setdefault(st.name, Ref("state", st.name, st))
        prev = (self.block, self.in_parser, self.owner)
        self.block, self.in_parser, self.owner = info, True, d
        try:
            for loc in d.locals:
                try:
                    self.local_decl(loc, s)
                except _Abort:
                    pass
            info.locals = dict(s.values)
            if not any(st.name == "start" for st in d.states):
                self.err(d, f"parser '{d.name}' has no 'start' state")
            for st in d.states:
                ss = Scope(s)
                for stmt in st.stmts:
                    self.stmt_safe(stmt, ss)
                tr = st.transition
                if tr is None:
                    continue
                if tr.state is not None:
                    if tr.state not in states:
                        self.err(tr, f"unknown state '{tr.state}'")
                elif tr.select is not None:
                    self.select(tr.select, ss, states)
        finally:
            self.block, self.in_parser, self.owner = prev

    def select(self, sel: A.SelectExpr, scope: Scope, states: set[str]) -> None:
        types: list[Type] = []
        for e in sel.exprs:
            try:
                types.append(self.expr(e, scope))
            except _Abort:
                types.append(DONTCARE)
        sel.type = TupleType(tuple(types))
        for c in sel.cases:
            if c.state not in states:
                self.err(c, f"unknown state '{c.state}'")
            try:
                self.keyset(c.keyset, types, scope)
            except _Abort:
                pass

    def keyset(self, ks: A.Expr, types: list[Type], scope: Scope) -> None:
        if isinstance(ks, A.DefaultExpr | A.DontCare):
            ks.type = DONTCARE
            return
        if len(types) > 1 or isinstance(ks, A.ListExpr):
            items = ks.items if isinstance(ks, A.ListExpr) else [ks]
            if len(items) != len(types):
                if (
                    len(items) == 1 and isinstance(items[0], A.NameRef)
                    and (r := scope.lookup(items[0].name)) is not None and r.kind == "value_set"
                ):
                    self.expr(items[0], scope)
                    return
                raise self.fatal(ks, f"keyset has {len(items)} elements but the select has {len(types)} expressions")
            for it, t in zip(items, types, strict=True):
                self.keyset_elem(it, t, scope)
            ks.type = TupleType(tuple(types))
            return
        self.keyset_elem(ks, types[0], scope)

    def keyset_elem(self, e: A.Expr, t: Type, scope: Scope) -> None:
        if isinstance(e, A.DefaultExpr | A.DontCare):
            e.type = DONTCARE
            return
        if isinstance(e, A.Mask):
            self.expr(e.value, scope, t)
            self.expr(e.mask, scope, t)
            self.coerce(e.value, t, "match")
            self.coerce(e.mask, t, "match")
            e.type = t
            return
        if isinstance(e, A.Range):
            self.expr(e.lo, scope, t)
            self.expr(e.hi, scope, t)
            self.coerce(e.lo, t, "match")
            self.coerce(e.hi, t, "match")
            e.type = t
            return
        et = self.expr(e, scope, t)
        if isinstance(e, A.NameRef) and e.ref is not None and e.ref.kind == "value_set":
            return
        if not isinstance(et, DontCareType):
            self.coerce(e, t, "match")

    def control(self, d: A.ControlDecl, g: Scope) -> None:
        info = BlockInfo(d, "control")
        self.controls[d.name] = info
        s = Scope(g, "control")
        for tp in d.type_params:
            s.types[tp] = TypeVar(tp, d)
        self.params(d.params, s, d)
        self.params(d.ctor_params, s, d)
        prev = (self.block, self.owner)
        self.block, self.owner = info, d
        try:
            for loc in d.locals:
                try:
                    self.local_decl(loc, s)
                except _Abort:
                    pass
            info.locals = dict(s.values)
            self.stmt_safe(d.body, Scope(s))
        finally:
            self.block, self.owner = prev

    def local_decl(self, d: A.Decl, s: Scope) -> None:
        if isinstance(d, A.ConstDecl):
            self.const_decl(d, s)
        elif isinstance(d, A.VarDecl):
            self.var_decl(d, s)
        elif isinstance(d, A.Instantiation):
            self.instantiation(d, s)
        elif isinstance(d, A.ActionDecl):
            self.declare(s, d.name, Ref("action", d.name, d, ActionType(d)), d)
            self.action(d, s)
        elif isinstance(d, A.TableDecl):
            self.declare(s, d.name, Ref("table", d.name, d, TableType(d)), d)
            self.table(d, s)
        elif isinstance(d, A.ValueSetDecl):
            et = self.resolve_type(d.elem, s)
            self.const_int(d.size, s, "value_set size")
            d.type = et
            self.declare(s, d.name, Ref("value_set", d.name, d, et), d)
        elif isinstance(d, A.FunctionDecl):
            self.function(d, s)
        else:
            self.err(d, f"'{type(d).__name__}' {_UNSUPPORTED_MSG} here")

    def var_decl(self, d: A.VarDecl, s: Scope) -> None:
        t = self.resolve_type(d.typeref, s)
        d.type = t
        if d.init is not None:
            self.expr(d.init, s, t)
            self.coerce(d.init, t, "initialize")
        self.declare(s, d.name, Ref("local", d.name, d, t), d)

    def action(self, d: A.ActionDecl, s: Scope) -> None:
        inner = Scope(s, "action")
        seen_data = False
        for p in d.params:
            if p.direction == "":
                seen_data = True
            elif seen_data:
                self.err(p, "directional action parameters must come before directionless ones")
        self.params(d.params, inner, d)
        prev = (self.in_action, self.return_type, self.owner)
        self.in_action, self.return_type, self.owner = True, VOID, d
        try:
            self.stmt_safe(d.body, inner)
        finally:
            self.in_action, self.return_type, self.owner = prev

    def function(self, d: A.FunctionDecl, s: Scope) -> None:
        self.functions[d.name] = d
        self.declare(s, d.name, Ref("function", d.name, d, MethodType([d.proto], "function", d)), d)
        inner = Scope(s, "function")
        for tp in d.proto.type_params:
            inner.types[tp] = TypeVar(tp, d)
        self.params(d.proto.params, inner, d)
        assert d.proto.return_type is not None
        rt = self.resolve_type(d.proto.return_type, inner)
        prev = (self.return_type, self.owner)
        self.return_type, self.owner = rt, d
        try:
            self.stmt_safe(d.body, inner)
        finally:
            self.return_type, self.owner = prev

    def instantiation(self, d: A.Instantiation, s: Scope) -> None:
        if d.initializer:
            self.err(d, "object initializers (abstract method implementations) are not supported by the embedded target")
        t = self.resolve_type(d.typeref, s)
        d.type = self.construct(t, d.args, s, d)
        self.declare(s, d.name, Ref("instance", d.name, d, d.type), d)

    def construct(self, t: Type, args: list[A.Argument], s: Scope, node: A.Node) -> Type:
        """Check constructor arguments of extern/parser/control/package ``t``."""
        if isinstance(t, ExternType):
            ctors = [m for m in t.decl.methods if m.is_ctor]
            cands = [c for c in ctors if self.arity_ok(c.params, args)]
            if not cands:
                counts = sorted({len(c.params) for c in ctors})
                raise self.fatal(node, f"constructor of '{t.name}' expects {' or '.join(map(str, counts)) or 0} arguments, got {len(args)}")
            binding = dict(t.type_args)
            self.bind_args(cands[0].params, args, s, binding, {tp: TypeVar(tp) for tp in t.decl.type_params}, f"constructor of '{t.name}'")
            for tp in t.decl.type_params:
                if tp not in binding:
                    # p4c infers an instance's type arguments from its constructor only.
                    raise self.fatal(node, f"could not infer type argument '{tp}' of '{t.name}'; "
                                           f"give it: {t.name}<...>")
            return ExternType(t.name, t.decl, binding)
        if isinstance(t, BlockType):
            decl = t.decl
            if isinstance(decl, A.ParserTypeDecl) and decl.kind == "package":
                if len(args) != len(decl.params):
                    raise self.fatal(node, f"package '{t.name}' expects {len(decl.params)} arguments, got {len(args)}")
                byname = {p.name: p for p in decl.params}
                for i, a in enumerate(args):
                    at = self.expr(a.value, s)
                    p = byname.get(a.name) if a.name else decl.params[i]
                    if p is None:
                        self.err(a, f"package '{t.name}' has no parameter named '{a.name}'")
                        continue
                    self.check_block_arg(p, at, a, t.name, decl)
                return t
            if isinstance(decl, A.ParserDecl | A.ControlDecl):
                self.bind_args(decl.ctor_params, args, s, {}, {}, f"'{t.name}'", node)
                return t
            raise self.fatal(node, f"cannot instantiate '{t.name}': it is only a type declaration")
        raise self.fatal(node, f"cannot instantiate type '{t}'")

    def check_block_arg(self, p: A.Param, at: Type, a: A.Argument, pkg: str, decl: A.ParserTypeDecl) -> None:
        """A package argument must be a parser/control of the parameter's kind and arity."""
        inner = Scope(self.glob)
        for tp in decl.type_params:
            inner.types[tp] = TypeVar(tp, decl)
        try:
            pt = self.resolve_type(p.typeref, inner)
        except _Abort:
            return
        if not isinstance(pt, BlockType) or not isinstance(at, BlockType):
            return
        want, got = pt.kind, at.kind
        if want != got:
            self.err(a, f"argument '{p.name}' of '{pkg}' must be a {want}, not {got} '{at.name}'")
            return
        need, have = len(pt.decl.params), len(at.decl.params)
        if need != have:
            self.err(a, f"argument '{p.name}' of '{pkg}': {got} '{at.name}' has {have} parameters, '{pt.name}' needs {need}")

    # ================================================================ tables
    def table(self, d: A.TableDecl, s: Scope) -> None:
        key_types: list[Type] = []
        action_names: dict[str, A.ActionRef] = {}
        for p in d.properties:
            try:
                if p.kind == "key":
                    for k in p.keys:
                        kt = self.expr(k.expr, s)
                        key_types.append(kt)
                        if k.match_kind not in self.match_kinds:
                            self.err(k, f"unknown match kind '{k.match_kind}'")
                        if not isinstance(strip_newtype(kt), BitType | BoolType | EnumType | ErrorType | IntType):
                            self.err(k.expr, f"table key cannot have type '{kt}'")
                elif p.kind == "actions":
                    for ar in p.actions:
                        self.action_ref(ar, s, data_args=False)
                        action_names[ar.name.lstrip(".")] = ar
            except _Abort:
                pass
        for p in d.properties:
            try:
                if p.kind == "entries":
                    for en in p.entries:
                        self.entry(en, key_types, action_names, s, d)
                        if p.is_const and en.priority is not None:
                            # p4c (entryPriorities.cpp) refuses these; the table could not be built.
                            self.err(en.priority, f"table '{d.name}': 'const entries' cannot have priorities")
                elif p.kind == "value":
                    if p.name == "default_action":
                        self.default_action(p, action_names, s, d)
                    elif p.name in ("size", "max_size"):
                        assert p.value is not None
                        self.const_int(p.value, s, f"table property '{p.name}'")
                    else:
                        assert p.value is not None
                        self.expr(p.value, s)
            except _Abort:
                pass

    def action_ref(self, ar: A.ActionRef, s: Scope, data_args: bool) -> A.ActionDecl:
        name = ar.name.lstrip(".")
        r = (self.glob if ar.name.startswith(".") else s).lookup(name)
        if r is None:
            raise self.fatal(ar, f"unknown action '{name}'")
        if r.kind != "action":
            raise self.fatal(ar, f"'{name}' is not an action")
        ad: A.ActionDecl = r.decl
        ar.decl = ad
        args = ar.args or []
        params = ad.params if data_args else [p for p in ad.params if p.direction != ""]
        if ar.args is not None or data_args:
            self.bind_args(params, args, s, {}, {}, f"action '{name}'", ar)
        return ad

    def default_action(self, p: A.TableProperty, acts: dict[str, A.ActionRef], s: Scope, t: A.TableDecl) -> None:
        v = p.value
        if isinstance(v, A.Call) and isinstance(v.func, A.NameRef):
            name, args = v.func.name, v.args
        elif isinstance(v, A.NameRef):
            name, args = v.name, []
        else:
            raise self.fatal(p, "default_action must name an action")
        ar = A.ActionRef(name, args, pos=v.pos)
        ad = self.action_ref(ar, s, data_args=True)
        if v is not None:
            v.type = VOID
            if isinstance(v, A.Call):
                v.kind, v.target = "action", ad
                v.func.ref = Ref("action", name, ad, ActionType(ad))  # type: ignore[attr-defined]
                v.func.type = ActionType(ad)
            else:
                v.ref = Ref("action", name, ad, ActionType(ad))  # type: ignore[attr-defined]
                v.type = ActionType(ad)
        if acts and name not in acts:
            self.err(v or p, f"default action '{name}' is not in the actions list of table '{t.name}'")

    def entry(self, en: A.Entry, key_types: list[Type], acts: dict[str, A.ActionRef], s: Scope, t: A.TableDecl) -> None:
        self.keyset(en.keyset, key_types or [DONTCARE], s)
        if en.priority is not None:
            self.const_int(en.priority, s, "entry priority")
        ad = self.action_ref(en.action, s, data_args=True)
        if acts and ad.name not in acts:
            self.err(en.action, f"action '{ad.name}' is not in the actions list of table '{t.name}'")

    # ================================================================ statements
    def stmt_safe(self, st: A.Stmt, s: Scope) -> None:
        try:
            self.stmt(st, s)
        except _Abort:
            pass

    def stmt(self, st: A.Stmt, s: Scope) -> None:
        if isinstance(st, A.Block):
            inner = Scope(s)
            for x in st.stmts:
                self.stmt_safe(x, inner)
        elif isinstance(st, A.Assign):
            lt = self.expr(st.lhs, s)
            self.check_lvalue(st.lhs, s)
            if st.op != "=":
                op = st.op[:-1]
                bin_ = A.Binary(op, st.lhs, st.rhs, pos=st.pos)
                self.expr(bin_, s)
            else:
                self.expr(st.rhs, s, lt)
                self.coerce(st.rhs, lt, "assign")
        elif isinstance(st, A.CallStmt):
            self.expr(st.call, s)
        elif isinstance(st, A.If):
            self.expr(st.cond, s, BOOL)
            self.expect_bool(st.cond, "condition of 'if'")
            self.stmt_safe(st.then, Scope(s))
            if st.else_ is not None:
                self.stmt_safe(st.else_, Scope(s))
        elif isinstance(st, A.VarDecl):
            self.var_decl(st, s)
        elif isinstance(st, A.ConstDecl):
            self.const_decl(st, s)
        elif isinstance(st, A.Exit):
            if self.in_parser:
                self.err(st, "'exit' cannot be used in a parser")
        elif isinstance(st, A.Return):
            if self.in_parser:
                self.err(st, "'return' cannot be used in a parser")
            rt = self.return_type
            if st.value is not None:
                if rt is None or isinstance(rt, VoidType):
                    self.err(st, "return with a value in a block that returns nothing")
                else:
                    self.expr(st.value, s, rt)
                    self.coerce(st.value, rt, "return")
            elif rt is not None and not isinstance(rt, VoidType):
                self.err(st, f"return without a value in a function returning '{rt}'")
        elif isinstance(st, A.Empty):
            pass
        elif isinstance(st, A.Switch):
            self.switch(st, s)
        elif isinstance(st, A.ForStmt):
            if st.body is None:
                self.err(st, "'for ... in' loops are not supported by the embedded target")
                return
            inner = Scope(s)  # the loop variables live in the loop
            for x in st.init:
                self.stmt_safe(x, inner)
            if st.cond is not None:
                self.expr(st.cond, inner, BOOL)
                self.expect_bool(st.cond, "condition of 'for'")
            self.loops += 1
            try:
                self.stmt_safe(st.body, Scope(inner))
            finally:
                self.loops -= 1
            for x in st.update:
                self.stmt_safe(x, inner)
        elif isinstance(st, A.Break | A.Continue):
            if not self.loops:
                self.err(st, f"'{type(st).__name__.lower()}' outside a loop")
        else:
            self.err(st, f"'{type(st).__name__}' {_UNSUPPORTED_MSG}")

    def switch(self, st: A.Switch, s: Scope) -> None:
        t = self.expr(st.expr, s)
        seen: set[Any] = set()
        for i, c in enumerate(st.cases):
            if c.body is None and i == len(st.cases) - 1:
                self.err(c, "the last switch case must have a body")
            lab = c.label
            if isinstance(lab, A.DefaultExpr):
                lab.type = DONTCARE
                if i != len(st.cases) - 1:
                    self.err(lab, "'default' must be the last switch label")
            elif isinstance(t, ActionEnumType):
                if not isinstance(lab, A.NameRef):
                    self.err(lab, "switch labels on action_run must be action names")
                else:
                    names = {ar.name.lstrip("."): ar for p in t.table.properties if p.kind == "actions" for ar in p.actions}
                    if lab.name not in names:
                        self.err(lab, f"'{lab.name}' is not an action of table '{t.table.name}'")
                    else:
                        ad = names[lab.name].decl
                        lab.ref = Ref("action", lab.name, ad, ActionType(ad))
                        lab.type = t
                    if lab.name in seen:
                        self.err(lab, f"duplicate switch label '{lab.name}'")
                    seen.add(lab.name)
            else:
                try:
                    self.expr(lab, s, t)
                    self.coerce(lab, t, "match")
                    if lab.const is None:
                        self.err(lab, "switch label must be a compile-time constant")
                except _Abort:
                    pass
            if c.body is not None:
                self.stmt_safe(c.body, Scope(s))
        if not isinstance(t, ActionEnumType | BitType | EnumType | ErrorType | IntType):
            self.err(st.expr, f"cannot switch on a value of type '{t}'")

    def check_lvalue(self, e: A.Expr, s: Scope, what: str = "") -> bool:
        """Report (and return False) when ``e`` cannot be written."""
        n = self.sink.error_count
        self._check_lvalue(e, s, what)
        return self.sink.error_count == n

    def _check_lvalue(self, e: A.Expr, s: Scope, what: str) -> None:
        root = e
        while isinstance(root, A.Member | A.Index | A.Slice):
            if isinstance(root, A.Member) and root.ref is not None and root.ref.kind in ("enum_member", "error_member"):
                break
            root = root.expr
        if isinstance(root, A.NameRef) and root.ref is not None:
            r = root.ref
            if r.kind == "const":
                self.err(e, f"cannot assign to constant '{r.name}'")
            elif r.kind == "param" and r.decl.direction == "in":
                self.err(e, f"cannot assign to 'in' parameter '{r.name}'")
            elif r.kind == "param" and r.decl.direction == "" and self.in_action:
                self.err(e, f"cannot assign to action data parameter '{r.name}'")
            elif r.kind not in ("local", "param"):
                self.err(e, f"cannot assign to {r.kind.replace('_', ' ')} '{r.name}'")
            return
        if isinstance(root, A.Call):
            return  # e.g. hdrs.stack.next in some targets; checked elsewhere
        self.err(e, f"{what or 'expression'} is not assignable")

    def expect_bool(self, e: A.Expr, what: str) -> None:
        if not isinstance(e.type, BoolType):
            self.err(e, f"{what} must be bool, not '{e.type}'")

    # ================================================================ conversions
    def coerce(self, e: A.Expr, target: Type, what: str) -> None:
        """Implicit conversion of ``e`` to ``target`` (unsized literals, lists, structs)."""
        src = e.type
        if src is None or isinstance(target, DontCareType | TypeVar):
            return
        if self.same_type(src, target):
            return
        if isinstance(src, DontCareType):
            return
        tb = strip_newtype(target)
        if isinstance(src, IntType) and isinstance(tb, BitType):
            if isinstance(e.const, int) and not isinstance(e.const, bool):
                if not tb.signed and e.const >= (1 << tb.width):
                    self.sink.warning(e.pos, f"value {e.const} does not fit in '{target}'; it is truncated")
                e.const = tb.wrap(e.const)
            e.type = target
            return
        if isinstance(src, IntType) and isinstance(tb, IntType):
            return
        if isinstance(src, EnumType) and src.underlying is not None and tb == src.underlying:
            # Spec 8.11.2: a serializable enum converts implicitly to its underlying type.
            return
        if what == "match" and isinstance(tb, EnumType) and tb.underlying is not None:
            # Keysets on a serializable-enum key may be written in the underlying type.
            if isinstance(src, IntType) or self.same_type(strip_newtype(src), tb.underlying):
                if isinstance(src, IntType):
                    e.type = tb.underlying
                return
        if isinstance(e, A.ListExpr) and isinstance(tb, StructLikeType | TupleType):
            elems = [t for _, t in tb.fields] if isinstance(tb, StructLikeType) else list(tb.elems)
            if len(elems) != len(e.items):
                self.err(e, f"cannot {what} a list of {len(e.items)} elements to '{target}' ({len(elems)} fields)")
                return
            for it, et in zip(e.items, elems, strict=True):
                self.coerce(it, et, what)
            e.type = target
            return
        if isinstance(e, A.StructExpr) and isinstance(tb, StructLikeType):
            names = [n for n, _ in tb.fields]
            given = [n for n, _ in e.fields]
            missing = [n for n in names if n not in given]
            extra = [n for n in given if n not in names]
            if extra:
                self.err(e, f"'{target}' has no field '{extra[0]}'")
            elif missing and not e.ellipsis:
                self.err(e, f"missing field '{missing[0]}' in initializer of '{target}'")
            for n, v in e.fields:
                ft = tb.field_type(n)
                if ft is not None:
                    self.coerce(v, ft, what)
            e.type = target
            return
        if isinstance(src, NewType) or isinstance(target, NewType):
            # A 'type' is distinct in p4c, but most programs convert implicitly through typedefs.
            if self.same_type(strip_newtype(src), strip_newtype(target)):
                return
        if isinstance(src, StructLikeType) and isinstance(tb, StructLikeType) and src.decl is None:
            # Anonymous struct expression type: compare field-wise.
            if [n for n, _ in src.fields] == [n for n, _ in tb.fields]:
                e.type = target
                return
        if isinstance(src, TupleType) and isinstance(tb, TupleType) and len(src.elems) == len(tb.elems):
            if all(self.same_type(a, b) or isinstance(a, IntType) for a, b in zip(src.elems, tb.elems, strict=True)):
                return
        verb = {"assign": "assign a value of type", "initialize": "initialize a value of type",
                "return": "return a value of type", "match": "match a value of type",
                "argument": "pass a value of type"}.get(what, "convert")
        prep = {"match": "against", "argument": "as", "return": "as"}.get(what, "to")
        hint = " without a cast" if isinstance(src, BitType) and isinstance(tb, BitType) else ""
        self.err(e, f"cannot {verb} '{src}' {prep} '{target}'{hint}")

    def unify_arith(self, e: A.Binary) -> Type:
        lt, rt = e.left.type, e.right.type
        assert lt is not None and rt is not None
        lb, rb = strip_newtype(lt), strip_newtype(rt)
        # Serializable enums take part in arithmetic as their underlying type (spec 8.11.2).
        if isinstance(lb, EnumType) and lb.underlying is not None and not self.same_type(lb, rb):
            lt = lb = lb.underlying
        if isinstance(rb, EnumType) and rb.underlying is not None and not self.same_type(lb, rb):
            rt = rb = rb.underlying
        if isinstance(lb, IntType) and isinstance(rb, BitType):
            self.coerce(e.left, rt, "convert")
            return rt
        if isinstance(rb, IntType) and isinstance(lb, BitType):
            self.coerce(e.right, lt, "convert")
            return lt
        if isinstance(lb, IntType) and isinstance(rb, IntType):
            return INT
        if isinstance(lb, BitType) and isinstance(rb, BitType):
            if lb != rb:
                raise self.fatal(e, f"operands of '{e.op}' must have the same type: '{lt}' and '{rt}'")
            return lt
        raise self.fatal(e, f"operator '{e.op}' cannot be applied to '{lt}' and '{rt}'")

    # ================================================================ expressions
    def expr(self, e: A.Expr, s: Scope, expected: Type | None = None) -> Type:
        t = self._expr(e, s, expected)
        e.type = t
        return t

    def _expr(self, e: A.Expr, s: Scope, expected: Type | None) -> Type:
        if isinstance(e, A.IntLit):
            if e.width is None:
                e.const = e.value
                return INT
            if e.width == 0 and e.value != 0:
                raise self.fatal(e, f"value {e.value} does not fit in {e.width} bits")
            t = BitType(e.width, e.signed)
            if e.value >= (1 << e.width):
                self.sink.warning(e.pos, f"value {e.value} does not fit in '{t}'; it is truncated")
            e.const = t.wrap(e.value)
            return t
        if isinstance(e, A.BoolLit):
            e.const = e.value
            return BOOL
        if isinstance(e, A.StringLit):
            e.const = e.value
            return STRING
        if isinstance(e, A.NameRef):
            return self.name_ref(e, s)
        if isinstance(e, A.TypeNameExpr):
            return TypeOfType(self.resolve_type(e.typeref, s))
        if isinstance(e, A.Member):
            return self.member(e, s)
        if isinstance(e, A.Index):
            bt = strip_newtype(self.expr(e.expr, s))
            self.expr(e.index, s)
            if not isinstance(strip_newtype(e.index.type), BitType | IntType):  # type: ignore[arg-type]
                raise self.fatal(e.index, f"array index must be an integer, not '{e.index.type}'")
            if isinstance(bt, HeaderStackType):
                if isinstance(e.index.const, int) and not 0 <= e.index.const < bt.size:
                    self.err(e.index, f"index {e.index.const} is out of bounds for '{bt}'")
                return bt.elem
            if isinstance(bt, TupleType):
                i = e.index.const
                if not isinstance(i, int) or not 0 <= i < len(bt.elems):
                    raise self.fatal(e.index, f"tuple index must be a constant in 0..{len(bt.elems) - 1}")
                return bt.elems[i]
            raise self.fatal(e, f"cannot index a value of type '{bt}'")
        if isinstance(e, A.Slice):
            return self.slice(e, s)
        if isinstance(e, A.Unary):
            return self.unary(e, s, expected)
        if isinstance(e, A.Binary):
            return self.binary(e, s, expected)
        if isinstance(e, A.Ternary):
            self.expr(e.cond, s, BOOL)
            self.expect_bool(e.cond, "condition of '?:'")
            a = self.expr(e.then, s, expected)
            b = self.expr(e.else_, s, expected)
            if isinstance(a, IntType) and not isinstance(b, IntType):
                self.coerce(e.then, b, "convert")
                a = b
            elif isinstance(b, IntType) and not isinstance(a, IntType):
                self.coerce(e.else_, a, "convert")
            elif not self.same_type(a, b):
                raise self.fatal(e, f"branches of '?:' have different types: '{a}' and '{b}'")
            if isinstance(a, IntType) and e.cond.const is None:
                raise self.fatal(e, "'?:' with unsized integer branches needs a constant condition or a cast")
            if e.cond.const is not None:
                e.const = e.then.const if e.cond.const else e.else_.const
            return a
        if isinstance(e, A.Cast):
            return self.cast(e, s)
        if isinstance(e, A.Call):
            return self.call(e, s)
        if isinstance(e, A.CtorCall):
            ct = self.resolve_type(e.typeref, s)
            return self.construct(ct, e.args, s, e)
        if isinstance(e, A.ListExpr):
            eb = strip_newtype(expected) if expected is not None else None
            hints: list[Type | None] = [None] * len(e.items)
            if isinstance(eb, StructLikeType) and len(eb.fields) == len(e.items):
                hints = [t for _, t in eb.fields]
            elif isinstance(eb, TupleType) and len(eb.elems) == len(e.items):
                hints = list(eb.elems)
            ts = [self.expr(it, s, h) for it, h in zip(e.items, hints, strict=True)]
            return TupleType(tuple(ts))
        if isinstance(e, A.StructExpr):
            eb = strip_newtype(expected) if expected is not None else None
            fields: list[tuple[str, Type]] = []
            for n, v in e.fields:
                ft = eb.field_type(n) if isinstance(eb, StructLikeType) else None
                fields.append((n, self.expr(v, s, ft)))
            return StructType("struct", fields, None)
        if isinstance(e, A.DefaultExpr | A.DontCare):
            return DONTCARE
        if isinstance(e, A.Mask | A.Range):
            raise self.fatal(e, "'&&&' and '..' may only appear in select cases and table entries")
        if isinstance(e, A.This):
            raise self.fatal(e, f"'this' {_UNSUPPORTED_MSG}")
        raise self.fatal(e, f"'{type(e).__name__}' {_UNSUPPORTED_MSG}")

    def name_ref(self, e: A.NameRef, s: Scope) -> Type:
        r = (self.glob if e.top_level else s).lookup(e.name)
        if r is None:
            t = s.lookup_type(e.name)
            if t is not None:
                # the declaration too (a parser/control type applied directly: P.apply(...))
                e.ref = Ref("type", e.name, getattr(t, "decl", None), t)
                return TypeOfType(t)
            raise self.fatal(e, f"unknown name '{e.name}'")
        e.ref = r
        if r.kind == "const":
            e.const = r.value
        if r.kind == "match_kind":
            e.const = r.value
        if r.kind == "extern_function":
            return MethodType(r.decl, "extern_function")
        if r.kind == "state":
            raise self.fatal(e, f"state '{e.name}' cannot be used as a value")
        assert r.type is not None
        return r.type

    def member(self, e: A.Member, s: Scope) -> Type:
        bt0 = self.expr(e.expr, s)
        if isinstance(bt0, TypeOfType):
            tt = bt0.type
            if isinstance(tt, ErrorType):
                if e.name not in self.errors:
                    raise self.fatal(e.name_pos, f"unknown error 'error.{e.name}'")
                e.ref = Ref("error_member", e.name, None, ERROR, e.name)
                e.const = e.name
                return ERROR
            if isinstance(tt, EnumType):
                if e.name not in tt.members:
                    raise self.fatal(e.name_pos, f"enum '{tt.name}' has no member '{e.name}'")
                val = tt.values.get(e.name, e.name)
                e.ref = Ref("enum_member", e.name, tt.decl, tt, val)
                e.const = val
                return tt
            if isinstance(tt, BlockType) and tt.kind in ("parser", "control") and e.name == "apply":
                # Direct invocation (P4_16 spec 15.1): P.apply(...) without an instance.
                return MethodType([], "block_apply", tt)
            if isinstance(tt, StructLikeType) and e.name.startswith(("minSizeIn", "maxSizeIn")):
                return MethodType([], "builtin", e.name)
            raise self.fatal(e.name_pos, f"type '{tt}' has no member '{e.name}'")
        bt = strip_newtype(bt0)
        if isinstance(bt, StructLikeType):
            ft = bt.field_type(e.name)
            if ft is not None:
                return ft
            if e.name in _HEADER_METHODS and isinstance(bt, HeaderType | HeaderUnionType):
                return MethodType([], "builtin", e.name)
            if e.name in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
                return MethodType([], "builtin", e.name)
            raise self.fatal(e.name_pos, f"'{bt0}' has no field '{e.name}'")
        if isinstance(bt, HeaderStackType):
            if e.name in ("next", "last", "lastIndex", "nextIndex") and not self.in_parser:
                # They follow the parser's extraction cursor (spec 8.18); p4c rejects
                # them elsewhere too, so a program accepted here also compiles there.
                self.err(e, f"'{e.name}' of a header stack can only be used in a parser")
            if e.name in ("next", "last"):
                return bt.elem
            if e.name in ("lastIndex", "nextIndex"):
                return BitType(32)
            if e.name == "size":
                e.const = bt.size
                return BitType(32)
            if e.name in _STACK_METHODS:
                return MethodType([], "builtin", e.name)
            raise self.fatal(e, f"header stack has no member '{e.name}'")
        if isinstance(bt, TableType):
            if e.name == "apply":
                return MethodType([], "table_apply", bt.decl)
            raise self.fatal(e, f"table '{bt.decl.name}' has no member '{e.name}'")
        if isinstance(bt, ApplyResultType):
            if e.name in ("hit", "miss"):
                return BOOL
            if e.name == "action_run":
                return ActionEnumType(bt.table)
            raise self.fatal(e, f"table apply result has no member '{e.name}'")
        if isinstance(bt, BlockType):
            if e.name == "apply" and bt.kind in ("parser", "control"):
                return MethodType([], "block_apply", bt)
            raise self.fatal(e, f"'{bt.name}' has no member '{e.name}'")
        if isinstance(bt, ExternType):
            ms = [m for m in bt.decl.methods if m.name == e.name and not m.is_ctor]
            if not ms:
                raise self.fatal(e.name_pos, f"extern '{bt.name}' has no method '{e.name}'")
            return MethodType(ms, "extern_method", bt)
        raise self.fatal(e, f"a value of type '{bt0}' has no member '{e.name}'")

    def slice(self, e: A.Slice, s: Scope) -> Type:
        bt = strip_newtype(self.expr(e.expr, s))
        if isinstance(bt, EnumType) and bt.underlying is not None:
            bt = bt.underlying
        hi = self.const_int(e.hi, s, "slice bound")
        lo = self.const_int(e.lo, s, "slice bound")
        if isinstance(bt, IntType):
            if hi < lo:
                raise self.fatal(e, f"slice [{hi}:{lo}] has its high bound below its low bound")
            if e.expr.const is not None:
                e.const = (e.expr.const >> lo) & ((1 << (hi - lo + 1)) - 1)
            return BitType(hi - lo + 1)
        if not isinstance(bt, BitType):
            raise self.fatal(e, f"cannot slice a value of type '{bt}'")
        if hi < lo:
            raise self.fatal(e, f"slice [{hi}:{lo}] has its high bound below its low bound")
        if hi >= bt.width or lo < 0:
            raise self.fatal(e, f"slice [{hi}:{lo}] is out of range for '{bt}'")
        if isinstance(e.expr.const, int):
            e.const = (e.expr.const >> lo) & ((1 << (hi - lo + 1)) - 1)
        return BitType(hi - lo + 1)

    def unary(self, e: A.Unary, s: Scope, expected: Type | None) -> Type:
        t = self.expr(e.expr, s, expected)
        b = strip_newtype(t)
        c = e.expr.const
        if e.op == "!":
            if not isinstance(b, BoolType):
                raise self.fatal(e, f"operator '!' needs a bool operand, not '{t}'")
            if c is not None:
                e.const = not c
            return BOOL
        if not isinstance(b, BitType | IntType):
            raise self.fatal(e, f"operator '{e.op}' cannot be applied to '{t}'")
        if isinstance(c, int) and not isinstance(c, bool):
            if e.op == "-":
                v = -c
            elif e.op == "~":
                if isinstance(b, IntType):
                    raise self.fatal(e, "operator '~' needs an operand of known width")
                v = ~c
            else:
                v = c
            e.const = b.wrap(v) if isinstance(b, BitType) else v
        elif e.op == "~" and isinstance(b, IntType):
            raise self.fatal(e, "operator '~' needs an operand of known width")
        return t

    def binary(self, e: A.Binary, s: Scope, expected: Type | None) -> Type:
        op = e.op
        if op in ("&&", "||"):
            self.expr(e.left, s, BOOL)
            self.expr(e.right, s, BOOL)
            self.expect_bool(e.left, f"operand of '{op}'")
            self.expect_bool(e.right, f"operand of '{op}'")
            lc, rc = e.left.const, e.right.const
            if lc is not None and rc is not None:
                e.const = (lc and rc) if op == "&&" else (lc or rc)
            return BOOL
        hint = expected if op not in ("==", "!=", "<", ">", "<=", ">=", "++") else None
        lt = self.expr(e.left, s, hint)
        rt = self.expr(e.right, s, lt if not isinstance(lt, IntType) else hint)
        if isinstance(rt, IntType) is False and isinstance(lt, IntType) and hint is None:
            pass
        lc, rc = e.left.const, e.right.const
        if op in ("<<", ">>"):
            lb, rb = strip_newtype(lt), strip_newtype(rt)
            if not isinstance(lb, BitType | IntType):
                raise self.fatal(e, f"operator '{op}' cannot be applied to '{lt}'")
            if isinstance(rb, BitType) and rb.signed:
                raise self.fatal(e.right, "shift amount must be unsigned")
            if not isinstance(rb, BitType | IntType):
                raise self.fatal(e.right, f"shift amount cannot have type '{rt}'")
            if isinstance(rb, IntType) and isinstance(rc, int) and rc < 0:
                raise self.fatal(e.right, "shift amount must not be negative")
            if isinstance(lb, IntType) and lc is None:
                raise self.fatal(e, "left operand of a shift needs a known width")
            if isinstance(lc, int) and isinstance(rc, int):
                v = lc << rc if op == "<<" else lc >> rc
                e.const = lb.wrap(v) if isinstance(lb, BitType) else v
            return lt
        if op == "++":
            lb, rb = strip_newtype(lt), strip_newtype(rt)
            if not isinstance(lb, BitType) or not isinstance(rb, BitType):
                raise self.fatal(e, f"operands of '++' need known widths: '{lt}' and '{rt}'")
            t = BitType(lb.width + rb.width, lb.signed)
            if isinstance(lc, int) and isinstance(rc, int):
                e.const = t.wrap(((lc & ((1 << lb.width) - 1)) << rb.width) | (rc & ((1 << rb.width) - 1)))
            return t
        if op in ("==", "!="):
            lb, rb = strip_newtype(lt), strip_newtype(rt)
            if isinstance(lb, BitType | IntType) or isinstance(rb, BitType | IntType):
                self.unify_arith(e)
            elif not self.same_type(lt, rt) and not (isinstance(e.left, A.ListExpr) or isinstance(e.right, A.ListExpr)):
                raise self.fatal(e, f"cannot compare '{lt}' and '{rt}'")
            lc, rc = e.left.const, e.right.const  # after unify_arith: an int operand now wraps (-1 == 8w255)
            if lc is not None and rc is not None:
                e.const = (lc == rc) if op == "==" else (lc != rc)
            return BOOL
        ut = self.unify_arith(e)
        lc, rc = e.left.const, e.right.const
        if op in ("<", ">", "<=", ">="):
            if isinstance(lc, int) and isinstance(rc, int):
                e.const = {"<": lc < rc, ">": lc > rc, "<=": lc <= rc, ">=": lc >= rc}[op]
            return BOOL
        tb = strip_newtype(ut)
        if op in ("|+|", "|-|") and not isinstance(tb, BitType):
            raise self.fatal(e, f"operator '{op}' needs operands of known width")
        if op in ("/", "%") and isinstance(tb, BitType) and tb.signed:
            raise self.fatal(e, f"operator '{op}' is not defined on signed '{ut}'")
        if isinstance(lc, int) and isinstance(rc, int) and not isinstance(lc, bool):
            folded = self.fold(op, lc, rc, tb, e)
            if folded is not None:
                e.const = folded
        return ut

    def fold(self, op: str, a: int, b: int, t: Type, e: A.Node) -> int | None:
        if op in ("/", "%"):
            if b == 0:
                raise self.fatal(e, "division by zero")
            if a < 0 or b < 0:
                raise self.fatal(e, f"operator '{op}' on negative constants is not defined in P4")
        if op == "|+|" and isinstance(t, BitType):
            lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, (1 << t.width) - 1)
            return max(lo, min(hi, a + b))
        if op == "|-|" and isinstance(t, BitType):
            lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, (1 << t.width) - 1)
            return max(lo, min(hi, a - b))
        v = {
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "/": lambda: a // b, "%": lambda: a % b,
            "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
        }[op]()
        return t.wrap(v) if isinstance(t, BitType) else v

    def cast(self, e: A.Cast, s: Scope) -> Type:
        to = self.resolve_type(e.typeref, s)
        frm = self.expr(e.expr, s, to)
        a, b = strip_newtype(frm), strip_newtype(to)
        c = e.expr.const
        ok = False
        if isinstance(b, BitType):
            if isinstance(a, BitType | IntType):
                ok = True
                if isinstance(a, BitType) and a.signed != b.signed and a.width != b.width:
                    ok = False  # sign and width must not change together
                if isinstance(c, int) and not isinstance(c, bool):
                    e.const = b.wrap(c)
            elif isinstance(a, BoolType):
                ok = b.width == 1 and not b.signed
                if c is not None:
                    e.const = int(bool(c))
            elif isinstance(a, EnumType) and a.underlying is not None:
                ok = True
                if isinstance(c, int):
                    e.const = b.wrap(c)
        elif isinstance(b, BoolType):
            ok = isinstance(a, BoolType) or (isinstance(a, BitType) and a.width == 1 and not a.signed) or isinstance(a, IntType)
            if c is not None:
                e.const = bool(c)
        elif isinstance(b, IntType):
            ok = isinstance(a, IntType | BitType)
            e.const = c
        elif isinstance(b, EnumType) and b.underlying is not None:
            ok = isinstance(a, BitType | IntType | EnumType)
            if isinstance(c, int) and not isinstance(c, bool):
                e.const = c
        elif isinstance(b, StructLikeType | TupleType) and isinstance(e.expr, A.ListExpr | A.StructExpr):
            self.coerce(e.expr, to, "convert")
            ok = True
        elif self.same_type(a, b):
            ok = True
            e.const = c
        if not ok and not self.same_type(a, b):
            raise self.fatal(e, f"cannot cast '{frm}' to '{to}'")
        return to

    # ================================================================ calls
    def arity_ok(self, params: list[A.Param], args: list[A.Argument]) -> bool:
        if any(a.name for a in args):
            names = {p.name for p in params}
            return all(a.name in names for a in args)
        required = [p for p in params if p.default is None and not A.find_annotation(p.annotations, "optional")]
        return len(required) <= len(args) <= len(params)

    def call(self, e: A.Call, s: Scope) -> Type:
        ft = self.expr(e.func, s)
        targs = [self.resolve_type(t, s) for t in e.type_args]
        if not isinstance(ft, MethodType):
            if isinstance(ft, ActionType):
                ad = ft.decl
                e.kind, e.target = "action", ad
                if self.block is not None and not self.in_action and self.block.kind == "parser":
                    self.err(e, "actions cannot be called from a parser")
                self.bind_args(ad.params, e.args, s, {}, {}, f"action '{ad.name}'", e)
                return VOID
            raise self.fatal(e.func, f"'{self.describe(e.func)}' is not callable")
        if ft.kind == "builtin":
            name = ft.receiver
            e.kind, e.target = "builtin", name
            recv = e.func.expr if isinstance(e.func, A.Member) else None
            if name in _STACK_METHODS:
                if len(e.args) != 1:
                    raise self.fatal(e, f"'{name}' expects 1 argument, got {len(e.args)}")
                self.expr(e.args[0].value, s)
                self.const_int(e.args[0].value, s, f"argument of '{name}'")
                return VOID
            if e.args:
                raise self.fatal(e, f"'{name}' expects 0 arguments, got {len(e.args)}")
            if name == "isValid":
                return BOOL
            if name.startswith(("min", "max")):
                assert recv is not None and recv.type is not None
                rt = recv.type.type if isinstance(recv.type, TypeOfType) else recv.type
                w = rt.bit_width
                if isinstance(rt, HeaderType) and "max" in name:
                    w = rt.max_bit_width
                e.const = (w or 0) // (8 if "Bytes" in name else 1)
                return INT
            return VOID
        if ft.kind == "table_apply":
            e.kind, e.target = "apply", ft.receiver
            if e.args:
                raise self.fatal(e, f"apply of table '{ft.receiver.name}' expects 0 arguments, got {len(e.args)}")
            if self.in_action:
                self.err(e, "tables cannot be applied inside an action")
            return ApplyResultType(ft.receiver)
        if ft.kind == "block_apply":
            bt: BlockType = ft.receiver
            e.kind, e.target = "apply", bt.decl
            self.bind_args(bt.decl.params, e.args, s, {}, {}, f"apply of '{bt.name}'", e)
            return VOID
        if ft.kind == "function":
            proto = ft.decls[0]
            # the target is the FunctionDecl (body and all); the prototype types the call
            e.kind, e.target = "function", ft.receiver if isinstance(ft.receiver, A.FunctionDecl) else proto
            return self.invoke(proto, e, s, {}, {}, targs)
        # extern functions / methods, possibly overloaded by arity.
        cands = [m for m in ft.decls if self.arity_ok(m.params, e.args)]
        name = ft.decls[0].name if ft.decls else "?"
        if not cands:
            counts = sorted({len(m.params) for m in ft.decls})
            raise self.fatal(e, f"'{name}' expects {' or '.join(map(str, counts))} arguments, got {len(e.args)}")
        if len(cands) > 1:
            exact = [m for m in cands if len(m.params) == len(e.args)]
            cands = exact or cands
        m = cands[0]
        e.target = m
        binding: dict[str, Type] = {}
        tvars: dict[str, Type] = {}
        if ft.kind == "extern_method":
            ext: ExternType = ft.receiver
            e.kind = "extern_method"
            binding.update(ext.type_args)
            tvars.update({tp: TypeVar(tp) for tp in ext.decl.type_params})
        else:
            e.kind = "extern_function"
        rt = self.invoke(m, e, s, binding, tvars, targs)
        if e.kind == "extern_function" and m.name == "verify" and not self.in_parser:
            self.err(e, "'verify' can only be called in a parser")
        if e.kind == "extern_function" and m.name == "static_assert" and e.args:
            cond = e.args[0].value.const
            if cond is None:
                self.err(e.args[0], "static_assert needs a compile-time condition")
            elif not cond:
                msg = e.args[1].value.const if len(e.args) > 1 else None
                self.err(e, f"static assertion failed{': ' + msg if isinstance(msg, str) else ''}")
            e.const = True
        return rt

    def invoke(self, m: A.MethodDecl, e: A.Call, s: Scope, binding: dict[str, Type], tvars: dict[str, Type], targs: list[Type]) -> Type:
        for tp in m.type_params:
            tvars[tp] = TypeVar(tp)
        if targs:
            if len(targs) != len(m.type_params):
                raise self.fatal(e, f"'{m.name}' takes {len(m.type_params)} type arguments, got {len(targs)}")
            binding.update(zip(m.type_params, targs, strict=True))
        self.bind_args(m.params, e.args, s, binding, tvars, f"'{m.name}'", e)
        e.type_bindings = dict(binding)
        assert m.return_type is not None
        inner = Scope(self.glob)
        inner.types.update(tvars)
        rt = self.resolve_type(m.return_type, inner)
        rt = self.subst(rt, binding)
        if isinstance(rt, TypeVar):
            raise self.fatal(e, f"cannot infer the type '{rt.name}' returned by '{m.name}'; give it as a type argument")
        return rt

    def bind_args(
        self, params: list[A.Param], args: list[A.Argument], s: Scope,
        binding: dict[str, Type], tvars: dict[str, Type], what: str, node: A.Node | None = None,
    ) -> None:
        """Check ``args`` against ``params``, inferring generic type variables into ``binding``."""
        if not self.arity_ok(params, args):
            if any(a.name for a in args):
                bad = [a.name for a in args if a.name not in {p.name for p in params}]
                raise self.fatal(args[0], f"{what} has no parameter named '{bad[0] if bad else '?'}'")
            # Point at the first surplus argument, or at the call when some are missing.
            where: A.Node | A.Pos = args[len(params)] if len(args) > len(params) else (node or A.NOPOS)
            raise self.fatal(where, f"{what} expects {len(params)} arguments, got {len(args)}")
        pairs: list[tuple[A.Param, A.Argument]] = []
        if any(a.name for a in args):
            byname = {a.name: a for a in args}
            pairs = [(p, byname[p.name]) for p in params if p.name in byname]
        else:
            pairs = list(zip(params, args, strict=False))
        scope = Scope(self.glob)
        scope.types.update(tvars)
        for p, a in pairs:
            pt_raw = p.type if (p.type is not None and not tvars and not isinstance(p.type, DontCareType)) else None
            if pt_raw is None:
                try:
                    pt_raw = self.resolve_type(p.typeref, scope)
                except _Abort:
                    pt_raw = DONTCARE
            pt = self.subst(pt_raw, binding)
            hint = None if self.has_tvar(pt) else pt
            if isinstance(a.value, A.DontCare):
                a.value.type = pt
                if p.direction != "out":
                    self.err(a, f"'_' can only be passed to an 'out' parameter ({what}, parameter '{p.name}')")
                continue
            at = self.expr(a.value, s, hint)
            if self.has_tvar(pt):
                self.unify(pt, at, binding, a)
                pt = self.subst(pt, binding)
                if self.has_tvar(pt) and isinstance(at, IntType):
                    continue
            if p.direction in ("out", "inout"):
                if not self.check_lvalue(a.value, s, f"argument for '{p.direction}' parameter '{p.name}' of {what}"):
                    continue
                if not self.same_type(at, pt) and not isinstance(pt, TypeVar):
                    self.err(a, f"argument for '{p.direction}' parameter '{p.name}' of {what} must have type '{pt}', not '{at}'")
            else:
                if isinstance(pt, ExternType | BlockType):
                    continue
                self.coerce(a.value, pt, "argument")

    def has_tvar(self, t: Type) -> bool:
        if isinstance(t, TypeVar):
            return True
        if isinstance(t, TupleType):
            return any(self.has_tvar(x) for x in t.elems)
        if isinstance(t, HeaderStackType):
            return self.has_tvar(t.elem)
        return False

    def unify(self, pt: Type, at: Type, binding: dict[str, Type], node: A.Node) -> None:
        if isinstance(pt, TypeVar):
            if pt.name in binding:
                return
            if isinstance(at, IntType | DontCareType):
                return
            binding[pt.name] = at
        elif isinstance(pt, HeaderStackType) and isinstance(at, HeaderStackType):
            self.unify(pt.elem, at.elem, binding, node)

    def describe(self, e: A.Expr) -> str:
        if isinstance(e, A.NameRef):
            return e.name
        if isinstance(e, A.Member):
            return f"{self.describe(e.expr)}.{e.name}"
        return type(e).__name__


def check_program(prog: A.Program, sink: DiagnosticSink | None = None) -> CheckedProgram:
    """Check ``prog``; raises :class:`P4Error` listing every error found."""
    return Checker(sink).check(prog)


__all__ = ["Checker", "CheckedProgram", "BlockInfo", "Ref", "Scope", "check_program", "P4Error"]
