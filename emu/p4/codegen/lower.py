"""Lowering of a checked v1model program to one Python module (source text + metadata).

Design (why it is fast): every action, function, sub-control and sub-parser is INLINED at
its call site, so a packet runs as straight-line Python inside six functions (parse,
verify, ingress, egress, compute, deparse) with no AST walk and few calls. Names of P4
declarations map to Python expressions through an environment keyed by declaration
identity, which also gives copy-in/copy-out: an in/inout argument is copied into a fresh
local, out starts fresh (zero / invalid), and out/inout locals are copied back to the
argument after the body, also when `exit` leaves it (try/finally). `return` inside an
inlined body is a `break` out of a one-shot `while True` wrapper.

The generated module expects a namespace holding emu.p4.target.runtime names and the
objects listed in `ProgramInfo.objects` (tables, registers, ...), created by the switch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from emu.p4.frontend import CheckedProgram, P4Error
from emu.p4.frontend import ast as A
from emu.p4.frontend.diagnostics import Diagnostic
from emu.p4.frontend.types import (
    ActionEnumType,
    ApplyResultType,
    BitType,
    BlockType,
    BoolType,
    EnumType,
    ErrorType,
    ExternType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    IntType,
    StructLikeType,
    StructType,
    TupleType,
    Type,
    VarbitType,
    strip_newtype,
)
from emu.p4.names import qualify

from .classes import ClassTable, _parts, field_groups, fld, pack_expr, scalar_width, struct_format
from .emitter import Emitter

PIPELINE_PARAMS = ("p", "vr", "ig", "eg", "ck", "dep")
_SIMPLE = re.compile(r"^[A-Za-z_][\w.]*$|^-?\d+$|^0x[0-9a-fA-F]+$")


def unsupported(node: A.Node | None, msg: str) -> P4Error:
    pos = node.pos if node is not None else A.NOPOS
    return P4Error([Diagnostic(pos.file, pos.line, pos.col, "error",
                               f"{msg} (not supported by the embedded v1model target)")])


@dataclass
class ProgramInfo:
    """Everything the switch needs besides the source: JSON-serialisable dicts."""

    errors: list[str] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)  # namespace objects
    tables: list[dict[str, Any]] = field(default_factory=list)
    actions: dict[str, list[list[Any]]] = field(default_factory=dict)  # name -> [[p, width]]
    field_lists: dict[str, list[list[str]]] = field(default_factory=dict)
    controller_headers: dict[str, Any] = field(default_factory=dict)
    digests: list[dict[str, Any]] = field(default_factory=list)
    hdr_class: str = ""
    meta_class: str = ""
    sm_class: str = ""
    static_length: bool = False  # no header is added/removed after parsing


@dataclass
class Ctx:
    env: dict[int, str]
    inst: dict[int, Any]
    scope: str
    in_parser: bool = False
    ret: str | None = None  # temp receiving a function's return value
    inlined: bool = False  # return => break (inside a while-True wrapper)
    pk: str = "pk"

    def child(self, **kw: Any) -> Ctx:
        c = Ctx(dict(self.env), dict(self.inst), self.scope, self.in_parser, self.ret,
                self.inlined, self.pk)
        for k, v in kw.items():
            setattr(c, k, v)
        return c


@dataclass
class TableInst:
    decl: A.TableDecl
    qname: str
    py: str
    ctx: Ctx
    info: dict[str, Any]


@dataclass
class ExternInst:
    kind: str
    qname: str
    py: str
    decl: A.Instantiation
    info: dict[str, Any]


@dataclass
class BlockInst:
    decl: A.ParserDecl | A.ControlDecl
    qname: str
    args: list[A.Argument]


def bt(t: Type | None) -> Type | None:
    return strip_newtype(t) if t is not None else None


def mask(w: int) -> str:
    return hex((1 << w) - 1)


def bind_args(params: list[A.Param], args: list[A.Argument]) -> list[tuple[A.Param, A.Expr | None]]:
    """Arguments in parameter order (named arguments allowed); None for an omitted one."""
    if any(a.name for a in args):
        by = {a.name: a.value for a in args}
        return [(p, by.get(p.name, p.default)) for p in params]
    out: list[tuple[A.Param, A.Expr | None]] = []
    for i, p in enumerate(params):
        out.append((p, args[i].value if i < len(args) else p.default))
    return out


def expr_text(e: A.Expr) -> str:
    """P4 source text of a key expression, as p4c names key fields."""
    if isinstance(e, A.NameRef):
        return e.name
    if isinstance(e, A.Member):
        return f"{expr_text(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, A.IntLit):
        return e.text or str(e.value)
    if isinstance(e, A.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.Call):
        return f"{expr_text(e.func)}()"
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, A.Cast):
        return f"({type(e.typeref).__name__}){expr_text(e.expr)}"
    return type(e).__name__


class Lowerer:
    def __init__(self, cp: CheckedProgram) -> None:
        self.cp = cp
        self.info = ProgramInfo(errors=list(cp.errors))
        self.err = {n: i for i, n in enumerate(cp.errors)}
        self.top = Emitter()
        self.cls = ClassTable(self.top, self.err)
        self.out = Emitter()
        self.n = 0
        self.pyobj: dict[str, str] = {}  # qualified name -> python global (dedupe instances)
        self.top_actions = {id(a) for a in cp.actions.values()}
        self.fl_count = 0
        self.protos: dict[int, A.FunctionDecl] = {}
        self.empty_blocks: dict[str, bool] = {}
        self.bodies: dict[str, list[str]] = {}
        self.globals_inst: dict[int, Any] = {}
        for n in _walk(cp.program):
            if isinstance(n, A.FunctionDecl):
                self.protos[id(n.proto)] = n
        self.global_functions = {id(f) for f in cp.functions.values()}

    def function_decl(self, e: A.Call) -> A.FunctionDecl:
        """The FunctionDecl of a call (the checker's target is the prototype)."""
        t = e.target
        if isinstance(t, A.FunctionDecl):
            return t
        fd = self.protos.get(id(t))
        if fd is None:
            raise unsupported(e, "call of an unknown function")
        return fd

    # ------------------------------------------------------------------ helpers
    def tmp(self, base: str = "t") -> str:
        self.n += 1
        return f"_{base}{self.n}"

    def errcode(self, name: str) -> int:
        return self.err.get(name, 0)

    def lit(self, c: Any, t: Type | None) -> str:
        b = bt(t)
        if isinstance(c, bool):
            if isinstance(b, BitType):
                return str(int(c))
            return "True" if c else "False"
        if isinstance(c, str):
            if isinstance(b, ErrorType):
                return str(self.errcode(c))
            if isinstance(b, EnumType):
                if b.underlying is not None:
                    return str(b.values.get(c, 0))
                return str(b.members.index(c)) if c in b.members else "0"
            if c in self.err:
                return str(self.err[c])
            return repr(c)
        if isinstance(c, int):
            if isinstance(b, BitType) and not b.signed:
                c &= (1 << b.width) - 1
            return str(c) if -1000 < c < 1000 else hex(c)
        return repr(c)

    def width(self, t: Type | None, node: A.Node | None = None) -> int:
        w = scalar_width(t) if t is not None else None
        if w is None:
            b = bt(t)
            if isinstance(b, ErrorType):
                return 16
            if isinstance(b, EnumType):
                return 32
            raise unsupported(node, f"value of type '{t}' where a bit width is needed")
        return w

    def default(self, t: Type | None) -> str:
        if t is None:
            return "0"
        return self.cls.default(t)

    def is_agg(self, t: Type | None) -> bool:
        return isinstance(bt(t), StructLikeType | HeaderStackType)

    def simple(self, code: str) -> str:
        """`code` if it is cheap and side-effect free to evaluate twice, else a temp."""
        if _SIMPLE.match(code):
            return code
        t = self.tmp()
        self.out.line(f"{t} = {code}")
        return t

    def obj(self, qname: str, kind: str, prefix: str, **info: Any) -> str:
        """A namespace object created by the switch (deduplicated by qualified name+kind)."""
        key = f"{kind}:{qname}"
        if key in self.pyobj:
            return self.pyobj[key]
        py = f"{prefix}{len(self.pyobj)}"
        self.pyobj[key] = py
        self.info.objects.append({"py": py, "kind": kind, "name": qname, **info})
        return py

    # ------------------------------------------------------------------ entry
    def run(self) -> tuple[str, ProgramInfo]:
        pipeline = self.pipeline()
        for k in PIPELINE_PARAMS:
            if k not in pipeline:
                raise unsupported(self.cp.main, f"V1Switch argument '{k}' missing")
        p = pipeline["p"]
        assert isinstance(p, A.ParserDecl)
        hdr_t = bt(p.params[1].type)
        meta_t = bt(p.params[2].type)
        sm_t = bt(p.params[3].type)
        if not (isinstance(hdr_t, StructLikeType) and isinstance(meta_t, StructLikeType)
                and isinstance(sm_t, StructLikeType)):
            raise unsupported(p, "parser parameters must be structs")
        self.hdr_t, self.meta_t, self.sm_t = hdr_t, meta_t, sm_t
        self.info.hdr_class = self.cls.name(hdr_t)
        self.info.meta_class = self.cls.name(meta_t)
        self.info.sm_class = self.cls.name(sm_t)
        self.controller_headers()
        self.gen_parser_top(p)
        names = {"vr": "verify", "ig": "ingress", "eg": "egress", "ck": "compute", "dep": "deparse"}
        for k, fname in names.items():
            c = pipeline[k]
            if not isinstance(c, A.ControlDecl):
                raise unsupported(c, f"V1Switch argument '{k}' must be a control")
            self.gen_control_top(c, fname, k)
        self.gen_field_lists()
        self.gen_hdr_len()
        self.info.static_length = _static_length(self.cp.program)
        self.gen_packet_paths()
        structs = "".join(f"{n} = _struct.Struct({f!r})\n" for n, f in self.cls.structs)
        src = ("# generated by emu.p4.codegen; do not edit\nimport struct as _struct\n"
               + structs + self.top.source()) + "\n" + self.out.source()
        return src, self.info

    def pipeline(self) -> dict[str, Any]:
        """V1Switch arguments by parameter name.

        Workaround: CheckedProgram.pipeline pairs arguments with parameters by position even
        when the program passes them by name (p4c's basic_routing-bmv2.p4 does), so named
        arguments are re-paired here.
        """
        main = self.cp.main
        if main is None:
            raise unsupported(None, "program has no 'main' V1Switch instance")
        out: dict[str, Any] = {}
        if any(a.name for a in main.args):
            for a in main.args:
                d = self._block_of(a.value)
                if a.name and d is not None:
                    out[a.name] = d
            self.main_inst = {a.name: a.value for a in main.args}
            return out
        for k, a in zip(PIPELINE_PARAMS, main.args, strict=False):
            d = self._block_of(a.value)
            if d is not None:
                out[k] = d
        self.main_inst = {k: a.value for k, a in zip(PIPELINE_PARAMS, main.args, strict=False)}
        return out

    @staticmethod
    def _block_of(v: A.Expr) -> Any:
        t = v.type
        if isinstance(v, A.NameRef) and v.ref is not None and v.ref.kind == "instance":
            t = v.ref.type
        if isinstance(t, BlockType) and isinstance(t.decl, A.ParserDecl | A.ControlDecl):
            return t.decl
        return None

    def block_name(self, k: str, decl: Any) -> str:
        """Control-plane prefix of a top-level block: the instance name or the type name."""
        v = self.main_inst.get(k)
        if isinstance(v, A.NameRef):
            return v.name
        return decl.name

    def controller_headers(self) -> None:
        for t in self.hdr_t.fields:
            ft = bt(t[1])
            if isinstance(ft, HeaderType) and ft.decl is not None:
                a = A.find_annotation(ft.decl.annotations, "controller_header")
                if a is not None and a.args:
                    self.info.controller_headers[str(a.args[0])] = {
                        "field": t[0], "fields": [[f, scalar_width(x) or 0] for f, x in ft.fields]}

    # ------------------------------------------------------------------ instantiation
    def instantiate(self, decl: A.ParserDecl | A.ControlDecl, ctx: Ctx, ctor_args: list[A.Argument]) -> None:
        """Bind the block's locals (variables, instances, tables) in ctx and emit their init."""
        for p, a in bind_args(decl.ctor_params, ctor_args):
            if a is not None and a.const is not None:
                ctx.env[id(p)] = self.lit(a.const, p.type)
            elif a is not None:
                ctx.inst[id(p)] = self._ctor_value(a, ctx, p.name)
        for d in decl.locals:
            self.local_decl(d, ctx)

    def _ctor_value(self, a: A.Expr, ctx: Ctx, name: str) -> Any:
        if isinstance(a, A.NameRef) and a.ref is not None and id(a.ref.decl) in ctx.inst:
            return ctx.inst[id(a.ref.decl)]
        if isinstance(a, A.CtorCall):
            fake = A.Instantiation(name, a.typeref, a.args, pos=a.pos)
            fake.type = a.type
            return self.make_instance(fake, ctx)
        raise unsupported(a, "constructor argument")

    def local_decl(self, d: A.Decl, ctx: Ctx) -> None:
        if isinstance(d, A.VarDecl):
            v = self.tmp("v_" + d.name)
            ctx.env[id(d)] = v
            self.out.line(f"{v} = {self.init_value(d.init, d.type, ctx)}")
        elif isinstance(d, A.ConstDecl):
            if d.value.const is None:
                v = self.tmp("c_" + d.name)
                ctx.env[id(d)] = v
                self.out.line(f"{v} = {self.value(d.value, ctx)}")
        elif isinstance(d, A.Instantiation):
            ctx.inst[id(d)] = self.make_instance(d, ctx)
        elif isinstance(d, A.TableDecl):
            ctx.inst[id(d)] = self.make_table(d, ctx)
        elif isinstance(d, A.ActionDecl):
            self.register_action(d, ctx.scope)
        elif isinstance(d, A.ValueSetDecl):
            qn = qualify(ctx.scope, d.name, d.annotations)
            et = bt(d.type)
            widths = [scalar_width(t) or 0 for _, t in et.fields] if isinstance(et, StructLikeType) else [self.width(et, d)]
            size = d.size.const or 0
            py = self.obj(qn, "value_set", "VS", size=size, widths=widths)
            ctx.inst[id(d)] = py
        elif isinstance(d, A.FunctionDecl):
            pass
        else:
            raise unsupported(d, f"local declaration '{type(d).__name__}'")

    def init_value(self, init: A.Expr | None, t: Type | None, ctx: Ctx) -> str:
        if init is None:
            return self.default(t)
        return self.value(init, ctx)

    def register_action(self, d: A.ActionDecl, scope: str | None) -> str:
        qn = qualify(None if id(d) in self.top_actions else scope, d.name, d.annotations)
        self.info.actions.setdefault(qn, [[p.name, self.width(p.type, p)] for p in d.params if p.direction == ""])
        return qn

    def make_instance(self, d: A.Instantiation, ctx: Ctx) -> Any:
        t = d.type
        qn = qualify(ctx.scope, d.name, d.annotations)
        if isinstance(t, BlockType):
            decl = t.decl
            if not isinstance(decl, A.ParserDecl | A.ControlDecl):
                raise unsupported(d, f"instance of '{t.name}'")
            return BlockInst(decl, qn, d.args)
        if not isinstance(t, ExternType):
            raise unsupported(d, f"instance of type '{t}'")
        args = {p.name: a for p, a in bind_args(next((m.params for m in t.decl.methods if m.is_ctor and len(m.params) == len(d.args)), []), d.args)}
        kind = t.name

        def const(name: str, default: Any = 0) -> Any:
            a = args.get(name)
            if a is None:
                return default
            return a.const if a.const is not None else default

        if kind == "register":
            vt = t.type_args.get("T")
            w = scalar_width(vt) if vt is not None else 32
            info = {"size": const("size"), "width": w or 32,
                    "signed": isinstance(bt(vt), BitType) and bt(vt).signed}  # type: ignore[union-attr]
            py = self.obj(qn, "register", "R", **info)
        elif kind == "counter":
            py = self.obj(qn, "counter", "CN", size=const("size"), type=str(const("type", "packets")))
            info = {}
        elif kind == "direct_counter":
            py = self.obj(qn, "direct_counter", "DC", type=str(const("type", "packets")))
            info = {}
        elif kind == "meter":
            py = self.obj(qn, "meter", "MT", size=const("size"), type=str(const("type", "packets")))
            info = {}
        elif kind == "direct_meter":
            py = self.obj(qn, "direct_meter", "DM", type=str(const("type", "packets")))
            info = {}
        elif kind in ("action_profile", "action_selector"):
            info = {"size": const("size"), "with_selector": kind == "action_selector",
                    "algo": str(const("algorithm", "crc16")), "output_width": const("outputWidth", 0)}
            py = self.obj(qn, "action_profile", "AP", **info)
        elif kind in ("Checksum16",):
            raise unsupported(d, "extern Checksum16")
        else:
            raise unsupported(d, f"extern '{kind}'")
        return ExternInst(kind, qn, py, d, info)

    # ------------------------------------------------------------------ tables
    def make_table(self, d: A.TableDecl, ctx: Ctx) -> TableInst:
        qn = qualify(ctx.scope, d.name, d.annotations)
        keys: list[dict[str, Any]] = []
        kp = d.prop("key")
        for k in (kp.keys if kp else []):
            nm = None
            a = A.find_annotation(k.annotations, "name")
            if a is not None and a.args:
                nm = str(a.args[0])
            text = expr_text(k.expr)
            kt = bt(k.expr.type)
            w = 1 if isinstance(kt, BoolType) else self.width(kt, k.expr)
            keys.append({"name": nm or text, "text": text, "match_kind": k.match_kind, "bitwidth": w})
        acts = []
        ap = d.prop("actions")
        for ar in (ap.actions if ap else []):
            ad = ar.decl
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
                                "support_timeout": False, "selector_keys": []}
        for p in d.properties:
            if p.kind == "value" and p.value is not None:
                v = p.value
                if p.name in ("size", "max_size") and v.const is not None:
                    info["size"] = int(v.const)
                elif p.name == "default_action":
                    info["default_action"] = self.action_call_json(v, ctx)
                    info["const_default_action"] = p.is_const
                elif p.name == "implementation":
                    inst = self.prop_instance(v, ctx)
                    info["implementation"] = inst.qname
                    info["impl_py"] = inst.py
                    info["impl_info"] = inst.info
                elif p.name == "counters":
                    inst = self.prop_instance(v, ctx)
                    info["direct_counter"] = inst.qname
                    info["counter_py"] = inst.py
                elif p.name == "meters":
                    inst = self.prop_instance(v, ctx)
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
        py = self.obj(qn, "table", "T", table=qn)
        self.info.tables.append(info)
        info["py"] = py
        return TableInst(d, qn, py, ctx, info)

    def prop_instance(self, v: A.Expr, ctx: Ctx) -> ExternInst:
        if isinstance(v, A.NameRef) and v.ref is not None:
            inst = ctx.inst.get(id(v.ref.decl)) or self.global_instance(v.ref.decl)
            if isinstance(inst, ExternInst):
                return inst
        if isinstance(v, A.CtorCall):
            fake = A.Instantiation(f"{ctx.scope}_anon{self.n}", v.typeref, v.args, pos=v.pos)
            self.n += 1
            fake.type = v.type
            inst = self.make_instance(fake, ctx)
            if isinstance(inst, ExternInst):
                return inst
        raise unsupported(v, "table property value")

    def action_call_json(self, v: A.Expr, ctx: Ctx) -> list[Any]:
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
        ad = en.action.decl
        qn = self.register_action(ad, ctx.scope)
        vals = []
        for p, a in bind_args([p for p in ad.params if p.direction == ""], en.action.args or []):
            if a is None or a.const is None:
                raise unsupported(en, "non-constant action argument in entry")
            vals.append(int(a.const) & ((1 << self.width(p.type, p)) - 1))
        prio = None
        if en.priority is not None and en.priority.const is not None:
            prio = int(en.priority.const)
        out = {"match": match, "action": [qn, vals], "priority": prio, "is_const": en.is_const}
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
            return ["range", cv(e.lo), cv(e.hi)]
        v = cv(e)
        if mk == "lpm":
            return ["lpm", v, w]
        if mk == "ternary":
            return ["ternary", v, (1 << w) - 1]
        if mk == "range":
            return ["range", v, v]
        return v

    def apply_table(self, ti: TableInst) -> tuple[str, str]:
        """Emit lookup + action dispatch; returns (hit_var, action_name_var)."""
        d = ti.decl
        ctx = ti.ctx
        o = self.out
        kp = d.prop("key")
        kcodes = []
        sel_codes = []
        for k in (kp.keys if kp else []):
            c = self.value(k.expr, ctx)
            if k.match_kind == "selector":
                sel_codes.append((c, self.width(k.expr.type, k.expr)))
            else:
                kcodes.append(c)
        e = self.tmp("e")
        key = "(" + ", ".join(kcodes) + ("," if len(kcodes) == 1 else "") + ")"
        # The matcher's lookup plus the table's (mutable in place) default entry: one
        # Python frame less than Table.apply.
        o.line(f"{e} = {ti.py}_lookup({key}) or {ti.py}_default")
        hit = self.tmp("hit")
        o.line(f"{hit} = not {e}.is_default")
        info = ti.info
        if info.get("counter_py"):
            o.line(f"if {hit}: {e}.counter.count(_ps.length)")
        if info.get("meter_py"):
            o.line(f"{info['meter_py']}.color = {info['meter_py']}.execute_entry({e}, _ps.length) if {hit} else 0")
        c = self.tmp("c")
        if info.get("impl_py"):
            ap = info["impl_py"]
            o.line(f"if {e}.is_default: {c} = {e}.action")
            o.line(f"elif {e}.member_id is not None: {c} = {ap}.member_action({e}.member_id)")
            o.line("else:")
            with o.indent():
                if sel_codes:
                    pe, nb = pack_expr(sel_codes)
                    o.line(f"_m = {ap}.select({e}.group_id, {ap}_hash(({pe}).to_bytes({nb}, 'big')))")
                else:
                    o.line(f"_m = {ap}.select({e}.group_id, 0)")
                o.line(f"{c} = _m.action if _m is not None else {ti.py}.default_entry.action")
        else:
            o.line(f"{c} = {e}.action")
        an = self.tmp("an")
        o.line(f"{an} = {c}.action")
        ap_ = d.prop("actions")
        first = True
        for ar in (ap_.actions if ap_ else []):
            ad = ar.decl
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
        return hit, an

    # ------------------------------------------------------------------ inlining
    def inline_body(self, body: A.Block, ictx: Ctx, bound: list[tuple[A.Param, A.Expr | None]],
                    caller: Ctx, ret: str | None = None,
                    prologue: Callable[[], None] | None = None) -> None:
        """Copy-in, body (return => break), copy-out (also on exit)."""
        o = self.out
        copy_out: list[tuple[A.Expr, str, A.Param]] = []
        written = _written(body)
        for p, a in bound:
            if p.direction in ("", "in"):
                if a is None:
                    v = self.tmp("p_" + p.name)
                    o.line(f"{v} = {self.default(p.type)}")
                    ictx.env[id(p)] = v
                    continue
                if isinstance(bt(p.type), ExternType) or isinstance(bt(a.type), ExternType):
                    ictx.inst[id(p)] = self.resolve_instance(a, caller)
                    continue
                if str(p.type) == "packet_in" or str(p.type) == "packet_out":
                    ictx.env[id(p)] = self.value(a, caller)
                    continue
                code = self.value(a, caller)
                if id(p) not in written and (_SIMPLE.match(code) and not self.is_agg(p.type)):
                    ictx.env[id(p)] = code
                else:
                    v = self.tmp("p_" + p.name)
                    o.line(f"{v} = {self.copy_if_agg(code, a)}")
                    ictx.env[id(p)] = v
            else:
                v = self.tmp("p_" + p.name)
                if p.direction == "inout" and a is not None and not isinstance(a, A.DontCare):
                    o.line(f"{v} = {self.copy_if_agg(self.value(a, caller), a)}")
                else:
                    o.line(f"{v} = {self.default(p.type)}")
                ictx.env[id(p)] = v
                if a is not None and not isinstance(a, A.DontCare):
                    copy_out.append((a, v, p))
        if prologue is not None:
            prologue()
        needs_loop = _has_return(body)
        may_exit = bool(copy_out) and _may_exit(body)
        if ret is not None:
            ictx.ret = ret
        ictx.inlined = needs_loop
        if may_exit:
            o.line("try:")
            o.level += 1
        if needs_loop:
            o.line("while True:")
            with o.indent():
                self.block(body, ictx)
                o.line("break")
        else:
            self.block(body, ictx)
        if may_exit:
            o.level -= 1
            o.line("finally:")
            with o.indent():
                for a, v, _p in copy_out:
                    self.assign(a, v, caller)
        else:
            for a, v, _p in copy_out:
                self.assign(a, v, caller)

    def copy_if_agg(self, code: str, e: A.Expr) -> str:
        if self.is_agg(e.type) and isinstance(e, A.NameRef | A.Member | A.Index):
            return f"{code}.copy()"
        return code

    def global_instance(self, decl: Any) -> Any:
        """A top-level extern instance (shared by all controls), created on first use."""
        if not isinstance(decl, A.Instantiation) or self.cp.instances.get(decl.name) is not decl:
            return None
        inst = self.globals_inst.get(id(decl))
        if inst is None:
            inst = self.globals_inst[id(decl)] = self.make_instance(decl, Ctx({}, {}, ""))
        return inst

    def resolve_instance(self, e: A.Expr, ctx: Ctx) -> Any:
        if isinstance(e, A.NameRef) and e.ref is not None:
            r = ctx.inst.get(id(e.ref.decl)) or self.global_instance(e.ref.decl)
            if r is not None:
                return r
        raise unsupported(e, "extern argument")

    # ------------------------------------------------------------------ top-level blocks
    def gen_parser_top(self, p: A.ParserDecl) -> None:
        o = self.out
        names = ["pk", "hdr", "meta", "sm"]
        o.line(f"def parse({', '.join(names)}, _ps):")
        start = len(o.lines)
        with o.indent():
            ctx = Ctx({}, {}, self.block_name("p", p), in_parser=True, pk="pk")
            for prm, n in zip(p.params, names, strict=False):
                ctx.env[id(prm)] = n
            self.instantiate(p, ctx, [])
            self.parser_states(p, ctx)
        self.bodies["parse"] = o.lines[start:]
        o.line("")

    def gen_control_top(self, c: A.ControlDecl, fname: str, k: str) -> None:
        o = self.out
        if k == "dep":
            names = ["_out", "hdr"]
        elif k in ("vr", "ck"):
            names = ["hdr", "meta"]
        else:
            names = ["hdr", "meta", "sm"]
        o.line(f"def {fname}({', '.join(names)}, _ps):")
        start = len(o.lines)
        with o.indent():
            ctx = Ctx({}, {}, self.block_name(k, c))
            for prm, n in zip(c.params, names, strict=False):
                ctx.env[id(prm)] = n
            self.instantiate(c, ctx, [])
            self.empty_blocks[fname] = not c.body.stmts and not c.locals
            if _may_exit(c.body):
                o.line("try:")
                with o.indent():
                    self.block(c.body, ctx)
                o.line("except ExitBlock:")
                with o.indent():
                    o.line("pass")
            else:
                self.block(c.body, ctx)
        self.bodies[fname] = o.lines[start:]
        o.line("")

    def splice(self, fname: str, call: str, level: int) -> None:
        """Insert a top-level block's body at `level` instead of calling it (saves a Python
        call per block per packet); falls back to the call when the body returns early."""
        body = self.bodies.get(fname, [])
        if any(ln.strip() == "return" for ln in body):
            self.out.line(call)
            return
        extra = level - 1
        for ln in body:
            self.out.lines.append("    " * extra + ln)

    # ------------------------------------------------------------------ parsers
    def parser_states(self, p: A.ParserDecl, ctx: Ctx) -> None:
        """State machine: `while True` over states with >1 predecessor or in loops; states
        reached from exactly one transition are inlined at it."""
        o = self.out
        states = {s.name: s for s in p.states}
        preds: dict[str, int] = {n: 0 for n in states}
        for s in p.states:
            for t in _targets(s):
                if t in preds:
                    preds[t] += 1
        # A state is in a loop if it can reach itself.
        looped = set()
        for n in states:
            seen: set[str] = set()
            stack = list(_targets(states[n]))
            while stack:
                x = stack.pop()
                if x == n:
                    looped.add(n)
                    break
                if x in seen or x not in states:
                    continue
                seen.add(x)
                stack.extend(_targets(states[x]))
        loop_states = [n for n in states if n == "start" or preds[n] != 1 or n in looped]
        ids = {n: i for i, n in enumerate(loop_states)}
        stv = self.tmp("st")
        pctx = ctx.child(in_parser=True)
        o.line(f"{stv} = 0")
        o.line("while True:")
        with o.indent():
            for i, n in enumerate(loop_states):
                o.line(f"{'if' if i == 0 else 'elif'} {stv} == {i}:")
                with o.indent():
                    self.state_body(states[n], pctx, states, ids, stv)

    def state_body(self, s: A.ParserState, ctx: Ctx, states: dict[str, A.ParserState],
                   ids: dict[str, int], stv: str) -> None:
        sctx = ctx.child()
        for st in s.stmts:
            self.stmt(st, sctx)
        tr = s.transition
        if tr is None:
            self.goto("reject", sctx, states, ids, stv)
        elif tr.state is not None:
            self.goto(tr.state, sctx, states, ids, stv)
        elif tr.select is not None:
            self.select(tr.select, sctx, states, ids, stv)

    def goto(self, name: str, ctx: Ctx, states: dict[str, A.ParserState], ids: dict[str, int], stv: str) -> None:
        o = self.out
        if name == "accept":
            o.line("break")
        elif name == "reject":
            o.line("raise ParserError(None)")
        elif name in ids:
            o.line(f"{stv} = {ids[name]}")
            o.line("continue")
        else:
            self.state_body(states[name], ctx, states, ids, stv)

    def select(self, sel: A.SelectExpr, ctx: Ctx, states: dict[str, A.ParserState], ids: dict[str, int], stv: str) -> None:
        o = self.out
        keys = []
        for e in sel.exprs:
            c = self.value(e, ctx)
            if not _SIMPLE.match(c):
                t = self.tmp("k")
                o.line(f"{t} = {c}")
                c = t
            keys.append((c, e.type))
        first = True
        for case in sel.cases:
            cond = self.keyset_cond(case.keyset, keys, ctx)
            if cond == "True":
                if first:
                    self.goto(case.state, ctx, states, ids, stv)
                else:
                    o.line("else:")
                    with o.indent():
                        self.goto(case.state, ctx, states, ids, stv)
                return
            o.line(f"{'if' if first else 'elif'} {cond}:")
            first = False
            with o.indent():
                self.goto(case.state, ctx, states, ids, stv)
        nm = self.errcode("NoMatch")
        if first:
            o.line(f"raise ParserError({nm})")
        else:
            o.line("else:")
            with o.indent():
                o.line(f"raise ParserError({nm})")

    def keyset_cond(self, ks: A.Expr, keys: list[tuple[str, Any]], ctx: Ctx) -> str:
        if isinstance(ks, A.DefaultExpr | A.DontCare):
            return "True"
        if isinstance(ks, A.NameRef) and ks.ref is not None and ks.ref.kind == "value_set":
            vs = ctx.inst[id(ks.ref.decl)]
            return f"{vs}.match(({', '.join(k for k, _ in keys)},))"
        items = ks.items if isinstance(ks, A.ListExpr) and len(keys) > 1 else [ks]
        if isinstance(ks, A.ListExpr) and len(keys) == 1 and len(ks.items) == 1:
            items = ks.items
        conds = []
        for it, (k, kt) in zip(items, keys, strict=False):
            c = self.elem_cond(it, k, kt, ctx)
            if c != "True":
                conds.append(c)
        return " and ".join(conds) if conds else "True"

    def elem_cond(self, it: A.Expr, k: str, kt: Any, ctx: Ctx) -> str:
        if isinstance(it, A.DefaultExpr | A.DontCare):
            return "True"
        if isinstance(it, A.NameRef) and it.ref is not None and it.ref.kind == "value_set":
            return f"{ctx.inst[id(it.ref.decl)]}.match(({k},))"
        if isinstance(it, A.Mask):
            v, m = self.value(it.value, ctx), self.value(it.mask, ctx)
            return f"({k} & {m}) == ({v} & {m})"
        if isinstance(it, A.Range):
            return f"{self.value(it.lo, ctx)} <= {k} <= {self.value(it.hi, ctx)}"
        return f"{k} == {self.value(it, ctx)}"

    # ------------------------------------------------------------------ statements
    def block(self, b: A.Stmt, ctx: Ctx) -> None:
        if isinstance(b, A.Block):
            c = ctx.child()
            for s in b.stmts:
                self.stmt(s, c)
                # Propagate declarations made visible in this block only.
            return
        self.stmt(b, ctx)

    def stmt(self, s: A.Stmt, ctx: Ctx) -> None:
        o = self.out
        if isinstance(s, A.Block):
            self.block(s, ctx)
        elif isinstance(s, A.VarDecl):
            v = self.tmp("v_" + s.name)
            ctx.env[id(s)] = v
            o.line(f"{v} = {self.init_value(s.init, s.type, ctx)}")
        elif isinstance(s, A.ConstDecl):
            if s.value.const is None:
                v = self.tmp("c_" + s.name)
                ctx.env[id(s)] = v
                o.line(f"{v} = {self.value(s.value, ctx)}")
        elif isinstance(s, A.Assign):
            rhs: A.Expr = s.rhs
            if s.op != "=":
                rhs = A.Binary(s.op[:-1], s.lhs, s.rhs, pos=s.pos)
                rhs.type = s.lhs.type
            code = self.value(rhs, ctx)
            self.assign(s.lhs, self.copy_if_agg(code, rhs), ctx)
        elif isinstance(s, A.CallStmt):
            self.call_stmt(s.call, ctx)
        elif isinstance(s, A.If):
            cond = self.value(s.cond, ctx)
            o.line(f"if {cond}:")
            with o.indent():
                self.block(s.then, ctx.child())
            els = s.else_
            while isinstance(els, A.If):
                with o.capture() as buf:
                    cond = self.value(els.cond, ctx)
                if buf:
                    break
                o.line(f"elif {cond}:")
                with o.indent():
                    self.block(els.then, ctx.child())
                els = els.else_
            if els is not None:
                o.line("else:")
                with o.indent():
                    self.block(els, ctx.child())
        elif isinstance(s, A.Switch):
            self.switch(s, ctx)
        elif isinstance(s, A.Exit):
            o.line("raise ExitBlock()")
        elif isinstance(s, A.Return):
            if s.value is not None and ctx.ret is not None:
                o.line(f"{ctx.ret} = {self.copy_if_agg(self.value(s.value, ctx), s.value)}")
            o.line("break" if ctx.inlined else "return")
        elif isinstance(s, A.Empty):
            pass
        else:
            raise unsupported(s, f"statement '{type(s).__name__}'")

    def switch(self, s: A.Switch, ctx: Ctx) -> None:
        o = self.out
        t = s.expr.type
        if isinstance(t, ActionEnumType):
            call = s.expr.expr if isinstance(s.expr, A.Member) else None
            if not isinstance(call, A.Call):
                raise unsupported(s, "switch expression")
            ti = self.table_of(call, ctx)
            _hit, an = self.apply_table(ti)
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
                ad = c.label.ref.decl if isinstance(c.label, A.NameRef) and c.label.ref is not None else None
                lab = repr(self.register_action(ad, ti.ctx.scope)) if ad is not None else repr(getattr(c.label, "name", ""))
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

    def table_of(self, call: A.Call, ctx: Ctx) -> TableInst:
        f = call.func
        if isinstance(f, A.Member) and isinstance(f.expr, A.NameRef) and f.expr.ref is not None:
            ti = ctx.inst.get(id(f.expr.ref.decl))
            if isinstance(ti, TableInst):
                return ti
        raise unsupported(call, "table apply")

    # ------------------------------------------------------------------ assignment
    def assign(self, lhs: A.Expr, val: str, ctx: Ctx) -> None:
        o = self.out
        if isinstance(lhs, A.DontCare):
            return
        if isinstance(lhs, A.NameRef):
            r = lhs.ref
            code = ctx.env.get(id(r.decl)) if r is not None else None
            if code is None:
                raise unsupported(lhs, f"assignment to '{lhs.name}'")
            if code in ("hdr", "meta", "sm") and self.is_agg(lhs.type):
                # The pipeline's own structs keep their identity (the switch holds them).
                o.line(f"{code}.set({val})")
            else:
                o.line(f"{code} = {val}")
        elif isinstance(lhs, A.Member):
            base_t = bt(lhs.expr.type)
            if isinstance(base_t, HeaderStackType):
                if lhs.name == "next" and ctx.in_parser:
                    s = self.value(lhs.expr, ctx)
                    o.line(f"{s}.a[{s}.n] = {val}")
                    return
                raise unsupported(lhs, f"assignment to stack member '{lhs.name}'")
            base = self.value(lhs.expr, ctx)
            if isinstance(base_t, HeaderUnionType):
                # Assigning a member header makes it the (only) valid one.
                o.line(f"{base}.{fld(lhs.name)}.set({val})")
                for f, _ in base_t.fields:
                    if f != lhs.name:
                        o.line(f"if {base}.{fld(lhs.name)}._v: {base}.{fld(f)}._v = False")
                return
            if self.is_agg(lhs.type):
                # In place: nested headers keep their identity for the whole packet, so
                # the hot path may hold them in locals (see alias_headers).
                o.line(f"{base}.{fld(lhs.name)}.set({val})")
                return
            o.line(f"{base}.{fld(lhs.name)} = {val}")
        elif isinstance(lhs, A.Index):
            s = self.value(lhs.expr, ctx)
            i = lhs.index
            if i.const is not None:
                o.line(f"{s}.a[{i.const}] = {val}")
            else:
                ic = self.simple(self.value(i, ctx))
                o.line(f"if 0 <= {ic} < len({s}.a): {s}.a[{ic}] = {val}")
        elif isinstance(lhs, A.Slice):
            hi, lo = int(lhs.hi.const), int(lhs.lo.const)
            m = (1 << (hi - lo + 1)) - 1
            inner_t = bt(lhs.expr.type)
            cur = self.value(lhs.expr, ctx)
            new = f"({cur} & {hex(~(m << lo) & ((1 << self.width(inner_t, lhs)) - 1))}) | ((({val}) & {hex(m)}) << {lo})"
            if isinstance(inner_t, BitType) and inner_t.signed:
                w = inner_t.width
                new = f"((({new}) + {hex(1 << (w - 1))}) & {mask(w)}) - {hex(1 << (w - 1))}"
            self.assign(lhs.expr, new, ctx)
        else:
            raise unsupported(lhs, "assignment target")

    # ------------------------------------------------------------------ expressions
    def value(self, e: A.Expr | None, ctx: Ctx) -> str:
        if e is None:
            raise unsupported(None, "missing argument")
        c = e.const
        if c is not None and not isinstance(e, A.StringLit):
            return self.lit(c, e.type)
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise unsupported(e, f"expression '{type(e).__name__}'")
        return m(e, ctx)

    def x_StringLit(self, e: A.StringLit, ctx: Ctx) -> str:
        return repr(e.value)

    def x_NameRef(self, e: A.NameRef, ctx: Ctx) -> str:
        r = e.ref
        if r is None:
            raise unsupported(e, f"name '{e.name}'")
        code = ctx.env.get(id(r.decl))
        if code is not None:
            return code
        if r.kind == "const":
            if r.value is not None:
                return self.lit(r.value, r.type)
            d = r.decl
            if isinstance(d, A.ConstDecl):
                return self.value(d.value, Ctx({}, {}, "", pk=ctx.pk))
        if r.kind in ("param", "local") and isinstance(bt(r.type), ExternType):
            inst = ctx.inst.get(id(r.decl))
            if isinstance(inst, ExternInst):
                return inst.py
        raise unsupported(e, f"reference to {r.kind} '{e.name}'")

    def x_Member(self, e: A.Member, ctx: Ctx) -> str:
        r = e.ref
        if r is not None and r.kind in ("enum_member", "error_member"):
            return self.lit(r.value if r.value is not None else r.name, e.type)
        base_t = bt(e.expr.type)
        if isinstance(base_t, ApplyResultType):
            call = e.expr
            assert isinstance(call, A.Call)
            hit, an = self.apply_table(self.table_of(call, ctx))
            if e.name == "hit":
                return hit
            if e.name == "miss":
                return f"(not {hit})"
            return an
        base = self.value(e.expr, ctx)
        if isinstance(base_t, StructLikeType):
            return f"{base}.{fld(e.name)}"
        if isinstance(base_t, HeaderStackType):
            soob = self.errcode("StackOutOfBounds")
            if e.name == "next":
                return f"stack_next({base}, {soob})"
            if e.name == "last":
                return f"stack_last({base}, {soob})"
            if e.name == "lastIndex":
                return f"(({base}.n - 1) & 0xffffffff)"
            if e.name == "nextIndex":
                return f"{base}.n"
            if e.name == "size":
                return str(base_t.size)
        raise unsupported(e, f"member '{e.name}'")

    def x_Index(self, e: A.Index, ctx: Ctx) -> str:
        s = self.value(e.expr, ctx)
        if e.index.const is not None:
            return f"{s}.a[{e.index.const}]"
        return f"stack_get({s}, {self.value(e.index, ctx)})"

    def x_Slice(self, e: A.Slice, ctx: Ctx) -> str:
        hi, lo = int(e.hi.const), int(e.lo.const)
        x = self.value(e.expr, ctx)
        m = mask(hi - lo + 1)
        return f"(({x} >> {lo}) & {m})" if lo else f"({x} & {m})"

    def wrap(self, code: str, t: Type | None) -> str:
        b = bt(t)
        if isinstance(b, BitType):
            if b.signed:
                h = hex(1 << (b.width - 1))
                return f"((({code}) + {h}) & {mask(b.width)}) - {h}"
            return f"(({code}) & {mask(b.width)})"
        return f"({code})"

    def x_Unary(self, e: A.Unary, ctx: Ctx) -> str:
        x = self.value(e.expr, ctx)
        if e.op == "!":
            return f"(not {x})"
        if e.op == "+":
            return x
        b = bt(e.type)
        if e.op == "-":
            return self.wrap(f"-{x}", b)
        if e.op == "~":
            if isinstance(b, BitType) and not b.signed:
                return f"({x} ^ {mask(b.width)})"
            return f"(~{x})"
        raise unsupported(e, f"operator '{e.op}'")

    def x_Binary(self, e: A.Binary, ctx: Ctx) -> str:
        op = e.op
        if op in ("&&", "||"):
            left = self.value(e.left, ctx)
            with self.out.capture() as buf:
                right = self.value(e.right, ctx)
            if not buf:
                return f"({left} {'and' if op == '&&' else 'or'} {right})"
            tv = self.tmp("b")
            self.out.line(f"{tv} = {left}")
            self.out.line(f"if {'' if op == '&&' else 'not '}{tv}:")
            self.out.reindent(buf, 1)
            self.out.line(f"    {tv} = {right}")
            return tv
        lt = bt(e.left.type)
        left = self.value(e.left, ctx)
        right = self.value(e.right, ctx)
        rt = bt(e.type)
        if op in ("==", "!="):
            if isinstance(lt, StructLikeType) or isinstance(bt(e.right.type), StructLikeType):
                r = f"{left}.eq({right})"
                return r if op == "==" else f"(not {r})"
            if isinstance(lt, HeaderStackType):
                r = f"all(x.eq(y) for x, y in zip({left}.a, {right}.a))"
                return r if op == "==" else f"(not {r})"
            if isinstance(e.left, A.ListExpr) or isinstance(e.right, A.ListExpr) or isinstance(lt, TupleType):
                left = self.tuple_code(e.left, ctx)
                right = self.tuple_code(e.right, ctx)
            return f"({left} {op} {right})"
        if op in ("<", ">", "<=", ">="):
            return f"({left} {op} {right})"
        if op == "++":
            lw = self.width(e.left.type, e)
            rw = self.width(e.right.type, e)
            lb = bt(e.left.type)
            rb = bt(e.right.type)
            lcode = f"({left} & {mask(lw)})" if isinstance(lb, BitType) and lb.signed else left
            rcode = f"({right} & {mask(rw)})" if isinstance(rb, BitType) and rb.signed else right
            v = f"(({lcode} << {rw}) | {rcode})"
            if isinstance(rt, BitType) and rt.signed:
                return self.wrap(v, rt)
            return v
        t = rt
        if not isinstance(t, BitType):
            if isinstance(t, IntType):
                pyop = {"/": "//"}.get(op, op)
                return f"({left} {pyop} {right})"
            raise unsupported(e, f"operator '{op}' on '{e.type}'")
        w = t.width
        if op in ("+", "-", "*"):
            return self.wrap(f"{left} {op} {right}", t)
        if op in ("&", "|", "^"):
            return f"({left} {op} {right})"
        if op in ("/", "%"):
            r = self.simple(right)
            pyop = "//" if op == "/" else "%"
            return f"(({left} {pyop} {r}) if {r} else 0)"
        if op == "<<":
            if e.right.const is not None:
                sh = int(e.right.const)
                return "0" if sh >= w else self.wrap(f"{left} << {sh}", t)
            r = self.simple(right)
            return f"({self.wrap(f'{left} << {r}', t)} if {r} < {w} else 0)"
        if op == ">>":
            if e.right.const is not None:
                sh = int(e.right.const)
                if sh >= w:
                    return f"(-1 if {left} < 0 else 0)" if t.signed else "0"
                return f"({left} >> {sh})"
            r = self.simple(right)
            if t.signed:
                return f"({left} >> min({r}, {w}))"
            return f"(({left} >> {r}) if {r} < {w} else 0)"
        if op in ("|+|", "|-|"):
            lo, hi = ((-(1 << (w - 1)), (1 << (w - 1)) - 1) if t.signed else (0, (1 << w) - 1))
            pyop = "+" if op == "|+|" else "-"
            return f"sat_add({left}, {pyop}{right}, {lo}, {hi})"
        raise unsupported(e, f"operator '{op}'")

    def tuple_code(self, e: A.Expr, ctx: Ctx) -> str:
        if isinstance(e, A.ListExpr):
            return "(" + "".join(self.value(i, ctx) + ", " for i in e.items) + ")"
        return self.value(e, ctx)

    def x_Ternary(self, e: A.Ternary, ctx: Ctx) -> str:
        c = self.value(e.cond, ctx)
        with self.out.capture() as b1:
            a = self.value(e.then, ctx)
        with self.out.capture() as b2:
            b = self.value(e.else_, ctx)
        if not b1 and not b2:
            return f"({a} if {c} else {b})"
        t = self.tmp("q")
        self.out.line(f"if {c}:")
        self.out.reindent(b1, 1)
        self.out.line(f"    {t} = {a}")
        self.out.line("else:")
        self.out.reindent(b2, 1)
        self.out.line(f"    {t} = {b}")
        return t

    def x_Cast(self, e: A.Cast, ctx: Ctx) -> str:
        to = bt(e.type)
        frm = bt(e.expr.type)
        if isinstance(to, StructLikeType | TupleType) and isinstance(e.expr, A.ListExpr | A.StructExpr):
            e.expr.type = e.type
            return self.value(e.expr, ctx)
        x = self.value(e.expr, ctx)
        if isinstance(to, BoolType):
            if isinstance(frm, BoolType):
                return x
            return f"({x} != 0)"
        if isinstance(to, BitType):
            if isinstance(frm, BoolType):
                return f"(1 if {x} else 0)"
            if isinstance(frm, BitType) and not frm.signed and not to.signed and frm.width <= to.width:
                return x
            return self.wrap(x, to)
        return x

    def x_ListExpr(self, e: A.ListExpr, ctx: Ctx) -> str:
        return self.aggregate_value(e, [(None, i) for i in e.items], ctx)

    def x_StructExpr(self, e: A.StructExpr, ctx: Ctx) -> str:
        return self.aggregate_value(e, [(n, v) for n, v in e.fields], ctx)

    def aggregate_value(self, e: A.Expr, items: list[tuple[str | None, A.Expr]], ctx: Ctx) -> str:
        t = bt(e.type)
        if isinstance(t, StructLikeType) and t.decl is not None:
            cn = self.cls.name(t)
            v = self.tmp("s")
            self.out.line(f"{v} = {cn}()")
            names = [f for f, _ in t.fields]
            for i, (n, it) in enumerate(items):
                fname = n if n is not None else names[i]
                self.out.line(f"{v}.{fld(fname)} = {self.copy_if_agg(self.value(it, ctx), it)}")
            if isinstance(t, HeaderType):
                self.out.line(f"{v}._v = True")
            return v
        return "(" + "".join(self.value(it, ctx) + ", " for _, it in items) + ")"

    def x_Call(self, e: A.Call, ctx: Ctx) -> str:
        r = self.call(e, ctx, want_value=True)
        if r is None:
            raise unsupported(e, "call used as a value")
        return r

    # ------------------------------------------------------------------ calls
    def call_stmt(self, e: A.Call, ctx: Ctx) -> None:
        self.call(e, ctx, want_value=False)

    def call(self, e: A.Call, ctx: Ctx, want_value: bool) -> str | None:
        o = self.out
        k = e.kind
        if k == "builtin":
            return self.builtin(e, ctx)
        if k == "action":
            ad = e.target
            actx = ctx.child(ret=None, inlined=False)
            if id(ad) in self.top_actions:
                actx = Ctx({}, {}, "", ctx.in_parser, pk=ctx.pk)
            self.inline_body(ad.body, actx, bind_args(ad.params, e.args), ctx)
            return None
        if k == "function":
            fd = self.function_decl(e)
            rt = None if fd.proto.return_type is None else e.type
            ret = self.tmp("r")
            if rt is not None and not isinstance(bt(rt), type(None)):
                o.line(f"{ret} = {self.default(rt) if self.is_agg(rt) or isinstance(bt(rt), (BitType, BoolType)) else '0'}")
            fctx = Ctx({}, {}, ctx.scope, ctx.in_parser, pk=ctx.pk)
            if id(fd) not in self.global_functions:
                fctx = ctx.child(inlined=False, ret=None)
            self.inline_body(fd.body, fctx, bind_args(fd.proto.params, e.args), ctx, ret=ret)
            return ret
        if k == "apply":
            tgt = e.target
            if isinstance(tgt, A.TableDecl):
                ti = self.table_of(e, ctx)
                hit, _an = self.apply_table(ti)
                return hit
            f = e.func
            inst = None
            if isinstance(f, A.Member) and isinstance(f.expr, A.NameRef) and f.expr.ref is not None:
                inst = ctx.inst.get(id(f.expr.ref.decl))
            if inst is None and isinstance(f, A.Member) and isinstance(f.expr, A.NameRef):
                tgt_decl = e.target
                if isinstance(tgt_decl, A.ParserDecl | A.ControlDecl):
                    # Direct type invocation: an anonymous instance named by its type.
                    inst = BlockInst(tgt_decl, qualify(ctx.scope, tgt_decl.name, tgt_decl.annotations), [])
            if not isinstance(inst, BlockInst):
                raise unsupported(e, "apply of a block")
            self.inline_block(inst, e, ctx)
            return None
        if k == "extern_function":
            return self.extern_function(e, ctx)
        if k == "extern_method":
            return self.extern_method(e, ctx)
        raise unsupported(e, f"call kind '{k}'")

    def inline_block(self, inst: BlockInst, e: A.Call, ctx: Ctx) -> None:
        d = inst.decl
        bctx = Ctx({}, {}, inst.qname, in_parser=isinstance(d, A.ParserDecl), pk=ctx.pk)
        bound = bind_args(d.params, e.args)
        # Locals are bound after copy-in (their initialisers may read parameters); exit
        # propagates to the top-level block, which catches it.
        if isinstance(d, A.ParserDecl):
            for p, a in bound:
                if str(p.type) == "packet_in" and a is not None:
                    bctx.pk = self.value(a, ctx)
            self.inline_body_custom(_ParserBody(d), bctx, bound, ctx, inst.args)
        else:
            self.inline_body(d.body, bctx, bound, ctx, prologue=lambda: self.instantiate(d, bctx, inst.args))

    def inline_body_custom(self, body: _ParserBody, bctx: Ctx, bound: list[tuple[A.Param, A.Expr | None]],
                           caller: Ctx, ctor_args: list[A.Argument]) -> None:
        """A sub-parser: copy-in, its state machine, copy-out (parser errors propagate)."""
        o = self.out
        copy_out = []
        for p, a in bound:
            if str(p.type) in ("packet_in", "packet_out"):
                bctx.env[id(p)] = self.value(a, caller) if a is not None else "pk"
                continue
            v = self.tmp("p_" + p.name)
            if p.direction in ("", "in", "inout") and a is not None:
                o.line(f"{v} = {self.copy_if_agg(self.value(a, caller), a)}")
            else:
                o.line(f"{v} = {self.default(p.type)}")
            bctx.env[id(p)] = v
            if p.direction in ("out", "inout") and a is not None:
                copy_out.append((a, v))
        self.instantiate(body.decl, bctx, ctor_args)
        if copy_out:
            o.line("try:")
            o.level += 1
        self.parser_states(body.decl, bctx)
        if copy_out:
            o.level -= 1
            o.line("finally:")
            with o.indent():
                for a, v in copy_out:
                    self.assign(a, v, caller)

    def builtin(self, e: A.Call, ctx: Ctx) -> str | None:
        name = e.target
        f = e.func
        assert isinstance(f, A.Member)
        recv_t = bt(f.expr.type)
        o = self.out
        if name == "isValid":
            x = self.value(f.expr, ctx)
            if isinstance(recv_t, HeaderUnionType):
                return f"{x}._isv()"
            return f"{x}._v"
        if name in ("setValid", "setInvalid"):
            x = self.value(f.expr, ctx)
            o.line(f"{x}._v = {name == 'setValid'}")
            parent = f.expr
            if name == "setValid" and isinstance(parent, A.Member) and isinstance(bt(parent.expr.type), HeaderUnionType):
                ut = bt(parent.expr.type)
                assert isinstance(ut, HeaderUnionType)
                pu = self.value(parent.expr, ctx)
                for fn, _ in ut.fields:
                    if fn != parent.name:
                        o.line(f"{pu}.{fld(fn)}._v = False")
            return None
        if name in ("push_front", "pop_front"):
            assert isinstance(recv_t, HeaderStackType)
            s = self.value(f.expr, ctx)
            el = bt(recv_t.elem)
            assert isinstance(el, StructLikeType)
            o.line(f"{s}.{name}({int(e.args[0].value.const)}, {self.cls.name(el)})")
            return None
        if e.const is not None:
            return str(e.const)
        raise unsupported(e, f"method '{name}'")

    # ------------------------------------------------------------------ externs
    def args_by_name(self, e: A.Call) -> dict[str, A.Expr | None]:
        m = e.target
        params = m.params if isinstance(m, A.MethodDecl) else []
        return {p.name: a for p, a in bind_args(params, e.args)}

    def extern_function(self, e: A.Call, ctx: Ctx) -> str | None:
        o = self.out
        m: A.MethodDecl = e.target
        name = m.name
        a = self.args_by_name(e)
        args = [x for _, x in bind_args(m.params, e.args)]
        if name == "mark_to_drop":
            sm = self.value(args[0], ctx) if args else "_ps.sm"
            o.line(f"{sm}.egress_spec = DROP_PORT; {sm}.mcast_grp = 0")
            return None
        if name == "verify":
            cond = self.value(args[0], ctx)
            err = self.value(args[1], ctx)
            o.line(f"if not {cond}: raise ParserError({err})")
            return None
        if name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                    "update_checksum_with_payload"):
            self.checksum(name, a, ctx, e)
            return None
        if name == "hash":
            self.hash_call(a, ctx, e)
            return None
        if name == "random":
            res = a["result"]
            assert res is not None
            lo = self.value(a["lo"], ctx)  # type: ignore[arg-type]
            hi = self.value(a["hi"], ctx)  # type: ignore[arg-type]
            self.assign(res, self.wrap(f"RNG.randint({lo}, {hi}) if {lo} <= {hi} else {lo}", res.type), ctx)
            return None
        if name in ("clone", "clone3", "clone_preserving_field_list"):
            ct = args[0]
            kind = "E2E" if ct is not None and ct.const in ("E2E", 1) else "I2E"
            sess = self.value(args[1], ctx)
            fl = "None"
            if name == "clone3" and args[2] is not None:
                fl = repr(self.field_list_from_data(args[2], ctx))
            elif name == "clone_preserving_field_list" and args[2] is not None:
                fl = repr(str(args[2].const))
            o.line(f"_ps.clone = ({kind!r}, {sess}, {fl})")
            return None
        if name in ("resubmit", "resubmit_preserving_field_list", "recirculate",
                    "recirculate_preserving_field_list"):
            what = "resubmit" if name.startswith("resubmit") else "recirc"
            if name.endswith("field_list"):
                fl = repr(str(args[0].const)) if args and args[0] is not None else "None"
            else:
                fl = repr(self.field_list_from_data(args[0], ctx)) if args and args[0] is not None else "None"
            o.line(f"_ps.{what} = ({fl},)")
            return None
        if name == "truncate":
            o.line(f"_ps.trunc = {self.value(args[0], ctx)}")
            return None
        if name == "digest":
            recv = self.value(args[0], ctx)
            data = args[1]
            assert data is not None
            vals = [c for c, _w, _v in self.flatten(data, ctx)]
            dname = self.digest_name(data, e)
            o.line(f"_ps.digests += (({dname!r}, {recv}, ({''.join(v + ', ' for v in vals)})),)")
            return None
        if name == "log_msg":
            msg = self.value(args[0], ctx)
            if len(args) > 1 and args[1] is not None:
                vals = [c for c, _w, _v in self.flatten(args[1], ctx)]
                o.line(f"log_msg({msg}, ({''.join(v + ', ' for v in vals)}))")
            else:
                o.line(f"log_msg({msg}, ())")
            return None
        if name in ("assert", "assume"):
            o.line(f"if not {self.value(args[0], ctx)}: raise AssertFailed({name!r} + ' failed at {e.pos}')")
            return None
        if name == "static_assert":
            return "True"
        raise unsupported(e, f"extern function '{name}'")

    def digest_name(self, data: A.Expr, e: A.Call) -> str:
        t = bt(data.type)
        nm = t.name if isinstance(t, StructLikeType) and t.decl is not None else f"digest_{e.pos.line}"
        if not any(d["name"] == nm for d in self.info.digests):
            fields = [[f, scalar_width(ft) or 0] for f, ft in t.fields] if isinstance(t, StructLikeType) else []
            self.info.digests.append({"name": nm, "fields": fields})
        return nm

    def flatten(self, e: A.Expr, ctx: Ctx) -> list[tuple[str, int, str | None]]:
        """(code, width, validity-code) leaves of a field list, MSB first."""
        if isinstance(e, A.ListExpr):
            out = []
            for it in e.items:
                out.extend(self.flatten(it, ctx))
            return out
        if isinstance(e, A.StructExpr):
            out = []
            for _, it in e.fields:
                out.extend(self.flatten(it, ctx))
            return out
        t = bt(e.type)
        if isinstance(t, StructLikeType | HeaderStackType):
            code = self.value(e, ctx)
            return self.flatten_code(code, t, None)
        code = self.value(e, ctx)
        valid = None
        if isinstance(e, A.Member) and isinstance(bt(e.expr.type), HeaderType):
            valid = self.value(e.expr, ctx) + "._v"
        if isinstance(t, BoolType):
            return [(f"(1 if {code} else 0)", 1, valid)]
        if isinstance(t, VarbitType):
            return [(f"({code}, {code}__w)", -1, valid)]
        w = self.width(t, e)
        if isinstance(t, BitType) and t.signed:
            code = f"({code} & {mask(w)})"
        return [(code, w, valid)]

    def flatten_code(self, code: str, t: Type, valid: str | None) -> list[tuple[str, int, str | None]]:
        t = bt(t)  # type: ignore[assignment]
        out: list[tuple[str, int, str | None]] = []
        if isinstance(t, HeaderStackType):
            for i in range(t.size):
                out.extend(self.flatten_code(f"{code}.a[{i}]", t.elem, valid))
            return out
        if isinstance(t, HeaderUnionType):
            for f, ft in t.fields:
                out.extend(self.flatten_code(f"{code}.{fld(f)}", ft, valid))
            return out
        assert isinstance(t, StructLikeType)
        v = f"{code}._v" if isinstance(t, HeaderType) else valid
        for f, ft in t.fields:
            b = bt(ft)
            if isinstance(b, StructLikeType | HeaderStackType):
                out.extend(self.flatten_code(f"{code}.{fld(f)}", b, v))
            elif isinstance(b, VarbitType):
                out.append((f"({code}.{fld(f)}, {code}.{fld(f)}__w)", -1, v))
            elif isinstance(b, BoolType):
                out.append((f"(1 if {code}.{fld(f)} else 0)", 1, v))
            elif isinstance(b, BitType) and b.signed:
                out.append((f"({code}.{fld(f)} & {mask(b.width)})", b.width, v))
            else:
                out.append((f"{code}.{fld(f)}", self.width(b), v))
        return out

    def struct_pack(self, parts: list[tuple[str, int]]) -> tuple[str, int] | None:
        """`_STn.pack(...)` for byte-aligned field groups of at most 8 bytes, else None."""
        total = sum(w for _, w in parts)
        if total % 8 or not parts:
            return None
        groups = field_groups(parts)
        if any(gw > 64 for gw, _ in groups):
            return None
        fmt, nb = struct_format(groups)
        sname = f"_ST{len(self.cls.structs)}"
        self.cls.structs.append((sname, "!" + fmt))
        args = []
        for gw, members in groups:
            expr = _unpadded(members)
            codes = _parts(gw // 8)
            if len(codes) == 1:
                args.append(expr)
            else:
                t = self.tmp("g")
                self.out.line(f"{t} = {expr}")
                rem = gw
                for _c, n in codes:
                    rem -= n * 8
                    args.append(f"(({t} >> {rem}) & {mask(n * 8)})" if rem else f"({t} & {mask(n * 8)})")
        return f"{sname}.pack({', '.join(args)})", nb

    def pack_leaves(self, leaves: list[tuple[str, int, str | None]]) -> str:
        """Python expression giving the packed bytes, skipping fields of invalid headers."""
        valids = sorted({v for _, _, v in leaves if v is not None})
        if not any(w < 0 for _, w, _ in leaves):
            sp = self.struct_pack([(c, w) for c, w, _ in leaves])
            if sp is not None:
                fast = sp[0]
            else:
                pe, nb = pack_expr([(c, w) for c, w, _ in leaves])
                fast = f"({pe}).to_bytes({nb}, 'big')"
            if not valids:
                return fast
            items = ", ".join(f"(({c}, {w}),) if {v} else ()" if v else f"(({c}, {w}),)" for c, w, v in leaves)
            slow = f"pack(sum(({items},), ()))"
            return f"({fast} if {' and '.join(valids)} else {slow})"
        parts = []
        for c, w, v in leaves:
            item = f"({c},)" if w < 0 else f"(({c}, {w}),)"
            parts.append(f"({item} if {v} else ())" if v else item)
        return f"pack(sum(({', '.join(parts)},), ()))"

    def hash_call(self, a: dict[str, A.Expr | None], ctx: Ctx, e: A.Call) -> None:
        res, algo, base, data, mx = a["result"], a["algo"], a["base"], a["data"], a["max"]
        assert res is not None and algo is not None and data is not None
        algo_name = str(algo.const)
        hf = self.obj(algo_name, "hash", "HF", algo=algo_name)
        leaves = self.flatten(data, ctx)
        packed = self.pack_leaves(leaves)
        b = self.value(base, ctx) if base is not None else "0"
        m = self.value(mx, ctx) if mx is not None else "0"
        rw = self.width(res.type, res)
        if mx is not None and mx.const is not None and base is not None and base.const is not None:
            mc, bc = int(mx.const) & ((1 << 64) - 1), int(base.const)
            if mc:
                code = f"(({bc} + {hf}({packed}) % {mc}) & {mask(rw)})"
            else:
                code = f"({bc} & {mask(rw)})"
        else:
            hv = self.tmp("h")
            mv = self.simple(m)
            self.out.line(f"{hv} = {hf}({packed})")
            code = f"(({b}) + ({hv} % {mv} if {mv} else 0)) & {mask(rw)}"
        self.assign(res, code, ctx)

    def checksum(self, name: str, a: dict[str, A.Expr | None], ctx: Ctx, e: A.Call) -> None:
        o = self.out
        cond, data, cks, algo = a["condition"], a["data"], a["checksum"], a["algo"]
        assert cond is not None and data is not None and cks is not None and algo is not None
        algo_name = str(algo.const)
        hf = self.obj(algo_name, "hash", "HF", algo=algo_name)
        leaves = self.flatten(data, ctx)
        w = self.width(cks.type, cks)
        c = self.value(cond, ctx)
        o.line(f"if {c}:")
        with o.indent():
            total = sum(lw for _, lw, _ in leaves)
            if (algo_name.endswith("csum16") and not name.endswith("with_payload") and total % 16 == 0
                    and total and all(lw > 0 for _, lw, _ in leaves)):
                # Internet checksum inline, without building bytes: 2**16 == 1 (mod 0xFFFF),
                # so the ones'-complement sum of the words is the sum of the fields, each
                # shifted by its bit offset mod 16, taken mod 0xFFFF (0xFFFF, not 0, unless
                # every field is 0).
                valids = sorted({v for _, _, v in leaves if v is not None})
                terms = []
                off = total
                for lc, lw, _ in leaves:
                    off -= lw
                    sh = off % 16
                    terms.append(f"({lc} << {sh})" if sh else lc)
                t = self.tmp("cs")
                fast_code = (f"{t} = {' + '.join(terms)}; {t}r = {t} % 0xffff; "
                             f"{t} = ~({t}r if {t}r or not {t} else 0xffff) & 0xffff")
                if valids:
                    o.line(f"if {' and '.join(valids)}:")
                    o.line("    " + fast_code)
                    o.line("else:")
                    o.line(f"    {t} = {hf}({self.pack_leaves(leaves)})")
                else:
                    o.line(fast_code)
                val = f"({t} & {mask(w)})"
            else:
                packed = self.pack_leaves(leaves)
                if name.endswith("with_payload"):
                    packed = f"({packed} + _ps.payload)"
                val = f"({hf}({packed}) & {mask(w)})"
            # BMv2 skips verify/update when the checksum field's header is invalid.
            if isinstance(cks, A.Member) and isinstance(bt(cks.expr.type), HeaderType):
                hv = self.value(cks.expr, ctx)
                o.line(f"if {hv}._v:")
                o.level += 1
            if name.startswith("verify"):
                o.line(f"if {val} != {self.value(cks, ctx)}: _ps.sm.checksum_error = 1")
            else:
                self.assign(cks, val, ctx)
            if isinstance(cks, A.Member) and isinstance(bt(cks.expr.type), HeaderType):
                o.level -= 1

    def extern_method(self, e: A.Call, ctx: Ctx) -> str | None:
        o = self.out
        f = e.func
        assert isinstance(f, A.Member)
        m: A.MethodDecl = e.target
        rt = bt(f.expr.type)
        ename = rt.name if isinstance(rt, ExternType) else str(rt)
        args = [x for _, x in bind_args(m.params, e.args)]
        if ename == "packet_in":
            pk = self.value(f.expr, ctx)
            return self.packet_in(m.name, e, args, pk, ctx)
        if ename == "packet_out":
            out = self.value(f.expr, ctx)
            if m.name == "emit":
                arg = args[0]
                assert arg is not None
                self.emit_value(self.value(arg, ctx), bt(arg.type), out)
                return None
        inst = None
        if isinstance(f.expr, A.NameRef) and f.expr.ref is not None:
            inst = ctx.inst.get(id(f.expr.ref.decl)) or self.global_instance(f.expr.ref.decl)
        if not isinstance(inst, ExternInst):
            raise unsupported(e, f"method '{m.name}' of '{ename}'")
        py = inst.py
        if ename == "register":
            if m.name == "read":
                res, idx = args[0], args[1]
                assert res is not None and idx is not None
                cur = self.value(res, ctx)
                val = f"{py}.read({self.value(idx, ctx)}, {cur})"
                if inst.info.get("signed"):
                    val = self.wrap(val, res.type)
                self.assign(res, val, ctx)
                return None
            if m.name == "write":
                idx, wv = args[0], args[1]
                assert idx is not None and wv is not None
                v = self.value(wv, ctx)
                if isinstance(bt(wv.type), BoolType):
                    v = f"(1 if {v} else 0)"
                o.line(f"{py}.write({self.value(idx, ctx)}, {v})")
                return None
        if ename == "counter" and m.name == "count":
            o.line(f"{py}.count({self.value(args[0], ctx)}, _ps.length)")  # type: ignore[arg-type]
            return None
        if ename == "direct_counter" and m.name == "count":
            return None  # BMv2 counts direct counters on every table hit
        if ename == "meter" and m.name == "execute_meter":
            idx, res = args[0], args[1]
            assert idx is not None and res is not None
            cur = self.value(res, ctx)
            self.assign(res, f"{py}.execute({self.value(idx, ctx)}, _ps.length, {cur})", ctx)
            return None
        if ename == "direct_meter" and m.name == "read":
            res = args[0]
            assert res is not None
            self.assign(res, f"{py}.color", ctx)
            return None
        raise unsupported(e, f"method '{m.name}' of '{ename}'")

    def packet_in(self, name: str, e: A.Call, args: list[A.Expr | None], pk: str, ctx: Ctx) -> str | None:
        o = self.out
        pts = self.errcode("PacketTooShort")
        if name == "extract":
            tgt = args[0]
            assert tgt is not None
            if isinstance(tgt, A.Member) and isinstance(bt(tgt.expr.type), HeaderStackType) and tgt.name == "next":
                s = self.value(tgt.expr, ctx)
                h = f"stack_next({s}, {self.errcode('StackOutOfBounds')})"
                if len(args) > 1 and args[1] is not None:
                    o.line(f"{h}._exv({pk}, {self.value(args[1], ctx)})")
                else:
                    o.line(f"{h}._ex({pk})")
                o.line(f"{s}.n += 1")
                return None
            if not isinstance(bt(tgt.type), HeaderType):
                raise unsupported(tgt, "extract into a non-header")
            h = self.value(tgt, ctx)
            if len(args) > 1 and args[1] is not None:
                o.line(f"{h}._exv({pk}, {self.value(args[1], ctx)})")
            elif id(tgt.type) in self.cls.extract_inline and _SIMPLE.match(h) and _SIMPLE.match(pk):
                # The extraction body inline (no method call on the hot path).
                o.line(f"_x = {h}")
                for ln in self.cls.extract_inline[id(tgt.type)]:
                    o.line(ln.replace("self.", "_x.").replace("pk.", f"{pk}."))
            else:
                o.line(f"{h}._ex({pk})")
            if isinstance(tgt, A.Member) and isinstance(bt(tgt.expr.type), HeaderUnionType):
                ut = bt(tgt.expr.type)
                assert isinstance(ut, HeaderUnionType)
                pu = self.value(tgt.expr, ctx)
                for fn, _ in ut.fields:
                    if fn != tgt.name:
                        o.line(f"{pu}.{fld(fn)}._v = False")
            return None
        if name == "lookahead":
            t = bt(e.type)
            if isinstance(t, HeaderType):
                cn = self.cls.name(t)
                v = self.tmp("la")
                o.line(f"{v} = {cn}(); _o = {pk}.o; {v}._ex({pk}); {pk}.o = _o")
                return v
            if isinstance(t, StructLikeType):
                cn = self.cls.name(t)
                widths = [(f, self.width(ft, e)) for f, ft in t.fields]
                tw = sum(w for _, w in widths)
                nb = (tw + 7) // 8
                v = self.tmp("la")
                o.line(f"if {pk}.o + {nb} > {pk}.n: raise ParserError({pts})")
                o.line(f"_x = int.from_bytes({pk}.b[{pk}.o:{pk}.o + {nb}], 'big') >> {nb * 8 - tw}")
                o.line(f"{v} = {cn}()")
                sh = tw
                for f, w in widths:
                    sh -= w
                    o.line(f"{v}.{fld(f)} = (_x >> {sh}) & {mask(w)}")
                return v
            w = self.width(t, e)
            nb = (w + 7) // 8
            v = self.tmp("la")
            o.line(f"if {pk}.o + {nb} > {pk}.n: raise ParserError({pts})")
            val = f"(int.from_bytes({pk}.b[{pk}.o:{pk}.o + {nb}], 'big') >> {nb * 8 - w})"
            if isinstance(t, BoolType):
                val = f"({val} != 0)"
            o.line(f"{v} = {val}")
            return v
        if name == "advance":
            n = self.simple(self.value(args[0], ctx))  # type: ignore[arg-type]
            o.line(f"if {pk}.o + ({n} >> 3) > {pk}.n: raise ParserError({pts})")
            o.line(f"{pk}.o += {n} >> 3")
            return None
        if name == "length":
            return f"{pk}.n"
        raise unsupported(e, f"packet_in.{name}")

    def emit_value(self, code: str, t: Type | None, out: str) -> None:
        o = self.out
        if isinstance(t, HeaderType):
            inline = self.cls.emit_inline.get(id(t))
            if inline is not None and _SIMPLE.match(code):
                o.line(f"if {code}._v: {out}.append({inline.replace('self.', code + '.')})")
            else:
                o.line(f"if {code}._v: {out}.append({code}._emit())")
        elif isinstance(t, HeaderStackType):
            o.line(f"for _h in {code}.a:")
            with o.indent():
                o.line(f"if _h._v: {out}.append(_h._emit())")
        elif isinstance(t, StructLikeType):
            for f, ft in t.fields:
                self.emit_value(f"{code}.{fld(f)}", bt(ft), out)
        else:
            raise unsupported(None, f"emit of '{t}'")

    # ------------------------------------------------------------------ field lists
    def field_list_from_data(self, data: A.Expr, ctx: Ctx) -> str:
        """Old-style data argument (clone3/resubmit/recirculate): the listed metadata
        fields are preserved. Registered as an anonymous field list."""
        paths: list[list[str]] = []
        items = data.items if isinstance(data, A.ListExpr) else [data]
        if isinstance(data, A.StructExpr):
            items = [v for _, v in data.fields]
        for it in items:
            p = self.meta_path(it, ctx)
            if p is not None:
                paths.append(p)
            elif isinstance(bt(it.type), StructLikeType):
                base = self.meta_path(it, ctx)
                if base is not None:
                    paths.append(base)
        self.fl_count += 1
        name = f"__data{self.fl_count}"
        self.info.field_lists[name] = [[".".join(p)] for p in paths]
        return name

    def meta_path(self, e: A.Expr, ctx: Ctx) -> list[str] | None:
        """['meta'|'sm', field, ...] for an lvalue rooted at the user or standard metadata."""
        names: list[str] = []
        while isinstance(e, A.Member):
            names.append(fld(e.name))
            e = e.expr
        if isinstance(e, A.NameRef) and e.ref is not None:
            root = ctx.env.get(id(e.ref.decl))
            if root in ("meta", "sm"):
                return [root] + names[::-1]
        return None

    def gen_field_lists(self) -> None:
        """@field_list(N) annotations on user metadata fields -> preserved field lists."""
        lists: dict[str, list[list[str]]] = {}

        def walk(t: StructLikeType, path: list[str]) -> None:
            decl = t.decl
            anns = {}
            if decl is not None:
                for sf in decl.fields:
                    anns[sf.name] = sf.annotations
            for f, ft in t.fields:
                b = bt(ft)
                for an in anns.get(f, []):
                    if an.name == "field_list":
                        for arg in an.args:
                            lists.setdefault(str(arg), []).append([".".join(path + [fld(f)])])
                if isinstance(b, StructType):
                    walk(b, path + [fld(f)])

        walk(self.meta_t, ["meta"])
        for k, v in lists.items():
            self.info.field_lists.setdefault(k, v)

    def gen_packet_paths(self) -> None:
        """Per-packet wrappers for the switch's hot path (normal packets): one call runs
        parser + verify + ingress, one runs egress + checksum + deparser; the block bodies
        are spliced in rather than called."""
        o = self.out
        static = self.info.static_length
        start = len(o.lines)
        o.line("def run_ingress(ps, data, port, ts_us):")
        with o.indent():
            o.line("_ps = ps")
            o.line(f"sm = {self.info.sm_class}(); ps.sm = sm")
            o.line("sm.ingress_port = port; sm.packet_length = ps.length; sm.ingress_global_timestamp = ts_us")
            o.line(f"meta = {self.info.meta_class}(); ps.meta = meta")
            o.line(f"hdr = {self.info.hdr_class}(); ps.hdr = hdr")
            mark = len(o.lines)
            o.line("pk = Pkt(data)")
            o.line("try:")
            o.level += 1
            self.splice("parse", "parse(pk, hdr, meta, sm, ps)", o.level)
            o.level -= 1
            o.line("except ParserError as err:")
            o.line("    if err.code is not None: sm.parser_error = err.code")
            o.line("o = pk.o")
            seg = o.lines[mark:]
            if not any(re.search(r"\bpk\b(?!\.[obn]\b)", ln) for ln in seg[1:]):
                # The cursor only read through pk.o/.n/.b: keep it in locals instead.
                seg = [ln.replace("pk.o", "_po").replace("pk.n", "_pn").replace("pk.b", "_pb") for ln in seg]
                seg[0] = seg[0].replace("pk = Pkt(data)", "_pb = data; _pn = len(data); _po = 0")
                o.lines[mark:] = seg
            o.line("ps.payload = data[o:] if o else data")
            o.line("ps.base_len = o" if static else "ps.base_len = hdr_len(hdr)")
            if not self.empty_blocks.get("verify", False):
                self.splice("verify", "verify(hdr, meta, ps)", o.level)
            self.splice("ingress", "ingress(hdr, meta, sm, ps)", o.level)
            o.line("return sm")
        o.line("")
        o.line("def run_egress(ps, port, info, ts_us):")
        with o.indent():
            o.line("_ps = ps; hdr = ps.hdr; meta = ps.meta; sm = ps.sm")
            o.line("sm.egress_port = port; sm.egress_spec = 0")
            o.line("sm.enq_timestamp = info.enq_timestamp & 0xffffffff; sm.enq_qdepth = info.enq_qdepth")
            o.line("sm.deq_timedelta = info.deq_timedelta & 0xffffffff; sm.deq_qdepth = info.deq_qdepth")
            o.line("sm.egress_global_timestamp = ts_us")
            o.line("sm.packet_length = ps.length" if static else
                   "sm.packet_length = ps.length + hdr_len(hdr) - ps.base_len")
            self.splice("egress", "egress(hdr, meta, sm, ps)", o.level)
            o.line("if ps.clone is not None or sm.egress_spec == DROP_PORT: return None")
            if not self.empty_blocks.get("compute", False):
                self.splice("compute", "compute(hdr, meta, ps)", o.level)
            o.line("_out = []")
            self.splice("deparse", "deparse(_out, hdr, ps)", o.level)
            o.line("_out.append(ps.payload)")
            o.line("return b''.join(_out)")
        o.line("")
        o.lines[start:] = self.alias_headers(o.lines[start:])

    def alias_headers(self, lines: list[str]) -> list[str]:
        """Replace `hdr.<field>` by a local bound once per function (one attribute load
        instead of two per access). Valid because aggregate assignments are in place."""
        aggs = {fld(f) for f, t in self.hdr_t.fields if self.is_agg(t)}
        pat = re.compile(r"'[^']*'|\bhdr\.(\w+)\b(?!\s*=[^=])")
        out: list[str] = []
        used: set[str] = set()
        func: list[str] = []

        def flush() -> None:
            if not func:
                return
            header, body = func[0], func[1:]
            # Bind the aliases right after `hdr` is known (first line mentioning "hdr =").
            for i, ln in enumerate(body):
                if "hdr = " in ln:
                    ind = ln[: len(ln) - len(ln.lstrip())]
                    binds = [f"{ind}_H_{a} = hdr.{a}" for a in sorted(used)]
                    body = body[: i + 1] + binds + body[i + 1:]
                    break
            out.append(header)
            out.extend(body)
            func.clear()
            used.clear()

        def repl(m: re.Match[str]) -> str:
            if m.group(1) is None or m.group(1) not in aggs:
                return m.group(0)
            used.add(m.group(1))
            return f"_H_{m.group(1)}"

        for ln in lines:
            if ln.startswith("def "):
                flush()
                func.append(ln)
            elif func:
                func.append(pat.sub(repl, ln) if "hdr = " not in ln else ln)
            else:
                out.append(ln)
        flush()
        return out

    def gen_hdr_len(self) -> None:
        """Bytes of the valid headers (BMv2 adjusts packet_length by header adds/removes)."""
        o = self.out
        o.line("def hdr_len(hdr):")
        with o.indent():
            o.line("n = 0")
            for f, ft in self.hdr_t.fields:
                b = bt(ft)
                a = f"hdr.{fld(f)}"
                if isinstance(b, HeaderType):
                    o.line(f"if {a}._v: n += {a}._nbytes()")
                elif isinstance(b, HeaderStackType):
                    o.line(f"for _h in {a}.a:")
                    o.line("    if _h._v: n += _h._nbytes()")
                elif isinstance(b, HeaderUnionType):
                    for uf, _ in b.fields:
                        o.line(f"if {a}.{fld(uf)}._v: n += {a}.{fld(uf)}._nbytes()")
            o.line("return n")
        o.line("")


@dataclass
class _ParserBody:
    decl: A.ParserDecl


# ---------------------------------------------------------------------- AST queries
def _targets(s: A.ParserState) -> list[str]:
    tr = s.transition
    if tr is None:
        return []
    if tr.state is not None:
        return [tr.state]
    if tr.select is not None:
        return [c.state for c in tr.select.cases]
    return []


def _walk(node: Any) -> Any:
    """All AST nodes under `node` (statements and expressions)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(n)
            continue
        if not isinstance(n, A.Node):
            continue
        yield n
        for k, v in vars(n).items():
            if k in ("type", "const", "ref", "target", "pos", "decl", "name_pos", "type_bindings"):
                continue
            if isinstance(v, A.Node | list):
                stack.append(v)


def _has_return(body: A.Stmt) -> bool:
    return any(isinstance(n, A.Return) for n in _walk(body))


_EXIT_MEMO: dict[int, bool] = {}


def _may_exit(body: Any) -> bool:
    """Whether `exit` can run inside `body` (through calls and table actions)."""
    key = id(body)
    if key in _EXIT_MEMO:
        return _EXIT_MEMO[key]
    _EXIT_MEMO[key] = False
    r = False
    for n in _walk(body):
        if isinstance(n, A.Exit):
            r = True
        elif isinstance(n, A.Call):
            t = n.target
            if isinstance(t, A.ActionDecl):
                r = _may_exit(t.body)
            elif isinstance(t, A.FunctionDecl):
                r = _may_exit(t.body)
            elif isinstance(t, A.ControlDecl):
                r = _may_exit(t.body)
            elif isinstance(t, A.TableDecl):
                ap = t.prop("actions")
                r = any(_may_exit(ar.decl.body) for ar in (ap.actions if ap else []) if ar.decl is not None)
        if r:
            break
    _EXIT_MEMO[key] = r
    return r


def _written(body: A.Stmt) -> set[int]:
    """Declarations written in `body` (assigned, or passed to out/inout parameters)."""
    out: set[int] = set()

    def root(e: A.Expr) -> None:
        while isinstance(e, A.Member | A.Index | A.Slice):
            e = e.expr
        if isinstance(e, A.NameRef) and e.ref is not None and e.ref.decl is not None:
            out.add(id(e.ref.decl))

    for n in _walk(body):
        if isinstance(n, A.Assign):
            root(n.lhs)
        elif isinstance(n, A.Call):
            t = n.target
            params = None
            if isinstance(t, A.MethodDecl):
                params = t.params
            elif isinstance(t, A.ActionDecl):
                params = t.params
            elif isinstance(t, A.FunctionDecl):
                params = t.proto.params
            elif isinstance(t, A.ControlDecl | A.ParserDecl):
                params = t.params
            if params is None:
                for a in n.args:
                    root(a.value)
                continue
            for p, av in bind_args(params, n.args):
                if av is not None and p.direction in ("out", "inout"):
                    root(av)
            if isinstance(n.func, A.Member) and n.kind == "builtin":
                root(n.func.expr)
    return out


def _unpadded(members: list[tuple[str, int]]) -> str:
    """MSB-first concatenation of in-range values (no end padding)."""
    expr = members[0][0]
    for code, w in members[1:]:
        expr = f"(({expr}) << {w}) | {code}"
    return expr


def _static_length(prog: A.Program) -> bool:
    """True when no control adds or removes headers (packet_length then never changes)."""
    for n in _walk(prog):
        if isinstance(n, A.ControlDecl):
            for m in _walk(n):
                if isinstance(m, A.Call) and m.kind == "builtin" and m.target in (
                        "setValid", "setInvalid", "push_front", "pop_front"):
                    return False
                if isinstance(m, A.Assign) and isinstance(
                        bt(m.lhs.type), HeaderType | HeaderStackType | HeaderUnionType | StructType):
                    return False
                if isinstance(m, A.Call) and m.kind in ("action", "function", "apply"):
                    continue
    return True


def lower(cp: CheckedProgram) -> tuple[str, ProgramInfo]:
    """Generate the Python module source and metadata for a checked V1Switch program."""
    return Lowerer(cp).run()
