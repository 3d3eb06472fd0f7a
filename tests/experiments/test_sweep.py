"""`emu experiment`: points run in worker processes (or Ray tasks) into one folder,
failures and timeouts recorded, resume, the same bytes every time, the report."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import ipaddress
import json
import os
from pathlib import Path

import pytest

from emu.cli import main
from emu.experiments.experiment import Point, load_experiment
from emu.experiments.fct import size_bucket
from emu.experiments.metrics import FlowResult
from emu.experiments.points import flow_slowdowns
from emu.experiments.sweep import LocalBackend, Sweep
from emu.topo import load_topology
from tests.conftest import needs_root

from .experiment_files import metrics_files

pytestmark = pytest.mark.slow

SMALL = """\
name: small
description: two LB modes, 16 KB permutation
base: {topology: clos4, workload: permutation, size: 16K, recovery: sr}
grid:
  lb: [ecmp, spray]
seeds: [1, 2]
timeout: 120
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The small experiment, run once with 2 worker processes: (file, its folder)."""
    d = tmp_path_factory.mktemp("small")
    f = d / "small.yaml"
    f.write_text(SMALL)
    assert main(["experiment", str(f), "--results", str(d / "a"), "--jobs", "2"]) == 0
    return f, d / "a" / "experiments" / "small"


def test_every_point_lands_in_the_layout_with_a_report(small: tuple[Path, Path]) -> None:
    _f, out = small
    assert (out / "experiment.yaml").read_text() == SMALL
    names = sorted(p.name for p in (out / "points").iterdir())
    assert names == ["lb=ecmp,seed=1", "lb=ecmp,seed=2", "lb=spray,seed=1", "lb=spray,seed=2"]
    for n in names:
        rec = json.loads((out / "points" / n / "point.json").read_text())
        assert rec["status"] == "done" and rec["reason"] == "" and rec["id"] == n
        run = out / "points" / n / rec["run_dir"]
        assert (run / "summary.json").is_file() and (run / "flows.jsonl").is_file()
        doc = json.loads((out / "points" / n / "metrics.json").read_text())
        assert doc["metrics"]["ok"] is True and doc["metrics"]["flows_verified"] == 8
        assert "results_dir" not in doc["summary"]["run"] and "bringup_s" not in doc["summary"]
        # 16 KiB flows: every slowdown is in one bucket (the run summary's) and at least
        # the ideal
        assert list(doc["slowdown_by_size"]) == ["10KB-100KB"]
        assert [b["bucket"] for b in doc["summary"]["fct_slowdown"]] == ["10KB-100KB"]
        assert doc["metrics"]["slowdown_p50"] >= 1.0
    rows = (out / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("point,configuration,seed,status,reason,lb,")
    assert len(rows) == 5 and all(",done,," in r for r in rows[1:])
    report = (out / "report.md").read_text()
    assert "| lb=ecmp | 2 |" in report and "| lb=spray | 2 |" in report
    for stem in ("fct_slowdown", "fairness", "counters", "queue_depth"):
        assert f"](plots/{stem}.png)" in report
        assert (out / "plots" / f"{stem}.png").stat().st_size > 1000
    # spraying spreads a leaf's bytes over its uplinks evenly; ECMP does not
    spray = [json.loads((out / "points" / f"lb=spray,seed={s}" / "metrics.json").read_text())
             for s in (1, 2)]
    assert all(d["metrics"]["jain_uplinks"] > 0.9 for d in spray)


def test_rerun_skips_points_done(small: tuple[Path, Path],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    f, out = small
    before = {p: p.stat().st_mtime_ns for p in (out / "points").glob("*/point.json")}
    assert main(["experiment", str(f), "--results", str(out.parents[1]), "--jobs", "2"]) == 0
    assert "4 points already done, not run again" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in (out / "points").glob("*/point.json")} == before


def test_a_point_with_damaged_metrics_is_reported_and_run_again(
        small: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A point whose metrics.json was cut short (a killed write, a full disk) counted as
    done: the report left its configuration out of the tables without a word, and a
    re-run skipped it for ever."""
    import shutil

    f, out = small
    copy = tmp_path / "experiments" / "small"
    shutil.copytree(out, copy)
    damaged = copy / "points" / "lb=spray,seed=2" / "metrics.json"
    damaged.write_text(damaged.read_text()[:100])
    assert main(["experiment", str(f), "--results", str(tmp_path), "--report-only"]) == 1
    report = (copy / "report.md").read_text()
    assert "Points: 4, 3 done, 0 failed, 1 not run." in report
    with (copy / "metrics.csv").open() as fh:
        row = next(r for r in csv.DictReader(fh) if r["point"] == "lb=spray,seed=2")
    assert row["status"] == "not run"
    assert row["reason"] == "its metrics.json is missing or unreadable: run again"
    capsys.readouterr()
    assert main(["experiment", str(f), "--results", str(tmp_path), "--jobs", "1"]) == 0
    assert "3 points already done, not run again" in capsys.readouterr().out
    assert metrics_files(copy) == metrics_files(out)  # the same bytes as first written


