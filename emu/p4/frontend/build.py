"""lark parse tree -> :mod:`emu.p4.frontend.ast` (positions mapped through the source map)."""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Transformer, v_args

from . import ast as A
from .diagnostics import DiagnosticSink
from .preprocess import SourceMap

_INT_RE = re.compile(r"^(?:(\d+)([ws]))?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)$")


def parse_int_literal(text: str) -> tuple[int, int | None, bool]:
    """'8w5' -> (5, 8, False); '0x1F' -> (31, None, False); '4s3' -> (3, 4, True)."""
    m = _INT_RE.match(text)
    if not m:
        raise ValueError(f"invalid integer literal '{text}'")
    width = int(m.group(1)) if m.group(1) else None
    signed = m.group(2) == "s"
    body = m.group(3).replace("_", "")
    if body[:2].lower() in ("0x", "0b", "0o"):
        value = int(body, 0)
    elif body[:2].lower() == "0d":
        value = int(body[2:], 10)
    else:
        value = int(body, 10)
    return value, width, signed


_ANNO_ITEM = re.compile(r'\s*(?:"((?:\\.|[^"\\])*)"|([-+]?[0-9][0-9A-Za-z_]*)|([A-Za-z_.][\w.]*)|(=)|(,)|(\S))')


def decode_annotation_body(body: str) -> tuple[list[Any], dict[str, Any]]:
    """Decode simple comma-separated literal lists and key=value pairs."""
    args: list[Any] = []
    kv: dict[str, Any] = {}
    items: list[Any] = []
    pos = 0
    pending_key: str | None = None
    for m in _ANNO_ITEM.finditer(body):
        if m.end() == pos:
            break
        pos = m.end()
        if m.group(1) is not None:
            v: Any = bytes(m.group(1), "utf-8").decode("unicode_escape")
        elif m.group(2) is not None:
            try:
                v = parse_int_literal(m.group(2).lstrip("+-"))[0] * (-1 if m.group(2).startswith("-") else 1)
            except ValueError:
                v = m.group(2)
        elif m.group(3) is not None:
            v = m.group(3)
        elif m.group(4):
            if items:
                pending_key = str(items.pop())
            continue
        elif m.group(5):
            continue
        else:
            return [body.strip()] if body.strip() else [], {}
        if pending_key is not None:
            kv[pending_key] = v
            pending_key = None
        else:
            items.append(v)
    args.extend(items)
    return args, kv


