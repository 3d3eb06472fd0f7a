"""Command-line plumbing shared by every front end (`emu`, `python -m emu.p4`, ...).

A command group lives with its library and contributes a `register(subparsers)`
function named as "module:function"; front ends import the registrars lazily, so a
library's front end does not import the layers above it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any


def register_groups(sub: Any, groups: Sequence[tuple[str, str]]) -> None:
    """Call each "module:function" registrar with the subparsers object (lazy imports)."""
    for _name, target in groups:
        module, _, func = target.partition(":")
        getattr(importlib.import_module(module), func)(sub)
