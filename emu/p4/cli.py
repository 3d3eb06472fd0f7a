"""`python -m emu.p4 <command>`: the embedded P4 target's command line.

Commands (each registered from COMMANDS, like emu/cli.py's groups):

    compile PROG.p4 [-I DIR] [-D NAME[=VAL]] [-o DIR] [--p4runtime-files FILE[,FILE]]
        writes DIR/<prog>.p4info.txtpb (or the --p4runtime-files, format by
        extension: .txt/.txtpb text, .bin binary, .json JSON), the target's
        artefact DIR/<prog>.emu.json (a compiled program) and DIR/<prog>.p4src.json
        (the sources the program reads: the device config a switch takes from any
        P4Runtime client)
    check PROG.p4 [-I DIR] [-D NAME[=VAL]]
        front end only: "ok" or gcc-style diagnostics
    stf [-I DIR] [-D NAME[=VAL]] PROG.p4 TEST.stf
        runs a p4c-style STF packet test

Exit codes: 0 success, 1 P4 errors or failed expectations, 2 usage errors and
STF syntax errors. A register function adds one subparser and sets
`func=handler`; handlers return the exit code. Heavy modules (code generator,
STF runner) are imported inside handlers so `--help` stays fast and a
missing piece only affects its own command.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emu.core.cmdline import command_parser, run_command
from emu.p4.bundle import SUFFIX as BUNDLE_SUFFIX
from emu.p4.bundle import source_bundle
from emu.p4.frontend.diagnostics import P4Error

COMMANDS: list[tuple[str, str]] = [
    # (command, "module:function" registering its subparser)
    ("compile", "emu.p4.cli:register_compile"),
    ("check", "emu.p4.cli:register_check"),
    ("stf", "emu.p4.cli:register_stf"),
]

P4INFO_SUFFIX = ".p4info.txtpb"
ARTEFACT_SUFFIX = ".emu.json"


class UsageError(Exception):
    """A bad command line argument found after parsing (exit 2)."""


# ------------------------------------------------------------------ shared options


def _add_frontend_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-I", dest="include_dirs", metavar="DIR", action="append", default=[],
                   help="add DIR to the #include search path (repeatable)")
    p.add_argument("-D", dest="defines", metavar="NAME[=VAL]", action="append", default=[],
                   help="define a preprocessor macro (repeatable)")


def parse_defines(items: Sequence[str]) -> dict[str, str]:
    """-D NAME[=VAL] as cpp reads them: NAME alone means 1."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise UsageError(f"bad -D argument {item!r}: expected NAME or NAME=VALUE")
        out[name] = value if sep else "1"
    return out


def _load(args: argparse.Namespace) -> Any:
    from emu.p4.frontend import load_program

    prog = load_program(args.program, tuple(args.include_dirs), parse_defines(args.defines))
    for w in prog.warnings:
        print(w, file=sys.stderr)
    return prog


# ------------------------------------------------------------------ compile


def register_compile(sub: Any) -> None:
    p = sub.add_parser("compile", help="compile a P4 program: P4Info and the embedded target's artefact")
    p.add_argument("program", metavar="PROG.p4")
    _add_frontend_options(p)
    p.add_argument("-o", "--output-dir", metavar="DIR", default=".",
                   help="directory for <prog>.p4info.txtpb, <prog>.emu.json and "
                        "<prog>.p4src.json (default: .)")
    p.add_argument("--p4runtime-files", metavar="FILE[,FILE...]",
                   help="write the P4Info to these files instead (format by extension: "
                        ".txt/.txtpb text, .bin binary, .json JSON)")
    p.add_argument("--no-target", action="store_true",
                   help="only write the P4Info, not the target artefact and source bundle")
    p.set_defaults(func=cmd_compile)