def test_same_file_and_seeds_give_byte_identical_metrics(small: tuple[Path, Path],
                                                         tmp_path: Path) -> None:
    f, out = small
    assert main(["experiment", str(f), "--results", str(tmp_path), "--jobs", "1"]) == 0
    again = metrics_files(tmp_path / "experiments" / "small")
    assert again == metrics_files(out) and len(again) == 5


def test_ray_tasks_give_the_same_layout_and_bytes(small: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is an optional extra (pip install -e '.[ray]')")
    f, out = small
    # --ray local with --jobs 2: ray.init(num_cpus=2)
    assert main(["experiment", str(f), "--results", str(tmp_path), "--ray", "local",
                 "--jobs", "2"]) == 0
    ray_out = tmp_path / "experiments" / "small"
    assert metrics_files(ray_out) == metrics_files(out)
    rec = json.loads((ray_out / "points" / "lb=spray,seed=1" / "point.json").read_text())
    assert rec["status"] == "done"
    assert (ray_out / "points" / "lb=spray,seed=1" / rec["run_dir"] / "summary.json").is_file()


def _listeners(pids: set[int], netns_of: int | str = "self") -> list[str]:
    """Addresses the TCP sockets of `pids` listen on, in the namespace of `netns_of`."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    inodes.add(os.readlink(fd))
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{netns_of}/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f"socket:[{f[9]}]" in inodes:  # TCP_LISTEN
                # /proc/net/tcp*: the address as 32-bit words in host (little-endian) order
                raw = bytes.fromhex(f[1].split(":")[0])
                found.append(b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)))
    return [str(ipaddress.ip_address(a)) for a in found]


@needs_root
def test_a_local_ray_instance_listens_on_no_interface_but_loopback(
        tmp_path: Path) -> None:
    """Ray's GCS and raylet listened on every interface of the machine (with node address
    127.0.0.1): the local instance now runs in a network namespace of its own."""
    pytest.importorskip("ray", reason="Ray is an optional extra (pip install -e '.[ray]')")
    from emu.core.runstate import descendants
    from emu.experiments.sweep_ray import RayBackend

    backend = RayBackend.connect("local", 1, {})
    try:
        ray_pids = {pid for pid, _ in descendants(os.getpid())}
        gcs = [p for p in ray_pids if "gcs_server" in Path(f"/proc/{p}/cmdline").read_text()]
        assert gcs
        assert _listeners(ray_pids, gcs[0])  # its servers listen, in their namespace...
        exposed = [a for a in _listeners(ray_pids)  # ...and not in this one but on loopback
                   if not ipaddress.ip_address(a).is_loopback]
        assert exposed == []
        assert backend.exposed is None  # so no warning
    finally:
        backend.close()


def test_without_root_a_local_ray_instance_runs_with_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray", reason="Ray is an optional extra (pip install -e '.[ray]')")
    from emu.core import netns

    def refused() -> None:  # what unshare(2) answers a user without CAP_SYS_ADMIN
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(netns, "private", refused)
    f = tmp_path / "e.yaml"
    f.write_text("name: one\nbase: {topology: clos4, workload: permutation, size: 4K}\n"
                 "grid: {lb: [ecmp]}\ntimeout: 120\n")
    assert main(["experiment", str(f), "--results", str(tmp_path), "--ray", "local",
                 "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert ("warning: the local Ray instance's servers listen on every interface: a "
            "private network namespace for it needs root (Operation not permitted)") in err
    rec = json.loads((tmp_path / "experiments" / "one" / "points" / "lb=ecmp,seed=1" /
                      "point.json").read_text())
    assert rec["status"] == "done"


def test_failed_and_timed_out_points_are_recorded_and_the_sweep_goes_on(
        tmp_path: Path) -> None:
    f = tmp_path / "e.yaml"
    f.write_text("base: {topology: clos4, workload: permutation, size: 4K}\n"
                 "grid: {lb: [ecmp]}\ntimeout: 120\n")
    exp = load_experiment(f)
    good = exp.points[0]
    # a link the fabric does not have fails inside the run (the file check refuses it;
    # this point skips that check): a real failure of the point, not of the sweep
    bad_cfg = dataclasses.replace(good.config, fail_link=("leaf1", "nosuch"),
                                  fail_after_s=0.0)
    bad = Point("bad-link", (("case", "bad-link"),), bad_cfg)
    exp = dataclasses.replace(exp, points=(bad, good))
    models = {"clos4": load_topology("clos4")}
    out = tmp_path / "out"
    done = Sweep(exp, out, LocalBackend(1, exp, models)).run()
    assert [(d.point.id, d.status) for d in done] == [("bad-link", "failed"),
                                                      ("lb=ecmp,seed=1", "done")]
    rec = json.loads((out / "points" / "bad-link" / "point.json").read_text())
    assert rec["status"] == "failed" and "nosuch" in rec["reason"]
    assert "Traceback" in (out / "points" / "bad-link" / "log.txt").read_text()

    slow = dataclasses.replace(exp, points=(good,), timeout_s=0.2)
    again = Sweep(slow, tmp_path / "t", LocalBackend(1, slow, models)).run()
    assert [(d.status, d.reason) for d in again] == [("failed", "timed out after 0.2 s")]
    # a failed point runs again next time; a done one does not
    rerun = Sweep(exp, out, LocalBackend(1, exp, models))
    assert [d.point.id for d in rerun.run()] == ["bad-link"] and rerun.skipped == 1


def test_point_slowdowns_are_the_run_summarys() -> None:
    """A point's metrics took the FCT slowdown from an ideal of their own (propagation
    on the shortest path, no serialisation), 2-6% apart from the run's summary.json for
    the same flows; now they are the summary's."""
    flows = [FlowResult("a", "h1", "h3", 125_000, "", True, True, True, 0.0, 1.0, 1.0,
                        None, None, slowdown=1.25),
             FlowResult("b", "h1", "h2", 4_000, "", True, True, True, 0.0, 1.0, 1.0,
                        None, None, slowdown=3.0),
             FlowResult("c", "h1", "h2", 4_000, "", True, True, True, 0.0, 1.0, None,
                        None, None)]
    assert flow_slowdowns(flows) == [(125_000, 1.25), (4_000, 3.0)]
    assert [size_bucket(n) for n in (1, 9_999, 10_000, 1 << 20, 10**7)] == \
        ["<10KB", "<10KB", "10KB-100KB", "1MB-10MB", ">=10MB"]


