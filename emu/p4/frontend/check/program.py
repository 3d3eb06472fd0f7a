"""The checker's results: Ref, BlockInfo, CheckedProgram, and the scopes names live in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import ast as A
from ..ast import Ref
from ..types import ActionType, Type

_T = TypeVar("_T")


@dataclass
class BlockInfo:
    """A parser or control declaration with its resolved local names."""

    decl: A.ParserDecl | A.ControlDecl
    kind: str  # "parser" | "control"
    locals: dict[str, Ref] = field(default_factory=dict)

    @property
    def tables(self) -> list[A.TableDecl]:
        return [d for d in self.decl.locals if isinstance(d, A.TableDecl)]

    @property
    def actions(self) -> list[A.ActionDecl]:
        return [d for d in self.decl.locals if isinstance(d, A.ActionDecl)]

    @property
    def instances(self) -> list[A.Instantiation]:
        return [d for d in self.decl.locals if isinstance(d, A.Instantiation)]


@dataclass
class CheckedProgram:
    """The checked program handed to lowering/code generation.

    ``program``          annotated AST (see module docstring)
    ``types``            global named types (typedefs resolved)
    ``constants``        global constant values
    ``errors``           error members in declaration order (index = error code)
    ``match_kinds``      declared match kinds
    ``externs``          extern object declarations by name
    ``extern_functions`` extern function overloads by name
    ``actions``          top-level actions (NoAction, ...)
    ``functions``        top-level functions
    ``parsers`` / ``controls``  BlockInfo per declaration name
    ``main``             the top-level package instantiation named ``main``
    ``pipeline``         for a V1Switch main: parameter name (p, vr, ig, eg,
                         ck, dep) -> the ParserDecl/ControlDecl passed
    ``warnings``         non-fatal diagnostics
    """

    program: A.Program
    types: dict[str, Type]
    constants: dict[str, Any]
    errors: list[str]
    match_kinds: list[str]
    externs: dict[str, A.ExternDecl]
    extern_functions: dict[str, list[A.MethodDecl]]
    actions: dict[str, A.ActionDecl]
    functions: dict[str, A.FunctionDecl]
    parsers: dict[str, BlockInfo]
    controls: dict[str, BlockInfo]
    instances: dict[str, A.Instantiation]
    main: A.Instantiation | None
    pipeline: dict[str, A.ParserDecl | A.ControlDecl]
    warnings: list[Any] = field(default_factory=list)
    # v1model digest() calls in the order checked (source order), for naming them.
    digest_calls: list[A.Call] = field(default_factory=list)

    def error_code(self, name: str) -> int:
        """Numeric value of ``error.<name>`` (declaration order, NoError = 0), as BMv2 numbers them."""
        return self.errors.index(name)


def ref_to_action(name: str, decl: A.ActionDecl) -> Ref:
    """`name` denoting the action `decl`."""
    return Ref("action", name, decl, ActionType(decl))


class Scope:
    def __init__(self, parent: Scope | None = None, kind: str = "block") -> None:
        self.parent = parent
        self.kind = kind
        self.values: dict[str, Ref] = {}
        self.types: dict[str, Type] = {}

    def lookup(self, name: str) -> Ref | None:
        return self._find(name, lambda s: s.values)

    def lookup_type(self, name: str) -> Type | None:
        return self._find(name, lambda s: s.types)

    def _find(self, name: str, table: Callable[[Scope], dict[str, _T]]) -> _T | None:
        """`name` in this scope's table, else in the nearest enclosing scope's."""
        s: Scope | None = self
        while s is not None:
            v = table(s).get(name)
            if v is not None:
                return v
            s = s.parent
        return None


# p4c's limit on any bit width, also that of a folded constant: beyond it a program
# could make the checker build integers of gigabytes (`1 << 903012108`).
MAX_WIDTH = 2048
# The embedded target builds every header stack for each packet.
MAX_STACK = 1 << 12
_HEADER_METHODS = {"isValid", "setValid", "setInvalid"}
_STACK_METHODS = {"push_front", "pop_front"}
_UNSUPPORTED_MSG = "is not supported by the embedded target"


class _Abort(Exception):
    """Stops checking one declaration after an error was recorded."""


def compile_time_constant(e: A.Expr) -> bool:
    """A folded constant, or a list or struct expression of them (`const S x = {9w192};`:
    the target builds such an aggregate where it is used; only scalars fold to one value)."""
    if e.const is not None:
        return True
    if isinstance(e, A.ListExpr):
        return all(map(compile_time_constant, e.items))
    if isinstance(e, A.StructExpr):
        return all(compile_time_constant(v) for _, v in e.fields)
    return False
