"""Annotations (@name, @id, @brief, ...), ids of fields, and walking the annotated AST."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from p4.config.v1 import p4types_pb2

from emu.p4.frontend import ast as A
from emu.p4.frontend.diagnostics import Diagnostic, P4Error, SourceCache

# Annotations P4Info carries elsewhere (name, id, doc) or that p4c does not print.
_SKIPPED_ANNOTATIONS = frozenset({"name", "id", "brief", "description", "hidden"})
# AST fields that point back into the tree or at declarations: not children.
_NON_CHILD_FIELDS = frozenset({"pos", "ref", "decl", "type", "target", "type_bindings", "const"})


# ------------------------------------------------------------------ small helpers


def _error(pos: A.Pos, message: str) -> P4Error:
    line = SourceCache().line(pos.file, pos.line) if pos.line else None
    return P4Error([Diagnostic(pos.file, pos.line, pos.col, "error", message, line)])


def _fits(value: int, bits: int, pos: A.Pos, what: str, field: str = "field") -> int:
    """`value` if a P4Info field of `bits` signed bits holds it, else an error at `pos`
    (protobuf would raise ValueError while the message is filled in)."""
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise _error(pos, f"{what} {value} does not fit P4Info's {bits}-bit {field}")
    return value


def _children(node: Any) -> Iterator[Any]:
    """Direct AST children of a node (dataclass fields holding nodes or lists of nodes)."""
    for f in fields(node):
        if f.name in _NON_CHILD_FIELDS:
            continue
        value = getattr(node, f.name)
        if isinstance(value, A.Node):
            yield value
        elif isinstance(value, list | tuple):
            for item in value:
                if isinstance(item, A.Node):
                    yield item
                elif isinstance(item, tuple):  # StructExpr fields: (name, expr)
                    yield from (x for x in item if isinstance(x, A.Node))


def _walk(node: Any, live: bool = False) -> Iterator[Any]:
    """Pre-order walk over an AST subtree. `live`: not into the branch a constant
    condition rules out (`if (true) ... else <dead>`, `false ? <dead> : ...`), which
    p4c's front end folds away before it lists tables and actions."""
    stack = [node]
    while stack:
        n = stack.pop()
        if not is_dataclass(n):
            continue
        yield n
        if live and isinstance(n, A.If | A.Ternary) and isinstance(n.cond.const, bool):
            stack.append(n.then if n.cond.const else n.else_)
            continue
        stack.extend(reversed(list(_children(n))))


def _annotation_text(a: A.Annotation) -> str:
    """An annotation as P4 source, the way p4c prints it into P4Info."""
    if a.bracket == "(":
        return f"@{a.name}({(a.body or '').strip()})"
    if a.bracket == "[":
        return f"@{a.name}[{(a.body or '').strip()}]"
    return f"@{a.name}"


def _has(annotations: Sequence[A.Annotation], name: str) -> bool:
    return any(a.name == name for a in annotations)


def _string_arg(annotations: Sequence[A.Annotation], name: str) -> str | None:
    a = A.find_annotation(list(annotations), name)
    if a is None or not a.args or not isinstance(a.args[0], str):
        return None
    return a.args[0]


def _int_arg(annotations: Sequence[A.Annotation], name: str) -> int | None:
    a = A.find_annotation(list(annotations), name)
    if a is None:
        return None
    if a.args and isinstance(a.args[0], int):
        return a.args[0]
    try:
        return int((a.body or "").strip(), 0)
    except ValueError:
        raise _error(a.pos, f"@{name} needs an integer argument") from None


def _add_annotations(msg: Any, annotations: Sequence[A.Annotation], skip: frozenset[str] = frozenset(),
                     keep: frozenset[str] = frozenset()) -> None:
    """`keep`: names P4Info usually leaves out that this message lists (p4c keeps a
    key element's @hidden)."""
    for a in annotations:
        if a.structured is not None:
            _add_structured(msg.structured_annotations.add(), a)
            continue
        if (a.name in _SKIPPED_ANNOTATIONS and a.name not in keep) or a.name in skip:
            continue
        msg.annotations.append(_annotation_text(a))


def _add_structured(msg: p4types_pb2.StructuredAnnotation, a: A.Annotation) -> None:
    """`@name[e, ...]` as an expression list, `@name[k = e, ...]` as key-value pairs,
    each element the constant the front end folded it to."""
    msg.name = a.name
    items = a.structured or []
    if items and items[0][0] is not None:
        for key, e in items:
            kv = msg.kv_pair_list.kv_pairs.add()
            kv.key = key or ""
            _set_value(kv.value, e)
    else:
        msg.expression_list.SetInParent()
        for _, e in items:
            _set_value(msg.expression_list.expressions.add(), e)


def _set_value(msg: p4types_pb2.Expression, e: A.Expr) -> None:
    if isinstance(e, A.StringLit):
        msg.string_value = e.value
    elif isinstance(e.const, bool):
        msg.bool_value = e.const
    else:
        msg.int64_value = int(e.const or 0)


def _add_doc(msg: Any, annotations: Sequence[A.Annotation]) -> None:
    brief = _string_arg(annotations, "brief")
    description = _string_arg(annotations, "description")
    if brief is not None:
        msg.doc.brief = brief
    if description is not None:
        msg.doc.description = description


def _field_ids(items: Sequence[tuple[Any, Sequence[A.Annotation]]]) -> list[int]:
    """Ids for match fields / params / metadata: @id where given, else the 1-based position.

    Like p4c, a position whose number an @id already took moves on to the next free one.
    """
    taken: set[int] = set()
    explicit: list[int | None] = []
    for _item, annos in items:
        value = _int_arg(annos, "id")
        if value is not None:
            taken.add(value)
        explicit.append(value)
    out: list[int] = []
    index = 1
    for value in explicit:
        if value is not None:
            out.append(value)
            index += 1
            continue
        while index in taken:
            index += 1
        taken.add(index)
        out.append(index)
    return out


def _const_int(e: A.Expr | None) -> int | None:
    if e is None:
        return None
    if isinstance(e.const, bool):
        return int(e.const)
    return e.const if isinstance(e.const, int) else None


def _arg_value(inst: A.Instantiation, position: int, name: str) -> A.Expr | None:
    for a in inst.args:
        if a.name == name:
            return a.value
    positional = [a for a in inst.args if a.name is None]
    return positional[position].value if position < len(positional) else None
