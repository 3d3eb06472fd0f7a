"""Run bookkeeping: what a run creates is recorded before (or right after) it is
created, so `emu stop` can remove exactly that after the run was killed.

Layout (STATE_DIR, default /run/emu, overridable with $EMU_STATE_DIR):

    <run-id>.json      the run's record (format below), rewritten atomically
    <run-id>/          per-run scratch (gRPC unix sockets)

The lock is always /run/emu/lock, whatever $EMU_STATE_DIR says: two runs clash on
interface names in the root namespace wherever they keep their records. It is an
flock held by the live run and holds its owner as JSON. A new run fails at once when
it is taken, unless given a time to wait for it (`emu run --lock-wait`; tests queue
behind each other that way).

Record format (version 1)::

    {"version": 1, "run_id": "...", "started_at": "2026-...Z", "run_dir": "...",
     "owner": {"pid": N, "start_time": TICKS, "cmdline": "..."},
     "processes":  [{"pid", "start_time", "role", "name", "group"}],
     "namespaces": [{"name", "kind": "mininet", "pid", "start_time",
                     "inode", "intf", "mac"}],
     "interfaces": [{"name", "mac", "netns"}],
     "qdiscs":     [{"intf", "netns", "handle"}],   (in host namespaces: gone with them)
     "sockets":    ["/run/emu/<run-id>/leaf1.grpc", ...],
     "dirs":       ["/run/emu/<run-id>"]}

Identity checks, so nothing is removed by name alone: a process is signalled only
if /proc/<pid>/stat still shows the recorded start time (PIDs are reused); an
interface is deleted only if it still has the recorded MAC; a process is killed as
a member of an anonymous Mininet namespace only if that namespace still holds the
recorded interface with the recorded MAC (namespace inode numbers are reused too).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import json
import os
import shutil
import signal
import stat
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = 1
DEFAULT_STATE_DIR = "/run/emu"


class StateError(RuntimeError):
    """A one-line, user-facing problem with run state (lock held, bad record)."""


class RunActive(StateError):
    """Another run holds the lock."""


def state_dir() -> Path:
    return Path(os.environ.get("EMU_STATE_DIR") or DEFAULT_STATE_DIR)


def lock_path() -> Path:
    return Path(DEFAULT_STATE_DIR) / "lock"


# --- processes ---------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[bytes]:
    """/proc/<pid>/stat from field 3 (state) on; empty if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return []
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    return data[data.rfind(b")") + 2:].split()


