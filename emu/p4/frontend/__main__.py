"""Check P4 programs from the command line: ``python -m emu.p4.frontend prog.p4 [-I dir] [-D X=1]``.

Prints gcc-style diagnostics and exits 1 on errors, so editors and CI can use it.
"""

from __future__ import annotations

import argparse
import sys

from . import P4Error, load_program


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emu.p4.frontend", description=__doc__)
    ap.add_argument("files", nargs="+", help="P4_16 source files")
    ap.add_argument("-I", dest="include", action="append", default=[], help="include directory")
    ap.add_argument("-D", dest="define", action="append", default=[], help="NAME[=VALUE] macro")
    args = ap.parse_args(argv)
    defines = dict((d.split("=", 1) + ["1"])[:2] for d in args.define)
    status = 0
    for f in args.files:
        try:
            cp = load_program(f, args.include, defines)
        except P4Error as e:
            print(e, file=sys.stderr)
            status = 1
            continue
        for w in cp.warnings:
            print(w.render(), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
