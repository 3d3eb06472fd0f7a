"""Walking the checked AST (statements and expressions, not back-references)."""

from __future__ import annotations

from typing import Any

from emu.p4.frontend import ast as A


def _walk(node: Any) -> Any:
    """All AST nodes under `node` (statements and expressions)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(n)
            continue
        if not isinstance(n, A.Node):
            continue
        yield n
        for k, v in vars(n).items():
            if k in ("type", "const", "ref", "target", "pos", "decl", "name_pos", "type_bindings"):
                continue
            if isinstance(v, A.Node | list):
                stack.append(v)
