"""CompiledProgram: the compile artefact (generated source + metadata), serialisable.

`to_bytes()` / `from_bytes()` use versioned JSON so that a daemon can load a program
without the P4 front end: loading is one `compile()` of the stored source.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import CodeType
from typing import Any

from emu.p4.codegen import ProgramInfo, lower
from emu.p4.frontend.diagnostics import Diagnostic, P4Error, SourceCache

from .tables import check_initial_entries

FORMAT = "emu-p4-compiled"  # the artefact's `format` (the P4Runtime device config names it)
FORMAT_VERSION = 1


@dataclass
class CompiledProgram:
    """Generated module source plus what the switch and control plane need to know."""

    source: str
    info: ProgramInfo
    name: str = "program"
    _code: CodeType | None = field(default=None, repr=False, compare=False)
    # bind(): the module run once (classes, constants) and its pipeline-function factory,
    # per set of per-instance names; the source it was compiled from (tracebacks).
    _bound: dict[tuple[str, ...], tuple[dict[str, Any], Any]] = field(
        default_factory=dict, repr=False, compare=False)
    _bound_source: str | None = field(default=None, repr=False, compare=False)

    @property
    def code(self) -> CodeType:
        if self._code is None:
            self._code = compile(self.source, f"<p4:{self.name}>", "exec")
        return self._code

    @property
    def tables(self) -> list[dict[str, Any]]:
        return self.info.tables

    @property
    def actions(self) -> dict[str, list[list[Any]]]:
        return self.info.actions

    @property
    def errors(self) -> list[str]:
        return self.info.errors

    def bind(self, shared: Mapping[str, Any], instance: Mapping[str, Any]) -> dict[str, Any]:
        """The namespace of one switch instance running this program: `shared` names
        (the same objects for every instance: runtime helpers), the program's classes
        and constants, `instance` names (its tables, counters, registers...) and the
        generated functions (parse, run_ingress, ...) bound to them.

        The module itself runs once per program and its functions are made by a factory
        whose parameters are the instance names (closure cells): every switch of a
        fabric then shares one set of code objects, classes and globals, so CPython's
        specialised attribute and global loads keep hitting when packets alternate
        between switches (with one module per switch they missed at every switch
        change, which cost the pipeline about half its time)."""
        names = tuple(sorted(instance))
        got = self._bound.get(names)
        if got is None:
            src = _factory_source(self.source, names)
            if src is None:  # a shape the factory cannot wrap: one module per instance
                ns = dict(shared)
                ns.update(instance)
                exec(self.code, ns)
                return ns
            module: dict[str, Any] = dict(shared)
            exec(compile(src, f"<p4:{self.name}>", "exec"), module)
            got = self._bound[names] = (module, module.pop(_FACTORY))
            self._bound_source = src
        module, factory = got
        funcs = factory(**instance)
        cells = {name: cell for f in funcs.values() if f.__closure__
                 for name, cell in zip(f.__code__.co_freevars, f.__closure__, strict=True)}
        ns = _Namespace(module, cells)
        ns.update(instance)
        ns.update(funcs)
        return ns

    def location_of(self, exc: BaseException) -> str | None:
        """The P4 source position (file:line) of the statement whose generated code
        raised `exc`: the codegen marks each statement's first line with `# @file:line`."""
        lineno = None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.startswith("<p4:"):
                lineno = tb.tb_lineno
            tb = tb.tb_next
        if lineno is None:
            return None
        lines = (self._bound_source or self.source).splitlines()
        return _mark_at_or_before(lines, min(lineno, len(lines)) - 1)

    def to_bytes(self) -> bytes:
        doc = {"format": FORMAT, "version": FORMAT_VERSION, "name": self.name,
               "source": self.source, "info": asdict(self.info)}
        return json.dumps(doc).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> CompiledProgram:
        doc = json.loads(data)
        if doc.get("format") != FORMAT or doc.get("version") != FORMAT_VERSION:
            raise ValueError("not a compiled program of this version")
        return cls(doc["source"], ProgramInfo(**doc["info"]), doc.get("name", "program"))


