"""Table declarations: keys, action lists, default actions and const entries."""

from __future__ import annotations

import dataclasses

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
from .program import Scope, _Abort, compile_time_constant, ref_to_action


class TableChecker(CheckerBase):
    # ================================================================ tables
    def table(self, d: A.TableDecl, s: Scope) -> None:
        key_types: list[Type] = []
        action_names: dict[str, A.ActionRef] = {}
        self.table_shape(d)
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
                        self.in_action_list = True
                        try:
                            self.action_ref(ar, s, data_args=False)
                        finally:
                            self.in_action_list = False
                        if ar.name.lstrip(".") in action_names:
                            self.err(ar, f"table '{d.name}' lists action '{ar.name.lstrip('.')}' twice")
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
        self.entry_priorities(d, s)
        self.duplicate_keys(d)

    def duplicate_keys(self, d: A.TableDecl) -> None:
        """Two entries of an exact-match table with the same key (p4c: "Duplicate entry
        keys"): the second could never match, and the switch could not install it."""
        key = _key(d)
        if key is None or not key.keys or any(k.match_kind != "exact" for k in key.keys):
            return
        for p in d.properties:
            seen: set[tuple[object, ...]] = set()
            for en in p.entries if p.kind == "entries" else []:
                values = tuple(x.const for x in _parts(en))
                if any(v is None for v in values):
                    continue
                if values in seen:
                    self.err(en.keyset, f"table '{d.name}': duplicate entry key")
                seen.add(values)

    def entry_priorities(self, d: A.TableDecl, s: Scope) -> None:
        """p4c's rules for `priority =` in a table's (non-const) entries: only where a key
        needs priorities (ternary, range, optional), then from the first entry on, and the
        ones computed from `priority_delta` may not go below zero."""
        key = _key(d)
        ep = next((p for p in d.properties if p.kind == "entries" and not p.is_const), None)
        if key is None or not key.keys or ep is None or not ep.entries:
            return
        given = [e for e in ep.entries if e.priority is not None]
        if not given:
            return
        if all(k.match_kind in ("exact", "lpm") for k in key.keys):
            self.err(given[0], f"table '{d.name}': its key match kinds need no priorities, "
                                        "but entries give some")
            return
        if ep.entries[0].priority is None:
            self.err(ep.entries[0], f"table '{d.name}': the first entry must have a priority "
                                    "when others give one")
            return
        props = {p.name: p.value for p in d.properties if p.kind == "value"}
        delta = props.get("priority_delta")
        step = delta.const if delta is not None and isinstance(delta.const, int) else 1
        wins = props.get("largest_priority_wins")
        largest = not (wins is not None and wins.const is False)
        current = 0
        for en in ep.entries:
            if en.priority is not None and isinstance(en.priority.const, int):
                current = en.priority.const
            current += -step if largest else step
            if current < 0:
                self.err(en, f"table '{d.name}': entry priorities computed with priority_delta "
                             "go below zero")
                return

    def entry_masks(self, en: A.Entry, key_types: list[Type], t: A.TableDecl) -> None:
        """p4c's rules for masks in entries: an lpm key's mask is a prefix of the field's
        width, and an optional key's entry is a value or `_`, never `&&&`."""
        key = _key(t)
        if key is None:
            return
        for part, k, kt in zip(_parts(en), key.keys, key_types, strict=False):
            if not isinstance(part, A.Mask):
                continue
            if k.match_kind == "optional":
                self.err(part, "an optional key's entry is a value or '_', not a mask")
                continue
            w = getattr(strip_newtype(kt), "width", None)
            value, mask = (_written(part.value), _written(part.mask))
            if k.match_kind != "lpm" or w is None or value is None or mask is None:
                continue
            full = (1 << w) - 1
            if value > full or mask > full or (full - mask) & (full - mask + 1):
                self.err(part, f"'{value:#x} &&& {mask:#x}' is not a prefix of a {w}-bit lpm key")

    def table_shape(self, d: A.TableDecl) -> None:
        """Property rules of P4_16 spec 14.2 that p4c enforces: each property once, an
        `actions` list before the default action and entries, and entries only after
        a non-empty key."""
        names = [p.name for p in d.properties]
        for i, p in enumerate(d.properties):
            if p.name in names[:i]:
                self.err(p, f"table '{d.name}' has more than one '{p.name}' property")
        if "actions" not in names:
            self.err(d, f"table '{d.name}' has no 'actions' property")
        listed_at = names.index("actions") if "actions" in names else len(names)
        for p in d.properties[:listed_at]:
            if p.name in ("default_action", "entries"):
                # p4c checks an initial action against the list seen so far
                # (validateActionInitializer)
                first = p.entries[0].action if p.kind == "entries" and p.entries else p.value or p
                self.err(first, f"table '{d.name}' has no actions list before its '{p.name}', "
                                "so it cannot invoke an action there")
        key = _key(d)
        for p in d.properties:
            if p.kind != "entries" or not p.entries:
                continue
            if key is None or not key.keys:
                self.err(p, f"table '{d.name}' has entries but no key")
            elif names.index("key") > names.index(p.name):
                self.err(p, f"table '{d.name}': entries must come after the key")

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
            written, args = v.func, v.args
        elif isinstance(v, A.NameRef):
            written, args = v, []
        else:
            raise self.fatal(p, "default_action must name an action")
        name = ("." if written.top_level else "") + written.name
        ar = A.ActionRef(name, args, pos=v.pos)
        ad = self.action_ref(ar, s, data_args=True)
        self.match_listed(ar, ad, acts)
        name = name.lstrip(".")
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

    def match_listed(self, call: A.ActionRef, ad: A.ActionDecl, acts: dict[str, A.ActionRef]) -> None:
        """p4c's rules for a default action or an entry's action (validateActionInitializer):
        constants for its directionless parameters; the action the list names, not
        another of the same name, with the list's arguments for its directional ones."""
        given = _by_param(ad.params, call.args or [])
        for p in ad.params:
            arg = given.get(p.name)
            if not p.direction and arg is not None and not compile_time_constant(arg):
                # action data of an entry or a default action: the control plane's values
                self.err(arg, f"argument for '{p.name}' of action '{ad.name}' must be a "
                              "compile-time constant")
        listed = acts.get(call.name.lstrip("."))
        if listed is None or listed.decl is None:
            return  # not in the list: the caller says so
        if listed.decl is not ad:
            self.err(call, f"'{call.name}' and '{listed.name}' refer to different actions")
            return
        if listed.args is None:
            return
        bound = _by_param([p for p in ad.params if p.direction], listed.args)
        for param, expr in bound.items():
            arg = given.get(param)
            if arg is not None and not same_expr(arg, expr):
                self.err(arg, f"argument for '{param}' of action '{ad.name}' does not match "
                              "the one in the actions list")

    def entry(self, en: A.Entry, key_types: list[Type], acts: dict[str, A.ActionRef], s: Scope, t: A.TableDecl) -> None:
        self.keyset(en.keyset, key_types or [DONTCARE], s)
        self.entry_masks(en, key_types, t)
        if en.priority is not None:
            self.const_int(en.priority, s, "entry priority")
        ad = self.action_ref(en.action, s, data_args=True)
        self.match_listed(en.action, ad, acts)
        if acts and ad.name not in acts:
            self.err(en.action, f"action '{ad.name}' is not in the actions list of table '{t.name}'")
        listed = acts.get(ad.name)
        if listed is not None and A.find_annotation(listed.annotations, "defaultonly"):
            self.err(en.action, f"action '{ad.name}' is @defaultonly in table '{t.name}': "
                                "no entry may use it")


