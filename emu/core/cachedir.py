"""Where the emulator keeps files between runs (calibration, compiled programs): the
XDG cache directory, overridable per kind by an environment variable."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def user_cache_path(name: str, override_var: str,
                    env: Mapping[str, str] | None = None) -> Path:
    """`$override_var` if set, else `$XDG_CACHE_HOME/emu/<name>`, else
    `~/.cache/emu/<name>`."""
    e = os.environ if env is None else env
    if e.get(override_var):
        return Path(e[override_var])
    base = Path(e["XDG_CACHE_HOME"]) if e.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "emu" / name
