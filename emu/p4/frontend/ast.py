"""Typed P4_16 abstract syntax tree.

Every node carries ``pos`` (a :class:`Pos` naming the ORIGINAL file, line and
column, after the preprocessor's source map has been applied).  Expression
nodes carry two slots the checker fills in (``check/``):

* ``type``  -- the canonical :mod:`emu.p4.frontend.types` object of the value;
* ``const`` -- the folded integer/bool value when the expression is a
  compile-time constant, else ``None``.

:class:`NameRef` also gets ``ref`` (a :class:`Ref`: what the name denotes), and so does
a :class:`Member` that denotes no field (enum member, error, apply result, method, ...);
:class:`Call` gets ``target`` (a ``CallTarget``), :class:`ActionRef` ``decl``.

Names follow the P4_16 specification's grammar productions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .types import Type


@dataclass(frozen=True)
class Pos:
    """A position in an original source file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOPOS = Pos("<builtin>", 0, 0)


@dataclass(eq=False)
class Node:
    pos: Pos = field(default=NOPOS, kw_only=True, repr=False)


@dataclass(eq=False)
class Annotation(Node):
    """``@name``, ``@name(body)`` or ``@name[body]``.

    ``body`` is the raw text between the brackets; ``args`` holds the decoded
    comma-separated literals (str for string literals and identifiers, int for
    integers) and ``kv`` the ``key=value`` pairs (@name, @field_list, @priority, ...);
    ``structured`` a ``@name[...]`` body's (key or None, expression) pairs, folded later.
    """

    name: str
    body: str | None = None
    bracket: str = ""  # "(" or "[" or ""
    args: list[Any] = field(default_factory=list)
    kv: dict[str, Any] = field(default_factory=dict)
    structured: list[tuple[str | None, Expr]] | None = None


def find_annotation(annos: list[Annotation], name: str) -> Annotation | None:
    for a in annos:
        if a.name == name:
            return a
    return None


# ------------------------------------------------------------------ types (syntax)


@dataclass(eq=False)
class TypeRef(Node):
    """Base of syntactic type references; resolved by the checker."""


@dataclass(eq=False)
class BaseTypeRef(TypeRef):
    """bool, error, string, match_kind, void, bit, int, bit<W>, int<W>, varbit<W>, _."""

    kind: str  # "bool" | "error" | "string" | "match_kind" | "void" | "bit" | "int" | "varbit" | "_"
    width: Expr | None = None  # None for bit (=bit<1>) and int (infinite precision)


@dataclass(eq=False)
class NamedTypeRef(TypeRef):
    name: str
    args: list[TypeRef] = field(default_factory=list)
    top_level: bool = False  # written with a leading dot


@dataclass(eq=False)
class StackTypeRef(TypeRef):
    elem: TypeRef
    size: Expr


@dataclass(eq=False)
class TupleTypeRef(TypeRef):
    args: list[TypeRef]


# ------------------------------------------------------------------ expressions


@dataclass(eq=False)
class Expr(Node):
    type: Type | None = field(default=None, kw_only=True, repr=False)
    const: Any = field(default=None, kw_only=True, repr=False)

    @property
    def checked_type(self) -> Type:
        """``type``, which the checker sets on every expression of a checked program."""
        if self.type is None:
            raise ValueError(f"{type(self).__name__} at {self.pos} has not been type-checked")
        return self.type


@dataclass(eq=False)
class IntLit(Expr):
    value: int
    width: int | None = None  # None: infinite-precision literal
    signed: bool = False
    text: str = ""


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class StringLit(Expr):
    value: str


@dataclass(eq=False)
class NameRef(Expr):
    name: str
    top_level: bool = False
    ref: Ref | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class TypeNameExpr(Expr):
    """A type used in expression position: ``E.A``'s ``E``, ``error``, ctor names."""

    typeref: TypeRef


@dataclass(eq=False)
class This(Expr):
    pass


@dataclass(eq=False)
class Member(Expr):
    """``expr.name``; ``pos`` is where the whole expression starts, ``name_pos`` the member's."""

    expr: Expr
    name: str
    ref: Ref | None = field(default=None, kw_only=True, repr=False)
    name_pos: Pos = field(default=NOPOS, kw_only=True, repr=False)


@dataclass(eq=False)
class Index(Expr):
    expr: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    expr: Expr
    hi: Expr
    lo: Expr


