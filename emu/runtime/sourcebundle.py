"""The files of a `p4-source` device config (emu.p4.bundle), written out by the switch
that compiles them.

The switch compiles what it is sent instead of running code it is sent: a compiled
program is generated Python, and a switch that ran it from the wire would run any code
a client reaching its P4Runtime port chose to send (docs/security.md). It writes a
bundle into a folder named by its content, in its user cache, so every switch of a
fabric loading one program reads the same paths and all but the first find the program
compiled in the compile cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from emu.core.cachedir import user_cache_path

MAX_BUNDLES = 16  # folders kept in the cache; each program edit makes a new one
IDLE_S = 600  # a bundle unused this long may go


class BundleError(ValueError):
    """An entry that would leave the bundle's folder or cannot be written."""


def bundle_digest(files: Mapping[str, str]) -> str:
    """SHA-256 of a bundle's files (names and texts): the name of its folder."""
    return hashlib.sha256(json.dumps(sorted(files.items())).encode()).hexdigest()


@contextlib.contextmanager
def written_bundle(files: Mapping[str, str], cache: Path | None = None) -> Iterator[str]:
    """A folder holding `files` (relative path -> text): the bundle's folder in the
    cache, named by its content, or a temporary one when the cache cannot be written.
    BundleError names an entry that would leave the folder or cannot be written."""
    digest = bundle_digest(files)
    base = cache if cache is not None else user_cache_path("p4src", "EMU_P4SRC_CACHE")
    final = base / digest
    if final.is_dir():
        with contextlib.suppress(OSError):
            os.utime(final)  # in use: not pruned for IDLE_S
        yield str(final)
        return
    try:
        base.mkdir(parents=True, exist_ok=True)
        tmp = os.path.realpath(tempfile.mkdtemp(dir=base, prefix=f".{digest[:16]}-"))
    except OSError:
        tmp = None
    if tmp is None:  # a read-only cache: a folder for this load alone
        with tempfile.TemporaryDirectory(prefix="emu-p4src-") as scratch:
            root = os.path.realpath(scratch)
            _write(root, files)
            yield root
        return
    try:
        _write(tmp, files)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        os.rename(tmp, final)  # atomic; another switch may have put it there first
        stored = True
    except OSError:
        # Another switch's copy is as good; anything else in the way (a file of that
        # name) leaves ours to this load alone, as with a read-only cache.
        stored = final.is_dir()
    if not stored:
        try:
            yield tmp
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    if os.path.isdir(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
    _prune(base, keep=final)
    yield str(final)


def _write(root: str, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        try:
            path = os.path.realpath(os.path.join(root, str(rel)))
        except ValueError as exc:  # a NUL in the name
            raise BundleError(f"bad file entry {rel!r}: {exc}") from None
        if not path.startswith(root + os.sep) or not isinstance(text, str):
            raise BundleError(f"bad file entry {rel!r}")
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except (OSError, ValueError) as exc:  # a file and a folder of one name, a full disk
            raise BundleError(f"bad file entry {rel!r}: {exc}") from None


def _prune(base: Path, keep: Path) -> None:
    """Remove bundles beyond the MAX_BUNDLES most recently used, and half-written ones
    (their writer was killed), once IDLE_S old: another switch may be compiling one."""
    try:
        now = time.time()
        dirs = [(d, d.stat().st_mtime) for d in base.iterdir() if d.is_dir()]
        done = sorted((x for x in dirs if not x[0].name.startswith(".")),
                      key=lambda x: x[1], reverse=True)
        partial = [x for x in dirs if x[0].name.startswith(".")]
        for old, mtime in done[MAX_BUNDLES:] + partial:
            if old != keep and now - mtime > IDLE_S:
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass
