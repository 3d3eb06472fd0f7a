"""Layering of the switch side: the compiler knows nothing of P4Runtime, and emu.runtime
and emu.switch import without cycles (function-level and TYPE_CHECKING imports included)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_compiler_imports_nothing_of_p4runtime() -> None:
    code = ("import importlib, pkgutil, sys, emu.p4\n"
            "for m in pkgutil.walk_packages(emu.p4.__path__, 'emu.p4.'):\n"
            "    if not m.name.endswith('__main__'): importlib.import_module(m.name)\n"
            "print(sorted(k for k in sys.modules if k.split('.')[0] == 'grpc' or k.startswith("
            "('emu.runtime', 'emu.switch', 'p4.v1'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


def _imports(path: Path, module: str) -> set[str]:
    """Every emu module `module` imports, wherever the import statement is."""
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: None if is_pkg else -1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            out.update(f"{base}.{a.name}" for a in node.names)
            out.add(base)
    return {m for m in out if m.startswith("emu.")}


def _graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for pkg in packages:
        for p in (REPO / pkg.replace(".", "/")).rglob("*.py"):
            name = ".".join(p.relative_to(REPO).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = p
    return {m: {t for t in _imports(p, m) if t in mods and t != m} for m, p in mods.items()}


def test_no_import_cycles_in_runtime_and_switch() -> None:
    graph = _graph(("emu.runtime", "emu.switch"))
    assert len(graph) > 20
    state: dict[str, int] = {}  # 1 on the DFS path, 2 done
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(path[path.index(t):] + [t])
            elif t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []
