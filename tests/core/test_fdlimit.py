"""The open-file limit a run raises for itself (emu.core.fdlimit): a virtual run that
captured every port of a k=8 fat tree (1,280 files) under the common soft limit of 1,024
lost 261 captures to "Too many open files"."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _with_limit(soft: int, hard: int, code: str) -> subprocess.CompletedProcess[str]:
    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=600, preexec_fn=lower, check=False)


@pytest.mark.parametrize(("soft", "hard", "needed", "after"), [
    (64, 4096, 200, 200),    # raised to what is needed
    (64, 100, 200, 100),     # no further than the hard limit
    (300, 4096, 200, 300),   # never lowered
])
def test_the_soft_limit_is_raised_within_the_hard_one(soft: int, hard: int, needed: int,
                                                      after: int) -> None:
    r = _with_limit(soft, hard, "import resource; from emu.core.fdlimit import "
                    f"ensure_open_files as e; n = e({needed}); "
                    "print(n, resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(after), str(after)]


def test_a_virtual_run_captures_every_port_past_the_soft_limit(tmp_path: Path) -> None:
    """clos4's 40 switch ports want 80 capture files; the run starts with a soft limit
    of 64 (and room to raise it)."""
    code = f"""
from pathlib import Path
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.virtual import run_virtual
from emu.experiments.workloads import WorkloadParams

class Quiet:
    def print(self, *a, **k):
        pass

cfg = RunConfig(virtual=True, pcap=True, progress=False, results_root=Path({str(tmp_path)!r}),
                workload=WorkloadParams("permutation", message_bytes=4096))
plan = plan_run(cfg)
s = run_virtual(plan, console=Quiet())
print("ok" if s.ok else "not ok", [n for n in s.notes if "pcap" in n])
print(len(list(Path(s.run["results_dir"], "pcap").glob("*.pcap"))),
      2 * sum(len(sw.ports) for sw in plan.fabric.switches))
"""
    r = _with_limit(64, 4096, code)
    assert r.returncode == 0, r.stderr[-3000:]
    status, files = r.stdout.strip().splitlines()[-2:]
    assert status == "ok []"
    assert files.split() == ["80", "80"]


def test_captures_past_the_hard_limit_are_refused_in_one_line(tmp_path: Path) -> None:
    """With no room to raise the limit, the run used up every descriptor on captures and
    died importing a module (OSError, a traceback); now it stops before anything runs."""
    r = subprocess.run(
        [sys.executable, "-m", "emu", "run", "clos4", "--virtual", "--pcap", "--results",
         str(tmp_path), "--size", "4096", "--workload", "permutation", "--no-progress"],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200)))
    assert r.returncode == 1
    assert r.stderr == ("emu run: pcap: capturing 40 switch ports holds "
                        "80 files open beside about 512 of the run's own, and this process "
                        "may open 200 (its hard limit, ulimit -Hn): raise the limit or run "
                        "without --pcap\n")
    assert list(tmp_path.iterdir()) == []  # no results folder left behind