@dataclass(eq=False)
class Unary(Expr):
    op: str  # "!", "~", "-", "+"
    expr: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: str  # "+", "-", "*", "/", "%", "++", "|+|", "|-|", "<<", ">>", "&", "|", "^",
    #          "==", "!=", "<", ">", "<=", ">=", "&&", "||"
    left: Expr
    right: Expr


@dataclass(eq=False)
class Ternary(Expr):
    cond: Expr
    then: Expr
    else_: Expr


@dataclass(eq=False)
class Cast(Expr):
    typeref: TypeRef
    expr: Expr


@dataclass(eq=False)
class Argument(Node):
    value: Expr
    name: str | None = None  # named argument (``f(x = 1)``)


@dataclass(eq=False)
class Call(Expr):
    """A method/function/action call.  The checker sets ``kind`` and ``target``.

    kind: "action" | "function" | "extern_function" | "extern_method" |
          "apply" (table/parser/control apply) | "builtin" (isValid, setValid,
          setInvalid, push_front, pop_front, minSizeInBits, ...).
    """

    func: Expr
    type_args: list[TypeRef]
    args: list[Argument]
    kind: str = field(default="", kw_only=True)
    target: CallTarget = field(default=None, kw_only=True, repr=False)
    # For generic externs: type variable name -> resolved Type.
    type_bindings: dict[str, Type] = field(default_factory=dict, kw_only=True, repr=False)


@dataclass(eq=False)
class CtorCall(Expr):
    """``T(args)`` / ``T<A>(args)`` constructor invocation (in instantiations' args)."""

    typeref: TypeRef
    args: list[Argument]


@dataclass(eq=False)
class ListExpr(Expr):
    items: list[Expr]
    ellipsis: bool = False


@dataclass(eq=False)
class StructExpr(Expr):
    fields: list[tuple[str, Expr]]
    ellipsis: bool = False


@dataclass(eq=False)
class DefaultExpr(Expr):
    """``default`` in select / entries / switch labels."""


@dataclass(eq=False)
class DontCare(Expr):
    """``_``: wildcard keyset or ignored out argument."""


@dataclass(eq=False)
class Mask(Expr):
    value: Expr
    mask: Expr


@dataclass(eq=False)
class Range(Expr):
    lo: Expr
    hi: Expr


@dataclass(eq=False)
class Ellipsis_(Expr):
    pass


# ------------------------------------------------------------------ statements


@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Assign(Stmt):
    lhs: Expr
    rhs: Expr
    op: str = "="  # "=" or a compound operator such as "+="


@dataclass(eq=False)
class CallStmt(Stmt):
    call: Call


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    else_: Stmt | None = None


