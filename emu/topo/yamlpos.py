"""YAML parsing that keeps source positions for every key and value.

PyYAML's composer gives nodes with marks; we build plain dict/list subclasses that
remember where each key and value came from, so later stages can report
`file:line:col` without carrying YAML nodes around.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import Diagnostic, Mark, TopologyError


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


def parse_yaml(text: str, file: str = "<string>") -> Any:
    """Parse one YAML document into YMap/YList/scalars; syntax errors become TopologyError."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return _convert(loader, node, file)
    except yaml.MarkedYAMLError as exc:
        where = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise TopologyError.at(_mark(file, where), f"YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise TopologyError.at(Mark(file), f"YAML error: {exc}") from None
    finally:
        loader.dispose()


def _convert(loader: yaml.SafeLoader, node: yaml.Node, file: str) -> Any:
    here = _mark(file, node.start_mark)
    if isinstance(node, yaml.MappingNode):
        # Merge keys (<<) are resolved by the constructor; flatten them here too.
        loader.flatten_mapping(node)
        out = YMap(here)
        for key_node, value_node in node.value:
            key_mark = _mark(file, key_node.start_mark)
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise TopologyError.at(key_mark, f"keys must be strings, got {key!r}")
            if key in out:
                first = out.key_marks[key]
                raise TopologyError(
                    Diagnostic(key_mark, f"duplicate key '{key}' (first at line {first.line})")
                )
            out[key] = _convert(loader, value_node, file)
            out.key_marks[key] = key_mark
            out.value_marks[key] = _mark(file, value_node.start_mark)
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = YList(here)
        for item in node.value:
            seq.append(_convert(loader, item, file))
            seq.item_marks.append(_mark(file, item.start_mark))
        return seq
    return loader.construct_object(node, deep=True)
