"""Calls: actions, functions, extern methods and functions (the v1model externs), apply, built-in methods; argument binding and type inference."""

from __future__ import annotations

from .. import ast as A
from ..types import (
    BOOL,
    DONTCARE,
    INT,
    VOID,
    ActionType,
    ApplyResultType,
    BlockType,
    DontCareType,
    ExternType,
    HeaderStackType,
    HeaderType,
    IntType,
    MethodType,
    StringType,
    TableType,
    TupleType,
    Type,
    TypeOfType,
    TypeVar,
)
from .base import CheckerBase
from .program import _STACK_METHODS, Scope, _Abort


class CallChecker(CheckerBase):
    # ================================================================ calls
    def arity_ok(self, params: list[A.Param], args: list[A.Argument]) -> bool:
        if any(a.name for a in args):
            names = {p.name for p in params}
            return all(a.name in names for a in args)
        required = [p for p in params if p.default is None and not A.find_annotation(p.annotations, "optional")]
        return len(required) <= len(args) <= len(params)

    def call(self, e: A.Call, s: Scope) -> Type:
        ft = self.expr(e.func, s)
        if isinstance(e.func, A.NameRef) and not self.callable_with(ft, e.args):
            ft = self.outer_overload(e.func, e.args, s) or ft
        if self.in_select_case and not (isinstance(ft, MethodType) and ft.kind == "builtin"
                                        and ft.receiver not in ("push_front", "pop_front")):
            raise self.fatal(e, f"{self.describe(e.func)}: no function calls allowed in a select case")
        if self.in_action_list and isinstance(ft, MethodType) and ft.kind == "table_apply":
            self.err(e, f"{self.describe(e.func)}: table invocation in action argument")
        targs = [self.resolve_type(t, s) for t in e.type_args]
        if not isinstance(ft, MethodType):
            if isinstance(ft, ActionType):
                ad = ft.decl
                e.kind, e.target = "action", ad
                if ad is self.owner:
                    raise self.fatal(e.func, f"action '{ad.name}' cannot call itself (P4 has no recursion)")
                if e.type_args:
                    self.err(e, f"action '{ad.name}' takes no type arguments (actions are not generic)")
                if self.block is not None and not self.in_action and self.block.kind == "parser":
                    self.err(e, "actions cannot be called from a parser")
                if isinstance(self.owner, A.FunctionDecl):
                    self.err(e, "functions cannot call actions")
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
            if self.in_action:
                self.err(e, f"a {bt.kind} cannot be applied inside an action")
            self.bind_args(bt.decl.params, e.args, s, {}, {}, f"apply of '{bt.name}'", e)
            return VOID
        if ft.kind == "function":
            proto = ft.decls[0]
            if ft.receiver is self.owner:
                # p4c: a function is not visible in its own body ("declaration not found")
                raise self.fatal(e.func, f"function '{proto.name}' cannot call itself (P4 has no recursion)")
            # the target is the FunctionDecl (body and all); the prototype types the call
            e.kind, e.target = "function", ft.receiver if isinstance(ft.receiver, A.FunctionDecl) else proto
            return self.invoke(proto, e, s, {}, {}, targs)
        return self.extern_call(ft, e, s, targs)

    def extern_call(self, ft: MethodType, e: A.Call, s: Scope, targs: list[Type]) -> Type:
        """An extern function or method, possibly overloaded by arity, and the rules p4c
        adds for some of them (packet_in/out, verify, static_assert, digest)."""
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
        if e.kind == "extern_method" and ft.receiver.decl.name in ("packet_in", "packet_out"):
            self.core_method(m.name, e, targs)
        if e.kind == "extern_function" and m.name == "digest" and len(e.args) == 2 \
                and not any(c is e for c in self.digest_calls):
            self.digest_calls.append(e)
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

    def callable_with(self, ft: Type, args: list[A.Argument]) -> bool:
        if isinstance(ft, ActionType):
            return self.arity_ok(ft.decl.params, args)
        if isinstance(ft, MethodType) and ft.kind in ("function", "extern_function"):
            return any(self.arity_ok(m.params, args) for m in ft.decls)
        return True

    def outer_overload(self, f: A.NameRef, args: list[A.Argument], s: Scope) -> Type | None:
        """A callable of f's name in a scope enclosing the one it resolved to, taking these
        arguments: actions, functions and extern functions overload by arity (P4_16 spec
        6.8), so `hash(...)` with five arguments inside `action hash()` is v1model's hash."""
        scope: Scope | None = self.glob if f.top_level else s
        while scope is not None and scope.values.get(f.name) is not f.ref:
            scope = scope.parent
        scope = scope.parent if scope is not None else None
        while scope is not None:
            r = scope.values.get(f.name)
            if r is not None:
                ft = r.type
                if r.kind == "extern_function":
                    assert isinstance(r.decl, list)  # every overload
                    ft = MethodType(r.decl, "extern_function")
                if ft is not None and self.callable_with(ft, args):
                    f.ref, f.type = r, ft
                    return ft
            scope = scope.parent
        return None

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
            if isinstance(pt_raw, TypeVar):  # of a generic type: known only now
                self.specialized_param(p, at if isinstance(pt, DontCareType) or self.has_tvar(pt) else pt, a, what)
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

    def specialized_param(self, p: A.Param, t: Type, a: A.Argument, what: str) -> None:
        """p4c's parameter rules again once a generic parameter's type is known."""
        if isinstance(t, BlockType | TableType):
            self.err(a, f"argument for '{p.name}' of {what} cannot have type '{t}'")
        elif p.direction and isinstance(t, StringType | ExternType):
            self.err(a, f"argument for '{p.name}' of {what} has type '{t}': a parameter "
                        "with a direction cannot take it")

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
