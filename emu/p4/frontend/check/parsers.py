"""Parser declarations: states, select expressions and keysets."""

from __future__ import annotations

from .. import ast as A
from ..types import (
    DONTCARE,
    DontCareType,
    HeaderStackType,
    StructLikeType,
    TupleType,
    Type,
    VarbitType,
    strip_newtype,
)
from .base import CheckerBase
from .program import Ref, Scope, _Abort


class ParserChecker(CheckerBase):
    def parser(self, d: A.ParserDecl, g: Scope) -> None:
        info, s = self.open_block(d, "parser", g)
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
            self.block_locals(info, s)
            if not any(st.name == "start" for st in d.states):
                self.err(d, f"parser '{d.name}' has no 'start' state")
            elif not _ends(d.states):
                self.err(d, f"parser '{d.name}' never reaches the accept or reject state")
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
                continue
            if isinstance(strip_newtype(types[-1]), StructLikeType | VarbitType | HeaderStackType):
                self.err(e, f"a value of type '{types[-1]}' cannot be used in select")
        sel.type = TupleType(tuple(types))
        for c in sel.cases:
            if c.state not in states:
                self.err(c, f"unknown state '{c.state}'")
            self.in_select_case = True
            try:
                self.keyset(c.keyset, types, scope)
            except _Abort:
                pass
            finally:
                self.in_select_case = False

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
                    self.value_set_fields(items[0], self.expr(items[0], scope), types)
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
        if isinstance(e, A.Mask | A.Range):
            # value &&& mask and lo .. hi: both operands take the select expression's type
            operands = (e.value, e.mask) if isinstance(e, A.Mask) else (e.lo, e.hi)
            for x in operands:
                self.expr(x, scope, t)
            for x in operands:
                self.coerce(x, t, "match")
            e.type = t
            return
        et = self.expr(e, scope, t)
        if isinstance(e, A.NameRef) and e.ref is not None and e.ref.kind == "value_set":
            self.value_set_fields(e, et, [t])
            return
        if not isinstance(et, DontCareType):
            self.coerce(e, t, "match")

    def value_set_fields(self, e: A.NameRef, et: Type, types: list[Type]) -> None:
        """A value_set keyset holds values of the select's type: its element type, a
        struct or tuple (nested ones too) flattened, has one field per expression of
        the select, each of that expression's type (as p4c checks them)."""
        fields = _flat(et)
        if len(fields) != len(types):
            self.err(e, f"value_set '{e.name}' of type '{et}' cannot match the "
                        f"{len(types)} expression{'s' if len(types) > 1 else ''} of the select")
            return
        for ft, t in zip(fields, types, strict=True):
            if not self.same_type(ft, t):
                self.err(e, f"'match' case label '{e.name}' has type '{ft}' which does not "
                            f"match the expected type '{t}'")
                return


def _flat(t: Type) -> list[Type]:
    st = strip_newtype(t)
    if isinstance(st, StructLikeType):
        return [x for _, ft in st.fields for x in _flat(ft)]
    if isinstance(st, TupleType):
        return [x for ft in st.elems for x in _flat(ft)]
    return [t]


def _ends(states: list[A.ParserState]) -> bool:
    """Whether a state's transitions lead from `start` to accept or reject (p4c's check;
    a state without a transition goes to reject)."""
    by_name = {st.name: st for st in states}
    todo, seen = ["start"], set()
    while todo:
        name = todo.pop()
        if name in ("accept", "reject"):
            return True
        st = by_name.get(name)
        if st is None:
            return True  # an unknown state: reported as such already
        if name in seen:
            continue
        seen.add(name)
        tr = st.transition
        if tr is None:
            return True
        if tr.state is not None:
            todo.append(tr.state)
        elif tr.select is not None:
            todo.extend(c.state for c in tr.select.cases)
    return False