_FACTORY = "__pipeline_functions__"


class _Namespace(dict[str, Any]):
    """A bound program's namespace: assigning one of its instance names rebinds it in
    the generated functions too (their closure cell), as assigning a global of a
    module of its own would."""

    def __init__(self, data: Mapping[str, Any], cells: dict[str, Any]) -> None:
        super().__init__(data)
        self._cells = cells

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        cell = self._cells.get(key)
        if cell is not None:
            cell.cell_contents = value


def _factory_source(source: str, params: tuple[str, ...]) -> str | None:
    """`source` with its top-level functions (all after the classes and constants)
    moved into `def __pipeline_functions__(<params>)`, which returns them by name;
    None when the module does not have that shape."""
    lines = source.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.startswith("def ")), None)
    if first is None or _FACTORY in params:
        return None
    funcs: list[str] = []
    body: list[str] = []
    for ln in lines[first:]:
        if ln and not ln[0].isspace():
            if not ln.startswith("def "):
                return None  # a top-level statement among the functions
            funcs.append(ln[4:ln.index("(")])
        body.append("    " + ln if ln else ln)
    head = f"def {_FACTORY}({', '.join(params)}):"
    ret = "    return {" + ", ".join(f"{f!r}: {f}" for f in funcs) + "}"
    return "\n".join([*lines[:first], head, *body, ret, ""])


def compile_checked(checked: Any, name: str = "program") -> CompiledProgram:
    src, info = lower(checked)
    check_initial_entries(info.tables)
    prog = CompiledProgram(src, info, name)
    _check_nesting(src, checked)
    prog.code  # noqa: B018 - compile now so that generator bugs surface at compile time
    return prog


def _mark_at_or_before(lines: list[str], i: int) -> str | None:
    """The P4 position (file:line) of the statement whose generated code holds line `i`
    (0-based): the codegen marks each statement's first line with `# @file:line`."""
    for k in range(i, -1, -1):
        mark = lines[k].rfind("  # @")
        if mark >= 0:
            return lines[k][mark + 5:]
    return None


# Python's tokenizer refuses code indented more than 100 levels (IndentationError), and
# bind() moves the pipeline functions one level deeper into its factory.
MAX_INDENT_LEVELS = 96


def _check_nesting(src: str, checked: Any) -> None:
    """Refuse, at its P4 position, a program whose control flow (nested if statements
    and conditional expressions, with actions and functions inlined where they are
    called) would nest the generated code deeper than Python can compile."""
    lines = src.splitlines()
    for i, ln in enumerate(lines):
        body = ln.lstrip(" ")
        if not body or (len(ln) - len(body)) // 4 <= MAX_INDENT_LEVELS:
            continue
        base, _, line = (_mark_at_or_before(lines, i) or "").rpartition(":")
        files = {os.path.basename(d.pos.file): d.pos.file for d in checked.program.decls}
        path = files.get(base, base or "<program>")
        lineno = int(line) if line.isdigit() else 0
        raise P4Error([Diagnostic(
            path, lineno, 1, "error",
            f"control flow nested more than {MAX_INDENT_LEVELS} levels deep (if and switch "
            "statements and conditional expressions inside each other, with the actions and "
            "functions called there inlined) is not supported by the embedded v1model target",
            SourceCache().line(path, lineno) if lineno else "")])


def compile_file(path: str, include_dirs: Sequence[str] = (),
                 defines: Mapping[str, str] | None = None,
                 include_roots: Sequence[str] | None = None) -> CompiledProgram:
    """Front end + lowering of the P4 program at `path` (include_roots: load_program)."""
    from emu.p4.frontend import load_program

    checked = load_program(str(path), include_dirs, defines, include_roots)
    import os

    return compile_checked(checked, os.path.basename(str(path)))


def compile_source(text: str, filename: str = "<input>", include_dirs: Sequence[str] = (),
                   defines: Mapping[str, str] | None = None) -> CompiledProgram:
    from emu.p4.frontend import check_source

    return compile_checked(check_source(text, filename, include_dirs, defines), filename)
