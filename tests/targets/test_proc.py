"""SpawnedSwitch: the stop every target's switch process shares (a real child process)."""

import socket
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from emu.targets import proc


class _Child(proc.SpawnedSwitch):
    kind = "test"

    def __init__(self, spec: SimpleNamespace, cmd: list[str]) -> None:
        out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        super().__init__(spec, proc.spawn(cmd, log=out), out, cmd)
        self.events: list[str] = []

    def _before_terminate(self) -> None:
        self.events.append(f"before alive={self.alive()}")

    def _release(self) -> None:
        self.events.append(f"release alive={self.alive()}")


def test_stop_terminates_releases_and_is_idempotent(tmp_path: Path) -> None:
    sock_path = tmp_path / "grpc.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))  # a socket file left behind, as a killed server leaves it
    spec = SimpleNamespace(name="s1", grpc_addr=f"unix:{sock_path}")
    child = _Child(spec, [sys.executable, "-c", "import time; time.sleep(60)"])
    assert child.alive() and child.pid == child.popen.pid
    child.stop(timeout_s=5)
    assert child.events == ["before alive=True", "release alive=False"]
    assert not child.alive()
    assert child.out.closed
    assert not sock_path.exists()
    child.stop(timeout_s=5)  # a second stop does nothing
    assert child.events == ["before alive=True", "release alive=False"]
