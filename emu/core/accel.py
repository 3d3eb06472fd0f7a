"""The per-packet modules, compiled with mypyc when a build of them exists.

The virtual engine spends its time in a few typed modules (`COMPILED_MODULES`: the
clock, links, the traffic manager, the host NIC and QPs). `python -m
emu.core.accel_build` (run by `make setup`) compiles them with mypyc into the user cache, in a folder
named after the digest of their sources and the interpreter's ABI. `install()` runs
before any of them is imported (`emu.core` calls it first) and puts a finder at the
head of `sys.meta_path` that loads the compiled modules from that folder. So a build is
only used for the exact sources on disk: after an edit the digest changes, no build
matches, and the `.py` files run as they are. `EMU_ACCEL=0` runs the `.py` files too.

Results do not depend on which runs: the compiled code is the same source with the
same Python integers and floats (tests/core/test_accel.py compares a whole run's
metrics byte for byte). Compiled classes have no `__dict__` and take no attributes
they do not declare; docs/performance.md says what that asks of these modules.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from emu.core.cachedir import user_cache_path

COMPILED_MODULES = (
    "emu.core.clock",
    "emu.core.port",
    "emu.p4.v1model.traffic_manager",
    "emu.roce.nic",
    "emu.roce.payload",
    "emu.roce.requester",
    "emu.roce.responder",
    "emu.roce.wire",
    "emu.sim.frames",
)
GROUP = "emu_accel"
"""mypyc's group name: the shared library of the build is `emu_accel__mypyc`."""

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds emu/


def source_path(module: str, root: Path = PACKAGE_ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def _digest(modules: Sequence[str], root: Path) -> str:
    h = hashlib.sha256(f"{sys.implementation.cache_tag} {platform.machine()}".encode())
    for m in modules:
        h.update(f"\0{m}\0".encode())
        h.update(source_path(m, root).read_bytes())
    return h.hexdigest()[:16]


def build_dir(env: Mapping[str, str] | None = None, modules: Sequence[str] = COMPILED_MODULES,
              root: Path = PACKAGE_ROOT) -> Path:
    """Where the build of these sources (under `root`) lives; it may not exist."""
    return (user_cache_path("accel", "EMU_ACCEL_DIR", env)
            / f"{sys.implementation.cache_tag}-{_digest(modules, root)}")


def extension_files(root: Path, modules: Sequence[str]) -> dict[str, Path]:
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    files = {m: root.joinpath(*m.split(".")).with_name(m.rsplit(".", 1)[1] + suffix)
             for m in modules}
    files[f"{GROUP}__mypyc"] = root / f"{GROUP}__mypyc{suffix}"
    return files


def is_built(root: Path) -> bool:
    """Whether `root` holds every file of a build (a partial one is no build)."""
    return all(f.is_file() for f in extension_files(root, COMPILED_MODULES).values())


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds the compiled build of exactly the modules it was given, nothing else."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self.files = dict(files)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        f = self.files.get(fullname)
        if f is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(f))
        return importlib.util.spec_from_file_location(fullname, f, loader=loader)


@dataclass(frozen=True)
class Choice:
    compiled: bool
    reason: str  # why the .py files run, or where the build is


def choose(env: Mapping[str, str] | None = None) -> tuple[Choice, dict[str, Path]]:
    e = os.environ if env is None else env
    if e.get("EMU_ACCEL", "1") == "0":
        return Choice(False, "EMU_ACCEL=0"), {}
    try:
        root = build_dir(e)
    except OSError as exc:  # a source unreadable: the import of it will say more
        return Choice(False, f"sources unreadable ({exc})"), {}
    except RuntimeError as exc:  # no home directory to find the cache in (Path.home)
        return Choice(False, f"no cache directory ({exc})"), {}
    if not is_built(root):
        return Choice(False, "no build of these sources (make setup builds one)"), {}
    return Choice(True, str(root)), extension_files(root, COMPILED_MODULES)


def install(env: Mapping[str, str] | None = None) -> Choice:
    """Put the finder first on sys.meta_path if a build matches the sources."""
    choice, files = choose(env)
    if choice.compiled and not any(isinstance(f, CompiledFinder) for f in sys.meta_path):
        loaded = [m for m in COMPILED_MODULES if m in sys.modules]
        if loaded:  # too late: mixing builds and sources is not supported
            return Choice(False, f"{loaded[0]} was imported before emu.core")
        sys.meta_path.insert(0, CompiledFinder(files))
    return choice


def status() -> str:
    """One line for benchmarks and reports: which of the two this process runs."""
    for f in sys.meta_path:
        if isinstance(f, CompiledFinder):
            return f"compiled with mypyc ({len(COMPILED_MODULES)} modules)"
    return f"pure Python ({choose()[0].reason})"
