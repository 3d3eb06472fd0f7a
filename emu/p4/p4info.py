"""P4Info (p4.config.v1.P4Info) for a checked v1model program, as p4c writes it.

``generate_p4info(prog)`` mirrors what ``p4c --target bmv2 --arch v1model
--p4runtime-files X.p4info.txtpb`` produces (p4c 1.2.4.x with P4Runtime 1.4+
fields such as ``initial_default_action``; checked field by field against
p4c's own sample outputs, see tests/p4/p4info/p4c_compare.py):

* Objects are listed in the order p4c visits the program: the blocks in
  V1Switch's parameter order, and within a block its locals in declaration
  order, with nested control instances inlined where they are declared (p4c
  inlines them before it writes P4Info). Top-level actions a control uses
  (NoAction) come before its own, as p4c copies them to the control's start.
* p4c's front end drops tables that are never applied, actions that no table,
  default action, entry or apply block uses, and control instances never
  applied; extern instances are kept even when unused. ``@hidden`` objects are
  left out.
* A table without ``default_action`` gets ``NoAction`` as its (non-const)
  default, added to its action list as ``@defaultonly`` when missing, as p4c's
  front end does.
* Ids come from :mod:`emu.p4.p4info_ids`; names from :mod:`emu.p4.names`.
* Key fields are named by ``names.key_field_name`` (``hdr.ipv4.dstAddr``,
  ``hdr.ipv4.$valid$``); match-field, parameter and packet-metadata ids are
  1-based positions unless an ``@id`` says otherwise.

``p4info_to_text`` renders the text format with the header comment p4c
writes; ``write_p4info`` picks text, binary or JSON from the file extension.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2, p4types_pb2

from emu.p4 import names
from emu.p4.frontend import ast as A
from emu.p4.frontend.check import CheckedProgram
from emu.p4.frontend.diagnostics import Diagnostic, P4Error, SourceCache
from emu.p4.frontend.types import (
    BitType,
    BoolType,
    EnumType,
    ErrorType,
    ExternType,
    HeaderStackType,
    HeaderType,
    HeaderUnionType,
    NewType,
    StructLikeType,
    TupleType,
    Type,
    VarbitType,
)
from emu.p4.p4info_ids import IdAllocator, P4IdError, P4IdPrefix

__all__ = [
    "DEFAULT_TABLE_SIZE",
    "TEXT_HEADER",
    "format_for_path",
    "generate_p4info",
    "p4info_to_bytes",
    "p4info_to_text",
    "write_p4info",
]

DEFAULT_TABLE_SIZE = 1024
"""v1model's default table size (p4c's V1Model tableAttributes.defaultTableSize)."""

TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"
"""The comment lines p4c puts before a text-format P4Info."""

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}
# Annotations P4Info carries elsewhere (name, id, doc) or that p4c does not print.
_SKIPPED_ANNOTATIONS = frozenset({"name", "id", "brief", "description", "hidden"})
_PROFILE_ANNOTATIONS = frozenset({"max_group_size", "selector_size_semantics", "max_member_weight"})
# AST fields that point back into the tree or at declarations: not children.
_NON_CHILD_FIELDS = frozenset({"pos", "ref", "decl", "type", "target", "type_bindings", "const"})


# ------------------------------------------------------------------ small helpers


def _error(pos: A.Pos, message: str) -> P4Error:
    line = SourceCache().line(pos.file, pos.line) if pos.line else None
    return P4Error([Diagnostic(pos.file, pos.line, pos.col, "error", message, line)])


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


def _walk(node: Any) -> Iterator[Any]:
    """Pre-order walk over an AST subtree."""
    stack = [node]
    while stack:
        n = stack.pop()
        if not is_dataclass(n):
            continue
        yield n
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


def _add_annotations(msg: Any, annotations: Sequence[A.Annotation], skip: frozenset[str] = frozenset()) -> None:
    for a in annotations:
        if a.name in _SKIPPED_ANNOTATIONS or a.name in skip or a.bracket == "[":
            continue
        msg.annotations.append(_annotation_text(a))


def _add_doc(msg: Any, annotations: Sequence[A.Annotation]) -> None:
    brief = _string_arg(annotations, "brief")
    description = _string_arg(annotations, "description")
    if brief is not None:
        msg.doc.brief = brief
    if description is not None:
        msg.doc.description = description


def _field_name(name: str, annotations: Sequence[A.Annotation]) -> str:
    """Control-plane name of a parameter or field: its @name, else its own name."""
    annotated = names.name_annotation(annotations)
    return name if annotated is None else annotated.lstrip(".")


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


def _type_width(t: Type) -> int:
    """Bit width of a control-plane value (p4c getTypeWidth)."""
    if isinstance(t, NewType):
        translated = _translation(t)
        if translated is not None:
            return translated[1]
        return _type_width(t.base)
    if isinstance(t, ErrorType):
        return 0  # p4c treats error as a string
    w = t.bit_width
    return 0 if w is None else w


def _translation(t: NewType) -> tuple[str, int] | None:
    """(uri, controller bit width) of a type with @p4runtime_translation; width 0 for string."""
    decl = getattr(t, "decl", None)
    annotations = getattr(decl, "annotations", None) or []
    a = A.find_annotation(list(annotations), "p4runtime_translation")
    if a is None:
        return None
    m = re.match(r'\s*"([^"]*)"\s*,\s*(?:bit\s*<\s*(\d+)\s*>|(string)|(\d+))\s*$', a.body or "")
    if not m:
        raise _error(a.pos, "@p4runtime_translation expects a URI and bit<W> or string")
    uri, bits, _string, legacy = m.groups()
    return uri, int(bits or legacy or 0)


def _type_name(t: Type) -> str | None:
    """P4Info `type_name` of a match field / param / metadata: set for user-defined types."""
    return t.name if isinstance(t, NewType) else None


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


# ------------------------------------------------------------------ type specs


class _TypeSpecs:
    """p4c's TypeSpecConverter: P4DataTypeSpec for a type, filling P4TypeInfo as it goes."""

    def __init__(self, info: p4types_pb2.P4TypeInfo, errors: Sequence[str]) -> None:
        self.info = info
        self.errors = errors

    def bitstring(self, t: Type, out: p4types_pb2.P4BitstringLikeTypeSpec) -> bool:
        if isinstance(t, BitType):
            (out.int if t.signed else out.bit).bitwidth = t.width
            return True
        if isinstance(t, VarbitType):
            out.varbit.max_bitwidth = t.max_width
            return True
        if isinstance(t, BoolType):
            out.bit.bitwidth = 1
            return True
        return False

    def convert(self, t: Type, out: p4types_pb2.P4DataTypeSpec | None = None) -> p4types_pb2.P4DataTypeSpec:
        spec = out if out is not None else p4types_pb2.P4DataTypeSpec()
        if isinstance(t, BoolType):
            spec.bool.SetInParent()
        elif isinstance(t, BitType | VarbitType):
            self.bitstring(t, spec.bitstring)
        elif isinstance(t, HeaderType):
            spec.header.name = t.name
            if t.name not in self.info.headers:
                header = self.info.headers[t.name]
                for fname, ftype in t.fields:
                    m = header.members.add()
                    m.name = fname
                    self.bitstring(ftype.base if isinstance(ftype, NewType) else ftype, m.type_spec)
        elif isinstance(t, HeaderUnionType):
            spec.header_union.name = t.name
            if t.name not in self.info.header_unions:
                union = self.info.header_unions[t.name]
                for fname, ftype in t.fields:
                    m = union.members.add()
                    m.name = fname
                    m.header.name = str(ftype)
                    self.convert(ftype)
        elif isinstance(t, StructLikeType):
            spec.struct.name = t.name
            if t.name not in self.info.structs:
                struct = self.info.structs[t.name]
                for fname, ftype in t.fields:
                    m = struct.members.add()
                    m.name = fname
                    self.convert(ftype, m.type_spec)
        elif isinstance(t, HeaderStackType):
            spec.header_stack.header.name = str(t.elem)
            spec.header_stack.size = t.size
            self.convert(t.elem)
        elif isinstance(t, TupleType):
            for elem in t.elems:
                self.convert(elem, spec.tuple.members.add())
        elif isinstance(t, EnumType) and t.underlying is not None:
            spec.serializable_enum.name = t.name
            if t.name not in self.info.serializable_enums:
                enum = self.info.serializable_enums[t.name]
                width = t.underlying.width
                enum.underlying_type.bitwidth = width
                for member in t.members:
                    m = enum.members.add()
                    m.name = member
                    value = t.values.get(member, 0) & ((1 << width) - 1)
                    m.value = value.to_bytes((width + 7) // 8, "big")
        elif isinstance(t, EnumType):
            spec.enum.name = t.name
            if t.name not in self.info.enums:
                enum_spec = self.info.enums[t.name]
                for member in t.members:
                    enum_spec.members.add().name = member
        elif isinstance(t, ErrorType):
            spec.error.SetInParent()
            if not self.info.error.members:
                self.info.error.members.extend(self.errors)
        elif isinstance(t, NewType):
            spec.new_type.name = t.name
            if t.name not in self.info.new_types:
                new_type = self.info.new_types[t.name]
                translated = _translation(t)
                if translated is not None:
                    new_type.translated_type.uri = translated[0]
                    if translated[1]:
                        new_type.translated_type.sdn_bitwidth = translated[1]
                    else:
                        new_type.translated_type.sdn_string.SetInParent()
                else:
                    self.convert(t.base, new_type.original_type)
        return spec


# ------------------------------------------------------------------ the program walk


@dataclass
class _Block:
    """A parser or control instance: its control-plane path and declaration."""

    path: str
    decl: A.ParserDecl | A.ControlDecl


@dataclass(eq=False)
class _Local:
    """A local declaration of a (possibly inlined nested) block, with its naming scope."""

    scope: str
    decl: A.Decl
    owner: _Block


@dataclass
class _Table:
    name: str
    decl: A.TableDecl
    scope: str
    control: _Block


@dataclass
class _Profile:
    name: str
    inst: A.Instantiation | None
    pos: A.Pos
    annotations: list[A.Annotation]
    selector: bool
    size: int
    tables: list[str] = field(default_factory=list)


def _control_type_decl(e: A.Expr) -> Any:
    """The ControlDecl/ParserDecl applied by `X.apply(...)`, with how X is named."""
    if not isinstance(e, A.Call) or e.kind != "apply" or not isinstance(e.func, A.Member):
        return None, None
    if not isinstance(e.target, A.ControlDecl | A.ParserDecl):
        return None, None
    recv = e.func.expr
    ref = getattr(recv, "ref", None)
    return e.target, (ref.kind if ref is not None else "type")


class _Generator:
    def __init__(self, prog: CheckedProgram) -> None:
        self.prog = prog
        self.p4info = p4info_pb2.P4Info()
        self.types = _TypeSpecs(self.p4info.type_info, prog.errors)
        self.ids = IdAllocator()
        self.noaction = prog.actions.get("NoAction")

    # ---- naming and usage
    def top_blocks(self) -> list[_Block]:
        """The parser and controls passed to V1Switch, in its parameter order."""
        main = self.prog.main
        out: list[_Block] = []
        for arg in main.args if main is not None else []:
            v = arg.value
            decl: Any = None
            path = ""
            if isinstance(v, A.CtorCall):
                decl = getattr(v.type, "decl", None)
                path = getattr(decl, "name", "")  # an anonymous instance is named by its type
            elif isinstance(v, A.NameRef) and v.ref is not None and v.ref.kind == "instance":
                decl = getattr(v.ref.type, "decl", None)
                path = names.qualify(None, v.ref.decl.name, v.ref.decl.annotations)
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
            sub_decl = getattr(getattr(loc, "type", None), "decl", None)
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
        ref = getattr(v, "ref", None)
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
            use(self.default_action(t)[0])
            entries = t.prop("entries")
            for en in entries.entries if entries else []:
                use(en.action.decl)
        for body in bodies:
            for n in _walk(body):
                if isinstance(n, A.Call) and n.kind == "action" and isinstance(n.target, A.ActionDecl):
                    use(n.target)
        return used

    # ---- generation
    def run(self) -> p4info_pb2.P4Info:
        self.collect(self.top_blocks())
        try:
            self.ids_by_prefix = self.ids.assign()
        except P4IdError as exc:
            raise _error(A.NOPOS, str(exc)) from None
        self.aliases = self.ids.aliases()
        self.emit()
        self.check_duplicates()
        return self.p4info

    def id_of(self, prefix: P4IdPrefix, name: str) -> int:
        return self.ids_by_prefix[int(prefix)][name]

    def symbol(self, prefix: P4IdPrefix, name: str, annotations: Sequence[A.Annotation]) -> None:
        self.ids.add(prefix, name, _int_arg(annotations, "id"))

    def collect(self, blocks: list[_Block]) -> None:
        """Gather every object first: ids depend on the whole set of names."""
        self.tables: list[_Table] = []
        self.actions: list[tuple[str, A.ActionDecl]] = []
        self.externs: list[tuple[str, A.Instantiation]] = []
        self.value_sets: list[tuple[str, A.ValueSetDecl]] = []
        self.digests: dict[str, Type] = {}
        self.profiles: dict[str, _Profile] = {}
        self.direct: dict[str, tuple[str, A.Instantiation | None, str, str, A.Pos, list[A.Annotation]]] = {}
        action_names: set[str] = set()
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
            applied = {
                id(n.target) for body in bodies for n in _walk(body)
                if isinstance(n, A.Call) and n.kind == "apply" and isinstance(n.target, A.TableDecl)
            }
            tables = [loc for loc in locs if isinstance(loc.decl, A.TableDecl) and id(loc.decl) in applied]
            used = self.used_actions([t.decl for t in tables], bodies)  # type: ignore[misc]
            # p4c copies the top-level actions a control uses to its start (LocalizeAllActions).
            ordered: list[tuple[str | None, A.ActionDecl]] = [(None, a) for a in used if a in global_actions]
            ordered += [(loc.scope, loc.decl) for loc in locs if isinstance(loc.decl, A.ActionDecl) and loc.decl in used]
            for scope, a in ordered:
                name = names.qualify(scope, a.name, a.annotations)
                if name not in action_names and not _has(a.annotations, "hidden"):
                    action_names.add(name)
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
            if getattr(n.target, "name", None) != "digest" or len(n.args) != 2:
                continue
            t = n.args[1].value.type
            if not isinstance(t, StructLikeType) or isinstance(t, HeaderType | HeaderUnionType):
                raise _error(n.pos, "P4Runtime requires the type of a digest to be a struct")
            annotations = getattr(t.decl, "annotations", []) or []
            name = _field_name(t.name, annotations)
            if name not in self.digests:
                self.digests[name] = t
                self.symbol(P4IdPrefix.DIGEST, name, annotations)

    def add_extern(self, scope: str | None, inst: A.Instantiation) -> None:
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
        selector = getattr(inst.type, "name", "") == "action_selector"
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
            kind = getattr(inst.type, "name", "")
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

    @dataclass
    class _CtrlHeader:
        name: str  # P4 type name: what p4c hashes for the id
        controller_name: str
        decl: A.HeaderDecl
        type: HeaderType

    def controller_headers(self) -> list[_Generator._CtrlHeader]:
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
            out.append(self._CtrlHeader(_field_name(d.name, d.annotations), cname, d, t))
        return out

    # ---- emission
    def preamble(self, msg: Any, prefix: P4IdPrefix, name: str, annotations: Sequence[A.Annotation],
                 skip: frozenset[str] = frozenset()) -> None:
        msg.preamble.id = self.id_of(prefix, name)
        msg.preamble.name = name
        msg.preamble.alias = self.aliases[name]
        _add_annotations(msg.preamble, annotations, skip)
        _add_doc(msg.preamble, annotations)

    def emit(self) -> None:
        info = self.p4info
        info.pkg_info.arch = "v1model"
        if self.prog.main is not None:
            self.pkg_info(self.prog.main)
        for t in self.tables:
            self.emit_table(t)
        for name, a in self.actions:
            self.emit_action(name, a)
        for name, p in self.profiles.items():
            self.emit_profile(name, p)
        for name, inst in self.externs:
            self.emit_extern(name, inst)
        for name, (pname, _inst, table, unit, _pos, annos) in self.direct.items():
            if pname == "counters":
                dc = info.direct_counters.add()
                self.preamble(dc, P4IdPrefix.DIRECT_COUNTER, name, annos)
                dc.spec.unit = _COUNTER_UNITS.get(unit, p4info_pb2.CounterSpec.UNSPECIFIED)
                dc.direct_table_id = self.id_of(P4IdPrefix.TABLE, table)
            else:
                dm = info.direct_meters.add()
                self.preamble(dm, P4IdPrefix.DIRECT_METER, name, annos)
                dm.spec.unit = _METER_UNITS.get(unit, p4info_pb2.MeterSpec.UNSPECIFIED)
                dm.direct_table_id = self.id_of(P4IdPrefix.TABLE, table)
        for h in self.controller_headers():
            self.emit_controller_header(h)
        for name, vs in self.value_sets:
            self.emit_value_set(name, vs)
        for name, digest_type in self.digests.items():
            d = info.digests.add()
            self.preamble(d, P4IdPrefix.DIGEST, name, [])
            self.types.convert(digest_type, d.type_spec)
        info.type_info.SetInParent()  # p4c always writes type_info, even empty

    def pkg_info(self, main: A.Instantiation) -> None:
        pkg = self.p4info.pkg_info
        for a in main.annotations:
            if a.name != "pkginfo":
                continue
            for key, value in a.kv.items():
                if key in ("name", "version", "organization", "contact", "url", "arch") and isinstance(value, str):
                    setattr(pkg, key, value)
        _add_annotations(pkg, main.annotations, frozenset({"pkginfo"}))
        _add_doc(pkg, main.annotations)

    def emit_table(self, t: _Table) -> None:
        msg = self.p4info.tables.add()
        self.preamble(msg, P4IdPrefix.TABLE, t.name, t.decl.annotations)
        key = t.decl.prop("key")
        elements = key.keys if key else []
        ids = _field_ids([(k, k.annotations) for k in elements])
        for k, fid in zip(elements, ids, strict=True):
            if k.match_kind == "selector":
                continue  # hashed by the selector, not matched by the control plane
            mf = msg.match_fields.add()
            mf.id = fid
            try:
                mf.name = names.key_field_name(k.expr, k.annotations)
            except ValueError as exc:
                raise _error(k.pos, str(exc)) from None
            _add_annotations(mf, k.annotations)
            _add_doc(mf, k.annotations)
            kt = k.expr.type
            mf.bitwidth = _type_width(kt)
            if k.match_kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[k.match_kind]
            else:
                mf.other_match_type = k.match_kind
            self.types.convert(kt)
            tn = _type_name(kt)
            if tn:
                mf.type_name.name = tn
        for a, ref_annos in self.table_actions(t.decl):
            ref = msg.action_refs.add()
            ref.id = self.action_id(a, t.scope)
            _add_annotations(ref, ref_annos)
            table_only, default_only = _has(ref_annos, "tableonly"), _has(ref_annos, "defaultonly")
            if table_only and default_only:
                raise _error(t.decl.pos, f"Table '{t.name}' has an action reference ('{a.name}') which is "
                                         "annotated with both '@tableonly' and '@defaultonly'")
            if table_only:
                ref.scope = p4info_pb2.ActionRef.TABLE_ONLY
            elif default_only:
                ref.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
        default, args, is_const = self.default_action(t.decl)
        if default is None and t.decl.prop("default_action") is None:
            default = self.noaction
        if default is not None:
            aid = self.action_id(default, t.scope)
            if is_const:
                msg.const_default_action_id = aid
            msg.initial_default_action.action_id = aid
            data_params = [p for p in default.params if p.direction == ""]
            pids = _field_ids([(p, p.annotations) for p in data_params])
            for p, pid, arg in zip(data_params, pids, args, strict=False):
                value = _const_int(arg.value)
                if value is None:
                    continue
                width = _type_width(p.type) if p.type is not None else 0
                arg_msg = msg.initial_default_action.arguments.add()
                arg_msg.param_id = pid
                arg_msg.value = (value & ((1 << width) - 1) if width else value).to_bytes(max(1, (width + 7) // 8), "big")
        for name, prof in self.profiles.items():
            if t.name in prof.tables:
                msg.implementation_id = self.id_of(P4IdPrefix.ACTION_PROFILE, name)
        for name, (pname, _i, table, *_rest) in self.direct.items():
            if table == t.name:
                prefix = P4IdPrefix.DIRECT_COUNTER if pname == "counters" else P4IdPrefix.DIRECT_METER
                msg.direct_resource_ids.append(self.id_of(prefix, name))
        size = t.decl.prop("size")
        msg.size = (_const_int(size.value) if size else None) or DEFAULT_TABLE_SIZE
        timeout = t.decl.prop("support_timeout")
        if timeout is not None and _const_int(timeout.value):
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        entries = t.decl.prop("entries")
        if entries is not None:
            msg.has_initial_entries = True
            if entries.is_const:
                msg.is_const_table = True

    def action_id(self, a: A.ActionDecl, scope: str) -> int:
        is_global = a in self.prog.actions.values()
        return self.id_of(P4IdPrefix.ACTION, names.qualify(None if is_global else scope, a.name, a.annotations))

    def emit_action(self, name: str, a: A.ActionDecl) -> None:
        msg = self.p4info.actions.add()
        self.preamble(msg, P4IdPrefix.ACTION, name, a.annotations)
        data_params = [p for p in a.params if p.direction == ""]
        ids = _field_ids([(p, p.annotations) for p in data_params])
        for p, pid in zip(data_params, ids, strict=True):
            pm = msg.params.add()
            pm.id = pid
            pm.name = _field_name(p.name, p.annotations)
            _add_annotations(pm, p.annotations)
            _add_doc(pm, p.annotations)
            pt = p.type
            if not isinstance(pt, BitType | BoolType | NewType | EnumType) or (
                isinstance(pt, EnumType) and pt.underlying is None
            ):
                raise _error(p.pos, f"Action parameter {p.name} has a type which is not bit<>, int<>, bool, "
                                    "type or serializable enum")
            pm.bitwidth = _type_width(pt)
            self.types.convert(pt)
            tn = _type_name(pt)
            if tn:
                pm.type_name.name = tn

    def emit_profile(self, name: str, p: _Profile) -> None:
        msg = self.p4info.action_profiles.add()
        self.preamble(msg, P4IdPrefix.ACTION_PROFILE, name, p.annotations, _PROFILE_ANNOTATIONS)
        msg.table_ids.extend(self.id_of(P4IdPrefix.TABLE, t) for t in p.tables)
        msg.with_selector = p.selector
        msg.size = p.size
        max_group = _int_arg(p.annotations, "max_group_size")
        if max_group is not None:
            msg.max_group_size = max_group
        if p.selector and max_group is not None:
            semantics = _string_arg(p.annotations, "selector_size_semantics")
            if semantics == "sum_of_members":
                msg.sum_of_members.SetInParent()
                weight = _int_arg(p.annotations, "max_member_weight")
                if weight is not None:
                    msg.sum_of_members.max_member_weight = weight
            else:
                msg.sum_of_weights.SetInParent()

    def emit_extern(self, name: str, inst: A.Instantiation) -> None:
        t = inst.type
        assert isinstance(t, ExternType)
        info = self.p4info
        if t.name == "counter":
            c = info.counters.add()
            self.preamble(c, P4IdPrefix.COUNTER, name, inst.annotations)
            c.spec.unit = _COUNTER_UNITS.get(str(_arg_value(inst, 1, "type").const), 0)  # type: ignore[union-attr]
            c.size = _const_int(_arg_value(inst, 0, "size")) or 0
        elif t.name == "meter":
            m = info.meters.add()
            self.preamble(m, P4IdPrefix.METER, name, inst.annotations)
            m.spec.unit = _METER_UNITS.get(str(_arg_value(inst, 1, "type").const), 0)  # type: ignore[union-attr]
            m.size = _const_int(_arg_value(inst, 0, "size")) or 0
        elif t.name == "register":
            r = info.registers.add()
            self.preamble(r, P4IdPrefix.REGISTER, name, inst.annotations)
            elem = t.type_args.get("T")
            if elem is not None:
                self.types.convert(elem, r.type_spec)
            r.size = _const_int(_arg_value(inst, 0, "size")) or 0

    def emit_controller_header(self, h: _Generator._CtrlHeader) -> None:
        msg = self.p4info.controller_packet_metadata.add()
        msg.preamble.id = self.id_of(P4IdPrefix.CONTROLLER_HEADER, h.name)
        msg.preamble.name = h.controller_name
        msg.preamble.alias = h.controller_name
        _add_annotations(msg.preamble, h.decl.annotations)
        _add_doc(msg.preamble, h.decl.annotations)
        visible = [f for f in h.decl.fields if not _has(f.annotations, "hidden")]
        ids = _field_ids([(f, f.annotations) for f in visible])
        for f, fid in zip(visible, ids, strict=True):
            ft = h.type.field_type(f.name)
            if not isinstance(ft, BitType | NewType | EnumType):
                raise _error(f.pos, f"Header field {f.name} has a type which is not bit<>, int<>, type, "
                                    "or serializable enum")
            m = msg.metadata.add()
            m.id = fid
            m.name = _field_name(f.name, f.annotations)
            _add_annotations(m, f.annotations)
            m.bitwidth = _type_width(ft)
            self.types.convert(ft)
            tn = _type_name(ft)
            if tn:
                m.type_name.name = tn

    def emit_value_set(self, name: str, vs: A.ValueSetDecl) -> None:
        msg = self.p4info.value_sets.add()
        self.preamble(msg, P4IdPrefix.VALUE_SET, name, vs.annotations)
        msg.size = _const_int(vs.size) or 0
        et = vs.type
        if isinstance(et, BitType):
            m = msg.match.add()
            m.id = 1
            m.bitwidth = et.width
            m.match_type = p4info_pb2.MatchField.EXACT
        elif isinstance(et, StructLikeType) and not isinstance(et, HeaderType | HeaderUnionType):
            decl_fields = list(getattr(et.decl, "fields", []) or [])
            annos = {f.name: list(f.annotations) for f in decl_fields}
            ids = _field_ids([(n, annos.get(n, [])) for n, _ in et.fields])
            for (fname, ftype), fid in zip(et.fields, ids, strict=True):
                if not isinstance(ftype, BitType):
                    raise _error(vs.pos, f"value_set '{vs.name}': field '{fname}' must be of type bit<W>")
                fa = annos.get(fname, [])
                m = msg.match.add()
                m.id = fid
                m.name = _field_name(fname, fa)
                m.bitwidth = ftype.width
                kind = _string_arg(fa, "match") or "exact"
                if kind in _MATCH_TYPES:
                    m.match_type = _MATCH_TYPES[kind]
                else:
                    m.other_match_type = kind
                _add_annotations(m, fa, frozenset({"match"}))
        else:
            raise _error(vs.pos, f"value_set '{vs.name}': P4Runtime needs bit<W> or a struct of bit<W> fields")

    def check_duplicates(self) -> None:
        groups: Iterable[tuple[str, Any]] = [
            ("table", self.p4info.tables), ("action", self.p4info.actions),
            ("action profile", self.p4info.action_profiles), ("counter", self.p4info.counters),
            ("direct counter", self.p4info.direct_counters), ("meter", self.p4info.meters),
            ("direct meter", self.p4info.direct_meters), ("register", self.p4info.registers),
            ("digest", self.p4info.digests), ("value set", self.p4info.value_sets),
            ("controller packet metadata", self.p4info.controller_packet_metadata),
        ]
        for kind, items in groups:
            seen: set[str] = set()
            for item in items:
                if item.preamble.name in seen:
                    raise _error(A.NOPOS, f"Name '{item.preamble.name}' is used for multiple {kind} objects "
                                          "in the P4Info message")
                seen.add(item.preamble.name)


# ------------------------------------------------------------------ public API


def generate_p4info(prog: CheckedProgram) -> p4info_pb2.P4Info:
    """The P4Info p4c would write for ``prog`` (a checked V1Switch program).

    Raises :class:`~emu.p4.frontend.P4Error` for what p4c's P4Runtime back end
    rejects (an anonymous table implementation without @name, clashing @id, ...).
    """
    return _Generator(prog).run()


def p4info_to_text(p4info: p4info_pb2.P4Info, header: bool = True) -> str:
    """Text format, as p4c writes ``.p4info.txtpb`` (with its two comment lines)."""
    body = text_format.MessageToString(p4info)
    return (TEXT_HEADER + body) if header else body


def p4info_to_bytes(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    """Serialize as "text", "binary" or "json"."""
    if fmt == "text":
        return p4info_to_text(p4info).encode()
    if fmt == "binary":
        return p4info.SerializeToString(deterministic=True)
    if fmt == "json":
        return (json_format.MessageToJson(p4info, indent=2) + "\n").encode()
    raise ValueError(f"unknown P4Info format {fmt!r} (text, binary, json)")


def format_for_path(path: str | Path) -> str:
    """p4c's choice of format by extension: .bin binary, .json JSON, anything else text."""
    suffix = Path(path).suffix.lower()
    if suffix == ".bin":
        return "binary"
    if suffix == ".json":
        return "json"
    return "text"


def write_p4info(p4info: p4info_pb2.P4Info, path: str | Path) -> Path:
    """Write ``p4info`` to ``path`` in the format its extension names; returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(p4info_to_bytes(p4info, format_for_path(out)))
    return out
