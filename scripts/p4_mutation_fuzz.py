"""Mutation fuzzing of the embedded P4 target (a maintainer's tool, not part of the tests).

Takes v1model programs (p4c's testdata/p4_16_samples, or any folder), mutates each a
little -- tokens deleted, repeated or swapped (`--mode syntax`), or number literals
replaced by widths and values near the edges (`--mode numbers`, which keeps most
mutants compiling) -- and compiles every mutant with the embedded target:

- a P4Error (file:line:column) is the expected answer to a bad program;
- any other exception is a crash of the compiler (saved as crash-N.p4);
- a mutant that compiles gets its P4Info generated and random frames sent through an
  in-process switch (with random table entries with `--entries`); a pipeline error that
  names a Python exception (NameError, TypeError, ...) is a code generator bug (saved as
  codegen-N.p4), and so is an exception while the switch starts;
- with `--against-bmv2` (root, p4c and BMv2 on PATH), a mutant that p4c-bm2-ss compiles
  too is crosschecked against BMv2 (`emu crosscheck`'s comparison), and one with a
  difference is saved as diff-N.p4.

    python scripts/p4_mutation_fuzz.py testdata/p4_16_samples --mode numbers --count 500

Prints one line per finding and a summary; exits 1 if anything was found.
"""

from __future__ import annotations

import argparse
import logging
import random
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emu import crosscheck as X  # noqa: E402
from emu.crosscheck.sides import observed_keys, run_in_process  # noqa: E402
from emu.p4.frontend import P4Error, load_program  # noqa: E402
from emu.p4.p4info import generate_p4info  # noqa: E402
from emu.p4.target.program import compile_checked  # noqa: E402

TOKEN = re.compile(r"\w+|\S")
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
EDGE_VALUES = ["0", "1", "2", "3", "7", "8", "9", "15", "16", "17", "31", "32", "33", "63", "64",
               "65", "127", "128", "255", "256", "4294967296", "8w256", "1w2"]
INSERTS = ["{", "}", "(", ")", ";", "<", ">", "[", "]", "..", "&&&", "++", "bit<0>", "int<1>",
           "varbit<8>", "header", "struct", "apply", "return", "exit", "transition", "default"]
PORTS = [0, 1, 2, 3]
PYTHON_ERROR = re.compile(r"(NameError|AttributeError|TypeError|KeyError|IndexError|"
                          r"UnboundLocalError|ValueError|AssertionError|ZeroDivisionError)")


def mutate(text: str, rng: random.Random, mode: str) -> str:
    if mode == "numbers":
        nums = [m for m in NUMBER.finditer(text)
                if not text[text.rfind("\n", 0, m.start()) + 1:m.start()].lstrip().startswith(
                    ("#", "//", "*"))]
        if nums:
            m = rng.choice(nums)
            return text[:m.start()] + rng.choice(EDGE_VALUES) + text[m.end():]
        return text
    toks = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
    if not toks:
        return text
    a, b = toks[rng.randrange(len(toks))]
    c, d = toks[rng.randrange(len(toks))]
    return rng.choice([
        lambda: text[:a] + text[b:],                          # delete a token
        lambda: text[:b] + " " + text[a:b] + text[b:],        # repeat it
        lambda: text[:a] + text[c:d] + text[b:],              # replace it by another
        lambda: text[:a],                                     # cut the program there
        lambda: text[:a] + f" {rng.choice(INSERTS)} " + text[a:],
    ])()


class PipelineErrors(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "pipeline error" in message and PYTHON_ERROR.search(message):
            self.messages.append(message)


def programs(folder: Path) -> list[Path]:
    out = []
    for p in sorted(folder.glob("*.p4")):
        if not p.is_file():  # a dangling link
            continue
        text = p.read_text(errors="replace")
        if "v1model.p4" in text and not re.search(r"\brandom\s*[<(]", text):
            out.append(p)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="a folder of v1model programs")
    ap.add_argument("--mode", choices=("syntax", "numbers"), default="numbers")
    ap.add_argument("--count", type=int, default=200, help="mutants (default %(default)s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--entries", action="store_true", help="random table entries too")
    ap.add_argument("--against-bmv2", action="store_true",
                    help="crosscheck mutants that p4c-bm2-ss compiles against BMv2 (root)")
    ap.add_argument("--out", type=Path, default=None, help="where findings are saved")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    progs = programs(args.folder)
    if not progs:
        print(f"no v1model programs in {args.folder}", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="p4fuzz-"))
    out.mkdir(parents=True, exist_ok=True)
    errors = PipelineErrors()
    logging.getLogger("emu.p4").addHandler(errors)
    logging.getLogger("emu.p4").propagate = False
    packets = X.generate_packets(30, PORTS, seed=args.seed)
    compiled = findings = 0
    seen: set[tuple[str, str]] = set()

    def found(kind: str, n: int, text: str, what: str) -> None:
        nonlocal findings
        key = re.sub(r"'[^']*'|\d+", "_", what)[:120]
        if (kind, key) in seen:
            return
        seen.add((kind, key))
        findings += 1
        (out / f"{kind}-{n}.p4").write_text(text)
        print(f"{kind} {n}: {what}", flush=True)

    for n in range(args.count):
        source = rng.choice(progs)
        text = source.read_text(errors="replace")
        for _ in range(rng.randrange(1, 3)):
            text = mutate(text, rng, args.mode)
        work = out / "work"
        work.mkdir(exist_ok=True)
        path = work / source.name
        path.write_text(text)
        try:
            checked = load_program(str(path), [str(args.folder)])
            info = generate_p4info(checked)
            program = compile_checked(checked, path.name)
        except P4Error:
            continue
        except Exception as exc:  # the compiler's own failure: the finding
            found("crash", n, text, f"{source.name}: {type(exc).__name__}: {exc} "
                  f"({traceback.extract_tb(exc.__traceback__)[-1].name})")
            continue
        compiled += 1
        setup = X.Programming.entries_only(PORTS)
        errors.messages.clear()
        try:
            if args.entries:
                setup = X.with_random_entries(setup, info, n,
                                              observed=observed_keys(program, setup, packets))
            run_in_process(program, setup, packets, (), skip=())
        except Exception as exc:
            found("codegen", n, text, f"{source.name}: switch: {type(exc).__name__}: {exc}")
            continue
        for message in errors.messages[:1]:
            found("codegen", n, text, f"{source.name}: {message}")
        if args.against_bmv2:
            found_diff = crosscheck(path, args.folder, packets, n)
            if found_diff:
                found("diff", n, text, f"{source.name}: {found_diff}")
    shutil.rmtree(out / "work", ignore_errors=True)
    print(f"{args.count} mutants ({args.mode}): {compiled} compiled, {findings} findings; "
          f"saved in {out}")
    return 1 if findings else 0


def crosscheck(path: Path, folder: Path, packets: list[X.Packet], n: int) -> str | None:
    build = path.parent / f"build{n}"
    build.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["p4c-bm2-ss", "-I", str(folder), "-o", str(build / "x.json"), str(path)],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        return None
    try:
        rep = X.crosscheck(path, [folder], X.Programming.entries_only(PORTS), packets,
                           build_dir=build, settle_s=0.03, random_entries=n)
    except Exception as exc:
        # BMv2 aborting on a frame or refusing the pipeline, or p4c failing an assertion
        # of its own while it writes the P4Info, is theirs, not a difference
        theirs = ("exited", "refused the pipeline", "Compiler Bug")
        return None if any(t in str(exc) for t in theirs) else f"crosscheck: {exc}"
    return rep.differences[0] if rep.differences else None


if __name__ == "__main__":
    sys.exit(main())
