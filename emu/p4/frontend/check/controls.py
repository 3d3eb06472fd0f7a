"""Control declarations and their locals: variables, actions, functions, instantiations and constructor arguments."""

from __future__ import annotations

from .. import ast as A
from ..types import (
    VOID,
    BlockType,
    ExternType,
    IntType,
    MethodType,
    TableType,
    Type,
    TypeVar,
    VoidType,
)
from .base import CheckerBase
from .program import _UNSUPPORTED_MSG, Ref, Scope, _Abort, ref_to_action


class ControlChecker(CheckerBase):
    def control(self, d: A.ControlDecl, g: Scope) -> None:
        info, s = self.open_block(d, "control", g)
        prev = (self.block, self.owner)
        self.block, self.owner = info, d
        try:
            self.block_locals(info, s)
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
            self.declare(s, d.name, ref_to_action(d.name, d), d)
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
        if isinstance(t, IntType):
            # p4c: int is a compile-time type; a constant may have it, a variable not
            self.err(d.typeref, f"variable '{d.name}' cannot have type int (it has no width)")
        if isinstance(t, ExternType | BlockType):
            self.err(d, f"variable '{d.name}' cannot have type '{t}': instantiate it, as `{t}(...) {d.name};`")
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
        for p in d.params:
            if isinstance(p.type, IntType):
                self.err(p, f"action parameter '{p.name}' cannot have type int (it has no width)")
            if isinstance(p.type, ExternType | BlockType):
                self.err(p, f"action parameter '{p.name}' cannot have type '{p.type}'")
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
        self.unique_names(d.proto.type_params, "type parameter", d)
        for tp in d.proto.type_params:
            inner.types[tp] = TypeVar(tp, d)
        self.params(d.proto.params, inner, d)
        self.no_optional(d.proto.params)
        assert d.proto.return_type is not None
        rt = self.resolve_type(d.proto.return_type, inner)
        prev = (self.return_type, self.owner)
        self.return_type, self.owner = rt, d
        try:
            self.stmt_safe(d.body, inner)
        finally:
            self.return_type, self.owner = prev
        if not isinstance(rt, VoidType) and not _always_returns(d.body):
            self.err(d, f"function '{d.name}' does not return a value on every path")

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
                if not self.arity_ok(decl.params, args):  # @optional parameters may be left out
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
            return
        for want_p, got_p in zip(pt.decl.params, at.decl.params, strict=True):
            if want_p.direction != got_p.direction:
                # p4c: "Cannot unify ... because they have different directions"
                self.err(a, f"argument '{p.name}' of '{pkg}': parameter '{got_p.name}' of "
                            f"{got} '{at.name}' is {_direction(got_p)}, '{pt.name}' declares "
                            f"'{want_p.name}' {_direction(want_p)}")
                return


def _direction(p: A.Param) -> str:
    return p.direction or "directionless"


def _always_returns(st: A.Stmt | None) -> bool:
    """Whether every path through `st` ends in `return` or `exit` (p4c's check that a
    function returns a value on all paths)."""
    if isinstance(st, A.Return | A.Exit):
        return True
    if isinstance(st, A.Block):
        return any(_always_returns(x) for x in st.stmts)
    if isinstance(st, A.If):
        return _always_returns(st.then) and _always_returns(st.else_)
    if isinstance(st, A.Switch):
        bodies = [c.body for c in st.cases if c.body is not None]
        has_default = any(isinstance(c.label, A.DefaultExpr) for c in st.cases)
        return has_default and all(_always_returns(b) for b in bodies)
    return False
