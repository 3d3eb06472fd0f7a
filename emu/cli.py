"""Command-line front end: `emu <group> <command> ...`.

Each command group lives with its library and contributes a `register(subparsers)`
function; add it to COMMAND_GROUPS to expose it. A register function adds one
subparser and sets `func=handler` on every leaf command; a handler takes the parsed
args and returns the exit code. Keep register modules cheap to import (import heavy
dependencies inside handlers) since every group is registered on each invocation.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from emu import __version__
from emu.core.cmdline import command_parser, run_command
from emu.topo.errors import TopologyError

COMMAND_GROUPS: list[tuple[str, str]] = [
    # (group name, "module:function" registering its subparser)
    ("topo", "emu.topo.commands:register"),
    ("run", "emu.experiments.commands:register"),
    ("calibrate", "emu.experiments.calibrate:register"),
    ("incast", "emu.experiments.incast:register"),
    ("crosscheck", "emu.crosscheck:register"),
    ("experiment", "emu.experiments.sweep:register"),
]


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("emu", "Packet-level emulator of RoCEv2 fabrics with P4 switches.",
                            "GROUP", COMMAND_GROUPS)
    parser.add_argument("--version", action="version", version=f"emu {__version__}")
    return parser


def _topology_error(_parser: argparse.ArgumentParser, exc: TopologyError) -> int:
    # User errors in topology files: the positions say it all, a traceback would not.
    # Every command (`emu run`, `emu topo check`, ...) reports them the same way.
    print(exc.report(), file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), argv, {TopologyError: _topology_error})


if __name__ == "__main__":
    sys.exit(main())
