"""Lowering of a checked v1model program to one Python module (source text + metadata).

Design (why it is fast): every action, function, sub-control and sub-parser is INLINED at
its call site, so a packet runs as straight-line Python inside six functions (parse,
verify, ingress, egress, compute, deparse) with no AST walk and few calls. Names of P4
declarations map to Python expressions through an environment keyed by declaration
identity, which also gives copy-in/copy-out: an in/inout argument is copied into a fresh
local, out starts fresh (zero / invalid), and out/inout locals are copied back to the
argument after the body, also when `exit` leaves it (try/finally). A sub-control's inout
struct or header argument that no other argument overlaps is used in place instead (the
control sees nothing else of its caller, so nothing can tell). `return` inside an
inlined body is a `break` out of a one-shot `while True` wrapper.

Headers: a byte-aligned header type that nothing rewrites after extraction deparses as
the bytes it was extracted from, and is not decoded at all when nothing reads its fields
(analysis._rewritten_headers / _read_headers; ClassTable `rewritten` / `read`).

The generated module expects a namespace holding emu.p4.target.runtime names and the
objects listed in `ProgramInfo.objects` (tables, registers, ...), created by the switch.

Layout: this module is the program-level driver (pipeline, block instances, top-level
functions); the passes are mixins over `base.LowererBase`: `expressions`, `statements`
(assignment, control flow, inlining with copy-in/copy-out), `parsers` (states, select,
packet_in), `tables` (instances, entries, apply, action dispatch), `externs` (v1model
functions and extern methods) and `layout` (field packing, field lists, packet paths);
`analysis` holds AST queries.
"""

from __future__ import annotations

import re
from typing import Any

from emu.p4.frontend import CheckedProgram
from emu.p4.frontend import ast as A
from emu.p4.frontend.types import (
    BitType,
    BlockType,
    ExternType,
    HeaderType,
    StructLikeType,
    Type,
)
from emu.p4.names import field_name, qualify

from .analysis import (
    _direct_meter_targets,
    _header_writes,
    _read_headers,
    _static_length,
)
from .base import (
    PIPELINE_PARAMS,
    BlockInst,
    Ctx,
    ExternInst,
    ProgramInfo,
    bind_args,
    bt,
    unsupported,
)
from .classes import scalar_width
from .expressions import ExprLowerer
from .externs import ExternLowerer
from .layout import LayoutLowerer
from .parsers import ParserLowerer
from .statements import StmtLowerer
from .tables import TableLowerer

__all__ = ["Lowerer", "ProgramInfo", "lower"]

_RETURN = re.compile(r"\s*return\b")  # a block body's own `return` (it returns nothing)


# counter and meter externs -> the prefix of their generated Python names
_COUNTERS_METERS = {"counter": "CN", "direct_counter": "DC", "meter": "MT", "direct_meter": "DM"}
# The most cells an indexed extern may have: the switch allocates them all at start (a
# meter cell is a two-bucket object of about 200 bytes), so a size like 4e9 must be a
# compile error, not a MemoryError when the switch starts.
MAX_CELLS = {"register": 1 << 22, "counter": 1 << 22, "meter": 1 << 20}


