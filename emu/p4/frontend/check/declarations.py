"""Top-level declarations: the entry point, types (headers, structs, enums), constants, parameters."""

from __future__ import annotations

from typing import Any

from .. import ast as A
from ..types import (
    DONTCARE,
    MATCH_KIND,
    BitType,
    BlockType,
    BoolType,
    EnumType,
    ExternType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    IntType,
    NewType,
    StringType,
    StructLikeType,
    StructType,
    TupleType,
    Type,
    TypeVar,
    VarbitType,
    strip_newtype,
)
from .base import CheckerBase
from .program import (
    _UNSUPPORTED_MSG,
    CheckedProgram,
    Ref,
    Scope,
    _Abort,
    compile_time_constant,
    ref_to_action,
)

# The v1model releases p4c knows (its versionInitial and versionCurrent); v1model.p4's
# conditionals tell apart only these two.
V1MODEL_VERSIONS = (20180101, 20200408)


class DeclarationChecker(CheckerBase):
    # ================================================================ entry
    def check(self, prog: A.Program) -> CheckedProgram:
        for d in prog.decls:
            try:
                self.decl_global(d)
            except _Abort:
                pass
        self.structured_annotations(prog.structured_annotations)
        main = self.instances.get("main")
        if main is not None and not (isinstance(main.type, BlockType) and main.type.kind == "package"):
            self.err(main, f"'main' must be an instance of a package, not of '{main.type}'")
        for div in self.runtime_divisions if main is not None else ():
            # p4c runs its mid end, which has no run-time division, only on a program with main
            self.err(div, f"'{div.op}' could not be evaluated at compile time: a division "
                          "or modulo at run time needs a power-of-two divisor")
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
            self.digest_calls,
        )

    # ================================================================ global declarations
    def decl_global(self, d: A.Decl) -> None:
        g = self.glob
        if isinstance(d, A.ErrorDecl | A.MatchKindDecl):
            # both add members to one program-wide list; match kinds are also global names
            is_error = isinstance(d, A.ErrorDecl)
            known, what = (self.errors, "error member") if is_error else (self.match_kinds, "match_kind")
            for m in d.members:
                if m in known:
                    self.err(d, f"duplicate {what} '{m}'")
                    continue
                known.append(m)
                if not is_error:
                    self.declare(g, m, Ref("match_kind", m, d, MATCH_KIND, m), d)
        elif isinstance(d, A.HeaderDecl):
            self.aggregate(d, g)
        elif isinstance(d, A.EnumDecl):
            self.enum(d, g)
        elif isinstance(d, A.TypedefDecl):
            base = self.resolve_type(d.typeref, g)
            if d.new_type and not isinstance(base, BitType | BoolType | NewType):
                # p4c: "`type' can only be applied to base types"
                self.err(d.typeref, f"'type {d.name}' must be over bit<W>, int<W>, bool or a type, not '{base}'")
            self.declare_type(g, d.name, NewType(d.name, base, d.annotations) if d.new_type else base, d)
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
            self.unique_names(d.type_params, "type parameter", d)
            self.unique_names([p.name for p in d.params], "parameter", d)
            self.prototype_params(d, g)
        elif isinstance(d, A.ActionDecl):
            self.actions[d.name] = d
            self.declare(g, d.name, ref_to_action(d.name, d), d)
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
            if isinstance(d.type, BlockType) and isinstance(d.type.decl, A.ParserDecl | A.ControlDecl):
                # P4_16 spec 11.3: parsers and controls are instantiated inside a block or
                # in a package's argument list, never at top level (p4c: "cannot instantiate").
                self.err(d, f"'{d.name}': a {d.type.kind} cannot be instantiated at top level")
        else:
            self.err(d, f"'{type(d).__name__}' {_UNSUPPORTED_MSG} at top level")

    def prototype(self, m: A.MethodDecl, scope: Scope) -> None:
        """Resolve a prototype's parameter types (generic ones stay TypeVars)."""
        inner = Scope(scope)
        self.unique_names(m.type_params, "type parameter", m)
        self.unique_names([p.name for p in m.params], "parameter", m)
        for tp in m.type_params:
            inner.types[tp] = TypeVar(tp, m)
        for p in m.params:
            try:
                p.type = self.resolve_type(p.typeref, inner)
            except _Abort:
                p.type = DONTCARE
            self.param_rules(p, p.type)
        if m.return_type is not None:
            try:
                self.resolve_type(m.return_type, inner)
            except _Abort:
                pass

    def prototype_params(self, d: A.ParserTypeDecl, scope: Scope) -> None:
        """The parameter rules for a parser, control or package type's parameters (their
        types are resolved again where the type is used)."""
        inner = Scope(scope)
        for tp in d.type_params:
            inner.types[tp] = TypeVar(tp, d)
        for p in d.params:
            try:
                t = self.resolve_type(p.typeref, inner)
            except _Abort:
                continue
            if isinstance(t, ExternType | StringType | BlockType) and p.direction:
                self.param_rules(p, t)

    def aggregate(self, d: A.HeaderDecl, scope: Scope) -> None:
        cls = {"header": HeaderType, "header_union": HeaderUnionType, "struct": StructType}[d.kind]
        t = cls(d.name, [], d)
        self.declare_type(scope, d.name, t, d)
        inner = Scope(scope)
        self.unique_names(d.type_params, "type parameter", d)
        for tp in d.type_params:
            inner.types[tp] = TypeVar(tp, d)
        seen: set[str] = set()
        for f in d.fields:
            try:
                ft = self.resolve_type(f.typeref, inner)
            except _Abort:
                continue
            if _mentions(ft, t):  # its width and layout would be infinite
                self.err(f.typeref, f"{d.kind} '{d.name}' cannot contain itself (field '{f.name}')")
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
            if isinstance(base, StringType | IntType):
                self.err(f.typeref, f"field '{f.name}' of {d.kind} '{d.name}' cannot have type '{ft}'")
            t.fields.append((f.name, ft))

    def enum(self, d: A.EnumDecl, scope: Scope) -> None:
        under: BitType | None = None
        if d.underlying is not None:
            ut = self.resolve_type(d.underlying, scope)
            if not isinstance(ut, BitType):  # a `type`, even over bit<W>, is not allowed (p4c)
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
        if d.name == "__v1model_version":
            self.v1model_version(d.value)
        self.coerce(d.value, t, "initialize")
        if not compile_time_constant(d.value):
            self.err(d.value, f"initializer of constant '{d.name}' is not a compile-time constant")
        self.declare(scope, d.name, Ref("const", d.name, d, t, d.value.const), d)

    def structured_annotations(self, annos: list[A.Annotation]) -> None:
        """Each element of an `@name[...]` annotation folds to an integer, boolean or
        string constant (P4Info carries the values), over the program's constants."""
        for anno in annos:
            keys = [k for k, _ in anno.structured or [] if k is not None]
            if len(set(keys)) != len(keys):
                self.err(anno, f"duplicate key in the structured annotation '@{anno.name}'")
            for _, e in anno.structured or []:
                try:
                    self.expr(e, self.glob)
                except _Abort:
                    continue
                if not isinstance(e, A.StringLit) and not isinstance(e.const, int):
                    self.err(e, f"an element of the structured annotation '@{anno.name}' "
                                "must be a constant int, string or bool")

    def v1model_version(self, e: A.Expr) -> None:
        """v1model.p4's V1MODEL_VERSION, as p4c checks it: one of the releases it knows."""
        v, (first, last) = e.const, V1MODEL_VERSIONS
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            self.err(e, "V1MODEL_VERSION must be a non-negative number (a v1model release date)")
        elif not first <= v <= last:
            self.err(e, f"V1MODEL_VERSION {v} is an unknown v1model version: the first "
                        f"supported is {first}, the latest {last}")

    # ================================================================ blocks
    def params(self, params: list[A.Param], scope: Scope, owner: Any = None) -> None:
        for p in params:
            try:
                p.type = self.resolve_type(p.typeref, scope)
            except _Abort:
                p.type = DONTCARE
            if p.default is not None:
                self.expr(p.default, scope, p.type)
                # A default converts to the parameter's type as an initializer does
                # (`in Meta m = { 0, 0, 0 }` is a Meta, not a tuple).
                self.coerce(p.default, p.type, "initialize")
            self.param_rules(p, p.type)
            self.declare(scope, p.name, Ref("param", p.name, p, p.type, owner=owner), p)

    def param_rules(self, p: A.Param, t: Type) -> None:
        """What P4_16 (and p4c) refuse in a parameter of type `t` whatever it belongs to."""
        if p.default is not None and p.direction == "out":
            self.err(p, f"out parameter '{p.name}' cannot have a default value")
        if p.default is not None and A.find_annotation(p.annotations, "optional"):
            self.err(p, f"optional parameter '{p.name}' cannot have a default value")
        if p.direction and isinstance(t, StringType):
            self.err(p, f"parameter '{p.name}' of type string cannot have a direction")
        if p.direction and isinstance(t, ExternType):
            self.err(p, f"parameter '{p.name}' of extern type '{t}' cannot have a direction")
        if p.direction and isinstance(t, BlockType) and t.kind in ("parser", "control"):
            self.err(p, f"parameter '{p.name}' with a direction cannot have type {t.kind} '{t}'")
        if p.direction and isinstance(t, IntType):
            self.err(p, f"parameter '{p.name}' of type int must be directionless")


def _mentions(t: Type, target: Type) -> bool:
    """Whether `target` is `t` or one of its parts (a stack's element, a tuple's or
    another aggregate's fields, a type's base)."""
    if t is target:
        return True
    if isinstance(t, HeaderStackType):
        return _mentions(t.elem, target)
    if isinstance(t, TupleType):
        return any(_mentions(e, target) for e in t.elems)
    if isinstance(t, NewType):
        return _mentions(t.base, target)
    if isinstance(t, StructLikeType):
        return any(_mentions(f, target) for _, f in t.fields)
    return False