def _start_time(fields: list[bytes]) -> int | None:
    """Field 22 (start time) of `_stat_fields`; None for a zombie or a short read."""
    try:
        if fields[0] == b"Z":
            return None  # a zombie is dead for our purposes (its parent will reap it)
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def proc_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (/proc/<pid>/stat field 22), or None."""
    return _start_time(_stat_fields(pid))


def proc_pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def descendants(pid: int) -> list[tuple[int, int | None]]:
    """(pid, start time) of every live process below `pid` in the process tree."""
    children: dict[int, list[tuple[int, int | None]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        try:
            ppid = int(fields[1])
        except (IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append((int(entry), _start_time(fields)))
    out: list[tuple[int, int | None]] = []
    todo = list(children.get(pid, []))
    while todo:
        proc = todo.pop()
        out.append(proc)
        todo += children.get(proc[0], [])
    return out


def same_process(pid: int, start_time: int | None) -> bool:
    """Is `pid` still the process that was recorded (not a reused PID)?"""
    return start_time is not None and proc_start_time(pid) == start_time


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def net_ns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def boot_time_s() -> float:
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("btime "):
                return float(line.split()[1])
    return 0.0


def describe_start(start_time: int | None) -> str:
    """Wall-clock form of a /proc start time, for messages."""
    if start_time is None:
        return "unknown time"
    when = boot_time_s() + start_time / os.sysconf("SC_CLK_TCK")
    return _dt.datetime.fromtimestamp(when, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the record --------------------------------------------------------------------------


@dataclass
class RunState:
    """The record of one run. Mutators write the file through before returning."""

    run_id: str
    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    _lock_fd: int | None = None

    # -- lifecycle ---------------------------------------------------------------------

    @classmethod
    def begin(cls, run_dir: Path | str | None = None, *, directory: Path | None = None,
              lock_timeout_s: float = 0.0) -> RunState:
        """Take the run lock (or raise RunActive) and create this run's record.
        `lock_timeout_s`: how long to wait for a running run."""
        base = directory or state_dir()
        base.mkdir(parents=True, exist_ok=True)
        fd = acquire_lock(lock_timeout_s)
        try:
            rid = time.strftime("run-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
            me = os.getpid()
            owner = {"pid": me, "start_time": proc_start_time(me), "cmdline": _cmdline(me)}
            _write_lock_owner(fd, {**owner, "run_id": rid, "started_at": _now()})
            state = cls(run_id=rid, path=base / f"{rid}.json", _lock_fd=fd)
            state.data = {
                "version": VERSION, "run_id": rid, "started_at": _now(),
                "run_dir": str(run_dir) if run_dir else None, "owner": owner,
                "processes": [], "namespaces": [], "interfaces": [], "qdiscs": [],
                "sockets": [], "dirs": [],
            }
            state.save()
            return state
        except BaseException:
            os.close(fd)
            raise

    @property
    def scratch_dir(self) -> Path:
        """Per-run directory for unix sockets (short path: sun_path is 108 bytes)."""
        d = self.path.parent / self.run_id
        if not d.exists():
            self.add_dir(d)
            d.mkdir(parents=True, exist_ok=True)
        return d

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1)
        os.replace(tmp, self.path)

    def finish(self, keep: bool = False) -> None:
        """End of run: delete the record (unless `keep`: cleanup failed) and drop the lock."""
        if not keep:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- recording (write-ahead where the identity is known in advance) -----------------

    def add_process(self, pid: int, role: str, name: str = "", group: bool = False) -> None:
        """`group`: signal the process group too when it leads one."""
        self.data["processes"].append({"pid": pid, "start_time": proc_start_time(pid),
                                       "role": role, "name": name, "group": group})
        self.save()

    def add_mininet_namespace(self, name: str, shell_pid: int, intf: str, mac: str) -> None:
        """An anonymous namespace held by a Mininet host shell (and what runs inside it)."""
        self.data["namespaces"].append({
            "name": name, "kind": "mininet", "pid": shell_pid,
            "start_time": proc_start_time(shell_pid), "inode": net_ns_inode(shell_pid),
            "intf": intf, "mac": mac.lower()})
        self.data["processes"].append({"pid": shell_pid, "start_time": proc_start_time(shell_pid),
                                       "role": "host-shell", "name": name, "group": True})
        self.save()

    def add_interfaces(self, items: list[tuple[str, str, str | None]]) -> None:
        """(name, mac, netns) triples; netns None = the root namespace."""
        for name, mac, ns in items:
            self.data["interfaces"].append({"name": name, "mac": mac.lower(), "netns": ns})
        self.save()

    def add_qdisc(self, intf: str, netns: str, handle: str = "1:") -> None:
        """A qdisc on a host's interface (in its namespace, so removed with it)."""
        self.data["qdiscs"].append({"intf": intf, "netns": netns, "handle": handle})
        self.save()

    def add_socket(self, path: str | Path) -> None:
        self.data["sockets"].append(str(path))
        self.save()

    def add_dir(self, path: str | Path) -> None:
        self.data["dirs"].append(str(path))
        self.save()


# --- the lock ----------------------------------------------------------------------------


def _write_lock_owner(fd: int, owner: dict[str, Any]) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(owner).encode() + b"\n", 0)


