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
        loader = yaml.SafeLoader(text)
        node = loader.get_single_node()
        doc = None if node is None else _convert(loader, node, file, collect)
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


def _convert(loader: yaml.SafeLoader, node: yaml.Node, file: str, errs: Collector) -> Any:
    here = _mark(file, node.start_mark)
    if isinstance(node, yaml.MappingNode):
        # Merge keys (<<) are resolved by the constructor; flatten them here too.
        loader.flatten_mapping(node)
        out = YMap(here)
        for key_node, value_node in node.value:
            key_mark = _mark(file, key_node.start_mark)
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                errs.error(key_mark, f"keys must be strings, got {key!r}")
                continue
            if key in out:
                first = out.key_marks[key]
                errs.error(key_mark, f"duplicate key '{key}' (first at line {first.line})")
                continue  # the first one is checked; this one is reported
            out[key] = _convert(loader, value_node, file, errs)
            out.key_marks[key] = key_mark
            out.value_marks[key] = _mark(file, value_node.start_mark)
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = YList(here)
        for item in node.value:
            seq.append(_convert(loader, item, file, errs))
            seq.item_marks.append(_mark(file, item.start_mark))
        return seq
    return loader.construct_object(node, deep=True)
