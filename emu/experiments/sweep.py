"""`emu experiment FILE.yaml`: every point of an experiment, in parallel, resumable.

Points run as child processes on this machine (`--jobs N`) or as Ray tasks (`--ray
ADDRESS`); either way each lands in results/experiments/<name>/points/<id>/ and a
point that fails, crashes or times out is recorded as failed with its reason while the
sweep goes on. A point whose point.json says done, and whose metrics.json reads, is not
run again.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from emu.targets.proc import pdeathsig_preexec
from emu.topo import Fabric

from .experiment import Experiment, Point
from .points import POINT_FILE, Job, Outcome, is_done, read_outcome
from .results import write_text_atomic

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Finished:
    point: Point
    status: str  # done | failed
    reason: str
    wall_s: float


class Backend(Protocol):
    slots: int

    def start(self, point: Point, out_dir: Path) -> Job: ...
    def poll(self, job: Job) -> Outcome | None: ...
    def kill(self, job: Job) -> None: ...
    def close(self) -> None: ...


@dataclass
class LocalBackend:
    """Each point a child process (its own session: a timeout kills all it started)."""

    slots: int
    exp: Experiment
    models: dict[str, Fabric]

    def start(self, point: Point, out_dir: Path) -> Job:
        log = (out_dir / "log.txt").open("wb")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
        # SIGTERM when this process dies, however (SIGKILL runs no `finally` to kill the
        # workers): a real-time point tears its fabric down on it, a virtual one ends.
        proc = subprocess.Popen([sys.executable, "-m", "emu.experiments.points", str(out_dir)],
                                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True,
                                preexec_fn=pdeathsig_preexec(signal.SIGTERM))
        assert proc.stdin is not None
        proc.stdin.write(pickle.dumps((point.config, self.models[point.config.topo], point.id,
                                       point.options())))
        proc.stdin.close()
        log.close()
        return Job(out_dir, proc=proc)

    def poll(self, job: Job) -> Outcome | None:
        assert job.proc is not None
        rc = job.proc.poll()
        if rc is None:
            return None
        outcome = read_outcome(job.out_dir)
        if outcome is not None:
            return outcome
        tail = _last_line(job.out_dir / "log.txt")
        return {"status": "failed", "reason": f"worker exited with code {rc}"
                + (f": {tail}" if tail else "")}

    def kill(self, job: Job) -> None:
        proc = job.proc
        assert proc is not None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def close(self) -> None:
        pass


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:300] if lines else ""


@dataclass
class Sweep:
    exp: Experiment
    out: Path
    backend: Backend
    force: bool = False
    on_change: Callable[[Sweep], None] = lambda s: None
    pending: list[Point] = field(default_factory=list)
    running: dict[str, tuple[Point, Job, float]] = field(default_factory=dict)
    finished: list[Finished] = field(default_factory=list)
    skipped: int = 0
    started_at: float = field(default_factory=time.monotonic)

    @property
    def failed(self) -> int:
        return sum(f.status == "failed" for f in self.finished)

    @property
    def done(self) -> int:
        return sum(f.status == "done" for f in self.finished)

    def run(self, poll_s: float = 0.1) -> list[Finished]:
        self.pending = []
        for p in self.exp.points:
            if is_done(self.out / "points" / p.dir_name) and not self.force:
                self.skipped += 1
            else:
                self.pending.append(p)
        self.on_change(self)
        try:
            while self.pending or self.running:
                while self.pending and len(self.running) < self.backend.slots:
                    self._start(self.pending.pop(0))
                    self.on_change(self)
                if not self._reap():
                    time.sleep(poll_s)
        finally:
            for _p, handle, _t in self.running.values():
                self.backend.kill(handle)
            self.backend.close()
        return self.finished

    def _start(self, point: Point) -> None:
        d = self.out / "points" / point.dir_name
        if d.exists():
            shutil.rmtree(d)  # a failed or interrupted earlier attempt
        d.mkdir(parents=True)
        self.running[point.id] = (point, self.backend.start(point, d), time.monotonic())

    def _reap(self) -> bool:
        changed = False
        for pid, (point, handle, t0) in list(self.running.items()):
            outcome = self.backend.poll(handle)
            if outcome is None and time.monotonic() - t0 > self.exp.timeout_s:
                self.backend.kill(handle)
                outcome = {"status": "failed",
                           "reason": f"timed out after {self.exp.timeout_s:g} s"}
            if outcome is None:
                continue
            del self.running[pid]
            self._record(point, outcome, time.monotonic() - t0)
            changed = True
        if changed:
            self.on_change(self)
        return changed

    def _record(self, point: Point, outcome: Outcome, wall_s: float) -> None:
        d = self.out / "points" / point.dir_name
        d.mkdir(parents=True, exist_ok=True)
        status, reason = outcome.get("status", "failed"), outcome.get("reason", "")
        rec = {"id": point.id, "configuration": point.configuration, "seed": point.seed,
               "options": point.options(), "status": status, "reason": reason,
               "run_dir": outcome.get("run_dir", ""), "wall_s": round(wall_s, 3)}
        write_text_atomic(d / POINT_FILE, json.dumps(rec, indent=1, sort_keys=True) + "\n")
        self.finished.append(Finished(point, status, reason, wall_s))

    def eta_s(self) -> float | None:
        walls = [f.wall_s for f in self.finished]
        if not walls:
            return None
        left = len(self.pending) + len(self.running)
        return sum(walls) / len(walls) * left / max(1, self.backend.slots)


# --------------------------------------------------------------------------- command


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "experiment", help="run every point of an experiment file and report",
        description="Run a base run over a grid of options and seeds (docs/experiments.md); "
                    "write results/experiments/<name>/ with each point's results, "
                    "metrics.csv and report.md. Points already done are skipped.")
    p.add_argument("file", metavar="FILE.yaml", help="the experiment file")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="points run at once on this machine (default: the CPU count, "
                        "%(default)s)")
    p.add_argument("--real", action="store_true",
                   help="run each point on Mininet in real time, one at a time (root) "
                        "(default: virtual time)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="run each point as a task on the Ray cluster at ADDRESS ('local': "
                        "start one on this machine with --jobs CPUs) (default: off)")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="write results/experiments/<name>/ under DIR (default %(default)s)")
    p.add_argument("--force", action="store_true",
                   help="run points already done again (default: skip them)")
    p.add_argument("--check", action="store_true",
                   help="check the file, list its points and exit (default: off)")
    p.add_argument("--report-only", action="store_true",
                   help="rebuild metrics.csv and report.md from the points done, run "
                        "nothing (default: off)")
    p.set_defaults(func=cmd_experiment)


def cmd_experiment(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        print("emu experiment: --jobs must be >= 1", file=sys.stderr)
        return 2
    if args.real and args.ray:
        print("emu experiment: --real runs on this machine's Mininet, one point at a time; "
              "it cannot go with --ray", file=sys.stderr)
        return 2
    if args.check:
        from .experiment import load_experiment

        exp = load_experiment(args.file, real=args.real)  # TopologyError: printed by emu.cli
        print(f"{args.file}: {len(exp.points)} points "
              f"({len(exp.points) // len(exp.seeds)} configurations x {len(exp.seeds)} seeds)")
        for pt in exp.points:
            print(f"  {pt.id}")
        return 0
    return run_experiment_file(args.file, results=Path(args.results), jobs=args.jobs,
                               real=args.real, ray=args.ray, force=args.force,
                               report_only=args.report_only)


def run_experiment_file(file: str | Path, *, results: Path = Path("results"),
                        jobs: int = os.cpu_count() or 1, real: bool = False,
                        ray: str | None = None, force: bool = False,
                        report_only: bool = False) -> int:
    """`emu experiment FILE`: check the file, run the points not done yet, write the
    report; the exit code (0: every point done). Raises TopologyError for a bad file."""
    from .experiment import load_experiment
    from .report_md import write_report

    exp = load_experiment(file, results_root=results, real=real)
    out = results / "experiments" / exp.name
    if not report_only:
        rc = run_sweep(exp, out, jobs=1 if real else jobs, ray=ray, force=force)
        if rc is not None:
            return rc
    try:
        report, bound = write_report(out, exp)
    except OSError as exc:
        print(f"emu experiment: cannot write the report under {out}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    if bound:
        print(f"emu experiment: {len(bound)} point(s) ran CPU-bound: their figures reflect "
              "this machine's CPU, not only the modelled network (report.md, each point's "
              "summary.txt)", file=sys.stderr)
    print(f"emu experiment: report in {report}")
    return 0 if all(is_done(out / "points" / p.dir_name) for p in exp.points) else 1


def run_sweep(exp: Experiment, out: Path, *, jobs: int, ray: str | None = None,
              force: bool = False) -> int | None:
    """Run the points of `exp` into `out`; None, or an exit code if it could not."""
    from emu.topo import load_topology

    try:
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(exp.file, out / "experiment.yaml")
    except OSError as exc:  # not a folder, no permission, read-only, full
        print(f"emu experiment: cannot write under {out}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    models = {t: load_topology(t) for t in {p.config.topo for p in exp.points}}
    backend: Backend
    if ray:
        from .sweep_ray import RayBackend, RayUnavailable

        try:
            backend = RayBackend.connect(ray, jobs, models)
        except RayUnavailable as exc:
            print(f"emu experiment: {exc}", file=sys.stderr)
            return 1
        if backend.exposed:
            print("emu experiment: warning: the local Ray instance's servers listen on "
                  f"every interface: {backend.exposed}", file=sys.stderr)
    else:
        backend = LocalBackend(jobs, exp, models)
    view = SweepView(len(exp.points))
    sweep = Sweep(exp, out, backend, force=force, on_change=view.update)
    try:
        with view:
            sweep.run()
    except KeyboardInterrupt:
        print("emu experiment: interrupted; points done so far are kept (run it again to "
              "go on)", file=sys.stderr)
        return 130
    except OSError as exc:  # its own records: disk full, folder removed; points stopped
        print(f"emu experiment: cannot write under {out}: {exc.strerror or exc}; points "
              "done so far are kept (run it again to go on)", file=sys.stderr)
        return 1
    if sweep.skipped:
        print(f"emu experiment: {sweep.skipped} point{'s' if sweep.skipped > 1 else ''} "
              "already done, not run again (--force runs them)")
    for f in sweep.finished:
        if f.status != "done":
            print(f"emu experiment: {f.point.id} failed: {f.reason}", file=sys.stderr)
    return None


class SweepView:
    """Points done, running and failed with an ETA: a rich progress bar on a terminal,
    a line per finished point otherwise."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stdout.isatty()
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.reported = 0

    def __enter__(self) -> SweepView:
        if self.tty:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                     TextColumn("{task.fields[state]}"), TimeElapsedColumn())
            self.task = self.progress.add_task("points", total=self.total, state="")
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def update(self, s: Sweep) -> None:
        eta = s.eta_s()
        state = (f"{s.done + s.skipped}/{self.total} done ({s.skipped} skipped), "
                 f"{len(s.running)} running, {s.failed} failed, ETA "
                 + ("-" if eta is None else f"{eta:.0f} s"))
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, completed=s.done + s.skipped + s.failed, state=state)
            return
        for f in s.finished[self.reported:]:
            extra = f": {f.reason}" if f.reason else ""
            print(f"[{f.status}] {f.point.id} ({f.wall_s:.1f} s){extra} | {state}", flush=True)
        self.reported = len(s.finished)
