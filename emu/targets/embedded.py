"""The embedded target: our pure-Python v1model switch, one daemon process per switch.

    python -m emu.switch --no-p4 --device-id N -i 1@IFACE ... --grpc-addr ADDR
        [--cpu-port 255] [--pcap DIR] [--log-file F] [--port-netns NS]
        [--admin-socket PATH] [--ready-fd FD] [--port-config FILE.json] [--seed S]

The daemon mirrors simple_switch_grpc's command line and adds what BMv2 lacks:
bit-rate queues, per-port link delay and P4Runtime register access. Queue and
link settings change at run time through its admin socket (`emu.runtime.admin`);
`EmbeddedProcess.admin_call` is the one place that talks to it.

Namespaces: `SwitchSpec.netns` opens the ports inside that namespace
(`--port-netns`) while the daemon and its gRPC server stay in the caller's, so
a TCP gRPC address works from the controller.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import IO, Any

from emu.p4.bundle import SUFFIX as BUNDLE_SUFFIX

from . import proc
from .base import (
    Capabilities,
    CompiledPipeline,
    PortQueueConfig,
    SwitchProcess,
    SwitchSpec,
    SwitchTarget,
)

CAPABILITIES = Capabilities(
    p4runtime_registers=True,
    thrift_registers=False,
    bit_rate_queues=True,
    packet_rate_queues=True,
    link_delay=True,
    runtime_queue_config=True,
    pcap=True,
)

P4INFO_SUFFIX = ".p4info.txtpb"


def queue_flags(spec: SwitchSpec) -> list[str]:
    """The daemon's per-port queue options for the spec's initial queue settings."""
    out: list[str] = []
    for num, q in sorted(spec.queues.items()):
        out += ["--queue-depth", f"{num}={q.depth_pkts}"]
        if q.rate_bps is not None:
            out += ["--queue-rate-bps", f"{num}={q.rate_bps}"]
        if q.delay_ns:
            out += ["--link-delay-us", f"{num}={q.delay_ns / 1000:g}"]
    return out


def daemon_command(spec: SwitchSpec, *, python: str = sys.executable,
                   admin_socket: str | None = None, ready_fd: int | None = None,
                   log_console: bool = False) -> list[str]:
    cmd = [python, "-m", "emu.switch", "--no-p4", "--device-id", str(spec.device_id)]
    for num, iface in sorted(spec.ports.items()):
        cmd += ["-i", f"{num}@{iface}"]
    cmd += ["--grpc-addr", spec.grpc_addr]
    if spec.cpu_port is not None:
        cmd += ["--cpu-port", str(spec.cpu_port)]
    if spec.pcap_dir is not None:
        cmd += ["--pcap", str(spec.pcap_dir)]
    if spec.log_path is not None:
        cmd += ["--log-file", str(spec.log_path)]
    elif log_console:
        cmd += ["--log-console"]
    if spec.netns:
        cmd += ["--port-netns", spec.netns]
    if spec.priority_queues > 1:
        cmd += ["--priority-queues", str(spec.priority_queues)]
    if spec.timer_spin_us is not None:
        cmd += ["--timer-spin-us", f"{spec.timer_spin_us:g}"]
    if admin_socket:
        cmd += ["--admin-socket", admin_socket]
    if ready_fd is not None:
        cmd += ["--ready-fd", str(ready_fd)]
    if spec.seed is not None:
        cmd += ["--seed", str(spec.seed)]
    if spec.flow_control is not None:
        cmd += ["--pfc-config", json.dumps(spec.flow_control, separators=(",", ":"))]
    return cmd + queue_flags(spec)


class EmbeddedTarget(SwitchTarget):
    name = "embedded"

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    def missing(self) -> list[str]:
        out = []
        for mod in ("emu.switch.daemon", "emu.runtime.server", "grpc"):
            try:
                found = importlib.util.find_spec(mod) is not None
            except ImportError:
                found = False
            if not found:
                out.append(mod)
        return out

    def unavailable_message(self, missing: list[str]) -> str:
        return (f"target embedded: {', '.join(missing)} not importable; "
                "run `make setup` (the embedded switch is part of this project)")

    # ------------------------------------------------------------------ compile

    def compile(self, p4_path: Path, build_dir: Path,
                include_dirs: tuple[Path, ...] = ()) -> CompiledPipeline:
        p4_path, build_dir = Path(p4_path), Path(build_dir)
        if not p4_path.is_file():
            raise FileNotFoundError(f"no P4 program at {p4_path}")
        build_dir.mkdir(parents=True, exist_ok=True)
        stem = p4_path.name.removesuffix(".p4")
        pipeline = CompiledPipeline(p4info_path=build_dir / (stem + P4INFO_SUFFIX),
                                    device_config_path=build_dir / (stem + BUNDLE_SUFFIX),
                                    program_name=stem)
        incs = [str(d) for d in include_dirs]
        # Imported by name: the compiler is another package's code, type-checked there.
        frontend = importlib.import_module("emu.p4.frontend")
        p4info = importlib.import_module("emu.p4.p4info")
        checked = frontend.load_program(str(p4_path), incs)
        p4info.write_p4info(p4info.generate_p4info(checked), pipeline.p4info_path)
        # The switch compiles the sources it is sent; a compiled program is Python it
        # would run, which it takes from trusted clients only (emu.runtime.devconfig).
        # Compiled here as the switches will (the compiler's errors surface here), so
        # that each of them finds it in the compile cache.
        devconfig = importlib.import_module("emu.runtime.devconfig")
        config = devconfig.make_program_config(str(p4_path), incs)
        devconfig.precompile(config)
        pipeline.device_config_path.write_bytes(config)
        return pipeline

    # ------------------------------------------------------------------ start

    def start(self, spec: SwitchSpec, pipeline: CompiledPipeline) -> EmbeddedProcess:
        self.check_available()
        spec.validate()
        # The daemon removes its admin socket when it stops (also on its parent's
        # death, through PR_SET_PDEATHSIG -> SIGTERM): no file outlives the switch.
        admin = os.path.join(tempfile.gettempdir(),
                             f"emu-{spec.name[:24]}-{uuid.uuid4().hex[:8]}.sock")
        rfd, wfd = os.pipe()
        cmd = daemon_command(spec, python=self.python, admin_socket=admin, ready_fd=wfd)
        if spec.pcap_dir is not None:
            Path(spec.pcap_dir).mkdir(parents=True, exist_ok=True)
        out: IO[bytes] = tempfile.TemporaryFile(prefix=f"emu-sw-{spec.name}-")  # noqa: SIM115
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            popen = proc.spawn(cmd, log=out, pass_fds=(wfd,), env=env)
        except OSError:
            os.close(rfd)
            out.close()
            raise
        finally:
            os.close(wfd)
        return EmbeddedProcess(spec, popen, out, rfd, admin, cmd)


class EmbeddedProcess(proc.SpawnedSwitch, SwitchProcess):
    kind = "embedded"

    def __init__(self, spec: SwitchSpec, popen: subprocess.Popen[bytes], out: IO[bytes],
                 ready_rfd: int, admin_socket: str, cmd: list[str]) -> None:
        super().__init__(spec, popen, out, cmd)
        self.admin_socket = admin_socket
        self.ready_info: dict[str, Any] | None = None
        self._ready_rfd: int | None = ready_rfd
        self._admin: Any = None




    def wait_ready(self, timeout_s: float) -> None:
        """The daemon writes its READY document on --ready-fd once every port is open
        and the gRPC server listens; then P4Runtime must answer."""
        deadline = time.monotonic() + timeout_s
        if self.ready_info is None:
            if self._ready_rfd is None:
                raise RuntimeError(f"switch {self.spec.name} was stopped")
            buf = b""
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"embedded switch {self.spec.name} not ready after "
                                       f"{timeout_s:g} s (ports not open yet)\n{self.output()}")
                r, _, _ = select.select([self._ready_rfd], [], [], min(left, 0.2))
                if not r:
                    if not self.alive():
                        raise self.died("exited during start-up")
                    continue
                chunk = os.read(self._ready_rfd, 65536)
                if not chunk:
                    break
                buf += chunk
            os.close(self._ready_rfd)
            self._ready_rfd = None
            if not buf.strip():
                raise self.died("exited during start-up")
            self.ready_info = json.loads(buf)
        while True:
            why = proc.grpc_answers(self.spec.grpc_addr, self.spec.device_id)
            if why is None:
                return
            if not self.alive():
                raise self.died("exited")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"embedded switch {self.spec.name}: P4Runtime at "
                                   f"{self.spec.grpc_addr} not answering: {why}")
            time.sleep(0.05)

    # ------------------------------------------------------------------ admin

    def admin_call(self, cmd: str, **args: Any) -> Any:
        """One request on the daemon's admin socket (emu.runtime.admin protocol)."""
        from emu.runtime.admin import AdminClient

        if not self.alive():
            raise self.died("is not running")
        if self._admin is None:
            self._admin = AdminClient(self.admin_socket)
        return self._admin.call(cmd, **args)

    def set_queue(self, port: int | None, config: PortQueueConfig) -> None:
        self.check_queue_change(port, config)
        self.admin_call("set_queue_rate", port=port, rate_bps=config.rate_bps)
        self.admin_call("set_queue_depth", port=port, depth_pkts=config.depth_pkts)
        self.admin_call("set_link_delay", port=port, delay_us=config.delay_ns / 1000)

    def port_config(self, port: int) -> dict[str, Any]:
        return dict(self.admin_call("get_port_config", port=port))

    def read_register(self, name: str, index: int) -> int:
        """Over P4Runtime (the embedded server implements register reads)."""
        from p4.v1 import p4runtime_pb2

        from emu.runtime.client import P4RuntimeClient

        with contextlib.closing(P4RuntimeClient(self.spec.grpc_addr, self.spec.device_id,
                                                arbitrate=False)) as c:
            info = c.fetch_p4info()
            reg = next((r for r in info.registers
                        if r.preamble.name == name or r.preamble.alias == name), None)
            if reg is None:
                raise KeyError(f"no register named {name!r} in the switch's P4Info")
            ent = p4runtime_pb2.Entity()
            ent.register_entry.register_id = reg.preamble.id
            ent.register_entry.index.index = index
            for e in c.read([ent]):
                if e.register_entry.index.index == index:
                    return int.from_bytes(e.register_entry.data.bitstring, "big")
        raise RuntimeError(f"register {name}[{index}]: no answer")

    # ------------------------------------------------------------------ stop

    def _before_terminate(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(OSError):
                self._admin.close()

    def _release(self) -> None:
        if self._ready_rfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._ready_rfd)
            self._ready_rfd = None
        with contextlib.suppress(OSError):
            os.unlink(self.admin_socket)  # only left if the daemon was SIGKILLed
