"""Tables: instance metadata for the switch, const entries, apply and action dispatch, switch."""

from __future__ import annotations

from typing import Any

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    ActionEnumType,
    BoolType,
    HeaderType,
)
from emu.p4.names import KeyNameError, key_field_name, name_annotation, qualify

from .base import (
    Ctx,
    ExternInst,
    LowererBase,
    TableInst,
    bind_args,
    bt,
    expr_text,
    refused,
    unsupported,
)


class TableLowerer(LowererBase):
    # ------------------------------------------------------------------ tables
    def key_of_header_field(self, e: A.Expr, code: str, ctx: Ctx) -> str:
        """A key field of a header looks up 0 while the header is invalid: BMv2's key
        builder writes zeros for it (it keeps an invalid header's old field values, even
        from earlier packets, and does not look them up)."""
        base = e
        while isinstance(base, A.Slice):
            base = base.expr
        if isinstance(base, A.Member) and isinstance(bt(base.expr.type), HeaderType):
            return f"({code} if {self.value(base.expr, ctx)}._v else 0)"
        return code

    def make_table(self, d: A.TableDecl, ctx: Ctx) -> TableInst:
        qn = qualify(ctx.scope, d.name, d.annotations)
        keys: list[dict[str, Any]] = []
        kp = d.prop("key")
        for k in (kp.keys if kp else []):
            text = expr_text(k.expr)
            try:
                # the P4Info/p4c name (`hdr.h.$valid$`, @name honoured): switch, STF runner,
                # P4Info and the P4Runtime server all name key fields the same way
                nm = key_field_name(k.expr, k.annotations)
            except KeyNameError:
                nm = text  # p4c wants an @name here; we accept the program and use its text
            kt = bt(k.expr.type)
            w = 1 if isinstance(kt, BoolType) else self.width(kt, k.expr)
            keys.append({"name": nm, "text": text, "match_kind": k.match_kind, "bitwidth": w})
        acts = []
        ap = d.prop("actions")
        for ar in (ap.actions if ap else []):
            ad = ar.action
            aqn = self.register_action(ad, ctx.scope)
            scope = "TABLE_AND_DEFAULT"
            if A.find_annotation(ar.annotations, "defaultonly"):
                scope = "DEFAULT_ONLY"
            elif A.find_annotation(ar.annotations, "tableonly"):
                scope = "TABLE_ONLY"
            acts.append({"name": aqn, "params": self.info.actions[aqn], "scope": scope})
        info: dict[str, Any] = {"name": qn, "keys": keys, "actions": acts, "size": 1024,
                                "default_action": None, "const_default_action": False,
                                "is_const": False, "entries": [], "implementation": None,
                                "direct_counter": None, "direct_meter": None,
                                "largest_priority_wins": True, "priority_delta": 1,
                                "support_timeout": False, "selector_keys": [],
                                "pos": [d.pos.file, d.pos.line, d.pos.col]}
        for p in d.properties:
            if p.kind == "value" and p.value is not None:
                v = p.value
                if p.name in ("size", "max_size") and v.const is not None:
                    info["size"] = int(v.const)
                elif p.name == "default_action":
                    info["default_action"] = self.action_call_json(v, ctx)
                    info["const_default_action"] = p.is_const
                elif p.name == "implementation":
                    inst = self.prop_instance(v, ctx, p.annotations)
                    info["implementation"] = inst.qname
                    info["impl_py"] = inst.py
                    info["impl_info"] = inst.info
                elif p.name == "counters":
                    inst = self.prop_instance(v, ctx, p.annotations)
                    info["direct_counter"] = inst.qname
                    info["counter_py"] = inst.py
                elif p.name == "meters":
                    inst = self.prop_instance(v, ctx, p.annotations)
                    info["direct_meter"] = inst.qname
                    info["meter_py"] = inst.py
                elif p.name == "largest_priority_wins":
                    info["largest_priority_wins"] = bool(v.const)
                elif p.name == "priority_delta":
                    info["priority_delta"] = int(v.const or 1)
                elif p.name == "support_timeout":
                    info["support_timeout"] = bool(v.const)
            elif p.kind == "entries":
                info["is_const"] = p.is_const
                for en in p.entries:
                    info["entries"].append(self.entry_json(en, keys, ctx))
        if info["default_action"] is None:
            info["default_action"] = ["NoAction", []]
            self.info.actions.setdefault("NoAction", [])
            if all(a["name"] != "NoAction" for a in acts):
                # as P4Info lists it (p4c's rule): an entry naming it is PERMISSION_DENIED
                # (the spec's code for an action out of scope), not an unknown action
                acts.append({"name": "NoAction", "params": [], "scope": "DEFAULT_ONLY"})
        py = self.obj(qn, "table", "T", table=qn)
        self.info.tables.append(info)
        info["py"] = py
        return TableInst(d, qn, py, ctx, info)

    def prop_instance(self, v: A.Expr, ctx: Ctx, annotations: list[A.Annotation]) -> ExternInst:
        if isinstance(v, A.NameRef) and v.ref is not None:
            inst = ctx.inst.get(id(v.ref.decl)) or self.global_instance(v.ref.decl)
            if isinstance(inst, ExternInst):
                return inst
        if isinstance(v, A.CtorCall):
            fake = A.Instantiation(f"{ctx.scope}_anon{self.n}", v.typeref, v.args, pos=v.pos)
            annotated = name_annotation(annotations)
            if annotated is not None:
                # p4c names an anonymous property instance by the property's @name, as given
                # (not inside the control): P4Info has `ap` for `@name("ap") implementation = ...`
                fake.annotations = [A.Annotation("name", args=["." + annotated.lstrip(".")])]
            self.n += 1
            fake.type = v.type
            inst = self.make_instance(fake, ctx)
            if isinstance(inst, ExternInst):
                return inst
        raise unsupported(v, "table property value")

    def action_call_json(self, v: A.Expr, ctx: Ctx) -> list[Any]:
        ad: A.Decl | list[A.MethodDecl] | None
        if isinstance(v, A.Call):
            ad = v.target if isinstance(v.target, A.ActionDecl) else None
            if ad is None and isinstance(v.func, A.NameRef) and v.func.ref is not None:
                ad = v.func.ref.decl
            args = v.args
        elif isinstance(v, A.NameRef) and v.ref is not None:
            ad, args = v.ref.decl, []
        else:
            raise unsupported(v, "default_action value")
        if not isinstance(ad, A.ActionDecl):
            raise unsupported(v, "default_action value")
        qn = self.register_action(ad, ctx.scope)
        data = [p for p in ad.params if p.direction == ""]
        vals = []
        for p, a in bind_args(data, args[len(ad.params) - len(data):] if len(args) > len(data) else args):
            if a is None or a.const is None:
                raise unsupported(v, f"non-constant action argument for '{p.name}'")
            vals.append(int(a.const) & ((1 << self.width(p.type, p)) - 1))
        return [qn, vals]

    def entry_json(self, en: A.Entry, keys: list[dict[str, Any]], ctx: Ctx) -> dict[str, Any]:
        ks = en.keyset
        items = ks.items if isinstance(ks, A.ListExpr) else [ks]
        if len(keys) == 1 and not isinstance(ks, A.ListExpr):
            items = [ks]
        match: list[Any] = []
        for k, it in zip(keys, items, strict=False):
            match.append(self.keyset_json(it, k))
        ad = en.action.action
        qn = self.register_action(ad, ctx.scope)
        vals = []
        for p, a in bind_args([p for p in ad.params if p.direction == ""], en.action.args or []):
            if a is None or a.const is None:
                raise unsupported(en, "non-constant action argument in entry")
            vals.append(int(a.const) & ((1 << self.width(p.type, p)) - 1))
        prio = None
        if en.priority is not None and en.priority.const is not None:
            prio = int(en.priority.const)
        out = {"match": match, "action": [qn, vals], "priority": prio, "is_const": en.is_const,
               "pos": [en.pos.file, en.pos.line, en.pos.col]}
        an = A.find_annotation(en.annotations, "priority")
        if an is not None and an.args and isinstance(an.args[0], int):
            # Old-style @priority(N): BMv2 order, the smaller number wins.
            out["bmv2_priority"] = an.args[0]
        return out

    def keyset_json(self, e: A.Expr, key: dict[str, Any]) -> Any:
        w = key["bitwidth"]
        mk = key["match_kind"]
        if isinstance(e, A.DefaultExpr | A.DontCare):
            return None

        def cv(x: A.Expr) -> int:
            c = x.const
            if c is None:
                raise unsupported(x, "non-constant key in table entry")
            if isinstance(c, str):
                return int(self.lit(c, x.type))
            return int(c) & ((1 << w) - 1)

        if isinstance(e, A.Mask):
            v, m = cv(e.value), cv(e.mask)
            if mk == "lpm":
                plen = bin(m).count("1")
                return ["lpm", v & m, plen]
            return ["ternary", v & m, m]
        if isinstance(e, A.Range):
            lo, hi = cv(e.lo), cv(e.hi)
            if lo > hi:  # p4c only warns (a bound truncated to its width); BMv2 will not load it
                raise refused(e, f"range {lo}..{hi} of a table entry matches nothing "
                                 f"(low > high once the bounds are {w}-bit values)")
            return ["range", lo, hi]
        v = cv(e)
        if mk == "lpm":
            return ["lpm", v, w]
        if mk == "ternary":
            return ["ternary", v, (1 << w) - 1]
        if mk == "range":
            return ["range", v, v]
        return v

    def apply_table(self, ti: TableInst, want_hit: bool = True) -> tuple[str, str]:
        """Emit lookup + action dispatch; returns (hit_var, action_name_var). Without
        `want_hit` the hit variable is set only if the table's own code reads it."""
        d = ti.decl
        ctx = ti.ctx
        o = self.out
        kp = d.prop("key")
        kcodes = []
        sel_codes = []
        for k in (kp.keys if kp else []):
            if k.match_kind == "selector":
                # BMv2 hashes the selector's fields as named: an invalid header's, none
                sel_codes.extend(self.flatten(k.expr, ctx))
            else:
                kcodes.append(self.key_of_header_field(k.expr, self.value(k.expr, ctx), ctx))
        e = self.tmp("e")
        key = "(" + ", ".join(kcodes) + ("," if len(kcodes) == 1 else "") + ")"
        info = ti.info
        if not kcodes and not info.get("support_timeout"):
            # A keyless table holds no entries (EmptyKeyMatcher): always its default.
            entry = f"{ti.py}_default"
        else:
            # The matcher's lookup plus the table's (mutable in place) default entry: one
            # Python frame less than Table.apply.
            entry = f"({ti.py}_lookup({key}) or {ti.py}_default)"
        hit = self.tmp("hit")
        c = self.tmp("c")
        entry_used = want_hit or info.get("counter_py") or info.get("meter_py") or info.get("impl_py")
        if entry_used:
            o.line(f"{e} = {entry}")
        else:
            o.line(f"{c} = {entry}.action")  # only its action is needed: no local for it
        if want_hit or info.get("counter_py") or info.get("meter_py"):
            o.line(f"{hit} = not {e}.is_default")
        if info.get("counter_py"):
            o.line(f"if {hit}: {e}.counter.count(_ps.length)")
        if info.get("meter_py"):
            # BMv2 runs a direct meter on a hit only; on a miss read() leaves its target as is.
            o.line(f"{info['meter_py']}.color = {info['meter_py']}.execute_entry({e}, _ps.length) if {hit} else None")
            mp = d.prop("meters")
            ref = mp.value if mp is not None else None
            target = (self.meter_targets.get(id(ref.ref.decl))
                      if isinstance(ref, A.NameRef) and ref.ref is not None else None)
            if target is not None:  # BMv2's result target, before any action
                with o.block(f"if {hit}:"):
                    self.assign(target, f"{info['meter_py']}.color", ctx)
        if info.get("impl_py"):
            ap = info["impl_py"]
            o.line(f"if {e}.is_default: {c} = {e}.action")
            o.line(f"elif {e}.member_id is not None: {c} = {ap}.member_action({e}.member_id)")
            with o.block("else:"):
                if sel_codes:
                    o.line(f"_m = {ap}.select({e}.group_id, {ap}_hash({self.pack_leaves(sel_codes)}))")
                else:
                    o.line(f"_m = {ap}.select({e}.group_id, 0)")
                o.line(f"{c} = _m.action if _m is not None else {ti.py}.default_entry.action")
        elif entry_used:
            o.line(f"{c} = {e}.action")
        an = self.tmp("an")
        o.line(f"{an} = {c}.action")
        ap_ = d.prop("actions")
        first = True
        chain = len(o.lines)
        for ar in (ap_.actions if ap_ else []):
            ad = ar.action
            aqn = self.register_action(ad, ctx.scope)
            o.line(f"{'if' if first else 'elif'} {an} == {aqn!r}:")
            first = False
            with o.indent():
                data = [p for p in ad.params if p.direction == ""]
                pnames = []
                actx = ctx.child(inlined=False, ret=None)
                if id(ad) in self.top_actions:
                    actx = Ctx({}, {}, "", ctx.in_parser, pk=ctx.pk)
                for p in data:
                    v = self.tmp("a_" + p.name)
                    actx.env[id(p)] = v
                    pnames.append(v)
                if pnames:
                    o.line(f"{', '.join(pnames)}{',' if len(pnames) == 1 else ''} = {c}.params")
                # Directional parameters bound in the actions list (rare).
                bound = bind_args([p for p in ad.params if p.direction != ""], ar.args or [])
                self.inline_body(ad.body, actx, [(p, a) for p, a in bound], ctx)
        # A last branch that does nothing (NoAction) need not be tested for.
        while (len(o.lines) - chain >= 2 and o.lines[-1].strip() == "pass"
               and o.lines[-2].lstrip().startswith(f"elif {an} == ")):
            del o.lines[-2:]
        return hit, an

    def table_of(self, call: A.Call, ctx: Ctx) -> TableInst:
        f = call.func
        if isinstance(f, A.Member) and isinstance(f.expr, A.NameRef) and f.expr.ref is not None:
            ti = ctx.inst.get(id(f.expr.ref.decl))
            if isinstance(ti, TableInst):
                return ti
        raise unsupported(call, "table apply")

    def switch(self, s: A.Switch, ctx: Ctx) -> None:
        o = self.out
        t = s.expr.type
        if isinstance(t, ActionEnumType):
            call = s.expr.expr if isinstance(s.expr, A.Member) else None
            if not isinstance(call, A.Call):
                raise unsupported(s, "switch expression")
            ti = self.table_of(call, ctx)
            _hit, an = self.apply_table(ti, want_hit=False)
            key = an
        else:
            key = self.simple(self.value(s.expr, ctx))
            ti = None
        pending: list[str] = []
        first = True
        for c in s.cases:
            if isinstance(c.label, A.DefaultExpr):
                lab = None
            elif ti is not None:
                ref = c.label.ref if isinstance(c.label, A.NameRef) else None
                ad = ref.decl if ref is not None and isinstance(ref.decl, A.ActionDecl) else None
                name = c.label.name if isinstance(c.label, A.NameRef | A.Member) else ""
                lab = repr(self.register_action(ad, ti.ctx.scope)) if ad is not None else repr(name)
            else:
                lab = self.value(c.label, ctx)
            if c.body is None:
                if lab is not None:
                    pending.append(lab)
                continue
            if lab is None:
                if first:
                    self.block(c.body, ctx.child())
                    return
                o.line("else:")
            else:
                labs = pending + [lab]
                cond = " or ".join(f"{key} == {x}" for x in labs)
                o.line(f"{'if' if first else 'elif'} {cond}:")
            pending = []
            first = False
            with o.indent():
                self.block(c.body, ctx.child())