def test_a_point_written_with_the_old_buckets_reads_its_summarys(tmp_path: Path) -> None:
    """Experiments binned sizes in binary buckets of their own (<=16K, ...) until they
    took the run summary's decades: a report rebuilt over such a point takes the
    decades from its summary, so old and new points compare in the same buckets."""
    import json

    from emu.experiments.points import read_metrics

    decades = [{"bucket": "10KB-100KB", "flows": 8, "p50": 1.5, "p95": 2.0, "p99": 2.5,
                "max": 2.5}]
    doc = {"metrics": {"ok": True, "cpu_bound": False},
           "slowdown_by_size": {"<=16K": {"flows": 8.0, "p50": 1.4, "p99": 2.4}},
           "summary": {"fct_slowdown": decades}}
    (tmp_path / "metrics.json").write_text(json.dumps(doc))
    m = read_metrics(tmp_path)
    assert m is not None
    assert m.slowdown_by_size == {"10KB-100KB": {"flows": 8.0, "p50": 1.5, "p99": 2.5}}
    doc["slowdown_by_size"] = {"10KB-100KB": {"flows": 8.0, "p50": 1.6, "p99": 2.6}}
    (tmp_path / "metrics.json").write_text(json.dumps(doc))
    m = read_metrics(tmp_path)
    assert m is not None and m.slowdown_by_size["10KB-100KB"]["p50"] == 1.6  # new: as stored