class ToAst(Transformer):
    """lark tree -> ``ast`` nodes.  Positions are mapped through the source map."""

    def __init__(self, smap: SourceMap, sink: DiagnosticSink) -> None:
        super().__init__()
        self.smap = smap
        self.sink = sink

    # -- helpers
    def p(self, x: Any) -> A.Pos:
        if isinstance(x, Token):
            return self.smap.lookup(x.line or 0, x.column or 0)
        if isinstance(x, A.Node):
            return x.pos
        if getattr(x, "empty", True):
            return A.NOPOS
        return self.smap.lookup(x.line, x.column)

    # -- annotations
    def annos(self, items: list[Any]) -> list[A.Annotation]:
        return list(items)

    def annotation(self, items: list[Any]) -> A.Annotation:
        name = items[0]
        if len(items) > 1:
            raw = str(items[1])
            body = raw[1:-1]
            args, kv = decode_annotation_body(body)
            return A.Annotation(str(name), body, raw[0], args, kv, pos=self.p(name))
        return A.Annotation(str(name), pos=self.p(name))

    # -- names
    def name(self, items: list[Token]) -> Token:
        return items[0]

    def enum_name(self, items: list[Token]) -> Token:
        return items[0]

    def arg_name(self, items: list[Token]) -> Token:
        return items[0]

    @v_args(meta=True)
    def switch_block(self, meta: Any, items: list[Any]) -> A.Block:
        return A.Block(list(items), pos=self.p(meta))

    def type_name(self, items: list[Token]) -> tuple[str, bool, Token]:
        if len(items) == 2:
            return str(items[1]), True, items[0]
        return str(items[0]), False, items[0]

    def type_params(self, items: list[Token]) -> list[str]:
        return [str(t) for t in items if isinstance(t, Token) and t.type not in ("TLT", "GT")]

    # -- types
    def _base(self, kind: str, items: list[Any]) -> A.BaseTypeRef:
        width = None
        if len(items) > 1:
            w = items[2]
            width = self._int_or_expr(w)
        return A.BaseTypeRef(kind, width, pos=self.p(items[0]))

    def _int_or_expr(self, w: Any) -> A.Expr:
        if isinstance(w, Token):
            return self.int_lit([w])
        return w  # type: ignore[no-any-return]

    def bool_type(self, items: list[Any]) -> A.BaseTypeRef:
        return A.BaseTypeRef("bool", pos=self.p(items[0]))

    def error_type(self, items: list[Any]) -> A.BaseTypeRef:
        return A.BaseTypeRef("error", pos=self.p(items[0]))

    def string_type(self, items: list[Any]) -> A.BaseTypeRef:
        return A.BaseTypeRef("string", pos=self.p(items[0]))

    def match_kind_type(self, items: list[Any]) -> A.BaseTypeRef:
        return A.BaseTypeRef("match_kind", pos=self.p(items[0]))

    def bit_type(self, items: list[Any]) -> A.BaseTypeRef:
        return self._base("bit", items)

    def int_type(self, items: list[Any]) -> A.BaseTypeRef:
        return self._base("int", items)

    def varbit_type(self, items: list[Any]) -> A.BaseTypeRef:
        return self._base("varbit", items)

    def void_type(self, items: list[Any]) -> A.BaseTypeRef:
        return A.BaseTypeRef("void", pos=self.p(items[0]))

    def dontcare_type(self, items: list[Any]) -> A.BaseTypeRef:
        return A.BaseTypeRef("_", pos=self.p(items[0]))

    def named_type(self, items: list[Any]) -> A.NamedTypeRef:
        name, top, tok = items[0]
        args = items[2] if len(items) > 1 else []
        return A.NamedTypeRef(name, args, top, pos=self.p(tok))

    def stack_type(self, items: list[Any]) -> A.StackTypeRef:
        return A.StackTypeRef(items[0], items[1], pos=items[0].pos)

    def tuple_type(self, items: list[Any]) -> A.TupleTypeRef:
        return A.TupleTypeRef(items[2], pos=self.p(items[0]))

    def type_args(self, items: list[Any]) -> list[A.TypeRef]:
        return list(items)

    # -- params
    def params(self, items: list[Any]) -> list[A.Param]:
        return list(items)

    def ctor_params(self, items: list[Any]) -> list[A.Param]:
        return items[0]  # type: ignore[no-any-return]

    def direction(self, items: list[Token]) -> str:
        return str(items[0])

    def param(self, items: list[Any]) -> A.Param:
        annos = items[0]
        rest = items[1:]
        direction = ""
        if isinstance(rest[0], str) and not isinstance(rest[0], Token):
            direction = rest[0]
            rest = rest[1:]
        typeref, name = rest[0], rest[1]
        default = rest[2] if len(rest) > 2 else None
        return A.Param(str(name), direction, typeref, default, annotations=annos, pos=self.p(name))

    # -- declarations
    def const_decl(self, items: list[Any]) -> A.ConstDecl:
        annos, _, typeref, name, value = items
        return A.ConstDecl(str(name), typeref, value, annotations=annos, pos=self.p(name))

    def var_decl(self, items: list[Any]) -> A.VarDecl:
        annos, typeref, name = items[:3]
        init = items[3] if len(items) > 3 else None
        return A.VarDecl(str(name), typeref, init, annotations=annos, pos=self.p(name))

    def struct_field(self, items: list[Any]) -> A.StructField:
        annos, typeref, name = items
        return A.StructField(str(name), typeref, annotations=annos, pos=self.p(name))

    def _aggregate(self, kind: str, items: list[Any]) -> A.HeaderDecl:
        annos, _, name = items[:3]
        rest = items[3:]
        tparams: list[str] = []
        if rest and isinstance(rest[0], list):
            tparams = rest[0]
            rest = rest[1:]
        return A.HeaderDecl(str(name), list(rest), kind, tparams, annotations=annos, pos=self.p(name))

    def header_decl(self, items: list[Any]) -> A.HeaderDecl:
        return self._aggregate("header", items)

    def header_union_decl(self, items: list[Any]) -> A.HeaderDecl:
        return self._aggregate("header_union", items)

    def struct_decl(self, items: list[Any]) -> A.HeaderDecl:
        return self._aggregate("struct", items)

    def enum_decl(self, items: list[Any]) -> A.EnumDecl:
        annos, _, name, *members = items
        return A.EnumDecl(str(name), [str(m) for m in members], annotations=annos, pos=self.p(name))

    def ser_enum_decl(self, items: list[Any]) -> A.EnumDecl:
        annos, _, typeref, name, *members = items
        return A.EnumDecl(
            str(name), [m[0] for m in members], typeref, [m[1] for m in members],
            annotations=annos, pos=self.p(name),
        )

    def enum_member(self, items: list[Any]) -> tuple[str, A.Expr]:
        return str(items[0]), items[1]

    def typedef_decl(self, items: list[Any]) -> A.TypedefDecl:
        annos, _, typeref, name = items
        return A.TypedefDecl(str(name), typeref, False, annotations=annos, pos=self.p(name))

    def newtype_decl(self, items: list[Any]) -> A.TypedefDecl:
        annos, _, typeref, name = items
        return A.TypedefDecl(str(name), typeref, True, annotations=annos, pos=self.p(name))

    def error_decl(self, items: list[Any]) -> A.ErrorDecl:
        return A.ErrorDecl("error", [str(m) for m in items[1:]], pos=self.p(items[0]))

    def match_kind_decl(self, items: list[Any]) -> A.MatchKindDecl:
        return A.MatchKindDecl("match_kind", [str(m) for m in items[1:]], pos=self.p(items[0]))

    def extern_decl(self, items: list[Any]) -> A.ExternDecl:
        annos, _, name, *rest = items
        tparams: list[str] = []
        if rest and isinstance(rest[0], list):
            tparams = rest[0]
            rest = rest[1:]
        return A.ExternDecl(str(name), tparams, list(rest), annotations=annos, pos=self.p(name))

    def extern_function_decl(self, items: list[Any]) -> A.MethodDecl:
        annos, _, proto = items
        proto.annotations = annos
        return proto  # type: ignore[no-any-return]

    def ctor_proto(self, items: list[Any]) -> A.MethodDecl:
        annos, name, params = items
        return A.MethodDecl(str(name), None, [], params, is_ctor=True, annotations=annos, pos=self.p(name))

    def method_proto(self, items: list[Any]) -> A.MethodDecl:
        annos = items[0]
        proto: A.MethodDecl = items[-1]
        proto.annotations = annos
        proto.abstract = len(items) == 3
        return proto

    def function_proto(self, items: list[Any]) -> A.MethodDecl:
        ret = items[0]
        if isinstance(ret, Token):
            ret = A.BaseTypeRef("void", pos=self.p(ret))
        name = items[1]
        tparams: list[str] = []
        params = items[-1]
        if len(items) == 4:
            tparams = items[2]
        return A.MethodDecl(str(name), ret, tparams, params, pos=self.p(name))

    def function_decl(self, items: list[Any]) -> A.FunctionDecl:
        annos, proto, body = items
        proto.annotations = annos
        return A.FunctionDecl(proto.name, proto, body, annotations=annos, pos=proto.pos)

    def action_decl(self, items: list[Any]) -> A.ActionDecl:
        annos, _, name, params, body = items
        return A.ActionDecl(str(name), params, body, annotations=annos, pos=self.p(name))

    def _ptype(self, kind: str, items: list[Any]) -> A.ParserTypeDecl:
        annos, _, name, *rest = items
        tparams = rest[0] if len(rest) == 2 else []
        return A.ParserTypeDecl(str(name), tparams, rest[-1], kind, annotations=annos, pos=self.p(name))

    def parser_type_decl(self, items: list[Any]) -> A.ParserTypeDecl:
        return self._ptype("parser", items)

    def control_type_decl(self, items: list[Any]) -> A.ParserTypeDecl:
        return self._ptype("control", items)

    def package_decl(self, items: list[Any]) -> A.ParserTypeDecl:
        return self._ptype("package", items)

    def instantiation(self, items: list[Any]) -> A.Instantiation:
        annos, typeref, args, name, *rest = items
        init = rest[0] if rest else []
        return A.Instantiation(str(name), typeref, args, init, annotations=annos, pos=self.p(name))

    def obj_init(self, items: list[Any]) -> list[A.Decl]:
        return list(items)

    def value_set_decl(self, items: list[Any]) -> A.ValueSetDecl:
        annos, _, _tlt, elem, _gt, size, name = items
        return A.ValueSetDecl(str(name), elem, size, annotations=annos, pos=self.p(name))

    # -- parsers
    def parser_decl(self, items: list[Any]) -> A.ParserDecl:
        annos, kw, name, *rest = items
        tparams: list[str] = []
        if rest and isinstance(rest[0], list) and rest[0] and isinstance(rest[0][0], str):
            tparams = rest.pop(0)
        params = rest.pop(0)
        ctor: list[A.Param] = []
        if rest and isinstance(rest[0], list):
            ctor = rest.pop(0)
        locals_ = [r for r in rest if not isinstance(r, A.ParserState)]
        states = [r for r in rest if isinstance(r, A.ParserState)]
        return A.ParserDecl(str(name), tparams, params, ctor, locals_, states, annotations=annos, pos=self.p(name))

    def parser_state(self, items: list[Any]) -> A.ParserState:
        annos, _, name, *rest = items
        trans = rest.pop() if rest and isinstance(rest[-1], A.Transition) else None
        return A.ParserState(str(name), rest, trans, annotations=annos, pos=self.p(name))

    def parser_block(self, items: list[Any]) -> A.Block:
        annos, *stmts = items
        pos = stmts[0].pos if stmts else (annos[0].pos if annos else A.NOPOS)
        return A.Block(stmts, annos, pos=pos)

    def transition_name(self, items: list[Any]) -> A.Transition:
        return A.Transition(str(items[1]), pos=self.p(items[0]))

    def transition_select(self, items: list[Any]) -> A.Transition:
        return A.Transition(None, items[1], pos=self.p(items[0]))

    def select_expr(self, items: list[Any]) -> A.SelectExpr:
        return A.SelectExpr(items[1], list(items[2:]), pos=self.p(items[0]))

    def select_case(self, items: list[Any]) -> A.SelectCase:
        return A.SelectCase(items[0], str(items[1]), pos=items[0].pos)

    def keyset_tuple(self, items: list[Any]) -> A.ListExpr:
        return A.ListExpr(list(items), pos=items[0].pos)

    def mask_expr(self, items: list[Any]) -> A.Mask:
        return A.Mask(items[0], items[2], pos=self.p(items[1]))

    def range_expr(self, items: list[Any]) -> A.Range:
        return A.Range(items[0], items[2], pos=self.p(items[1]))

    def default_expr(self, items: list[Any]) -> A.DefaultExpr:
        return A.DefaultExpr(pos=self.p(items[0]))

    def dontcare_expr(self, items: list[Any]) -> A.DontCare:
        return A.DontCare(pos=self.p(items[0]))

    # -- controls
    def control_decl(self, items: list[Any]) -> A.ControlDecl:
        annos, kw, name, *rest = items
        tparams: list[str] = []
        if rest and isinstance(rest[0], list) and rest[0] and isinstance(rest[0][0], str):
            tparams = rest.pop(0)
        params = rest.pop(0)
        ctor: list[A.Param] = []
        if rest and isinstance(rest[0], list):
            ctor = rest.pop(0)
        body = rest.pop()
        rest = [r for r in rest if not (isinstance(r, Token) and r.type == "APPLY")]
        return A.ControlDecl(str(name), tparams, params, ctor, rest, body, annotations=annos, pos=self.p(name))

    def table_decl(self, items: list[Any]) -> A.TableDecl:
        annos, _, name, *props = items
        return A.TableDecl(str(name), props, annotations=annos, pos=self.p(name))

    def key_property(self, items: list[Any]) -> A.TableProperty:
        annos, kw, *keys = items
        return A.TableProperty("key", "key", keys=keys, annotations=annos, pos=self.p(kw))

    def actions_property(self, items: list[Any]) -> A.TableProperty:
        annos, kw, *acts = items
        return A.TableProperty("actions", "actions", actions=acts, annotations=annos, pos=self.p(kw))

    def entries_property(self, items: list[Any]) -> A.TableProperty:
        annos, *rest = items
        is_const = isinstance(rest[0], Token) and rest[0].type == "CONST"
        kw = rest[1] if is_const else rest[0]
        entries = rest[2:] if is_const else rest[1:]
        return A.TableProperty("entries", "entries", is_const, entries=entries, annotations=annos, pos=self.p(kw))

    def value_property(self, items: list[Any]) -> A.TableProperty:
        annos, *rest = items
        is_const = isinstance(rest[0], Token) and rest[0].type == "CONST" and len(rest) == 3
        if is_const:
            rest = rest[1:]
        name, value = rest
        return A.TableProperty(str(name), "value", is_const, value=value, annotations=annos, pos=self.p(name))

    def key_element(self, items: list[Any]) -> A.KeyElement:
        expr, mk, annos = items
        return A.KeyElement(expr, str(mk), annos, pos=expr.pos)

    def action_ref(self, items: list[Any]) -> A.ActionRef:
        annos, (name, tok), *rest = items
        args = rest[0] if rest else None
        return A.ActionRef(name, args, annos, pos=self.p(tok))

    def prefixed_name(self, items: list[Token]) -> tuple[str, Token]:
        return (("." + str(items[1])) if len(items) == 2 else str(items[0])), items[-1]

    def entry(self, items: list[Any]) -> A.Entry:
        is_const = False
        if isinstance(items[0], Token) and items[0].type == "CONST":
            is_const = True
            items = items[1:]
        prio = None
        if isinstance(items[0], tuple):
            prio = items[0][0]
            items = items[1:]
        keyset, action, annos = items
        return A.Entry(keyset, action, prio, annos, is_const, pos=keyset.pos)

    def entry_priority(self, items: list[Any]) -> tuple[A.Expr]:
        v = items[1]
        return (self._int_or_expr(v),)

    # -- statements
    def block(self, items: list[Any]) -> A.Block:
        annos, *stmts = items
        pos = stmts[0].pos if stmts else (annos[0].pos if annos else A.NOPOS)
        return A.Block(stmts, annos, pos=pos)

    @v_args(meta=True)
    def assignment(self, meta: Any, items: list[Any]) -> A.Assign:
        return A.Assign(items[0], items[1], pos=items[0].pos)

    def compound_assignment(self, items: list[Any]) -> A.Assign:
        return A.Assign(items[0], items[2], str(items[1]), pos=items[0].pos)

    def call_stmt(self, items: list[Any]) -> A.CallStmt:
        func = items[0]
        if len(items) == 2:
            call = A.Call(func, [], items[1], pos=func.pos)
        else:
            call = A.Call(func, items[2], items[4], pos=func.pos)
        return A.CallStmt(call, pos=func.pos)

    def if_stmt(self, items: list[Any]) -> A.If:
        els = items[4] if len(items) > 3 else None
        return A.If(items[1], items[2], els, pos=self.p(items[0]))

    def exit_stmt(self, items: list[Any]) -> A.Exit:
        return A.Exit(pos=self.p(items[0]))

    def return_stmt(self, items: list[Any]) -> A.Return:
        return A.Return(items[1] if len(items) > 1 else None, pos=self.p(items[0]))

    @v_args(meta=True)
    def empty_stmt(self, meta: Any, items: list[Any]) -> A.Empty:
        return A.Empty(pos=self.p(meta))

    def switch_stmt(self, items: list[Any]) -> A.Switch:
        return A.Switch(items[1], list(items[2:]), pos=self.p(items[0]))

    def switch_case(self, items: list[Any]) -> A.SwitchCase:
        body = items[1] if len(items) > 1 else None
        return A.SwitchCase(items[0], body, pos=items[0].pos)

    def for_classic(self, items: list[Any]) -> A.ForStmt:
        loop = A.ForStmt(pos=self.p(items[0]), body=items[-1])
        for it in items[1:-1]:  # the optional parts, told apart by their builders' results
            if isinstance(it, _ForInit):
                loop.init = list(it)
            elif isinstance(it, _ForUpdate):
                loop.update = list(it)
            else:
                loop.cond = it
        return loop

    def for_init(self, items: list[Any]) -> _ForInit:
        return _ForInit(items)

    def for_update(self, items: list[Any]) -> _ForUpdate:
        return _ForUpdate(items)

    def for_decl(self, items: list[Any]) -> A.VarDecl:
        annos, typeref, name, init = items
        return A.VarDecl(str(name), typeref, init, annotations=annos, pos=self.p(name))

    def for_assign(self, items: list[Any]) -> A.Assign:
        if len(items) == 3:
            return A.Assign(items[0], items[2], str(items[1]), pos=items[0].pos)
        return A.Assign(items[0], items[1], pos=items[0].pos)

    def for_call(self, items: list[Any]) -> A.CallStmt:
        func = items[0]
        return A.CallStmt(A.Call(func, [], items[1], pos=func.pos), pos=func.pos)

    def break_stmt(self, items: list[Any]) -> A.Break:
        return A.Break(pos=self.p(items[0]))

    def continue_stmt(self, items: list[Any]) -> A.Continue:
        return A.Continue(pos=self.p(items[0]))

    def for_in(self, items: list[Any]) -> A.ForStmt:
        return A.ForStmt(pos=self.p(items[0]))

    # -- expressions
    def expr_list(self, items: list[Any]) -> list[A.Expr]:
        return list(items)

    def args(self, items: list[Any]) -> list[A.Argument]:
        out = []
        for it in items:
            if isinstance(it, A.Argument):
                out.append(it)
            else:
                out.append(A.Argument(it, pos=it.pos))
        return out

    def named_arg(self, items: list[Any]) -> A.Argument:
        return A.Argument(items[1], str(items[0]), pos=self.p(items[0]))

    def named_dontcare(self, items: list[Any]) -> A.Argument:
        return A.Argument(A.DontCare(pos=self.p(items[1])), str(items[0]), pos=self.p(items[0]))

    def ternary(self, items: list[Any]) -> A.Ternary:
        return A.Ternary(items[0], items[1], items[2], pos=items[0].pos)

    def binary(self, items: list[Any]) -> A.Binary:
        left, op, right = items
        return A.Binary(str(op), left, right, pos=self.p(op))

    def unary(self, items: list[Any]) -> A.Unary:
        op, e = items
        return A.Unary(str(op), e, pos=self.p(op))

    @v_args(meta=True)
    def cast(self, meta: Any, items: list[Any]) -> A.Cast:
        return A.Cast(items[0], items[1], pos=self.p(meta))

    def member(self, items: list[Any]) -> A.Member:
        return A.Member(items[0], str(items[2]), pos=items[0].pos, name_pos=self.p(items[2]))

    def index(self, items: list[Any]) -> A.Index:
        return A.Index(items[0], items[1], pos=items[0].pos)

    def slice(self, items: list[Any]) -> A.Slice:
        return A.Slice(items[0], items[1], items[2], pos=items[0].pos)

    def call(self, items: list[Any]) -> A.Call:
        func = items[0]
        if len(items) == 2:
            return A.Call(func, [], items[1], pos=func.pos)
        return A.Call(func, items[2], items[4], pos=func.pos)

    def int_lit(self, items: list[Token]) -> A.IntLit:
        t = items[0]
        try:
            v, w, s = parse_int_literal(str(t))
        except ValueError as e:
            raise SyntaxIssue(self.p(t), str(e)) from None
        return A.IntLit(v, w, s, str(t), pos=self.p(t))

    def true_lit(self, items: list[Token]) -> A.BoolLit:
        return A.BoolLit(True, pos=self.p(items[0]))

    def false_lit(self, items: list[Token]) -> A.BoolLit:
        return A.BoolLit(False, pos=self.p(items[0]))

    def string_lit(self, items: list[Token]) -> A.StringLit:
        raw = str(items[0])[1:-1]
        return A.StringLit(bytes(raw, "utf-8").decode("unicode_escape"), pos=self.p(items[0]))

    def name_ref(self, items: list[Token]) -> A.NameRef:
        if len(items) == 2:
            return A.NameRef(str(items[1]), True, pos=self.p(items[0]))
        return A.NameRef(str(items[0]), pos=self.p(items[0]))

    def this_expr(self, items: list[Token]) -> A.This:
        return A.This(pos=self.p(items[0]))

    def error_member(self, items: list[Any]) -> A.Member:
        tr = A.BaseTypeRef("error", pos=self.p(items[0]))
        return A.Member(A.TypeNameExpr(tr, pos=tr.pos), str(items[2]), pos=tr.pos, name_pos=self.p(items[2]))

    def type_member(self, items: list[Any]) -> A.Member:
        name, top, tok = items[0]
        tr = A.NamedTypeRef(name, [], top, pos=self.p(tok))
        return A.Member(A.TypeNameExpr(tr, pos=tr.pos), str(items[2]), pos=tr.pos, name_pos=self.p(items[2]))

    def ctor_call(self, items: list[Any]) -> A.CtorCall:
        return A.CtorCall(items[0], items[1], pos=items[0].pos)

    @v_args(meta=True)
    def list_expr(self, meta: Any, items: list[Any]) -> A.ListExpr:
        elems = items[0] if items else []
        ell = any(isinstance(e, A.Ellipsis_) for e in elems)
        return A.ListExpr([e for e in elems if not isinstance(e, A.Ellipsis_)], ell, pos=self.p(meta))

    def list_items(self, items: list[Any]) -> list[Any]:
        return list(items)

    def ellipsis(self, items: list[Any]) -> A.Ellipsis_:
        return A.Ellipsis_(pos=self.p(items[0]))

    @v_args(meta=True)
    def struct_expr(self, meta: Any, items: list[Any]) -> A.StructExpr:
        return A.StructExpr(list(items), pos=self.p(meta))

    @v_args(meta=True)
    def struct_expr_dots(self, meta: Any, items: list[Any]) -> A.StructExpr:
        return A.StructExpr([i for i in items if isinstance(i, tuple)], True, pos=self.p(meta))

    def kv_pair(self, items: list[Any]) -> tuple[str, A.Expr]:
        return str(items[0]), items[1]

    def start(self, items: list[Any]) -> A.Program:
        return A.Program([d for d in items if isinstance(d, A.Decl)])


class SyntaxIssue(Exception):
    def __init__(self, pos: A.Pos, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


class _ForInit(list):  # type: ignore[type-arg]
    """The init part of a for loop (a list of statements)."""


class _ForUpdate(list):  # type: ignore[type-arg]
    """The update part of a for loop (a list of statements)."""
