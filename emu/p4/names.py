"""Control-plane names of P4 objects, the way p4c writes them into P4Info.

Tables, actions and extern instances are named by their enclosing block
instances, dot-separated: a table `ipv4_lpm` in the control passed to V1Switch
as `MyIngress()` is `MyIngress.ipv4_lpm`; a control instantiated anonymously
is named by its type, an explicitly declared instance by its instance name.
`@name("x")` replaces the local name; `@name(".x")` makes the name absolute.
Top-level objects (NoAction, global externs) have no prefix.

The embedded switch, the P4Info generator and the P4Runtime server all name
objects through this module, so the three always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import HeaderType, HeaderUnionType, StructLikeType, strip_newtype

if TYPE_CHECKING:
    from emu.p4.frontend.check import CheckedProgram


def name_annotation(annotations: Sequence[Any]) -> str | None:
    """The string of an `@name("...")` annotation, if any."""
    for a in annotations:
        if a.name == "name" and a.args:
            value = a.args[0]
            if isinstance(value, str):
                return value
    return None


def field_name(name: str, annotations: Sequence[Any]) -> str:
    """Control-plane name of an action parameter or a struct field: its @name, else its
    own name."""
    annotated = name_annotation(annotations)
    return name if annotated is None else annotated.lstrip(".")


def qualify(scope: str | None, local_name: str, annotations: Sequence[Any] = ()) -> str:
    """Fully qualified control-plane name of an object declared in `scope`.

    `scope` is the dotted instance path of the enclosing block ("MyIngress",
    "MyIngress.c1"), or None at top level.
    """
    annotated = name_annotation(annotations)
    name = local_name if annotated is None else annotated
    if name.startswith("."):
        return name[1:]
    return f"{scope}.{name}" if scope else name


class KeyNameError(ValueError):
    """A table key expression p4c cannot name without an @name annotation."""


def key_field_name(expr: A.Expr, annotations: Sequence[Any] = ()) -> str:
    """P4Info name of a table key field, as p4c's front end names it.

    `@name("x")` on the key element wins. Otherwise the expression's text:
    `hdr.ipv4.dstAddr`, `hdr.extra[0].h`, `hdr.ipv4.ttl[7:4]`, `a & 0xff`;
    `hdr.ipv4.isValid()` becomes `hdr.ipv4.$valid$` (what P4Runtime expects); a
    struct field with its own @name uses that name, and an absolute one
    (leading dot) replaces the whole prefix. Anything more complex raises
    KeyNameError, as p4c requires an @name there.
    """
    annotated = name_annotation(annotations)
    if annotated is not None:
        return annotated
    name = _key_component(expr)
    if name is None:
        raise KeyNameError("Complex key expression requires a @name annotation")
    return name


def _key_component(e: A.Expr) -> str | None:
    if isinstance(e, A.NameRef):
        return ("." if e.top_level else "") + e.name
    if isinstance(e, A.Member):
        field = _member_key_name(e)
        if field.startswith("."):
            return field[1:]
        left = _key_component(e.expr)
        return None if left is None else f"{left}.{field}"
    if isinstance(e, A.Index):
        left, right = _key_component(e.expr), _key_component(e.index)
        return None if left is None or right is None else f"{left}[{right}]"
    if isinstance(e, A.Slice):
        parts = [_key_component(x) for x in (e.expr, e.hi, e.lo)]
        if any(p is None for p in parts):
            return None
        return f"{parts[0]}[{parts[1]}:{parts[2]}]"
    if isinstance(e, A.IntLit):
        text = (e.text or "").split("w", 1)[-1].split("s", 1)[-1].lower()
        return f"0x{e.value:x}" if text.startswith("0x") else str(e.value)
    if isinstance(e, A.Binary) and e.op == "&":
        left, right = _key_component(e.left), _key_component(e.right)
        return None if left is None or right is None else f"{left} & {right}"
    if isinstance(e, A.Call) and not e.args and isinstance(e.func, A.Member):
        method = _key_component(e.func)
        if method is not None and method.endswith("$valid$"):
            return method
    return None


def _member_key_name(e: A.Member) -> str:
    recv_type = e.expr.type
    if not isinstance(recv_type, StructLikeType):
        return e.name
    if e.name == "isValid" and recv_type.kind in ("header", "header_union"):
        return "$valid$"
    decl = recv_type.decl
    for f in decl.fields if isinstance(decl, A.HeaderDecl) else []:
        if f.name == e.name:
            annotated = name_annotation(f.annotations)
            return e.name if annotated is None else annotated
    return e.name


def digest_struct(call: A.Call) -> StructLikeType | None:
    """The struct type a v1model `digest(receiver, data)` call sends, if its data has one."""
    t = strip_newtype(call.args[1].value.type)  # type: ignore[arg-type]
    if isinstance(t, StructLikeType) and t.decl is not None:
        return t
    return None


def digest_name(prog: CheckedProgram, call: A.Call) -> str:
    """Control-plane name of a digest() call: its data's struct type name (or @name);
    data with no type name (a list, a bit<W>) is `digest_0`, `digest_1`, ... in program
    order, as p4c numbers them."""
    t = digest_struct(call)
    if t is not None and not isinstance(t, HeaderType | HeaderUnionType):
        assert t.decl is not None
        return (name_annotation(t.decl.annotations) or t.name).lstrip(".")
    anonymous = [c for c in prog.digest_calls if digest_struct(c) is None]
    return f"digest_{next(i for i, c in enumerate(anonymous) if c is call)}"