@pytest.mark.usefixtures("ctrl_c")
def test_a_point_whose_run_was_interrupted_says_so_and_runs_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A point stopped by a signal (its worker gets SIGTERM when the sweep is stopped)
    was recorded as "incomplete: 0/8 flows delivered", as if the fabric had lost them;
    and had its flows all finished, as done, and never run again."""
    import signal

    from emu.experiments.config import RunConfig
    from emu.experiments.points import run_guarded
    from emu.experiments.sampler import ChangeSampler
    from emu.experiments.workloads import WorkloadParams

    tick = ChangeSampler.tick

    def tick_then_sigint(self: ChangeSampler, n: int) -> None:
        tick(self, n)
        if self.ticks_read == 20:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(ChangeSampler, "tick", tick_then_sigint)
    cfg = RunConfig(virtual=True, progress=False, rate_bps=1_000_000,
                    workload=WorkloadParams("permutation", message_bytes=1 << 22))
    outcome = run_guarded(cfg, load_topology("clos4"), tmp_path, "p", {})
    assert (outcome["status"], outcome["reason"]) == ("failed", "interrupted")
    assert json.loads((tmp_path / "outcome.json").read_text())["status"] == "failed"


def _pgrep(pattern: str) -> set[str]:
    import subprocess

    return set(subprocess.run(["pgrep", "-f", pattern], capture_output=True,
                              text=True).stdout.split())


def _scratch() -> set[Path]:
    """The scratch folders of Ray point tasks in this machine's temporary directory."""
    import tempfile

    tmp = Path(tempfile.gettempdir())
    return {*tmp.glob("emu-point-*"), *tmp.glob("emu-sweep-*")}


