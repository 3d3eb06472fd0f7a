"""Experiment points as Ray tasks (`emu experiment --ray ADDRESS`; Ray is optional).

A task runs its point in a scratch folder on whichever node Ray picks and returns the
folder's files; the driver writes them into the point's folder, so a sweep on Ray
leaves the same layout as a local one. A timed-out task is cancelled (its worker killed).

A killed worker cannot remove its scratch folder, so each is named after its worker's
pid and the next task on that node removes the folders of workers that are gone. On a
local instance every task's folder is inside one folder of the sweep's, which the
driver removes when it closes, and its reaper when the driver is killed.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol

from emu.core import netns
from emu.core.reaper import Reaper
from emu.core.runstate import descendants
from emu.topo import Fabric

from .config import RunConfig
from .experiment import Point
from .points import OUTCOME, Job, Outcome

REPO = Path(__file__).resolve().parents[2]
# What a remote cluster needs of the repository: the package and the P4 sources.
UPLOAD_EXCLUDES = [".git", ".venv", "results", "build", "vagrant", "tests", "bench", "docs",
                   "**/__pycache__", "*.pcap", ".mypy_cache", ".ruff_cache", ".pytest_cache"]


class RayUnavailable(RuntimeError):
    """Ray is not installed or the cluster cannot be reached (the message says which)."""


SCRATCH_PREFIX = "emu-point-"


def remove_orphan_scratch(root: Path) -> None:
    """Remove the scratch folders in `root` of workers that are no longer running."""
    for d in root.glob(f"{SCRATCH_PREFIX}*-*"):
        pid = d.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def ray_point(cfg: RunConfig, model: Fabric, point_id: str, varied: dict[str, str],
              scratch: str | None) -> tuple[Outcome, dict[str, bytes]]:
    """Body of the Ray task: the point's outcome and every file of its folder.

    `scratch`: the folder to work in (a local instance's, which its driver removes);
    None: this node's temporary directory."""
    from rich.console import Console

    from .points import run_guarded

    root = Path(scratch) if scratch else Path(tempfile.gettempdir())
    remove_orphan_scratch(root)
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-",
                                     dir=root) as tmp:
        out = Path(tmp)
        with (out / "log.txt").open("w") as log, contextlib.redirect_stdout(log), \
                contextlib.redirect_stderr(log):
            outcome = run_guarded(cfg, model, out, point_id, varied,
                                  Console(file=log, width=120, color_system=None))
        files = {str(p.relative_to(out)): p.read_bytes()
                 for p in sorted(out.rglob("*")) if p.is_file()}
    return outcome, files


class _Remote(Protocol):
    """A Ray remote function of `ray_point` (its `.remote` returns an ObjectRef)."""

    def remote(self, config: RunConfig, model: Fabric, point_id: str,
               options: dict[str, str], scratch: str | None, /) -> object: ...


@dataclass
class RayBackend:
    slots: int
    models: dict[str, Fabric]
    ray: ModuleType
    task: _Remote  # ray_point as a Ray remote function
    # A local instance's processes (some outlive a killed driver): killed then.
    reaper: Reaper | None = None
    # Why a local instance's servers are reachable from other machines, if they are.
    exposed: str | None = None
    # A local instance's tasks work in here (None: each node's temporary directory).
    scratch: Path | None = None

    @classmethod
    def connect(cls, address: str, jobs: int, models: dict[str, Fabric]) -> RayBackend:
        try:
            import ray
        except ImportError:
            raise RayUnavailable("--ray needs Ray, an optional extra: pip install -e '.[ray]' "
                                 "(make setup tries it)") from None
        local = address == "local"
        if local:
            # Workers start from this process's environment: make this checkout importable.
            path = os.pathsep.join([str(REPO), *[p for p in os.environ.get(
                "PYTHONPATH", "").split(os.pathsep) if p]])
            env: dict[str, object] = {"env_vars": {"PYTHONPATH": path}}
        else:
            env = {"working_dir": str(REPO), "excludes": UPLOAD_EXCLUDES}
        exposed = None
        try:
            with contextlib.ExitStack() as stack:
                if local:
                    # Ray's GCS, raylet and agents listen on every interface whatever
                    # the node address; in a namespace of their own that is loopback.
                    try:
                        stack.enter_context(netns.private())
                    except OSError as exc:
                        exposed = (f"a private network namespace for it needs root "
                                   f"({exc.strerror})")
                stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
                if local:
                    ray.init(num_cpus=jobs, include_dashboard=False, runtime_env=env,
                             log_to_driver=False, _node_ip_address="127.0.0.1")
                else:
                    ray.init(address=address, runtime_env=env, log_to_driver=False)
        except Exception as exc:  # ConnectionError, RuntimeError, ValueError by version
            raise RayUnavailable(f"cannot reach the Ray cluster at {address}: {exc}") from None
        scratch = Path(tempfile.mkdtemp(prefix="emu-sweep-")) if local else None
        # Ray's agents outlived a SIGKILLed driver (its GCS and raylet did not), and
        # the tasks' folders stayed in /tmp.
        reaper = Reaper.for_processes(descendants(os.getpid()), remove=[scratch]) \
            if scratch is not None else None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        task = ray.remote(num_cpus=1, max_retries=0)(ray_point)
        return cls(max(1, cpus), models, ray, task, reaper, exposed, scratch)

    def start(self, point: Point, out_dir: Path) -> Job:
        ref = self.task.remote(point.config, self.models[point.config.topo], point.id,
                               point.options(), str(self.scratch) if self.scratch else None)
        return Job(out_dir, ref=ref)

    def poll(self, job: Job) -> Outcome | None:
        ready, _ = self.ray.wait([job.ref], timeout=0)
        if not ready:
            return None
        out_dir = job.out_dir
        try:
            outcome, files = self.ray.get(job.ref)
        except Exception as exc:  # the task died (worker crash, node lost)
            return {"status": "failed", "reason": f"Ray task failed: {type(exc).__name__}: "
                    + str(exc).strip().splitlines()[-1][:300]}
        for rel, data in files.items():
            p = out_dir / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        (out_dir / OUTCOME).write_bytes(files.get(OUTCOME, b"{}"))
        return dict(outcome)

    def kill(self, job: Job) -> None:
        with contextlib.suppress(Exception):
            self.ray.cancel(job.ref, force=True)

    def close(self) -> None:
        self.ray.shutdown()
        if self.scratch is not None:  # a cancelled task's folder is still in it
            shutil.rmtree(self.scratch, ignore_errors=True)
        if self.reaper is not None:
            self.reaper.release()
