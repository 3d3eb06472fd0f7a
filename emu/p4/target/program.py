"""CompiledProgram: the compile artefact (generated source + metadata), serialisable.

`to_bytes()` / `from_bytes()` use versioned JSON so that a daemon can load a program
without the P4 front end: loading is one `compile()` of the stored source.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import CodeType
from typing import Any

from emu.p4.codegen import ProgramInfo, lower

FORMAT_VERSION = 1


@dataclass
class CompiledProgram:
    """Generated module source plus what the switch and control plane need to know."""

    source: str
    info: ProgramInfo
    name: str = "program"
    _code: CodeType | None = field(default=None, repr=False, compare=False)

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
        lines = self.source.splitlines()
        for i in range(min(lineno, len(lines)) - 1, -1, -1):
            mark = lines[i].rfind("  # @")
            if mark >= 0:
                return lines[i][mark + 5:]
        return None

    def to_bytes(self) -> bytes:
        doc = {"format": "emu-p4-compiled", "version": FORMAT_VERSION, "name": self.name,
               "source": self.source, "info": asdict(self.info)}
        return json.dumps(doc).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> CompiledProgram:
        doc = json.loads(data)
        if doc.get("format") != "emu-p4-compiled" or doc.get("version") != FORMAT_VERSION:
            raise ValueError("not a compiled program of this version")
        return cls(doc["source"], ProgramInfo(**doc["info"]), doc.get("name", "program"))


def compile_checked(checked: Any, name: str = "program") -> CompiledProgram:
    src, info = lower(checked)
    prog = CompiledProgram(src, info, name)
    prog.code  # noqa: B018 - compile now so that generator bugs surface at compile time
    return prog


def compile_file(path: str, include_dirs: Sequence[str] = (),
                 defines: Mapping[str, str] | None = None) -> CompiledProgram:
    """Front end + lowering of the P4 program at `path`."""
    from emu.p4.frontend import load_program

    checked = load_program(str(path), include_dirs, defines)
    import os

    return compile_checked(checked, os.path.basename(str(path)))


def compile_source(text: str, filename: str = "<input>", include_dirs: Sequence[str] = (),
                   defines: Mapping[str, str] | None = None) -> CompiledProgram:
    from emu.p4.frontend import check_source

    return compile_checked(check_source(text, filename, include_dirs, defines), filename)
