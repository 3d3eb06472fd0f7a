"""A disk cache of compiled programs, so that a process compiling the same P4 program as
the last one (every `emu run --virtual` compiles fabric.p4) loads it instead of parsing,
checking and lowering it again.

An entry is the CompiledProgram's own serialisation (`to_bytes`), named by a SHA-256
over everything the result depends on: the compiler's code (front end, code generator,
built-in includes, this package's program module), the program's path, include
directories and defines, and the contents of every file the preprocessor read. The
program is preprocessed to learn those files (a fraction of the compile time), so an
edited include or compiler is never served stale. The cache lives in
`$EMU_P4_CACHE`, else `$XDG_CACHE_HOME/emu/p4`, else `~/.cache/emu/p4`; a cache that
cannot be read or written is skipped (the program is compiled as without one).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from emu.core.cachedir import user_cache_path

from .program import FORMAT_VERSION, CompiledProgram, compile_checked

_P4 = Path(__file__).resolve().parents[1]  # emu/p4
# What the compiler's output depends on besides its input.
_COMPILER = (_P4 / "frontend", _P4 / "codegen", _P4 / "include", _P4 / "target" / "program.py")


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    return user_cache_path("p4", "EMU_P4_CACHE", env)


@functools.lru_cache(maxsize=1)
def compiler_digest() -> str:
    """SHA-256 of the compiler's own files (read once per process)."""
    h = hashlib.sha256(f"format {FORMAT_VERSION}".encode())
    for root in _COMPILER:
        files = [root] if root.is_file() else sorted(
            f for f in root.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
        for f in files:
            h.update(str(f.relative_to(_P4)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def compile_file_cached(path: str, include_dirs: Sequence[str] = (),
                        defines: Mapping[str, str] | None = None,
                        directory: Path | None = None,
                        include_roots: Sequence[str] | None = None,
                        inputs_digest: str | None = None) -> CompiledProgram:
    """compile_file(path, include_dirs, defines, include_roots), served from the disk
    cache when an entry for exactly these inputs exists, and stored there otherwise.

    `inputs_digest`: a digest of every file the program may read but the compiler's
    own includes (a switch's p4-source bundle under `include_roots`), which then keys
    the entry instead of the files the preprocessor reads: a hit costs no parsing (nor
    importing the front end)."""
    defs = dict(defines or {})
    roots = None if include_roots is None else tuple(include_roots)
    h = hashlib.sha256(compiler_digest().encode())
    h.update(repr((str(path), list(include_dirs), sorted(defs.items()), roots)).encode())
    if inputs_digest is not None:
        h.update(b"inputs\0" + inputs_digest.encode())
        entry = (directory or cache_dir()) / f"{h.hexdigest()}.json"
        got = _load(entry)
        if got is not None:
            return got
    from emu.p4.frontend.check import check_program
    from emu.p4.frontend.diagnostics import DiagnosticSink
    from emu.p4.frontend.parser import parse_preprocessed
    from emu.p4.frontend.preprocess import preprocess_file

    sink = DiagnosticSink()
    pp = preprocess_file(str(path), tuple(include_dirs), defs, sink, roots)
    if inputs_digest is None:
        for f in pp.files:
            h.update(f.encode() + b"\0" + _read(f) + b"\0")
        entry = (directory or cache_dir()) / f"{h.hexdigest()}.json"
        got = _load(entry)
        if got is not None:
            return got
    prog = compile_checked(check_program(parse_preprocessed(pp, sink), sink),
                           os.path.basename(str(path)))
    _store(entry, prog.to_bytes())
    return prog


def _load(entry: Path) -> CompiledProgram | None:
    try:
        return CompiledProgram.from_bytes(entry.read_bytes())
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no entry (or an unreadable one): compile


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""  # a built-in or virtual file: its text is in the compiler digest


def _store(entry: Path, data: bytes) -> None:
    """Write the entry atomically (concurrent runs may store the same one)."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=entry.name, suffix=".tmp")
    except OSError:
        return  # a read-only cache: the program is compiled each time
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, entry)
    except OSError:
        Path(tmp).unlink(missing_ok=True)  # a full disk: no entry, no debris
        return
    _prune(entry.parent, keep=entry)


MAX_ENTRIES = 16  # each compiler or program edit makes a new entry; old ones are dead


def _prune(directory: Path, keep: Path) -> None:
    """Remove all but the MAX_ENTRIES most recently written entries (never `keep`)."""
    try:
        entries = sorted(directory.glob("*.json"), key=lambda f: f.stat().st_mtime,
                         reverse=True)
        for old in entries[MAX_ENTRIES:]:
            if old != keep:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # another run pruned the same entry first
