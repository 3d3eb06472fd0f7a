"""The reaper: removes what a killed run left behind, without waiting for `emu stop`.

A runner killed by SIGKILL (the OOM killer, a CI job's hard timeout, `kill -9`) runs no
handler: its switches' veths stay in the root namespace and the next run refuses to
start until `make stop`. So a runner that owns a run record starts a reaper right
after the record exists (`Reaper.start`): a process in a session of its own that
blocks on a pipe whose only write end the runner holds. A runner that ends on its own
(teardown done, or failed and its record kept for `make stop`) writes DONE first
(`Reaper.release`) and the reaper leaves. End of file without DONE means the kernel
closed the pipe with the runner: the reaper waits for the runner's process to be
gone, takes the run lock, removes what the record lists (runstate.cleanup_record,
with its identity checks), deletes the record, and says so in `reaper.log` in the
run's results folder. Another holder of the lock (`emu stop`, a new run) is left the
record: it removes or reports it itself.

The same for a named network namespace a command makes for itself (`emu crosscheck`,
the P4Runtime and PTF harnesses put a switch's veths in one): `Reaper.for_netns`
deletes it, and ends what still runs in it, when its maker is killed (and removes the
folders its maker named, e.g. the one of the switch's sockets).

And for processes a command starts that outlive it (a local Ray instance's agents):
`Reaper.for_processes` kills them, each only if it still has its recorded start time,
then removes the folders the command named (their scratch space).

    python -m emu.core.reaper RECORD.json      (stdin: the runner's pipe)
    python -m emu.core.reaper --netns NAME [FOLDER ...]
    python -m emu.core.reaper --kill PID:START_TIME,... [FOLDER ...]
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import netns
from .runstate import (
    RunActive,
    acquire_lock,
    cleanup_record,
    descendants,
    kill_verified,
    same_process,
)

DONE = b"done\n"
LOCK_WAIT_S = 30.0
OWNER_GONE_WAIT_S = 10.0


@dataclass
class Reaper:
    """The runner's end of a reaper: its process and the pipe's write end."""

    proc: subprocess.Popen[bytes]
    fd: int

    @classmethod
    def start(cls, record: Path) -> Reaper:
        """A reaper of the run whose record is `record`."""
        return cls._spawn([str(record)])

    @classmethod
    def for_netns(cls, name: str, remove: list[Path] | None = None) -> Reaper:
        """A reaper of the named network namespace `name` (made by this process), and
        of the folders in `remove`."""
        return cls._spawn(["--netns", name, *(str(d) for d in remove or ())])

    @classmethod
    def for_processes(cls, procs: list[tuple[int, int | None]],
                      remove: list[Path] | None = None) -> Reaper:
        """A reaper of processes (pid, start time) started on this process's behalf,
        and of the folders in `remove` they work in."""
        return cls._spawn(["--kill", ",".join(f"{p}:{st}" for p, st in procs),
                           *(str(d) for d in remove or ())])

    @classmethod
    def _spawn(cls, args: list[str]) -> Reaper:
        read_end, write_end = os.pipe()  # not inherited: only this process holds it
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": root + (os.pathsep + os.environ["PYTHONPATH"]
                                                   if os.environ.get("PYTHONPATH") else "")}
        try:
            proc = subprocess.Popen([sys.executable, "-m", "emu.core.reaper", *args],
                                    stdin=read_end, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True,
                                    env=env)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        return cls(proc, write_end)

    def release(self) -> None:
        """The run tore itself down (or kept its record for `make stop`): leave it."""
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            os.write(self.fd, DONE)
        os.close(self.fd)
        self.fd = -1
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def reap(record: Path) -> int:
    """The runner of `record` is gone: remove what it recorded. Returns an exit code."""
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return 0  # already removed (emu stop), or never written
    owner = data.get("owner") or {}
    deadline = time.monotonic() + OWNER_GONE_WAIT_S
    while same_process(owner.get("pid", 0), owner.get("start_time")):
        if time.monotonic() > deadline:
            return 1  # the runner lives on and closed its pipe: not ours to judge
        time.sleep(0.1)
    try:
        fd = acquire_lock(LOCK_WAIT_S)
    except RunActive:
        return 1  # `emu stop` or a new run holds the lock: it deals with the record
    try:
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError):
            return 0  # removed while we waited for the lock
        run_dir = data.get("run_dir")
        log_path = Path(str(run_dir)) / "reaper.log" if run_dir else None
        lines = [f"run {data.get('run_id')}: its runner (pid {owner.get('pid')}) ended "
                     "without tearing the fabric down; removing what it left behind"]
        errors = cleanup_record(data, lines.append)
        if errors:
            lines += [f"  error: {e}" for e in errors]
            lines.append("  the record is kept: run `make stop` (emu stop)")
        else:
            record.unlink(missing_ok=True)
            lines.append("  done")
        if log_path is not None:
            with contextlib.suppress(OSError), open(log_path, "a") as f:
                f.write("\n".join(lines) + "\n")
        return 1 if errors else 0
    finally:
        os.close(fd)


def reap_netns(name: str, folders: list[str]) -> int:
    """The maker of namespace `name` is gone: end what runs in it, then delete it (and
    `folders`)."""
    for d in folders:
        shutil.rmtree(d, ignore_errors=True)
    if not netns.exists(name):
        return 0
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True,
                          text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    netns.delete(name)
    return 1 if netns.exists(name) else 0


def reap_processes(spec: str, folders: list[str]) -> int:
    """Kill the processes `spec` lists (PID:START_TIME,...) that still are those, then
    remove `folders`."""
    procs = []
    for item in filter(None, spec.split(",")):
        pid, _, st = item.partition(":")
        procs.append((int(pid), None if st == "None" else int(st), False))
    recorded = [p for p in procs if p[1] is not None]
    # And what they started since the list was made (a Ray raylet's workers): killed
    # only with their parent, one could still write in a folder as it was removed.
    later: list[tuple[int, int | None, bool]] = [
        (c, cst, False) for pid, st, _g in recorded if same_process(pid, st)
        for c, cst in descendants(pid) if cst is not None]
    killed = recorded + later
    kill_verified(killed)
    # SIGKILL is sent, not yet taken: a process inside a system call (a mkdir of its
    # results folder, its parents included, under load) finishes that call first, and
    # removed too early the folder came back and stayed in /tmp. Wait for them to go,
    # and remove again what a late writer brought back.
    deadline = time.monotonic() + 5.0
    # (a zombie has no start time: same_process counts it gone, as it writes nothing)
    while any(same_process(p, st) for p, st, _g in killed) and time.monotonic() < deadline:
        time.sleep(0.05)
    for _ in range(2):
        for d in folders:
            shutil.rmtree(d, ignore_errors=True)
        time.sleep(0.2)
    return 0


def main(argv: list[str]) -> int:
    if not (len(argv) == 1 or (len(argv) >= 2 and argv[0] in ("--netns", "--kill"))):
        print(__doc__, file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # only the pipe says when to act
    got = b""
    while True:
        chunk = os.read(0, 64)
        if not chunk:
            break
        got += chunk
    if got.startswith(DONE):
        return 0
    if argv[0] == "--netns":
        return reap_netns(argv[1], argv[2:])
    return reap_processes(argv[1], argv[2:]) if argv[0] == "--kill" else reap(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
