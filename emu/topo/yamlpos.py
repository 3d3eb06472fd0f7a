"""YAML parsing that keeps source positions for every key and value.

PyYAML's composer gives nodes with marks; we build plain dict/list subclasses that
remember where each key and value came from, so later stages can report
`file:line:col` without carrying YAML nodes around.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import Collector, Mark, TopologyError


class YMap(dict[str, Any]):
    """A mapping with the mark of itself, of each key and of each value."""

    def __init__(self, mark: Mark) -> None:
        super().__init__()
        self.mark = mark
        self.key_marks: dict[str, Mark] = {}
        self.value_marks: dict[str, Mark] = {}

    def key_mark(self, key: str) -> Mark:
        return self.key_marks.get(key, self.mark)

    def value_mark(self, key: str) -> Mark:
        return self.value_marks.get(key, self.mark)


class YList(list[Any]):
    """A sequence with the mark of itself and of each item."""

    def __init__(self, mark: Mark) -> None:
        super().__init__()
        self.mark = mark
        self.item_marks: list[Mark] = []

    def item_mark(self, index: int) -> Mark:
        return self.item_marks[index] if index < len(self.item_marks) else self.mark


def _mark(file: str, m: yaml.Mark | None) -> Mark:
    if m is None:
        return Mark(file)
    return Mark(file, m.line + 1, m.column + 1)


def parse_yaml(text: str, file: str = "<string>", errs: Collector | None = None) -> Any:
    """Parse one YAML document into YMap/YList/scalars.

    A syntax error raises TopologyError at once (nothing after it can be read). Bad keys
    (duplicates, non-strings) are added to `errs` when given, so the caller can report
    them with the rest; without `errs` they are raised.
    """
    collect = Collector() if errs is None else errs
    loader: yaml.SafeLoader | None = None
    try:
        # The reader checks every character of the text as it is built: a NUL or other
        # control character fails here, before the first node.
        _check_depth(text, file)
        loader = yaml.SafeLoader(text)
        node = loader.get_single_node()
        doc = None if node is None else _Converter(loader, file, collect).convert(node)
    except yaml.reader.ReaderError as exc:
        raise TopologyError.at(*_reader_error(exc, text, file)) from None
    except yaml.MarkedYAMLError as exc:
        raise TopologyError.at(*_syntax_error(exc, file)) from None
    except yaml.YAMLError as exc:
        raise TopologyError.at(Mark(file), f"YAML error: {exc}") from None
    finally:
        if loader is not None:
            loader.dispose()
    if errs is None:
        collect.raise_if_any()
    return doc


# Collections inside collections a document may nest: PyYAML composes them recursively,
# so how deep it can go would depend on the interpreter's recursion limit.
MAX_DEPTH = 100


def _check_depth(text: str, file: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH at the collection that goes too deep, from
    the parser's events (read iteratively, before anything is composed)."""
    depth = 0
    for ev in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(ev, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                m = ev.start_mark
                where = Mark(file) if m is None else Mark(file, m.line + 1, m.column + 1)
                raise TopologyError.at(where, "YAML nested too deeply (collections inside "
                                              f"collections, more than {MAX_DEPTH})")
        elif isinstance(ev, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            depth -= 1


def _reader_error(exc: yaml.reader.ReaderError, text: str, file: str) -> tuple[Mark, str]:
    """A character YAML does not allow (NUL, other control characters), at its place."""
    before = text[:exc.position]
    line = before.count("\n") + 1
    column = exc.position - (before.rfind("\n") + 1) + 1
    ch = exc.character
    code = ch if isinstance(ch, int) else ord(ch)
    return Mark(file, line, column), f"YAML syntax error: character U+{code:04X} is not allowed"


def _syntax_error(exc: yaml.MarkedYAMLError, file: str) -> tuple[Mark, str]:
    """Position and message of a PyYAML error: at the problem PyYAML names (its caret),
    with the construct it was reading when that is elsewhere (often the real mistake,
    such as an unclosed '{' a few lines up)."""
    where = exc.problem_mark or exc.context_mark
    message = f"YAML syntax error: {exc.problem or exc.context or 'invalid YAML'}"
    ctx = exc.context_mark
    if exc.problem and exc.context and ctx is not None and where is not None and (
        (ctx.line, ctx.column) != (where.line, where.column)
    ):
        message += f" ({exc.context} at line {ctx.line + 1}, column {ctx.column + 1})"
    return _mark(file, where), message


# Nodes a document may expand to, aliases counted as often as they are used: a few
# aliases of aliases (the "billion laughs") would otherwise expand to billions of nodes.
# A 1,024-host fat-tree is about 20,000.
MAX_NODES = 1_000_000


class _Converter:
    """PyYAML nodes to YMap/YList/scalars. An alias converts once and its value is
    shared (`memo`); its expanded size still counts against MAX_NODES, and an alias
    inside the node it names (a recursive structure) is an error."""

    def __init__(self, loader: yaml.SafeLoader, file: str, errs: Collector) -> None:
        self.loader, self.file, self.errs = loader, file, errs
        self.memo: dict[int, tuple[Any, int]] = {}  # id(node) -> (value, expanded size)
        self.active: set[int] = set()
        self.total = 0

    def convert(self, node: yaml.Node) -> Any:
        value, _ = self._node(node)
        return value

    def _node(self, node: yaml.Node) -> tuple[Any, int]:
        here = _mark(self.file, node.start_mark)
        key = id(node)
        if key in self.active:
            raise TopologyError.at(here, "YAML alias inside the node it refers to (a "
                                         "recursive structure)")
        got = self.memo.get(key)
        if got is not None:
            self._count(got[1], here)
            return got
        self.active.add(key)
        try:
            value, size = self._build(node, here)
        finally:
            self.active.discard(key)
        self.memo[key] = (value, size)
        return value, size

    def _count(self, size: int, where: Mark) -> None:
        self.total += size
        if self.total > MAX_NODES:
            raise TopologyError.at(where, f"YAML document expands to more than {MAX_NODES:,} "
                                          "values (aliases count each time they are used)")

    def _build(self, node: yaml.Node, here: Mark) -> tuple[Any, int]:
        loader, file = self.loader, self.file
        if isinstance(node, yaml.MappingNode):
            # Merge keys (<<) are resolved by the constructor; flatten them here too. The
            # merged pairs come first, and a later key overrides a merged one (YAML's
            # merge); only a key written twice is a duplicate.
            explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
            loader.flatten_mapping(node)
            merged_keys: set[str] = set()
            out = YMap(here)
            size = 1
            for i, (key_node, value_node) in enumerate(node.value):
                key_mark = _mark(file, key_node.start_mark)
                key = loader.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    self.errs.error(key_mark, f"keys must be strings, got {key!r}")
                    continue
                if i < len(node.value) - explicit:
                    merged_keys.add(key)
                elif key in out and key not in merged_keys:
                    first = out.key_marks[key]
                    self.errs.error(key_mark, f"duplicate key '{key}' (first at line {first.line})")
                    continue  # the first one is checked; this one is reported
                else:
                    merged_keys.discard(key)
                out[key], n = self._node(value_node)
                size += n
                out.key_marks[key] = key_mark
                out.value_marks[key] = _mark(file, value_node.start_mark)
            self._count(1, here)
            return out, size
        if isinstance(node, yaml.SequenceNode):
            seq = YList(here)
            size = 1
            for item in node.value:
                v, n = self._node(item)
                seq.append(v)
                size += n
                seq.item_marks.append(_mark(file, item.start_mark))
            self._count(1, here)
            return seq, size
        self._count(1, here)
        return loader.construct_object(node, deep=True), 1
