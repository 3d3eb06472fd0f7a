"""Command-line plumbing shared by every front end (`emu`, `python -m emu.p4`, ...).

A command group lives with its library and contributes a `register(subparsers)`
function named as "module:function"; front ends import the registrars lazily, so a
library's front end does not import the layers above it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


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


# How a front end reports one kind of user error: prints it, returns the exit code.
ErrorReport = Callable[[argparse.ArgumentParser, Any], int]


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
                reports: Mapping[type[Exception], ErrorReport]) -> int:
    """Parse `argv` and run the chosen command's handler (args.func): its exit code.

    An exception of a type in `reports` is a user error a traceback would not help
    with: its report prints it and gives the exit code. Ctrl-C exits 130."""
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except tuple(reports) as exc:
        report = next(r for kind, r in reports.items() if isinstance(exc, kind))
        return report(parser, exc)