def read_lock_owner() -> dict[str, Any] | None:
    try:
        text = lock_path().read_text()
        owner = json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def acquire_lock(timeout_s: float = 0.0) -> int:
    """flock the run lock; the fd is close-on-exec, so only this process holds it
    (children such as host shells do not keep a killed run's lock)."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                os.close(fd)
                raise
            if time.monotonic() >= deadline:
                os.close(fd)
                owner = read_lock_owner() or {}
                raise RunActive(
                    f"another emu run (pid {owner.get('pid', '?')}, started "
                    f"{describe_start(owner.get('start_time'))}) is active; "
                    "stop it or run `make stop`") from None
            time.sleep(0.1)


def load_records(base: Path | None = None) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for p in sorted((base or state_dir()).glob("*.json")):
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("version") == VERSION:
            out.append((p, data))
    return out


# --- cleanup -----------------------------------------------------------------------------


def _signal(pid: int, sig: int, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group and proc_pgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def kill_verified(procs: list[tuple[int, int | None, bool]], grace_s: float = 2.0) -> list[int]:
    """SIGTERM then SIGKILL each (pid, start_time, group) that is still the recorded
    process; returns the PIDs that were signalled."""
    live = [(p, st, g) for p, st, g in procs if same_process(p, st)]
    for pid, _st, group in live:
        _signal(pid, signal.SIGTERM, group)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(same_process(p, st) for p, st, _g in live):
        time.sleep(0.05)
    for pid, st, group in live:
        if same_process(pid, st):
            _signal(pid, signal.SIGKILL, group)
    return [p for p, _st, _g in live]


def _intf_mac(name: str, ns_pid: int | None = None) -> str | None:
    """MAC of interface `name` in the root namespace (or the netns of `ns_pid`)."""
    cmd = ["ip", "-o", "link", "show", "dev", name]
    if ns_pid is not None:
        cmd = ["nsenter", f"--net=/proc/{ns_pid}/ns/net", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    words = r.stdout.split()
    return words[words.index("link/ether") + 1].lower() if "link/ether" in words else ""


def _netns_mac(intf: str, members: list[int]) -> str | None:
    """MAC of `intf` in the namespace these PIDs share, entered through the first that
    is still there (one may exit between the /proc scan and nsenter)."""
    for pid in members:
        mac = _intf_mac(intf, pid)
        if mac is not None:
            return mac
    return None


def pids_in_netns(inodes: set[int]) -> dict[int, list[int]]:
    """Namespace inode -> the PIDs in it, for the given inodes (one /proc scan)."""
    out: dict[int, list[int]] = {i: [] for i in inodes}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ino = net_ns_inode(int(entry))
            if ino in out:
                out[ino].append(int(entry))
    return out


def cleanup_record(data: dict[str, Any], log: Any = print) -> list[str]:
    """Remove what `data` records; returns the errors (empty: all gone)."""
    errors: list[str] = []
    procs = [(p["pid"], p.get("start_time"), bool(p.get("group")))
             for p in data.get("processes", [])]
    killed = kill_verified(procs)
    if killed:
        log(f"  killed {len(killed)} recorded process(es)")

    # Processes left in a Mininet host's namespace that were never recorded (started
    # by hand from the CLI, say): found by namespace, after proving it is ours.
    for ns in data.get("namespaces", []):
        inode = ns.get("inode")
        if not inode:
            continue
        members = pids_in_netns({inode})[inode]
        if not members or _netns_mac(ns["intf"], members) != ns.get("mac"):
            continue
        count = 0
        # Rescanned: a process may enter the namespace (mnexec -a) or be forked into it
        # while the others are being killed.
        for _ in range(3):
            stray = [(p, proc_start_time(p), False) for p in members]
            kill_verified(stray, grace_s=1.0)
            count += len(stray)
            members = pids_in_netns({inode})[inode]
            if not members:
                break
        log(f"  killed {count} process(es) left in host {ns['name']}'s namespace")

    deleted = 0
    for i in data.get("interfaces", []):
        if i.get("netns") is not None:
            continue  # lives in a host namespace: gone with it
        mac = _intf_mac(i["name"])
        if mac is None:
            continue  # already gone (or taken by its deleted veth peer)
        if mac != i.get("mac"):
            log(f"  interface {i['name']} has MAC {mac}, not the recorded {i.get('mac')}: "
                "not ours, left alone")
            continue
        r = subprocess.run(["ip", "link", "del", "dev", i["name"]], capture_output=True,
                           text=True)
        if r.returncode and _intf_mac(i["name"]) is not None:
            errors.append(f"interface {i['name']}: {r.stderr.strip()}")
        else:
            deleted += 1
    if deleted:
        log(f"  deleted {deleted} interface(s)")

    for s in data.get("sockets", []):
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(s).st_mode):
                os.unlink(s)
    for d in data.get("dirs", []):
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(d)

    # What still stands after all that is an error worth showing.
    for p, st, _g in procs:
        if same_process(p, st):
            errors.append(f"process {p} survived SIGKILL")
    return errors


def stop_runs(log: Any = print, owner_grace_s: float = 10.0,
              base: Path | None = None, lock_wait_s: float = 0.0) -> int:
    """`emu stop`: end a live run (it tears itself down on SIGINT), then remove what
    every recorded run left behind. Returns the exit code. `lock_wait_s` (at least 5 s:
    the runner just signalled needs a moment to let go of the lock)."""
    base = base or state_dir()
    if not base.exists():
        log("nothing to stop: no run has recorded state")
        return 0
    records = load_records(base)
    for _path, data in records:
        owner = data.get("owner") or {}
        pid, st = owner.get("pid"), owner.get("start_time")
        if pid and pid != os.getpid() and same_process(pid, st):
            log(f"run {data['run_id']}: stopping its runner (pid {pid})")
            _signal(pid, signal.SIGINT, False)
            deadline = time.monotonic() + owner_grace_s
            while time.monotonic() < deadline and same_process(pid, st):
                time.sleep(0.1)
            if same_process(pid, st):
                log(f"  runner {pid} did not exit in {owner_grace_s:.0f} s: killing it")
                _signal(pid, signal.SIGKILL, False)
    try:
        fd = acquire_lock(timeout_s=max(5.0, lock_wait_s))
    except RunActive:
        owner = read_lock_owner() or {}
        log(f"emu stop: a run (pid {owner.get('pid', '?')}, started "
            f"{describe_start(owner.get('start_time'))}) holds the lock but has no record in "
            f"{base}; stop it with `kill -INT {owner.get('pid', 'PID')}`")
        return 1
    try:
        failed = 0
        records = load_records(base)  # the runner may have cleaned up after itself
        if not records:
            log("nothing to stop: no run has recorded state")
        for path, data in records:
            log(f"run {data['run_id']}: removing what it left behind")
            errors = cleanup_record(data, log)
            if errors:
                failed += 1
                for e in errors:
                    log(f"  error: {e}")
                # Keep the record: another `emu stop` can retry what failed.
            else:
                path.unlink(missing_ok=True)
                log("  done")
        return 1 if failed else 0
    finally:
        os.close(fd)

