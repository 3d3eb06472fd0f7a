"""Batch runner behind vagrant/run-experiments.sh (see there for the command line).

FILE.yaml:
    name: lb-compare                 # batch name (default: the file's stem)
    defaults:                        # any `emu run` option, per run overridable
      topo: clos4
      target: bmv2
      cc: dcqcn
      recovery: gbn
      workload: allreduce
    timeout_s: 1800                  # per run (default 3600)
    repeat: 1                        # every run this many times (run names get -r1, -r2..)
    runs:
      - name: ecmp
        lb: ecmp
      - name: flowlet
        lb: flowlet
        args: ["--cli"]              # extra arguments, verbatim

A run's results are whatever `emu run` adds under results/ while it runs (new
entries are moved into the run's folder), plus log.txt, command.txt and exit code.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = ("lb", "cc", "recovery", "workload", "target")  # `emu run` flags, in order
KNOWN = {"name", "topo", "args", *OPTIONS}


class BatchError(ValueError):
    pass


def load_batch(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise BatchError(f"{path}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list) or not doc["runs"]:
        raise BatchError(f"{path}: expected a mapping with a non-empty `runs` list")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise BatchError(f"{path}: `defaults` must be a mapping")
    repeat = int(doc.get("repeat", 1))
    if repeat < 1:
        raise BatchError(f"{path}: repeat must be at least 1")
    runs: list[dict[str, Any]] = []
    for i, run in enumerate(doc["runs"]):
        if not isinstance(run, dict):
            raise BatchError(f"{path}: run {i + 1} is not a mapping")
        merged = {**defaults, **run}
        unknown = sorted(set(merged) - KNOWN)
        if unknown:
            raise BatchError(f"{path}: run {i + 1}: unknown keys {unknown} "
                             f"(known: {sorted(KNOWN)})")
        if not merged.get("topo"):
            raise BatchError(f"{path}: run {i + 1}: no topo (set it in defaults or the run)")
        merged.setdefault("name", f"run{i + 1}")
        for r in range(1, repeat + 1):
            runs.append({**merged, "name": merged["name"] + (f"-r{r}" if repeat > 1 else "")})
    names = [r["name"] for r in runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BatchError(f"{path}: duplicate run names {dup}")
    return {"name": str(doc.get("name") or path.stem), "runs": runs,
            "timeout_s": float(doc.get("timeout_s", 3600))}


def command(run: dict[str, Any], python: str = sys.executable) -> list[str]:
    cmd = [python, "-m", "emu", "run", str(run["topo"])]
    for opt in OPTIONS:
        if run.get(opt) is not None:
            cmd += [f"--{opt}", str(run[opt])]
    return cmd + [str(a) for a in run.get("args", [])]


def run_batch(batch: dict[str, Any], results: Path, collect: Path | None,
              only: set[str] | None = None, python: str = sys.executable) -> int:
    out_dir = results / "experiments" / batch["name"]
    out_dir.mkdir(parents=True, exist_ok=True)
    summary: list[dict[str, Any]] = []
    failed = 0
    for run in batch["runs"]:
        if only and run["name"] not in only:
            continue
        run_dir = out_dir / run["name"]
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        cmd = command(run, python)
        (run_dir / "command.txt").write_text(" ".join(cmd[2:]) + "\n")
        before = set(results.iterdir())
        print(f"run-experiments: {run['name']}: {' '.join(cmd[2:])}", flush=True)
        t0 = time.monotonic()
        with open(run_dir / "log.txt", "wb") as log:
            try:
                rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT),
                                    timeout=batch["timeout_s"], check=False).returncode
            except subprocess.TimeoutExpired:
                rc = 124
                log.write(f"\nrun-experiments: timed out after {batch['timeout_s']:g} s\n"
                          .encode())
        elapsed = time.monotonic() - t0
        for new in sorted(set(results.iterdir()) - before):
            shutil.move(str(new), str(run_dir / new.name))
        (run_dir / "exit_code").write_text(f"{rc}\n")
        summary.append({"name": run["name"], "command": cmd[2:], "exit_code": rc,
                        "seconds": round(elapsed, 1)})
        failed += rc != 0
        print(f"run-experiments: {run['name']}: exit {rc} after {elapsed:.0f} s", flush=True)
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        if collect is not None:
            dest = collect / "experiments" / batch["name"]
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copytree(out_dir, dest, dirs_exist_ok=True)
    where = collect / "experiments" / batch["name"] if collect else out_dir
    print(f"run-experiments: {len(summary) - failed}/{len(summary)} runs succeeded; "
          f"results in {where}")
    return 0 if failed == 0 else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="run-experiments.sh",
                                description="Run a YAML list of `emu run`s unattended.")
    p.add_argument("file", type=Path, metavar="FILE.yaml")
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    p.add_argument("--collect", type=Path, metavar="DIR",
                   help="copy the batch's results here after every run")
    p.add_argument("--only", metavar="NAME,...", help="run only these runs")
    p.add_argument("--results", type=Path, default=ROOT / "results", metavar="DIR")
    args = p.parse_args(argv)
    try:
        batch = load_batch(args.file)
    except BatchError as exc:
        print(f"run-experiments: {exc}", file=sys.stderr)
        return 2
    only = {n for n in args.only.split(",") if n} if args.only else None
    if only:
        unknown = sorted(only - {r["name"] for r in batch["runs"]})
        if unknown:
            print(f"run-experiments: no runs named {unknown}", file=sys.stderr)
            return 2
    if args.dry_run:
        for run in batch["runs"]:
            if not only or run["name"] in only:
                print(f"{run['name']}: emu run " + " ".join(command(run)[4:]))
        return 0
    args.results.mkdir(parents=True, exist_ok=True)
    return run_batch(batch, args.results, args.collect, only)


if __name__ == "__main__":
    sys.exit(main())