@dataclass(eq=False)
class Block(Stmt):
    stmts: list[Stmt]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class Exit(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None = None


@dataclass(eq=False)
class Empty(Stmt):
    pass


@dataclass(eq=False)
class SwitchCase(Node):
    label: Expr  # NameRef(action) / DefaultExpr / constant expression
    body: Block | None  # None: falls through to the next case


@dataclass(eq=False)
class Switch(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass(eq=False)
class ForStmt(Stmt):
    """`for (init; cond; update) body` (P4 1.2.5). A `for (T x in range)` loop has no body
    here (body is None): it is parsed so that it can be reported."""

    init: list[Stmt] = field(default_factory=list)
    cond: Expr | None = None
    update: list[Stmt] = field(default_factory=list)
    body: Stmt | None = None
    text: str = "for"


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


# ------------------------------------------------------------------ declarations


@dataclass(eq=False)
class Decl(Stmt):
    name: str
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class Param(Decl):
    direction: str  # "in" | "out" | "inout" | "" (directionless)
    typeref: TypeRef
    default: Expr | None = None
    type: Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ConstDecl(Decl):
    typeref: TypeRef
    value: Expr
    type: Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class VarDecl(Decl):
    typeref: TypeRef
    init: Expr | None = None
    type: Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class StructField(Decl):
    typeref: TypeRef


@dataclass(eq=False)
class HeaderDecl(Decl):
    fields: list[StructField]
    kind: str = "header"  # "header" | "header_union" | "struct"
    type_params: list[str] = field(default_factory=list)


@dataclass(eq=False)
class EnumDecl(Decl):
    members: list[str]
    underlying: TypeRef | None = None  # serializable enum
    values: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class TypedefDecl(Decl):
    typeref: TypeRef
    new_type: bool = False  # ``type`` (a distinct type) vs ``typedef`` (an alias)


@dataclass(eq=False)
class ErrorDecl(Decl):
    members: list[str]


@dataclass(eq=False)
class MatchKindDecl(Decl):
    members: list[str]


@dataclass(eq=False)
class MethodDecl(Decl):
    """A function prototype: extern function, extern method, or (ctor) constructor."""

    return_type: TypeRef | None  # None for constructors
    type_params: list[str]
    params: list[Param]
    abstract: bool = False
    is_ctor: bool = False


@dataclass(eq=False)
class ExternDecl(Decl):
    type_params: list[str]
    methods: list[MethodDecl]


@dataclass(eq=False)
class FunctionDecl(Decl):
    proto: MethodDecl
    body: Block


@dataclass(eq=False)
class ActionDecl(Decl):
    params: list[Param]
    body: Block


@dataclass(eq=False)
class ParserTypeDecl(Decl):
    type_params: list[str]
    params: list[Param]
    kind: str = "parser"  # "parser" | "control" | "package"


@dataclass(eq=False)
class Instantiation(Decl):
    typeref: TypeRef
    args: list[Argument]
    initializer: list[Decl] = field(default_factory=list)
    type: Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ValueSetDecl(Decl):
    elem: TypeRef
    size: Expr
    type: Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class SelectCase(Node):
    keyset: Expr  # expression / Mask / Range / DefaultExpr / DontCare / ListExpr (tuple)
    state: str


@dataclass(eq=False)
class SelectExpr(Expr):
    exprs: list[Expr]
    cases: list[SelectCase]


@dataclass(eq=False)
class Transition(Node):
    state: str | None = None  # direct transition
    select: SelectExpr | None = None


@dataclass(eq=False)
class ParserState(Decl):
    stmts: list[Stmt]
    transition: Transition | None  # None: implicit ``transition reject``


@dataclass(eq=False)
class ParserDecl(Decl):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    states: list[ParserState]


@dataclass(eq=False)
class KeyElement(Node):
    expr: Expr
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class ActionRef(Node):
    name: str
    args: list[Argument] | None = None  # bound arguments (``a(1)``), None when absent
    annotations: list[Annotation] = field(default_factory=list)
    decl: ActionDecl | None = field(default=None, kw_only=True, repr=False)

    @property
    def action(self) -> ActionDecl:
        """``decl``, which the checker sets on every action reference of a checked program."""
        if self.decl is None:
            raise ValueError(f"action reference '{self.name}' at {self.pos} has not been checked")
        return self.decl


@dataclass(eq=False)
class Entry(Node):
    keyset: Expr  # single keyset expression or ListExpr for tuples
    action: ActionRef
    priority: Expr | None = None
    annotations: list[Annotation] = field(default_factory=list)
    is_const: bool = False


@dataclass(eq=False)
class TableProperty(Node):
    """A table property.  kind: "key" | "actions" | "entries" | "value"."""

    name: str
    kind: str
    is_const: bool = False
    keys: list[KeyElement] = field(default_factory=list)
    actions: list[ActionRef] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    value: Expr | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Decl):
    properties: list[TableProperty]

    def prop(self, name: str) -> TableProperty | None:
        for p in self.properties:
            if p.name == name:
                return p
        return None


@dataclass(eq=False)
class ControlDecl(Decl):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    body: Block


@dataclass(eq=False)
class Program(Node):
    decls: list[Decl]
    files: list[str] = field(default_factory=list)
    structured_annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class Ref:
    """What a name denotes (kinds: see emu.p4.frontend.check); ``decl`` lists the overloads
    of an extern function and is None for error members."""

    kind: str
    name: str
    decl: Decl | list[MethodDecl] | None = field(default=None, repr=False)
    type: Type | None = None
    value: Any = None  # folded value of constants / enum members
    # parser/control/action/function declaring a param/local/const/instance/table/action
    owner: Decl | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"Ref({self.kind} {self.name}: {self.type})"

# What a checked Call calls: a declaration, or the method name of a built-in.
CallTarget = ActionDecl | FunctionDecl | MethodDecl | TableDecl | ParserDecl | ControlDecl | str | None
