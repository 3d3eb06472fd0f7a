"""emu.p4 has no module-level import cycles (imports under TYPE_CHECKING included)."""

from __future__ import annotations

import ast
from pathlib import Path

import emu.p4

ROOT = Path(emu.p4.__file__).parent
# The switch daemon is moving out of emu.p4 (issue #18); it is checked where it lands.
EXCLUDED: tuple[str, ...] = ()


def _module_name(path: Path) -> str:
    parts = ("emu", "p4", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(stmts: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module loads: at top level and in if/try blocks (TYPE_CHECKING)."""
    out: list[ast.Import | ast.ImportFrom] = []
    for n in stmts:
        if isinstance(n, ast.Import | ast.ImportFrom):
            out.append(n)
        elif isinstance(n, ast.If):
            out += _top_level_imports(n.body) + _top_level_imports(n.orelse)
        elif isinstance(n, ast.Try):
            out += _top_level_imports(n.body) + _top_level_imports(n.orelse)
            out += _top_level_imports(n.finalbody)
            for h in n.handlers:
                out += _top_level_imports(h.body)
    return out


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    files = {m: p for m, p in files.items() if not m.startswith(EXCLUDED)}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for n in _top_level_imports(ast.parse(path.read_text()).body):
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            else:
                base = n.module or ""
                if n.level:
                    base = ".".join(package[: len(package) - n.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in n.names]
            graph[mod].update(t for t in targets if t in files and t != mod)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if t not in state and (found := visit(t)) is not None:
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)) is not None:
            return found
    return None


def test_finder_reports_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_in_emu_p4() -> None:
    graph = import_graph()
    assert "emu.p4.frontend.check.base" in graph  # the walk sees the packages
    assert "emu.p4.frontend.types" in graph["emu.p4.frontend.check.base"]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])
