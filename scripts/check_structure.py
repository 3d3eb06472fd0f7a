"""Structure limits `make lint` enforces on emu/ (issue #18): no source file over
MAX_FILE_LINES lines, no function over MAX_FUNC_LINES lines, and at most ANY_BUDGET
uses of `Any` per package listed there. Generated files are exempt. Prints every
violation and exits 1 if there is any."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FILE_LINES = 600
MAX_FUNC_LINES = 100
# Package -> most `Any` annotations allowed (typing.Any in annotations and casts).
ANY_BUDGET = {"emu/experiments": 8}
GENERATED = ("emu/_gen",)


def _any_uses(tree: ast.AST) -> int:
    return sum(1 for node in ast.walk(tree)
               if (isinstance(node, ast.Name) and node.id == "Any")
               or (isinstance(node, ast.Attribute) and node.attr == "Any"))


def check(root: Path = ROOT) -> list[str]:
    problems: list[str] = []
    any_counts: dict[str, int] = {k: 0 for k in ANY_BUDGET}
    for path in sorted((root / "emu").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(GENERATED):
            continue
        text = path.read_text()
        lines = text.count("\n") + (not text.endswith("\n") and bool(text))
        if lines > MAX_FILE_LINES:
            problems.append(f"{rel}: {lines} lines (limit {MAX_FILE_LINES})")
        tree = ast.parse(text, rel)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNC_LINES:
                    problems.append(f"{rel}:{node.lineno}: function {node.name} is {n} lines "
                                    f"(limit {MAX_FUNC_LINES})")
        for pkg in any_counts:
            if rel.startswith(pkg + "/"):
                any_counts[pkg] += _any_uses(tree)  # an import is an alias, not a Name
    for pkg, n in any_counts.items():
        if n > ANY_BUDGET[pkg]:
            problems.append(f"{pkg}: {n} uses of Any (budget {ANY_BUDGET[pkg]})")
    return problems


def main() -> int:
    problems = check()
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} structure problems")
        return 1
    print("structure: files <= 600 lines, functions <= 100 lines, Any within budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
