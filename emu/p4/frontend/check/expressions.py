"""Expressions: literal widths, operators, casts, slices, member access, constant folding."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from .. import ast as A
from ..types import (
    BOOL,
    DONTCARE,
    ERROR,
    INT,
    STRING,
    ActionEnumType,
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
    declaration_of,
    strip_newtype,
)
from .base import CheckerBase
from .program import _HEADER_METHODS, _STACK_METHODS, _UNSUPPORTED_MSG, MAX_WIDTH, Ref, Scope


class ExpressionChecker(CheckerBase):
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
            if e.width > MAX_WIDTH:
                raise self.fatal(e, f"width {e.width} is too large (at most {MAX_WIDTH} bits, as p4c)")
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
            it = strip_newtype(e.index.type)  # type: ignore[arg-type]
            if isinstance(it, EnumType) and it.underlying is not None:
                it = it.underlying  # a serializable enum indexes as its integer (p4c agrees)
            if not isinstance(it, BitType | IntType):
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
                e.ref = Ref("type", e.name, declaration_of(t), t)
                return TypeOfType(t)
            raise self.fatal(e, f"unknown name '{e.name}'")
        e.ref = r
        if r.kind == "const":
            e.const = r.value
        if r.kind == "match_kind":
            e.const = r.value
        if r.kind == "extern_function":
            assert isinstance(r.decl, list)  # every overload
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
                return ActionEnumType(bt.decl)
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
        if lo < 0:
            raise self.fatal(e.lo, f"slice bound {lo} is negative")
        if isinstance(bt, IntType):
            if hi < lo:
                raise self.fatal(e, f"slice [{hi}:{lo}] has its high bound below its low bound")
            if hi - lo >= MAX_WIDTH:
                raise self.fatal(e, f"slice [{hi}:{lo}] is wider than {MAX_WIDTH} bits")
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
            if not isinstance(rt, BitType | IntType):  # nor a `type` over bit<W> (p4c)
                raise self.fatal(e.right, f"shift amount cannot have type '{rt}'")
            if isinstance(rb, IntType) and isinstance(rc, int) and rc < 0:
                raise self.fatal(e.right, "shift amount must not be negative")
            if isinstance(lb, IntType) and lc is None:
                raise self.fatal(e, "left operand of a shift needs a known width")
            if isinstance(lb, IntType) and rc is None:
                # p4c: the result would be an int of unknown width
                raise self.fatal(e, "a shift of an unsized integer needs a constant shift amount")
            if isinstance(lc, int) and isinstance(rc, int):
                if op == "<<" and lc and isinstance(lb, IntType) and lc.bit_length() + rc > MAX_WIDTH:
                    raise self.fatal(e, f"the constant '{lc} << {rc}' is wider than {MAX_WIDTH} bits")
                if op == "<<" and isinstance(lb, BitType) and rc >= lb.width:
                    rc = lb.width  # every bit shifted out; bounds the shift before wrapping
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
            for side in (lb, rb):
                if isinstance(side, ExternType | TableType | BlockType | TypeVar):
                    # p4c: "externs/tables cannot be compared"; a type variable's values neither
                    raise self.fatal(e, f"values of type '{side}' cannot be compared")
            if isinstance(lb, BitType | IntType) or isinstance(rb, BitType | IntType):
                self.unify_arith(e)
            elif not self.same_type(lt, rt) and not (isinstance(e.left, A.ListExpr) or isinstance(e.right, A.ListExpr)):
                raise self.fatal(e, f"cannot compare '{lt}' and '{rt}'")
            lc, rc = e.left.const, e.right.const  # after unify_arith: an int operand now wraps (-1 == 8w255)
            if lc is not None and rc is not None:
                e.const = (lc == rc) if op == "==" else (lc != rc)
            return BOOL
        written = (e.left.const, e.right.const)  # before an unsized operand takes a width
        ut = self.unify_arith(e)
        lc, rc = e.left.const, e.right.const
        if op in ("/", "%"):
            # p4c: "Division by zero", "not defined on negative numbers", also when only
            # the other operand is known
            if isinstance(written[1], int) and not isinstance(written[1], bool) and written[1] == 0:
                raise self.fatal(e, "division by zero")
            if any(isinstance(c, int) and c < 0 for c in written):
                raise self.fatal(e, f"operator '{op}' on negative constants is not defined in P4")
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
        if op in ("/", "%") and e.const is None and _run_time_division(e):
            self.runtime_divisions.append(e)
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


def _run_time_division(e: A.Binary) -> bool:
    """A division or modulo p4c's mid end would leave in the program, which it refuses
    (CompileTimeOperations): its strength reduction turns one by 2^k into a shift or a
    mask, and one of zero into zero. Where copy propagation or instantiation could still
    make an operand constant (a local variable, a directionless parameter), the program
    gets the benefit of the doubt."""
    lc, rc = e.left.const, e.right.const
    if isinstance(rc, int) and rc > 0 and not rc & (rc - 1) or lc == 0:
        return False
    for n in _name_refs([e.left, e.right]):
        r = n.ref
        if r is None or r.kind == "local" or (
                r.kind == "param" and isinstance(r.decl, A.Param) and not r.decl.direction):
            return False
    return True


def _name_refs(node: object) -> Iterator[A.NameRef]:
    if isinstance(node, A.NameRef):
        yield node
    elif isinstance(node, list | tuple):
        for x in node:
            yield from _name_refs(x)
    elif isinstance(node, A.Node):
        for f in dataclasses.fields(node):
            if f.repr:
                yield from _name_refs(getattr(node, f.name))