def cmd_compile(args: argparse.Namespace) -> int:
    from emu.p4.p4info import generate_p4info, write_p4info

    stem = Path(args.program).name.removesuffix(".p4")
    out_dir = Path(args.output_dir)
    if args.p4runtime_files:
        p4info_paths = [Path(f) for f in args.p4runtime_files.split(",") if f]
        if not p4info_paths:
            raise UsageError("--p4runtime-files needs at least one file name")
    else:
        p4info_paths = [out_dir / (stem + P4INFO_SUFFIX)]
    prog = _load(args)
    p4info = generate_p4info(prog)
    artefact = bundle = b""
    if not args.no_target:
        try:
            from emu.p4 import compile_file
        except ImportError as exc:  # the code generator is optional for P4Info-only use
            print(f"error: the embedded target's compiler is not available ({exc}); "
                  "use --no-target for the P4Info only", file=sys.stderr)
            return 1
        compiled = compile_file(args.program, tuple(args.include_dirs), parse_defines(args.defines))
        artefact = compiled.to_bytes()
        bundle = json.dumps(source_bundle(args.program, tuple(args.include_dirs),
                                          parse_defines(args.defines))).encode()
    for path in p4info_paths:
        write_p4info(p4info, path)
        print(f"wrote {path}")
    if not args.no_target:
        out_dir.mkdir(parents=True, exist_ok=True)
        for target, data in ((out_dir / (stem + ARTEFACT_SUFFIX), artefact),
                             (out_dir / (stem + BUNDLE_SUFFIX), bundle)):
            target.write_bytes(data)
            print(f"wrote {target}")
    return 0


# ------------------------------------------------------------------ check


def register_check(sub: Any) -> None:
    p = sub.add_parser("check", help="run the front end only: 'ok' or diagnostics")
    p.add_argument("program", metavar="PROG.p4")
    _add_frontend_options(p)
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    _load(args)
    print("ok")
    return 0


# ------------------------------------------------------------------ stf


def register_stf(sub: Any) -> None:
    p = sub.add_parser("stf", help="run a p4c-style STF packet test against a program")
    _add_frontend_options(p)
    p.add_argument("program", metavar="PROG.p4")
    p.add_argument("stf", metavar="TEST.stf")
    p.set_defaults(func=cmd_stf)


def cmd_stf(args: argparse.Namespace) -> int:
    from emu.p4.stf.model import StfError

    try:
        from emu.p4.stf.runner import run_stf
    except ImportError as exc:
        print(f"error: the STF runner is not available ({exc})", file=sys.stderr)
        return 1
    if not Path(args.stf).is_file():
        raise UsageError(f"cannot open STF file '{args.stf}'")
    try:
        result = run_stf(args.program, args.stf, tuple(args.include_dirs), parse_defines(args.defines))
    except StfError as exc:
        print(f"{exc.filename}:{exc.line}: error: {exc.message}", file=sys.stderr)
        return 2
    if result.ok:
        print("ok")
        return 0
    report = getattr(result, "report", "") or getattr(result, "diff", "")
    print(report.rstrip() if report else "\n".join(getattr(result, "problems", [])) or "failed")
    return 1


# ------------------------------------------------------------------ entry


def build_parser() -> argparse.ArgumentParser:
    return command_parser("python -m emu.p4",
                          "Embedded v1model P4 target: compile, check, STF tests.", "COMMAND",
                          COMMANDS)


def _p4_error(_parser: argparse.ArgumentParser, exc: P4Error) -> int:
    # Positions and source lines say it all; a traceback would not help.
    print(exc, file=sys.stderr)
    n = len(exc.diagnostics)
    print(f"{n} error{'s' if n != 1 else ''}", file=sys.stderr)
    return 1


def _usage_error(parser: argparse.ArgumentParser, exc: UsageError) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {exc}", file=sys.stderr)
    return 2


def _os_error(_parser: argparse.ArgumentParser, exc: OSError) -> int:
    print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), argv,
                       {P4Error: _p4_error, UsageError: _usage_error, OSError: _os_error})
