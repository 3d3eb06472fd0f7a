"""A bookkeeping stand-in for a switch target: its "switch" is a `sleep` process.

Only for tests about bring-up, recording and teardown (that a process is started,
recorded and ended). It forwards nothing; tests of forwarding use a real target.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from emu.targets.base import (
    Capabilities,
    CompiledPipeline,
    PortQueueConfig,
    SwitchProcess,
    SwitchSpec,
    SwitchTarget,
)


class SleepProcess(SwitchProcess):
    def __init__(self, spec: SwitchSpec, ready_delay_s: float) -> None:
        self.spec = spec
        # Its own session, like a daemon: nothing but our bookkeeping ends it.
        self.proc = subprocess.Popen(["sleep", "600"], start_new_session=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.pid = self.proc.pid
        self.ready_delay_s = ready_delay_s

    def wait_ready(self, timeout_s: float) -> None:
        time.sleep(min(self.ready_delay_s, timeout_s))
        if self.proc.poll() is not None:
            raise self.died("exited")

    def set_queue(self, port: int | None, config: PortQueueConfig) -> None:
        pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def died(self, what: str) -> RuntimeError:
        return RuntimeError(f"stand-in {what} (exit {self.proc.poll()})")

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout_s)


class SleepTarget(SwitchTarget):
    name = "standin"

    def __init__(self, ready_delay_s: float = 0.0) -> None:
        self.ready_delay_s = ready_delay_s
        self.started: list[SleepProcess] = []

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(p4runtime_registers=False, thrift_registers=False,
                            bit_rate_queues=False, packet_rate_queues=False, link_delay=False)

    def missing(self) -> list[str]:
        return []

    def compile(self, p4_path: Path, build_dir: Path,
                include_dirs: tuple[Path, ...] = ()) -> CompiledPipeline:
        return CompiledPipeline(p4_path, p4_path, "standin")

    def start(self, spec: SwitchSpec, pipeline: CompiledPipeline) -> SwitchProcess:
        proc = SleepProcess(spec, self.ready_delay_s)
        self.started.append(proc)
        return proc


PIPELINE = CompiledPipeline(Path("/dev/null"), Path("/dev/null"), "standin")
