"""State of one check run and the helpers every construct uses: scopes, type resolution, generic substitution."""

from __future__ import annotations

from typing import Any

from .. import ast as A
from ..diagnostics import DiagnosticSink
from ..types import (
    BOOL,
    DONTCARE,
    ERROR,
    INT,
    MATCH_KIND,
    STRING,
    VOID,
    BitType,
    BlockType,
    DontCareType,
    ExternType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    StructLikeType,
    TupleType,
    Type,
    TypeVar,
    VarbitType,
    strip_newtype,
)
from .program import _UNSUPPORTED_MSG, MAX_STACK, MAX_WIDTH, BlockInfo, Ref, Scope, _Abort


class CheckerBase:
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
        self.digest_calls: list[A.Call] = []
        # `/` and `%` left at run time: refused once the program turns out to have a main
        self.runtime_divisions: list[A.Binary] = []
        # Context while checking bodies.
        self.block: BlockInfo | None = None
        self.return_type: Type | None = None
        self.in_action = False
        self.in_parser = False
        # Where p4c refuses calls: a select case's keyset (all but builtins) and a
        # table's action list (table applies in action arguments).
        self.in_select_case = False
        self.in_action_list = False
        self.owner: Any = None  # innermost parser/control/action/function being checked
        self.loops = 0  # nesting depth of for loops (break/continue need one)

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
        outer = scope.lookup(name) if ref.kind != "param" else None
        if outer is not None and outer.kind == "param":
            # p4c refuses this one shadowing (others are warnings): `H h = h;` in a
            # control with parameter h would read the new, uninitialised h
            self.err(node, f"declaration of '{name}' shadows a parameter '{name}'")
        scope.values[name] = ref

    def unique_names(self, names: list[str], what: str, node: A.Node) -> None:
        seen: set[str] = set()
        for n in names:
            if n in seen:
                self.err(node, f"duplicate {what} '{n}'")
            seen.add(n)

    def declare_type(self, scope: Scope, name: str, t: Type, node: A.Node) -> None:
        if name in scope.types:
            self.err(node, f"redeclaration of type '{name}'")
            return
        scope.types[name] = t

    def open_block(self, d: A.ParserDecl | A.ControlDecl, kind: str, g: Scope) -> tuple[BlockInfo, Scope]:
        """Register a parser or control and open its scope: type parameters, then the
        apply and constructor parameters."""
        info = BlockInfo(d, kind)
        (self.parsers if kind == "parser" else self.controls)[d.name] = info
        s = Scope(g, kind)
        self.unique_names([*d.type_params, *(p.name for p in [*d.params, *d.ctor_params]
                                             if p.name in d.type_params)], "name", d)
        for tp in d.type_params:
            s.types[tp] = TypeVar(tp, d)
        self.params(d.params, s, d)
        self.params(d.ctor_params, s, d)
        self.no_optional(d.ctor_params)
        return info, s

    def no_optional(self, params: list[A.Param]) -> None:
        """p4c (checkNamedArgs): only extern methods and functions, whose callers may leave
        such an argument out, take @optional parameters; a constructor or a function
        written in P4 does not."""
        for p in params:
            if A.find_annotation(p.annotations, "optional"):
                self.err(p, f"optional parameter '{p.name}' is not allowed here")

    def block_locals(self, info: BlockInfo, s: Scope) -> None:
        """Check a parser's or control's local declarations; one that fails does not
        stop the others."""
        for loc in info.decl.locals:
            try:
                self.local_decl(loc, s)
            except _Abort:
                pass
        info.locals = dict(s.values)

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
                if w > MAX_WIDTH:
                    raise self.fatal(tr.width, f"width {w} is too large (at most {MAX_WIDTH} bits, as p4c)")
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
            if isinstance(t, StructLikeType) and t.decl is not None and t.decl.type_params:
                # p4c: its fields' types would be unknown ("generic type needs type arguments")
                raise self.fatal(tr, f"generic {t.kind} '{t.name}' needs type arguments "
                                     f"<{', '.join(t.decl.type_params)}>")
            return t
        if isinstance(tr, A.StackTypeRef):
            elem = self.resolve_type(tr.elem, scope)
            size = self.const_int(tr.size, scope, "header stack size")
            if size <= 0:
                raise self.fatal(tr.size, "header stack size must be positive")
            if size > MAX_STACK:
                # every packet gets the whole stack: a huge one stalls each packet
                raise self.fatal(tr.size, f"a header stack of {size} elements {_UNSUPPORTED_MSG} "
                                          f"(at most {MAX_STACK})")
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

    # ---- implemented by the mixins (see Checker in __init__); declared here so that
    # ---- each mixin's calls into another are type-checked.
    def const_decl(self, d: A.ConstDecl, scope: Scope) -> None:
        raise NotImplementedError

    def params(self, params: list[A.Param], scope: Scope, owner: Any = None) -> None:
        raise NotImplementedError

    def parser(self, d: A.ParserDecl, g: Scope) -> None:
        raise NotImplementedError

    def keyset(self, ks: A.Expr, types: list[Type], scope: Scope) -> None:
        raise NotImplementedError

    def control(self, d: A.ControlDecl, g: Scope) -> None:
        raise NotImplementedError

    def local_decl(self, d: A.Decl, s: Scope) -> None:
        raise NotImplementedError

    def var_decl(self, d: A.VarDecl, s: Scope) -> None:
        raise NotImplementedError

    def action(self, d: A.ActionDecl, s: Scope) -> None:
        raise NotImplementedError

    def function(self, d: A.FunctionDecl, s: Scope) -> None:
        raise NotImplementedError

    def instantiation(self, d: A.Instantiation, s: Scope) -> None:
        raise NotImplementedError

    def core_method(self, method: str, e: A.Call, targs: list[Type]) -> None:
        raise NotImplementedError

    def construct(self, t: Type, args: list[A.Argument], s: Scope, node: A.Node) -> Type:
        raise NotImplementedError

    def table(self, d: A.TableDecl, s: Scope) -> None:
        raise NotImplementedError

    def stmt_safe(self, st: A.Stmt, s: Scope) -> None:
        raise NotImplementedError

    def check_lvalue(self, e: A.Expr, s: Scope, what: str = "") -> bool:
        raise NotImplementedError

    def expect_bool(self, e: A.Expr, what: str) -> None:
        raise NotImplementedError

    def coerce(self, e: A.Expr, target: Type, what: str) -> None:
        raise NotImplementedError

    def expr(self, e: A.Expr, s: Scope, expected: Type | None = None) -> Type:
        raise NotImplementedError

    def arity_ok(self, params: list[A.Param], args: list[A.Argument]) -> bool:
        raise NotImplementedError

    def call(self, e: A.Call, s: Scope) -> Type:
        raise NotImplementedError

    def bind_args(
        self, params: list[A.Param], args: list[A.Argument], s: Scope,
        binding: dict[str, Type], tvars: dict[str, Type], what: str, node: A.Node | None = None,
    ) -> None:
        raise NotImplementedError
