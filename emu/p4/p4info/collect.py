"""What goes into P4Info: the applied blocks' tables, used actions, extern instances, digests, value sets, controller headers; named and registered for ids before anything is emitted."""

from __future__ import annotations

from typing import Any

from emu.p4 import names
from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    BlockType,
    ExternType,
    HeaderType,
    HeaderUnionType,
    strip_newtype,
    type_name,
)
from emu.p4.p4info_ids import P4IdPrefix

from .annotations import _const_int, _error, _has, _string_arg, _walk
from .base import _GeneratorBase
from .records import _Block, _CtrlHeader, _Local, _Profile, _Table


def _control_type_decl(e: A.Node) -> tuple[A.ControlDecl | A.ParserDecl | None, str | None]:
    """The ControlDecl/ParserDecl applied by `X.apply(...)`, with how X is named."""
    if not isinstance(e, A.Call) or e.kind != "apply" or not isinstance(e.func, A.Member):
        return None, None
    if not isinstance(e.target, A.ControlDecl | A.ParserDecl):
        return None, None
    recv = e.func.expr
    ref = recv.ref if isinstance(recv, A.NameRef | A.Member) else None
    return e.target, (ref.kind if ref is not None else "type")


class _Collector(_GeneratorBase):
    # ---- naming and usage
    def top_blocks(self) -> list[_Block]:
        """The parser and controls passed to V1Switch, in its parameter order."""
        main = self.prog.main
        out: list[_Block] = []
        for arg in main.args if main is not None else []:
            v = arg.value
            if isinstance(v, A.CtorCall) and isinstance(v.type, BlockType):
                decl = v.type.decl
                path = decl.name  # an anonymous instance is named by its type
            elif (isinstance(v, A.NameRef) and v.ref is not None and v.ref.kind == "instance"
                  and isinstance(v.ref.type, BlockType) and isinstance(v.ref.decl, A.Instantiation)):
                decl = v.ref.type.decl
                path = names.qualify(None, v.ref.decl.name, v.ref.decl.annotations)
            else:
                continue
            if isinstance(decl, A.ParserDecl | A.ControlDecl):
                out.append(_Block(path, decl))
        return out

    def flatten(self, b: _Block, depth: int = 0) -> tuple[list[_Local], list[Any]]:
        """A block's locals with applied sub-parser/control instances inlined where declared.

        p4c inlines nested controls before writing P4Info, so their tables, actions and
        externs sit in the caller at the instance's place, named through the instance
        path (`ingress.c.t`). Also returns every inlined body (apply blocks / states).
        """
        decl = b.decl
        bodies: list[Any] = list(decl.states) if isinstance(decl, A.ParserDecl) else [decl.body]
        if depth > 32:
            raise _error(decl.pos, "control or parser instances nested too deeply")
        applied: set[str] = set()
        direct: list[A.ControlDecl | A.ParserDecl] = []
        for root in list(bodies):
            for n in _walk(root):
                target, kind = _control_type_decl(n)
                if target is None:
                    continue
                if kind == "instance":
                    applied.add(n.func.expr.name)
                elif kind in ("control", "parser", "type") and target not in direct:
                    direct.append(target)
        for loc in decl.locals:  # instances handed to other instances are applied by them
            if isinstance(loc, A.Instantiation):
                applied.update(a.value.name for a in loc.args if isinstance(a.value, A.NameRef))
        out: list[_Local] = []
        for loc in decl.locals:
            sub_decl = loc.type.decl if isinstance(loc, A.Instantiation) and isinstance(loc.type, BlockType) else None
            if isinstance(loc, A.Instantiation) and isinstance(sub_decl, A.ParserDecl | A.ControlDecl):
                if loc.name in applied:  # unused instances are dropped, as by p4c
                    sub = _Block(names.qualify(b.path, loc.name, loc.annotations), sub_decl)
                    sub_locals, sub_bodies = self.flatten(sub, depth + 1)
                    out.extend(sub_locals)
                    bodies.extend(sub_bodies)
                continue
            out.append(_Local(b.path, loc, b))
        for d in direct:  # `Type.apply()` instantiates Type anonymously, named after it
            sub_locals, sub_bodies = self.flatten(_Block(f"{b.path}.{d.name}", d), depth + 1)
            out.extend(sub_locals)
            bodies.extend(sub_bodies)
        return out, bodies

    def table_actions(self, t: A.TableDecl) -> list[tuple[A.ActionDecl, list[A.Annotation]]]:
        """A table's action list as (action, annotations on the reference), NoAction added as p4c does."""
        prop = t.prop("actions")
        refs = [(ar.decl, list(ar.annotations)) for ar in (prop.actions if prop else []) if ar.decl is not None]
        if t.prop("default_action") is None and self.noaction is not None:
            if all(d is not self.noaction for d, _ in refs):
                refs.append((self.noaction, [A.Annotation("defaultonly")]))
        return refs

    @staticmethod
    def default_action(t: A.TableDecl) -> tuple[A.ActionDecl | None, list[A.Argument], bool]:
        prop = t.prop("default_action")
        if prop is None or prop.value is None:
            return None, [], False
        v = prop.value
        if isinstance(v, A.Call) and isinstance(v.target, A.ActionDecl):
            return v.target, list(v.args), prop.is_const
        ref = v.ref if isinstance(v, A.NameRef | A.Member) else None
        if ref is not None and isinstance(ref.decl, A.ActionDecl):
            return ref.decl, [], prop.is_const
        return None, [], False

    def used_actions(self, tables: list[A.TableDecl], bodies: list[Any]) -> list[A.ActionDecl]:
        """Actions p4c keeps, in first-use order: those of applied tables and those called directly."""
        used: list[A.ActionDecl] = []

        def use(a: A.ActionDecl | None) -> None:
            if a is not None and a not in used:
                used.append(a)

        for t in tables:
            for a, _ in self.table_actions(t):
                use(a)
                self.in_tables.add(id(a))
            use(self.default_action(t)[0])
            entries = t.prop("entries")
            for en in entries.entries if entries else []:
                use(en.action.decl)
        for body in bodies:
            for n in _walk(body, live=True):
                if isinstance(n, A.Call) and n.kind == "action" and isinstance(n.target, A.ActionDecl):
                    use(n.target)
        return used

    def collect(self, blocks: list[_Block]) -> None:
        """Gather every object first: ids depend on the whole set of names."""
        self.tables = []
        self.actions = []
        self.externs = []
        self.value_sets = []
        self.digests = {}
        self.touches_type_info = False
        self.in_tables = set()
        self.profiles = {}
        self.direct = {}
        action_names: dict[str, A.ActionDecl] = {}
        global_actions = list(self.prog.actions.values())
        # Externs instantiated at top level (shared by ingress and egress, e.g. a
        # register egress writes and ingress reads) are named without a prefix.
        for inst in self.prog.instances.values():
            if isinstance(inst.type, ExternType):
                self.add_extern(None, inst)
        for b in blocks:
            locs, bodies = self.flatten(b)
            if isinstance(b.decl, A.ParserDecl):
                for loc in locs:
                    if isinstance(loc.decl, A.ValueSetDecl) and not _has(loc.decl.annotations, "hidden"):
                        name = names.qualify(loc.scope, loc.decl.name, loc.decl.annotations)
                        self.value_sets.append((name, loc.decl))
                        self.symbol(P4IdPrefix.VALUE_SET, name, loc.decl.annotations)
                continue
            applied = _applied_tables(bodies)
            tables = [loc for loc in locs if isinstance(loc.decl, A.TableDecl) and id(loc.decl) in applied]
            used = self.used_actions([t.decl for t in tables], bodies)  # type: ignore[misc]
            # p4c copies the top-level actions a control uses to its start (LocalizeAllActions).
            ordered: list[tuple[str | None, A.ActionDecl]] = [(None, a) for a in used if a in global_actions]
            ordered += [(loc.scope, loc.decl) for loc in locs if isinstance(loc.decl, A.ActionDecl) and loc.decl in used]
            for scope, a in ordered:
                name = names.qualify(scope, a.name, a.annotations)
                other = action_names.get(name)
                if other is not None and other is not a:
                    # p4c: "conflicting control plane name"; P4Runtime could not tell them apart
                    raise _error(a.pos, f"actions '{other.name}' and '{a.name}' have the same "
                                        f"control-plane name '{name}'")
                if other is None:
                    action_names[name] = a
                    # p4c gives a @hidden action an id (a table's action_refs name it)
                    # but leaves it out of `actions`
                    if not _has(a.annotations, "hidden"):
                        self.actions.append((name, a))
                    self.symbol(P4IdPrefix.ACTION, name, a.annotations)
                self.scan_digests(a.body)
            for body in bodies:
                self.scan_digests(body)
            for loc in locs:
                if isinstance(loc.decl, A.Instantiation) and isinstance(loc.decl.type, ExternType):
                    self.add_extern(loc.scope, loc.decl)
                elif loc in tables and not _has(loc.decl.annotations, "hidden"):
                    assert isinstance(loc.decl, A.TableDecl)
                    t = _Table(names.qualify(loc.scope, loc.decl.name, loc.decl.annotations),
                               loc.decl, loc.scope, loc.owner)
                    self.tables.append(t)
                    self.symbol(P4IdPrefix.TABLE, t.name, t.decl.annotations)
        for t in self.tables:
            self.table_externs(t)
        for h in self.controller_headers():
            self.symbol(P4IdPrefix.CONTROLLER_HEADER, h.name, h.decl.annotations if h.decl else [])

    def scan_digests(self, body: A.Node) -> None:
        for n in _walk(body):
            if not (isinstance(n, A.Call) and n.kind == "extern_function"):
                continue
            self.touches_type_info = True
            if not isinstance(n.target, A.MethodDecl) or n.target.name != "digest" or len(n.args) != 2:
                continue
            t = n.args[1].value.type
            assert t is not None
            if isinstance(strip_newtype(t), HeaderType | HeaderUnionType):
                # p4c-bm2-ss: "expected a struct type"
                raise _error(n.pos, "P4Runtime requires the type of a digest to be a struct")
            st = names.digest_struct(n)
            annotations = list(st.decl.annotations) if st is not None and st.decl is not None else []
            name = names.digest_name(self.prog, n)
            if name not in self.digests:
                self.digests[name] = t
                self.symbol(P4IdPrefix.DIGEST, name, annotations)

    def add_extern(self, scope: str | None, inst: A.Instantiation) -> None:
        self.touches_type_info = True
        if _has(inst.annotations, "hidden"):
            return
        t = inst.type
        assert isinstance(t, ExternType)
        name = names.qualify(scope, inst.name, inst.annotations)
        prefix = {
            "counter": P4IdPrefix.COUNTER,
            "meter": P4IdPrefix.METER,
            "register": P4IdPrefix.REGISTER,
            "action_profile": P4IdPrefix.ACTION_PROFILE,
            "action_selector": P4IdPrefix.ACTION_PROFILE,
        }.get(t.name)
        if prefix is None:
            return  # direct counters/meters are listed through their table
        self.externs.append((name, inst))
        self.symbol(prefix, name, inst.annotations)
        if prefix == P4IdPrefix.ACTION_PROFILE:
            self.profiles[name] = self.profile(name, inst, inst.pos, list(inst.annotations))

    def profile(self, name: str, inst: A.Instantiation | A.CtorCall, pos: A.Pos, annotations: list[A.Annotation]) -> _Profile:
        selector = isinstance(inst.type, ExternType) and inst.type.name == "action_selector"
        args = [a.value for a in inst.args]
        size_expr = args[1] if selector and len(args) > 1 else (args[0] if args else None)
        return _Profile(name, inst if isinstance(inst, A.Instantiation) else None, pos, annotations,
                        selector, _const_int(size_expr) or 0)

    def table_externs(self, t: _Table) -> None:
        """Action profile and direct counter/meter attached through table properties."""
        for pname in ("implementation", "counters", "meters"):
            prop = t.decl.prop(pname)
            if prop is None or prop.value is None:
                continue
            v = prop.value
            inst: Any
            if isinstance(v, A.NameRef) and v.ref is not None and v.ref.kind == "instance":
                inst = v.ref.decl
                scope = t.scope if v.ref.decl in t.control.decl.locals else None
                name = names.qualify(scope, inst.name, inst.annotations)
                annotations = list(inst.annotations)
            elif isinstance(v, A.CtorCall):
                annotated = names.name_annotation(prop.annotations)
                if annotated is None:
                    raise _error(prop.pos, f"Table '{t.name}' has an anonymous table property '{pname}' "
                                           "with no name annotation, which is not supported by P4Runtime")
                inst = v
                name = annotated.lstrip(".")
                annotations = list(prop.annotations)
            else:
                raise _error(prop.pos, f"table property '{pname}' must name an extern instance")
            kind = type_name(inst.type)
            if pname == "implementation":
                if kind not in ("action_profile", "action_selector"):
                    raise _error(prop.pos, f"'{kind}' cannot implement a table")
                if name not in self.profiles:
                    self.profiles[name] = self.profile(name, inst, prop.pos, annotations + list(prop.annotations))
                    self.symbol(P4IdPrefix.ACTION_PROFILE, name, annotations)
                else:
                    self.profiles[name].annotations.extend(prop.annotations)
                self.profiles[name].tables.append(t.name)
            else:
                expected = "direct_counter" if pname == "counters" else "direct_meter"
                if kind != expected:
                    raise _error(prop.pos, f"table property '{pname}' needs a {expected}, not '{kind}'")
                if name in self.direct:
                    raise _error(prop.pos, f"{expected} '{name}' is attached to more than one table")
                unit_expr = inst.args[0].value if inst.args else None
                unit = str(unit_expr.const) if unit_expr is not None else ""
                self.direct[name] = (pname, inst if isinstance(inst, A.Instantiation) else None,
                                     t.name, unit, prop.pos, annotations)
                prefix = P4IdPrefix.DIRECT_COUNTER if pname == "counters" else P4IdPrefix.DIRECT_METER
                self.symbol(prefix, name, annotations)


    def controller_headers(self) -> list[_CtrlHeader]:
        out = []
        for d in self.prog.program.decls:
            if not isinstance(d, A.HeaderDecl) or d.kind != "header":
                continue
            cname = _string_arg(d.annotations, "controller_header")
            if cname is None or _has(d.annotations, "hidden"):
                continue
            t = self.prog.types.get(d.name)
            if not isinstance(t, HeaderType):
                continue
            out.append(_CtrlHeader(names.field_name(d.name, d.annotations), cname, d, t))
        return out


def _applied_tables(bodies: list[A.Node]) -> set[int]:
    """ids of the tables `bodies` apply, and of those applied in an applied table's key
    (`key = { sub.apply().hit : exact; }`), as p4c counts them."""
    found: set[int] = set()
    todo: list[A.Node] = list(bodies)
    while todo:
        for n in _walk(todo.pop(), live=True):
            if (isinstance(n, A.Call) and n.kind == "apply" and isinstance(n.target, A.TableDecl)
                    and id(n.target) not in found):
                found.add(id(n.target))
                todo.extend(k.expr for p in n.target.properties if p.kind == "key" for k in p.keys)
    return found
