"""Command-line plumbing shared by every front end (`emu`, `python -m emu.p4`, ...).

A command group lives with its library and contributes a `register(subparsers)`
function named as "module:function"; front ends import the registrars lazily, so a
library's front end does not import the layers above it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence


def command_parser(prog: str, description: str, metavar: str,
                   groups: Sequence[tuple[str, str]]) -> argparse.ArgumentParser:
    """A front end's parser: one required sub-command (named `metavar` in the help, kept
    as args.<metavar lowercased>) per "module:function" registrar in `groups`, each
    called with the subparsers object (imported lazily)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    sub = parser.add_subparsers(dest=metavar.lower(), metavar=metavar, required=True)
    for _name, target in groups:
        module, _, func = target.partition(":")
        getattr(importlib.import_module(module), func)(sub)
    return parser
