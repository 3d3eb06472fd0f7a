"""Canonical P4_16 types, as computed by the checker.

Every expression of a checked program has ``expr.type`` set to one of these.
Value-like types (``BitType``, ``BoolType``, ...) compare by value; named
aggregate types (``HeaderType``, ``StructType``, ``EnumType``, ...) compare by
identity, since P4 types are nominal.  ``bit_width`` is the serialized width in
bits where one is defined (bit/int/bool/serializable enum/header/struct of
such), else None.  ``str(t)`` prints P4 syntax for diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar


class Type:
    @property
    def bit_width(self) -> int | None:
        return None

    def __str__(self) -> str:
        # a named type (struct, enum, type parameter, ...) prints as its name
        name = getattr(self, "name", None)
        return name if isinstance(name, str) else type(self).__name__


def _total(widths: Iterable[int | None]) -> int | None:
    """The sum of the widths; None when one of them is not fixed."""
    total = 0
    for w in widths:
        if w is None:
            return None
        total += w
    return total


@dataclass(frozen=True)
class BitType(Type):
    """bit<W> (signed=False) and int<W> (signed=True)."""

    width: int
    signed: bool = False

    @property
    def bit_width(self) -> int | None:
        return self.width

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    def wrap(self, v: int) -> int:
        """Reduce an integer to this type's range (two's complement)."""
        if self.width == 0:
            return 0
        v &= (1 << self.width) - 1
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        return v


@dataclass(frozen=True)
class _Keyword(Type):
    """A type written as one keyword, which `str` prints. The subclasses add no fields,
    so they share this class's dataclass methods (equal when of the same class)."""

    keyword: ClassVar[str]

    def __str__(self) -> str:
        return self.keyword


class IntType(_Keyword):
    """Infinite-precision integer (``int``, unsized literals, compile-time only)."""

    keyword = "int"


class BoolType(_Keyword):
    keyword = "bool"

    @property
    def bit_width(self) -> int | None:
        return 1


class StringType(_Keyword):
    keyword = "string"


class VoidType(_Keyword):
    keyword = "void"


class DontCareType(_Keyword):
    keyword = "_"


class ErrorType(_Keyword):
    """The single ``error`` type; members live in CheckedProgram.errors."""

    keyword = "error"


class MatchKindType(_Keyword):
    keyword = "match_kind"


@dataclass(frozen=True)
class VarbitType(Type):
    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class TypeVar(Type):
    """A generic type parameter not yet bound (extern declarations)."""

    name: str
    owner: Any = field(default=None, compare=False, hash=False)


@dataclass(eq=False)
class StructLikeType(Type):
    """Base of header, header_union and struct types."""

    name: str
    fields: list[tuple[str, Type]]
    decl: Any = field(default=None, repr=False)
    kind: str = "struct"

    def field_type(self, name: str) -> Type | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None

    @property
    def bit_width(self) -> int | None:
        return _total(t.max_bit_width if isinstance(t, VarbitType) else t.bit_width  # type: ignore[attr-defined]
                      for _, t in self.fields)


@dataclass(eq=False)
class HeaderType(StructLikeType):
    kind: str = "header"

    @property
    def bit_width(self) -> int | None:
        """Fixed part only: varbit fields count as 0 (their size is dynamic)."""
        return _total(t.bit_width for _, t in self.fields if not isinstance(t, VarbitType))

    @property
    def max_bit_width(self) -> int | None:
        return _total(t.max_width if isinstance(t, VarbitType) else t.bit_width for _, t in self.fields)


@dataclass(eq=False)
class HeaderUnionType(StructLikeType):
    kind: str = "header_union"


@dataclass(eq=False)
class StructType(StructLikeType):
    kind: str = "struct"


