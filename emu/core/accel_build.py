"""Compile emu.core.accel's modules with mypyc into the build folder of their sources.

    python -m emu.core.accel_build            build if no build matches the sources
    python -m emu.core.accel_build --status   say which of the two a process would run

`make setup` runs it; it needs mypy (the dev extra), a C compiler and the Python
headers (Debian: gcc, python3-dev), all installed by scripts/setup.sh. A failed build
leaves the pure-Python modules in use and says why.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from emu.core.accel import COMPILED_MODULES, GROUP, PACKAGE_ROOT, build_dir, is_built, source_path

KEEP_BUILDS = 3  # older builds (of earlier sources) are removed beyond this many


def build(out: Path, force: bool = False) -> None:
    """Compile the current sources into `out`, their build folder. A complete build
    already there is kept unless `force` (another `make setup` may have just made it,
    and running processes may be loading it)."""
    from mypyc.build import mypycify  # the builder alone needs mypy and setuptools
    from setuptools import setup

    root = PACKAGE_ROOT  # mypy finds the package (and pyproject.toml) from here
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="emu-accel-") as tmp:
        lib = Path(tmp, "lib")
        log = io.StringIO()
        cwd = os.getcwd()
        try:
            os.chdir(root)
            with contextlib.redirect_stdout(log):
                exts = mypycify([str(source_path(m).relative_to(root)) for m in COMPILED_MODULES],
                                opt_level="3", target_dir=str(Path(tmp, "c")), group_name=GROUP)
                setup(name="emu-accel", ext_modules=exts, script_args=[
                    "-q", "build_ext", "--build-lib", str(lib), "--build-temp",
                    str(Path(tmp, "obj"))])
        except (SystemExit, Exception) as exc:
            raise RuntimeError(f"mypyc build failed: {exc}\n{log.getvalue()[-3000:]}") from None
        finally:
            os.chdir(cwd)
        # Into place in one rename (the cache may be on another file system than /tmp).
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out.parent))
        shutil.copytree(lib, staging, dirs_exist_ok=True)
        if force or not is_built(out):
            shutil.rmtree(out, ignore_errors=True)  # --force, or a partial build
        try:
            staging.rename(out)
        except OSError:  # a complete build of the same sources is there
            shutil.rmtree(staging, ignore_errors=True)
    _prune(out)


def _prune(current: Path) -> None:
    tag = sys.implementation.cache_tag
    old = sorted((d for d in current.parent.glob(f"{tag}-*") if d != current),
                 key=lambda d: d.stat().st_mtime, reverse=True)
    for d in old[KEEP_BUILDS - 1:]:
        shutil.rmtree(d, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emu.core.accel_build",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="compile even if a build exists")
    ap.add_argument("--status", action="store_true",
                    help="print which modules a new process would run, and exit")
    args = ap.parse_args(argv)
    if args.status:
        from emu.core.accel import choose

        c = choose()[0]
        print(f"compiled (mypyc) from {c.reason}" if c.compiled else f"pure Python: {c.reason}")
        return 0
    out = build_dir()
    if not args.force and is_built(out):
        print(f"emu: the compiled hot-path modules are up to date ({out})")
        return 0
    t0 = time.monotonic()
    try:
        build(out, force=args.force)
    except (RuntimeError, ImportError, OSError) as exc:
        print(f"emu: the hot-path modules stay pure Python: {exc}", file=sys.stderr)
        return 1
    print(f"emu: {len(COMPILED_MODULES)} hot-path modules compiled with mypyc in {out} "
          f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
