"""Process plumbing shared by the targets: parent-death signal, ports, readiness, stop."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from .base import AddressInUse

PR_SET_PDEATHSIG = 1

# Loaded in the parent: a preexec_fn must not load libraries after fork.
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def pdeathsig_preexec(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A preexec_fn: the child gets `sig` when its parent dies (kept across exec,
    so also through `ip netns exec`, which execs the command in place).

    Linux counts the *thread* that forked as the parent: start switches from a
    thread that lives as long as they should (the main thread), not a worker.
    """

    def preexec() -> None:
        _libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return preexec


def free_tcp_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the usual bind-to-0 trick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def tcp_answers(host: str, port: int, timeout_s: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def grpc_answers(addr: str, device_id: int, timeout_s: float = 0.5) -> str | None:
    """Does a P4Runtime server answer at `addr`? Returns None if it does, else why not.

    Capabilities first (P4Runtime >= 1.1); a server that does not implement it is
    asked GetForwardingPipelineConfig. Any status but UNAVAILABLE/DEADLINE_EXCEEDED
    (e.g. FAILED_PRECONDITION: no pipeline yet) means the server is up.
    """
    import grpc
    from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    down = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        try:
            stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=timeout_s)
            return None
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            if code in down:
                return f"{code.name}"
            if code != grpc.StatusCode.UNIMPLEMENTED:
                return None
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY)
        try:
            stub.GetForwardingPipelineConfig(req, timeout=timeout_s)
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            if code in down:
                return f"{code.name}"
        return None


def iface_exists(iface: str, netns: str | None = None) -> bool:
    if netns is None:
        return os.path.exists(f"/sys/class/net/{iface}")
    r = subprocess.run(["ip", "-n", netns, "link", "show", "dev", iface],
                       capture_output=True, check=False)
    return r.returncode == 0


def tail(path: Path | None, n: int = 15) -> str:
    """The last lines of a log file, for error messages ('' if none)."""
    if path is None:
        return ""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def terminate(proc: subprocess.Popen[Any], timeout_s: float,
              first: int = signal.SIGTERM) -> None:
    """Stop a child started with start_new_session=True: its whole process group,
    `first` then SIGKILL after `timeout_s`; reaps it. Idempotent."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, first)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    # Anything left in the group (a helper the switch forked): kill it too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def spawn(cmd: Sequence[str], *, log: IO[bytes] | int, pass_fds: Sequence[int] = (),
          env: dict[str, str] | None = None, cwd: str | None = None,
          stdin: int | None = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """Start a switch process: own session (group kill), dies with its parent.

    The parent-death signal is set by util-linux `setpriv` in the child, not by a
    Python preexec_fn: after the parent has used gRPC, its fork handlers make a child
    that runs Python code before exec abort now and then (grpc/grpc#43055).
    """
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        argv = [setpriv, "--pdeathsig", "KILL", "--", *cmd]
        preexec = None
    else:  # pragma: no cover - util-linux is essential on Debian and Ubuntu
        argv, preexec = list(cmd), pdeathsig_preexec()
    return subprocess.Popen(argv, stdin=stdin, stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=preexec, start_new_session=True,
                            pass_fds=tuple(pass_fds), env=env, cwd=cwd, close_fds=True)


def wait_until(pred: Callable[[], bool], timeout_s: float, interval_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if pred():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)


class SpawnedSwitch:
    """What every switch process started with `spawn` shares: liveness, captured
    output, the error raised when it dies, and an idempotent stop. Mixed into each
    target's SwitchProcess."""

    kind = "switch"

    def __init__(self, spec: Any, popen: subprocess.Popen[bytes], out: IO[bytes],
                 cmd: list[str]) -> None:
        self.spec = spec
        self.popen = popen
        self.pid = popen.pid
        self.out = out
        self.command = cmd
        self._stopped = False

    def stop(self, timeout_s: float = 5.0) -> None:
        """Terminate the process group, then release what the switch held: the
        target's own resources, the output file and a unix-socket gRPC address."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._before_terminate()
            terminate(self.popen, timeout_s)
        finally:
            self._release()
            with contextlib.suppress(OSError):
                self.out.close()
            if self.spec.grpc_addr.startswith("unix:"):
                with contextlib.suppress(OSError):
                    os.unlink(self.spec.grpc_addr[5:])

    def _before_terminate(self) -> None:
        """A target's own clean-up while the process still runs (none by default)."""

    def _release(self) -> None:
        """A target's own resources to free once the process is gone (none by default)."""

    def alive(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        """What the process wrote to stdout/stderr so far (the tail, for error messages)."""
        try:
            self.out.flush()
            self.out.seek(0)
            data = self.out.read()
            self.out.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return ""
        return bytes(data).decode(errors="replace")[-3000:]

    def died(self, what: str) -> RuntimeError:
        """The error for this process found dead: `what` it did, its exit status, its output."""
        # Its end of a pipe may close just before it exits: wait for the status.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(2.0)
        code = self.popen.poll()
        # The embedded daemon exits with EADDRINUSE when its gRPC address is taken.
        kind = AddressInUse if code == errno.EADDRINUSE else RuntimeError
        return kind(f"{self.kind} switch {self.spec.name} {what} (exit {code}); "
                    f"command: {' '.join(self.command)}\n{self.output()}")