class Lowerer(ExprLowerer, StmtLowerer, ParserLowerer, TableLowerer, ExternLowerer, LayoutLowerer):
    """The program-level driver: pipeline, block instances, top-level functions."""

    # ------------------------------------------------------------------ entry
    def run(self) -> tuple[str, ProgramInfo]:
        self.header_writes = _header_writes(self.cp.program)
        self.cls.rewritten = set(self.header_writes)
        self.cls.read = _read_headers(self.cp.program)
        self.meter_targets, self.hoisted_reads = _direct_meter_targets(self.cp.program)
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
        self.parser_decl = p
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
        """V1Switch arguments by parameter name (the checker pairs named arguments by name)."""
        main = self.cp.main
        if main is None:
            # A whole-program error: reported at the start of the program's own file.
            files = self.cp.program.files
            at = A.Node(pos=A.Pos(files[0], 1, 1)) if files else None
            raise unsupported(at, "program has no 'main' V1Switch instance")
        if not (isinstance(main.type, BlockType) and main.type.decl.name == "V1Switch"):
            # valid P4 for another architecture; p4c's simple_switch backend rejects it too
            raise unsupported(main, f"main package '{main.type}' is not V1Switch")
        params = [p.name for p in main.type.decl.params]
        self.main_inst = {
            (a.name or (params[i] if i < len(params) else None)): a.value for i, a in enumerate(main.args)
        }
        return dict(self.cp.pipeline)

    def block_name(self, k: str, decl: Any) -> str:
        """Control-plane prefix of a top-level block: the instance name or the type name."""
        v = self.main_inst.get(k)
        if isinstance(v, A.NameRef):
            return v.name
        return decl.name

    def top_ctor_args(self, k: str) -> list[A.Argument]:
        """Constructor arguments of the block V1Switch gets as `k` (`MyParser(false)` in
        main's list: P4 instantiates no parser or control at top level)."""
        v = self.main_inst.get(k)
        return list(v.args) if isinstance(v, A.CtorCall) else []

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
        # A variable holds its own copy: `h_t c = hdr.h;` must not alias hdr.h.
        return self.copy_if_agg(self.value(init, ctx), init)

    def register_action(self, d: A.ActionDecl, scope: str | None) -> str:
        qn = qualify(None if id(d) in self.top_actions else scope, d.name, d.annotations)
        # Parameters by their control-plane names (@name), as P4Info and the handles name them.
        self.info.actions.setdefault(qn, [[field_name(p.name, p.annotations), self.width(p.type, p)]
                                          for p in d.params if p.direction == ""])
        return qn

    def make_instance(self, d: A.Instantiation, ctx: Ctx) -> Any:
        t = d.type
        qn = qualify(ctx.scope, d.name, d.annotations)
        if isinstance(t, BlockType):
            decl = t.decl
            if not isinstance(decl, A.ParserDecl | A.ControlDecl):
                raise unsupported(d, f"instance of '{t.name}'")
            outer = {id(a.value.ref.decl): ctx.inst[id(a.value.ref.decl)] for a in d.args
                     if isinstance(a.value, A.NameRef) and a.value.ref is not None
                     and id(a.value.ref.decl) in ctx.inst}
            return BlockInst(decl, qn, d.args, outer)
        if not isinstance(t, ExternType):
            raise unsupported(d, f"instance of type '{t}'")
        args = {p.name: a for p, a in bind_args(next((m.params for m in t.decl.methods if m.is_ctor and len(m.params) == len(d.args)), []), d.args)}
        kind = t.name

        def const(name: str, default: Any = 0) -> Any:
            a = args.get(name)
            if a is None:
                return default
            return a.const if a.const is not None else default

        if kind in MAX_CELLS and isinstance(const("size"), int) and const("size") > MAX_CELLS[kind]:
            raise unsupported(d, f"{kind} '{qn}' of {const('size')} cells "
                                 f"(the embedded target holds at most {MAX_CELLS[kind]})")

        if kind == "register":
            vt = t.type_args.get("T")
            w = scalar_width(vt) if vt is not None else 32
            if w is None:  # its cells would be struct values: reads and writes are of ints
                raise unsupported(d, f"register '{qn}' with cells of type {vt} (p4c-bm2-ss "
                                     f"refuses it too; use a bit<W> register per field)")
            info = {"size": const("size"), "width": w or 32,
                    "signed": isinstance(bt(vt), BitType) and bt(vt).signed}  # type: ignore[union-attr]
            py = self.obj(qn, "register", "R", **info)
        elif kind in _COUNTERS_METERS:
            # a direct one has no size: its cells are its table's entries
            size = {} if kind.startswith("direct_") else {"size": const("size")}
            py = self.obj(qn, kind, _COUNTERS_METERS[kind], **size, type=str(const("type", "packets")))
            # the generated code updates an indexed counter inline: it needs the size
            info = size if kind == "counter" else {}
        elif kind in ("action_profile", "action_selector"):
            info = {"size": const("size"), "with_selector": kind == "action_selector",
                    "algo": str(const("algorithm", "crc16")), "output_width": const("outputWidth", 0)}
            py = self.obj(qn, "action_profile", "AP", **info)
        elif kind in ("Checksum16",):
            raise unsupported(d, "extern Checksum16")
        else:
            raise unsupported(d, f"extern '{kind}'")
        return ExternInst(kind, qn, py, d, info)

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
            self.instantiate(p, ctx, self.top_ctor_args("p"))
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
            self.instantiate(c, ctx, self.top_ctor_args(k))
            self.empty_blocks[fname] = not c.body.stmts and not c.locals
            if self.exits.may_exit(c.body):
                with o.block("try:"):
                    self.block(c.body, ctx)
                with o.block("except ExitBlock:"):
                    o.line("pass")
            else:
                self.block(c.body, ctx)
        self.bodies[fname] = o.lines[start:]
        o.line("")

    def splice(self, fname: str, call: str, level: int) -> None:
        """Insert a top-level block's body at `level` instead of calling it (saves a Python
        call per block per packet); falls back to the call when the body returns early."""
        body = self.bodies.get(fname, [])
        # (a statement line may carry its P4 location as a trailing comment)
        if any(_RETURN.match(ln) for ln in body):
            self.out.line(call)
            return
        extra = level - 1
        for ln in body:
            self.out.lines.append("    " * extra + ln)


def lower(cp: CheckedProgram) -> tuple[str, ProgramInfo]:
    """Generate the Python module source and metadata for a checked V1Switch program."""
    return Lowerer(cp).run()
