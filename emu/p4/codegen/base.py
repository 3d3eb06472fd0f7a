"""State shared by the lowering passes: program metadata, the lowering context, and the
base class every pass derives from."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emu.p4.frontend import CheckedProgram, P4Error
from emu.p4.frontend import ast as A
from emu.p4.frontend.diagnostics import Diagnostic, SourceCache
from emu.p4.frontend.types import (
    BitType,
    EnumType,
    ErrorType,
    HeaderStackType,
    HeaderUnionType,
    StructLikeType,
    Type,
    strip_newtype,
)

from .classes import ClassTable, fld, scalar_width
from .emitter import Emitter
from .exits import ExitAnalysis

PIPELINE_PARAMS = ("p", "vr", "ig", "eg", "ck", "dep")


_SIMPLE = re.compile(r"^[A-Za-z_][\w.]*$|^-?\d+$|^0x[0-9a-fA-F]+$")


def unsupported(node: A.Node | None, msg: str) -> P4Error:
    return refused(node, f"{msg} (not supported by the embedded v1model target)")


def refused(node: A.Node | None, msg: str) -> P4Error:
    """An error at `node` that the front end lets through and the target cannot take."""
    pos = node.pos if node is not None else A.NOPOS
    return P4Error([Diagnostic(pos.file, pos.line, pos.col, "error", msg,
                               SourceCache().line(pos.file, pos.line))])  # read on error only


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
    # instances named by constructor arguments, resolved where the block was instantiated
    # (`C2(c1) c2;` passes the sibling instance c1), keyed like Ctx.inst
    outer: dict[int, Any] = field(default_factory=dict)


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


@dataclass
class _ParserBody:
    decl: A.ParserDecl


class LowererBase:
    """Shared state and helpers; each pass module adds methods in a mixin (see lower.Lowerer)."""

    # set by Lowerer.run / pipeline
    hdr_t: StructLikeType
    meta_t: StructLikeType
    sm_t: StructLikeType
    parser_decl: A.ParserDecl
    main_inst: dict[str | None, A.Expr]

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
        self.empty_blocks: dict[str, bool] = {}
        self.bodies: dict[str, list[str]] = {}
        self.globals_inst: dict[int, Any] = {}
        # header type id -> its fields written after parsing, None: written whole
        # (analysis._header_writes; Lowerer.run), and the checksum partial sums verify
        # keeps on a header for update (ExternLowerer.csum_sum): (type id, terms) -> n
        self.header_writes: dict[int, set[str] | None] = {}
        self.csum_partial: dict[tuple[int, tuple[str, ...]], int] = {}
        # expressions already evaluated into a temp (an lvalue's index, see StmtLowerer)
        self.pinned: dict[int, str] = {}
        # parameters bound to their caller's aggregate in place (StmtLowerer.inline_body)
        self.by_ref: set[int] = set()
        self.global_functions = {id(f) for f in cp.functions.values()}
        # direct meter declaration id -> where a hit writes its color, and the read()
        # calls that this replaces (analysis._direct_meter_targets; Lowerer.run)
        self.meter_targets: dict[int, A.Expr] = {}
        self.hoisted_reads: set[int] = set()
        # per-compilation analysis state (no module globals change while lowering)
        self.exits = ExitAnalysis()

    # ------------------------------------------------------------------ helpers
    def tmp(self, base: str = "t") -> str:
        self.n += 1
        return f"_{base}{self.n}"

    def errcode(self, name: str) -> int:
        return self.err.get(name, 0)

    def count_loop_iteration(self, exc: str) -> None:
        """One iteration of a loop off the packet's budget (runtime.LOOP_LIMIT), so that
        a loop that never ends cannot hang the switch; past it, `raise exc`."""
        self.out.line("_ps.loop_budget -= 1")
        self.out.line(f"if _ps.loop_budget < 0: raise {exc}")

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

    def invalidate_union_siblings(self, h: A.Expr, ctx: Ctx) -> None:
        """After header `h` became valid: when it is a member of a header union, make the
        union's other members invalid (at most one is valid)."""
        if not isinstance(h, A.Member):
            return
        ut = bt(h.expr.type)
        if not isinstance(ut, HeaderUnionType):
            return
        pu = self.value(h.expr, ctx)
        for fn, _ in ut.fields:
            if fn != h.name:
                self.out.line(f"{pu}.{fld(fn)}._v = False")

    if TYPE_CHECKING:
        # methods of the pass mixins, declared for the type checker only
        def run(self) -> tuple[str, ProgramInfo]: ...
        def pipeline(self) -> dict[str, Any]: ...
        def block_name(self, k: str, decl: Any) -> str: ...
        def controller_headers(self) -> None: ...
        def instantiate(self, decl: A.ParserDecl | A.ControlDecl, ctx: Ctx, ctor_args: list[A.Argument]) -> None: ...
        def _ctor_value(self, a: A.Expr, ctx: Ctx, name: str) -> Any: ...
        def local_decl(self, d: A.Decl, ctx: Ctx) -> None: ...
        def init_value(self, init: A.Expr | None, t: Type | None, ctx: Ctx) -> str: ...
        def register_action(self, d: A.ActionDecl, scope: str | None) -> str: ...
        def make_instance(self, d: A.Instantiation, ctx: Ctx) -> Any: ...
        def global_instance(self, decl: Any) -> Any: ...
        def resolve_instance(self, e: A.Expr, ctx: Ctx) -> Any: ...
        def gen_parser_top(self, p: A.ParserDecl) -> None: ...
        def gen_control_top(self, c: A.ControlDecl, fname: str, k: str) -> None: ...
        def splice(self, fname: str, call: str, level: int) -> None: ...
        def flatten(self, e: A.Expr, ctx: Ctx, *, field_validity: bool = True
                    ) -> list[tuple[str, int, str | None]]: ...
        def flatten_code(self, code: str, t: Type, valid: str | None) -> list[tuple[str, int, str | None]]: ...
        def struct_pack(self, parts: list[tuple[str, int]]) -> tuple[str, int] | None: ...
        def pack_leaves(self, leaves: list[tuple[str, int, str | None]]) -> str: ...
        def gen_field_lists(self) -> None: ...
        def gen_packet_paths(self) -> None: ...
        def alias_headers(self, lines: list[str]) -> list[str]: ...
        def gen_hdr_len(self) -> None: ...
        def hdr_len_expr(self) -> str: ...
        def make_table(self, d: A.TableDecl, ctx: Ctx) -> TableInst: ...
        def prop_instance(self, v: A.Expr, ctx: Ctx, annotations: list[A.Annotation]) -> ExternInst: ...
        def action_call_json(self, v: A.Expr, ctx: Ctx) -> list[Any]: ...
        def entry_json(self, en: A.Entry, keys: list[dict[str, Any]], ctx: Ctx) -> dict[str, Any]: ...
        def keyset_json(self, e: A.Expr, key: dict[str, Any]) -> Any: ...
        def apply_table(self, ti: TableInst, want_hit: bool = True) -> tuple[str, str]: ...
        def table_of(self, call: A.Call, ctx: Ctx) -> TableInst: ...
        def switch(self, s: A.Switch, ctx: Ctx) -> None: ...
        def parser_states(self, p: A.ParserDecl, ctx: Ctx) -> None: ...
        def state_body(self, s: A.ParserState, ctx: Ctx, states: dict[str, A.ParserState],
                       ids: dict[str, int], stv: str) -> None: ...
        def goto(self, name: str, ctx: Ctx, states: dict[str, A.ParserState], ids: dict[str, int], stv: str) -> None: ...
        def select(self, sel: A.SelectExpr, ctx: Ctx, states: dict[str, A.ParserState], ids: dict[str, int], stv: str) -> None: ...
        def keyset_cond(self, ks: A.Expr, keys: list[tuple[str, Any]], ctx: Ctx) -> str: ...
        def elem_cond(self, it: A.Expr, k: str, kt: Any, ctx: Ctx) -> str: ...
        def packet_in(self, name: str, e: A.Call, args: list[A.Expr | None], pk: str, ctx: Ctx) -> str | None: ...
        def inline_body_custom(self, body: _ParserBody, bctx: Ctx, bound: list[tuple[A.Param, A.Expr | None]],
                               caller: Ctx, ctor_args: list[A.Argument]) -> None: ...
        def block(self, b: A.Stmt, ctx: Ctx) -> None: ...
        def stmt(self, s: A.Stmt, ctx: Ctx) -> None: ...
        def assign(self, lhs: A.Expr, val: str, ctx: Ctx) -> None: ...
        def inline_body(self, body: A.Block, ictx: Ctx, bound: list[tuple[A.Param, A.Expr | None]],
                        caller: Ctx, ret: str | None = None,
                        prologue: Callable[[], None] | None = None) -> None: ...
        def copy_if_agg(self, code: str, e: A.Expr) -> str: ...
        def call_stmt(self, e: A.Call, ctx: Ctx) -> None: ...
        def call(self, e: A.Call, ctx: Ctx, want_value: bool) -> str | None: ...
        def inline_block(self, inst: BlockInst, e: A.Call, ctx: Ctx) -> None: ...
        def value(self, e: A.Expr | None, ctx: Ctx) -> str: ...
        def x_StringLit(self, e: A.StringLit, ctx: Ctx) -> str: ...
        def x_NameRef(self, e: A.NameRef, ctx: Ctx) -> str: ...
        def x_Member(self, e: A.Member, ctx: Ctx) -> str: ...
        def x_Index(self, e: A.Index, ctx: Ctx) -> str: ...
        def x_Slice(self, e: A.Slice, ctx: Ctx) -> str: ...
        def wrap(self, code: str, t: Type | None) -> str: ...
        def x_Unary(self, e: A.Unary, ctx: Ctx) -> str: ...
        def x_Binary(self, e: A.Binary, ctx: Ctx) -> str: ...
        def tuple_code(self, e: A.Expr, ctx: Ctx) -> str: ...
        def x_Ternary(self, e: A.Ternary, ctx: Ctx) -> str: ...
        def x_Cast(self, e: A.Cast, ctx: Ctx) -> str: ...
        def x_ListExpr(self, e: A.ListExpr, ctx: Ctx) -> str: ...
        def x_StructExpr(self, e: A.StructExpr, ctx: Ctx) -> str: ...
        def aggregate_value(self, e: A.Expr, items: list[tuple[str | None, A.Expr]], ctx: Ctx) -> str: ...
        def x_Call(self, e: A.Call, ctx: Ctx) -> str: ...
        def builtin(self, e: A.Call, ctx: Ctx) -> str | None: ...
        def args_by_name(self, e: A.Call) -> dict[str, A.Expr | None]: ...
        def extern_function(self, e: A.Call, ctx: Ctx) -> str | None: ...
        def digest_name(self, data: A.Expr, e: A.Call) -> str: ...
        def hash_call(self, a: dict[str, A.Expr | None], ctx: Ctx, e: A.Call) -> None: ...
        def checksum(self, name: str, a: dict[str, A.Expr | None], ctx: Ctx, e: A.Call) -> None: ...
        def extern_method(self, e: A.Call, ctx: Ctx) -> str | None: ...
        def emit_value(self, code: str, t: Type | None, out: str, node: A.Node | None = None) -> None: ...
        def field_list_from_data(self, data: A.Expr, ctx: Ctx) -> str: ...
        def meta_path(self, e: A.Expr, ctx: Ctx) -> list[str] | None: ...
