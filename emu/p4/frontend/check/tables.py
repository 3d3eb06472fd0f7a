"""Table declarations: keys, action lists, default actions and const entries."""

from __future__ import annotations

from .. import ast as A
from ..types import (
    DONTCARE,
    VOID,
    BitType,
    BoolType,
    EnumType,
    ErrorType,
    IntType,
    Type,
    strip_newtype,
)
from .base import CheckerBase
from .program import Scope, _Abort, ref_to_action


class TableChecker(CheckerBase):
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
        ad = r.decl
        assert isinstance(ad, A.ActionDecl)  # what kind 'action' names
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
                v.func.ref = ref = ref_to_action(name, ad)  # type: ignore[attr-defined]
                v.func.type = ref.type
            else:
                v.ref = ref = ref_to_action(name, ad)  # type: ignore[attr-defined]
                v.type = ref.type
        if acts and name not in acts:
            self.err(v or p, f"default action '{name}' is not in the actions list of table '{t.name}'")

    def entry(self, en: A.Entry, key_types: list[Type], acts: dict[str, A.ActionRef], s: Scope, t: A.TableDecl) -> None:
        self.keyset(en.keyset, key_types or [DONTCARE], s)
        if en.priority is not None:
            self.const_int(en.priority, s, "entry priority")
        ad = self.action_ref(en.action, s, data_args=True)
        if acts and ad.name not in acts:
            self.err(en.action, f"action '{ad.name}' is not in the actions list of table '{t.name}'")