def _written(e: A.Expr) -> int | None:
    """A constant as the program wrote it (before it took the key's width)."""
    if isinstance(e, A.IntLit):
        return e.value
    return e.const if isinstance(e.const, int) and not isinstance(e.const, bool) else None


def _key(d: A.TableDecl) -> A.TableProperty | None:
    return next((p for p in d.properties if p.kind == "key"), None)


def _parts(en: A.Entry) -> list[A.Expr]:
    """An entry's keyset, one expression per key field."""
    return en.keyset.items if isinstance(en.keyset, A.ListExpr) else [en.keyset]


def _by_param(params: list[A.Param], args: list[A.Argument]) -> dict[str, A.Expr]:
    """Each argument's expression under its parameter's name (named or positional)."""
    if any(a.name for a in args):
        return {a.name: a.value for a in args if a.name}
    return {p.name: a.value for p, a in zip(params, args, strict=False)}


def same_expr(a: object, b: object) -> bool:
    """p4c's SameExpression: the same tree whatever its positions, constants by value."""
    if isinstance(a, A.Expr) and isinstance(b, A.Expr) and a.const is not None and b.const is not None:
        return type(a.const) is type(b.const) and a.const == b.const
    if isinstance(a, A.StructExpr) and isinstance(b, A.StructExpr):  # components by name
        return a.ellipsis == b.ellipsis and same_expr(sorted(a.fields, key=_name), sorted(b.fields, key=_name))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(map(same_expr, a, b))
    if type(a) is not type(b) or not dataclasses.is_dataclass(a):
        return a == b
    return all(same_expr(getattr(a, f.name), getattr(b, f.name))
               for f in dataclasses.fields(a) if f.repr)


def _name(component: tuple[str, A.Expr]) -> str:
    return component[0]