def _scratch_left(before: set[Path], wait_s: float = 20.0) -> list[Path]:
    """New scratch folders still there after `wait_s` (another test's may come and go)."""
    import time

    deadline = time.monotonic() + wait_s
    while (left := sorted(_scratch() - before)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_a_timed_out_ray_task_leaves_no_scratch_folder(tmp_path: Path) -> None:
    """A point that timed out on Ray had its task cancelled (its worker killed), so the
    task's temporary folder, with the partial run in it, stayed in /tmp for good."""
    import time

    pytest.importorskip("ray", reason="Ray is an optional extra (pip install -e '.[ray]')")
    from emu.experiments.sweep_ray import RayBackend

    f = tmp_path / "long.yaml"
    f.write_text("base: {topology: clos4, workload: permutation, size: 64M, rate: 1Mbps}\n"
                 "grid: {lb: [ecmp]}\ntimeout: 600\n")
    exp = load_experiment(f)
    before = _scratch()
    backend = RayBackend.connect("local", 1, {"clos4": load_topology("clos4")})
    try:
        job = backend.start(exp.points[0], tmp_path / "p")
        deadline = time.monotonic() + 120
        while not _pgrep("ray::ray_point"):  # the task runs: its folder is made
            assert backend.poll(job) is None and time.monotonic() < deadline
            time.sleep(0.1)
        deadline = time.monotonic() + 30
        while not _scratch() - before:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        backend.kill(job)
    finally:
        backend.close()
    assert _scratch_left(before) == []


def test_a_ray_task_removes_the_scratch_folders_of_killed_workers(tmp_path: Path) -> None:
    """On a remote node nothing else removes a cancelled task's folder: the next task
    there removes every folder whose worker is gone, and no other."""
    import subprocess

    from emu.experiments.sweep_ray import remove_orphan_scratch

    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f"emu-point-{dead.pid}-abc"
    mine = tmp_path / f"emu-point-{os.getpid()}-def"
    other = tmp_path / "emu-point-xyz"  # not named after a worker: not ours to judge
    for d in (gone, mine, other):
        (d / "run").mkdir(parents=True)
    remove_orphan_scratch(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, other.name])


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_killed_experiment_takes_its_workers_with_it(backend: str, tmp_path: Path) -> None:
    """Workers run in sessions of their own (a timeout kills all a point started), so a
    SIGKILL of `emu experiment` left them running, each to its end; with --ray local,
    Ray's dashboard and runtime-env agents stayed (its GCS and raylet did not)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    if backend == "ray":
        pytest.importorskip("ray", reason="Ray is an optional extra (pip install -e '.[ray]')")
    f = tmp_path / "long.yaml"
    f.write_text("base: {topology: clos4, workload: permutation, size: 64M, rate: 1Mbps}\n"
                 "grid: {lb: [ecmp, spray]}\ntimeout: 600\n")
    ray_before = _pgrep("ray::")
    scratch_before = _scratch()
    proc = subprocess.Popen([sys.executable, "-m", "emu", "experiment", str(f), "--results",
                             str(tmp_path / "r"), "--jobs", "2",
                             *(["--ray", "local"] if backend == "ray" else [])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})

    def workers() -> list[str]:
        if backend == "ray":
            return sorted(_pgrep("ray::") - ray_before)
        return sorted(_pgrep(f"emu.experiments.points {tmp_path}"))

    try:
        deadline = time.monotonic() + 120
        while len(workers()) < 2 or (backend == "ray" and not _pgrep("ray::ray_point")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15  # the workers had minutes of traffic left
        while workers() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert workers() == []
        # ...and their scratch folders (a Ray task's runs, pcaps included, stayed in /tmp)
        assert _scratch_left(scratch_before) == []
    finally:
        for pid in workers():
            os.kill(int(pid), signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


def test_a_full_disk_or_read_only_folder_stops_the_sweep_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ENOSPC writing a point's record, or EROFS writing the report, ended `emu
    experiment` with a traceback."""
    import subprocess

    from ..small_disk import small_disk

    f = tmp_path / "two.yaml"
    f.write_text("name: two\nbase: {topology: clos4, workload: permutation, size: 64K}\n"
                 "grid:\n  lb: [ecmp, spray]\n")
    with small_disk(tmp_path / "full", "160k") as full:
        assert main(["experiment", str(f), "--results", str(full), "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "emu experiment: cannot write under " in err, err[-2000:]
    assert "No space left on device" in err and "Traceback" not in err, err[-2000:]
    # the points done, then the report into a folder mounted read-only
    ro = tmp_path / "ro"
    assert main(["experiment", str(f), "--results", str(ro), "--jobs", "1"]) == 0
    subprocess.run(["mount", "--bind", str(ro), str(ro)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        assert main(["experiment", str(f), "--results", str(ro), "--report-only"]) == 1
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    err = capsys.readouterr().err
    assert "emu experiment: cannot write the report under " in err, err[-2000:]
    assert "Read-only file system" in err and "Traceback" not in err, err[-2000:]