@dataclass(frozen=True)
class HeaderStackType(Type):
    elem: Type
    size: int

    @property
    def bit_width(self) -> int | None:
        w = self.elem.bit_width
        return None if w is None else w * self.size

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(eq=False)
class EnumType(Type):
    """enum E {A, B} (underlying None) or serializable enum bit<8> E {A = 1}."""

    name: str
    members: list[str]
    underlying: BitType | None = None
    values: dict[str, int] = field(default_factory=dict)
    decl: Any = field(default=None, repr=False)

    @property
    def bit_width(self) -> int | None:
        return self.underlying.width if self.underlying else None


@dataclass(frozen=True)
class TupleType(Type):
    """tuple<...> and the type of list expressions ``{a, b}``."""

    elems: tuple[Type, ...]

    @property
    def bit_width(self) -> int | None:
        return _total(t.bit_width for t in self.elems)

    def __str__(self) -> str:
        return "tuple<" + ", ".join(str(e) for e in self.elems) + ">"


@dataclass(eq=False)
class NewType(Type):
    """``type bit<9> PortId;``: a distinct type over ``base``; ``annotations`` its
    declaration's (@p4runtime_translation gives P4Info a controller representation)."""

    name: str
    base: Type
    annotations: list[Any] = field(default_factory=list, repr=False)

    @property
    def bit_width(self) -> int | None:
        return self.base.bit_width


@dataclass(eq=False)
class ExternType(Type):
    """An extern object type, possibly specialised: register<bit<32>, bit<32>>."""

    name: str
    decl: Any = field(repr=False)
    type_args: dict[str, Type] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.type_args:
            return f"{self.name}<" + ", ".join(str(t) for t in self.type_args.values()) + ">"
        return self.name


@dataclass(eq=False)
class BlockType(Type):
    """Type of a parser/control (declaration or type declaration) or package.

    kind: "parser" | "control" | "package".  ``decl`` is the ParserDecl /
    ControlDecl / ParserTypeDecl.
    """

    name: str
    kind: str
    decl: Any = field(repr=False)
    type_args: dict[str, Type] = field(default_factory=dict)


@dataclass(eq=False)
class _DeclType(Type):
    """A type given by one declaration; `str` prints it through `label`."""

    decl: Any = field(repr=False)
    label: ClassVar[str]

    def __str__(self) -> str:
        return self.label.format(self.decl.name)


class ActionType(_DeclType):
    label = "action {}"


class TableType(_DeclType):
    label = "table {}"


class ApplyResultType(_DeclType):
    """Result of ``t.apply()`` (decl: the table): members hit, miss (bool) and action_run."""

    label = "apply_result({})"


class ActionEnumType(_DeclType):
    """Type of ``t.apply().action_run`` (decl: the table): one of the table's actions."""

    label = "action_list({})"


@dataclass(eq=False)
class MethodType(Type):
    """A callable (extern method/function, action, function) before the call."""

    decls: list[Any] = field(repr=False)
    kind: str = "method"
    receiver: Any = field(default=None, repr=False)

    def __str__(self) -> str:
        return f"{self.kind} {self.decls[0].name if self.decls else '?'}"


@dataclass(frozen=True)
class TypeOfType(Type):
    """The 'value' of a type name in expression position (E in E.A)."""

    type: Type

    def __str__(self) -> str:
        return f"type {self.type}"


def strip_newtype(t: Type) -> Type:
    while isinstance(t, NewType):
        t = t.base
    return t


def is_integral(t: Type) -> bool:
    return isinstance(strip_newtype(t), BitType | IntType)


BOOL = BoolType()
INT = IntType()
VOID = VoidType()
STRING = StringType()
ERROR = ErrorType()
MATCH_KIND = MatchKindType()
DONTCARE = DontCareType()


def type_name(t: Type | None) -> str:
    """The name of a named type (struct-like, enum, new type, extern, block, type variable), else ""."""
    if isinstance(t, TypeVar | StructLikeType | EnumType | NewType | ExternType | BlockType):
        return t.name
    return ""


def declaration_of(t: Type | None) -> Any:
    """The AST declaration a type comes from (None for built-in and anonymous types)."""
    if isinstance(t, StructLikeType | EnumType | ExternType | BlockType | ActionType | TableType):
        return t.decl
    return None
