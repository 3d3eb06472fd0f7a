"""The BMv2 target: p4c + one `simple_switch_grpc` process per switch.

Built from the documented interfaces of p4c, simple_switch_grpc and
simple_switch_CLI, which Debian does not package: it runs where a p4c/BMv2 build
is on PATH (as in CI) or in the VM (vagrant/README.md). What BMv2 lacks compared with the embedded
target is declared in `Bmv2Target.capabilities` and refused with `Unsupported`,
never silently approximated:

- Queue rates are packets per second (`set_queue_rate <pps> [port]`). A topology
  rate in bits per second is converted with a documented average frame size:
  pps = rate_bps / (8 * avg_frame_bytes), rounded, never below 1. The default
  frame is a RoCEv2 data frame with a 1024-byte payload (the NICs' default MTU):
  Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload 1024 + ICRC 4 = 1082 bytes.
  Smaller frames (ACKs, CNPs) are therefore served faster in bytes than the link
  rate, bigger ones slower. Rate 0 means "no limit" to BMv2.
- Link delay: simple_switch has none, so a port's `delay_ns` becomes a netem
  qdisc on the port's interface (egress, after BMv2's own queue: rate and depth
  stay in `set_queue_rate` / `set_queue_depth`, so `enq_qdepth`, ECN marking and
  adaptive routing see the queue, as on the embedded target). The delay is the
  wire delay the spec carries (already dilated by whoever built the spec). On a
  kernel without netem (sch_netem), a non-zero `delay_ns` raises Unsupported
  with one line saying so and how to run without delay.
- Registers are not readable over P4Runtime (PI: UNIMPLEMENTED);
  `read_register` uses Thrift (`simple_switch_CLI register_read`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from . import proc
from .base import (
    AddressInUse,
    Capabilities,
    CompiledPipeline,
    PortQueueConfig,
    SpecError,
    SwitchProcess,
    SwitchSpec,
    SwitchTarget,
    TargetUnavailable,
    Unsupported,
    queue_problems,
)

P4C = "p4c"
SWITCH = "simple_switch_grpc"
CLI = "simple_switch_CLI"

VM_HINT = ("run inside the VM (make vm && make vm-run TOPO=clos4 TARGET=bmv2), install "
           "p4lang-p4c and p4lang-bmv2 from the home:p4lang repository, or put a p4c/BMv2 "
           "build on PATH")

# Eth 14 + IPv4 20 + UDP 8 + BTH 12 + 1024-byte payload + ICRC 4 (see the module doc).
DEFAULT_AVG_FRAME_BYTES = 1082

CAPABILITIES = Capabilities(
    p4runtime_registers=False,  # PI implements no register reads/writes
    thrift_registers=True,  # simple_switch_CLI register_read
    bit_rate_queues=False,  # set_queue_rate is in packets per second
    packet_rate_queues=True,
    link_delay=False,  # True where the kernel has netem (Bmv2Target.capabilities)
    runtime_queue_config=True,  # simple_switch_CLI at run time
    pcap=True,
)

# netem holds the frames in flight on the link: enough for any emulated rate x delay.
NETEM_LIMIT = 10_000
NO_DELAY_HINT = ("run without link delay: make run ... LINK_DELAY=0 "
                 "(emu run --no-link-delay)")


@functools.cache
def netem_problem() -> str | None:
    """None if this kernel can add a netem qdisc, else why not (tried once, so the
    kernel may load sch_netem on demand, in a network namespace of tc's own that ends
    with it: a probe killed half way leaves no namespace behind)."""
    if os.geteuid() != 0:
        return "netem needs root"
    missing = [t for t in ("tc", "unshare") if shutil.which(t) is None]
    if missing:
        return f"netem needs {' and '.join(missing)} (apt-get install iproute2 util-linux)"
    r = subprocess.run(["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem",
                        "delay", "1us"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        if "unknown" in r.stderr.lower():
            return "this kernel has no netem qdisc (sch_netem; try modprobe sch_netem)"
        return f"netem: cannot try it in a network namespace of its own: {r.stderr.strip()}"
    return None


def link_delay_unsupported(where: str, delay_ns: int, problem: str) -> Unsupported:
    return Unsupported(f"target bmv2 emulates link delay with netem: {problem}; "
                       f"{where} has {delay_ns / 1000:g} us; {NO_DELAY_HINT}")


def netem_command(iface: str, delay_ns: int, netns: str | None = None) -> list[str]:
    """tc command line that gives `iface` a one-way delay of `delay_ns` (0: none)."""
    tc = ["tc", *(["-n", netns] if netns else []), "qdisc"]
    if not delay_ns:
        return [*tc, "del", "dev", iface, "root"]
    return [*tc, "replace", "dev", iface, "root", "netem", "delay", f"{delay_ns / 1000:g}us",
            "limit", str(NETEM_LIMIT)]


def pps_from_bps(rate_bps: float, avg_frame_bytes: int = DEFAULT_AVG_FRAME_BYTES) -> int:
    """Packets per second for a bit rate at a given average frame size (>= 1)."""
    if rate_bps <= 0:
        raise ValueError(f"rate {rate_bps} bit/s must be positive")
    if avg_frame_bytes <= 0:
        raise ValueError(f"average frame size {avg_frame_bytes} must be positive")
    return max(1, round(rate_bps / (8 * avg_frame_bytes)))


def p4c_command(p4_path: Path, build_dir: Path, include_dirs: Sequence[Path] = (),
                p4c: str = P4C) -> list[str]:
    stem = p4_path.name.removesuffix(".p4")
    cmd = [p4c, "--target", "bmv2", "--arch", "v1model",
           "--p4runtime-files", str(build_dir / f"{stem}.p4info.txtpb"),
           "-o", str(build_dir)]
    for d in include_dirs:
        cmd += ["-I", str(d)]
    return [*cmd, str(p4_path)]


def switch_command(spec: SwitchSpec, thrift_port: int, *, switch: str = SWITCH,
                   log_console: bool = False) -> list[str]:
    """The simple_switch_grpc command line for `spec` (BMv2 options, then `--`, then
    the gRPC target's). In a namespace it runs under `ip netns exec`."""
    cmd = [switch, "--no-p4", "--device-id", str(spec.device_id)]
    for num, iface in sorted(spec.ports.items()):
        cmd += ["-i", f"{num}@{iface}"]
    cmd += ["--thrift-port", str(thrift_port)]
    if spec.pcap_dir is not None:
        cmd += ["--pcap", str(spec.pcap_dir)]
    if spec.log_path is not None:
        cmd += ["--log-file", str(spec.log_path).removesuffix(".txt")]
        # BMv2 appends ".txt" to --log-file; flush so the file can be followed.
        cmd += ["--log-flush"]
    elif log_console:
        cmd += ["--log-console"]
    cmd += ["--", "--grpc-server-addr", spec.grpc_addr]
    if spec.cpu_port is not None:
        cmd += ["--cpu-port", str(spec.cpu_port)]
    if spec.priority_queues > 1:
        cmd += ["--priority-queues", str(spec.priority_queues)]
    if spec.netns:
        cmd = ["ip", "netns", "exec", spec.netns, *cmd]
    return cmd


def queue_cli_commands(port: int | None, config: PortQueueConfig,
                       avg_frame_bytes: int = DEFAULT_AVG_FRAME_BYTES) -> list[str]:
    """simple_switch_CLI lines for one port's queue (port None: every port): rate and
    depth. The delay is not BMv2's (see netem_command). SpecError for bad values."""
    problems = queue_problems(config)
    if problems:
        raise SpecError("; ".join(problems))
    suffix = "" if port is None else f" {port}"
    pps = 0 if config.rate_bps is None else pps_from_bps(config.rate_bps, avg_frame_bytes)
    return [f"set_queue_rate {pps}{suffix}", f"set_queue_depth {config.depth_pkts}{suffix}"]


# gRPC's and Thrift's start-up error when their port is taken (simple_switch_grpc
# keeps running either way).
_GRPC_BIND_FAILED = "Address already in use"

# Piped input: every answer follows a "RuntimeCmd: " prompt on the same line.
_CLI_ERROR = re.compile(r"\b(Error|Invalid|Exception|Traceback|Could not connect)\b")
_REGISTER_VALUE = re.compile(r"([\w.$]+)\[(\d+)\]\s*=\s*(\d+)")


def parse_register_read(output: str, name: str, index: int) -> int:
    """The value in simple_switch_CLI's `register_read NAME INDEX` output
    (a line `NAME[INDEX]= VALUE`)."""
    for m in _REGISTER_VALUE.finditer(output):
        if int(m.group(2)) == index and (m.group(1) == name or name.endswith(m.group(1))
                                         or m.group(1).endswith(name)):
            return int(m.group(3))
    raise RuntimeError(f"register_read {name} {index}: unexpected CLI output: "
                       f"{output.strip()[-300:]!r}")


def check_cli_output(output: str, commands: Sequence[str]) -> None:
    m = _CLI_ERROR.search(output)
    if m:
        raise RuntimeError(f"simple_switch_CLI rejected {list(commands)}: "
                           f"{output.strip()[-500:]}")


class Bmv2Target(SwitchTarget):
    name = "bmv2"

    def __init__(self, *, p4c: str = P4C, switch: str = SWITCH, cli: str = CLI,
                 avg_frame_bytes: int = DEFAULT_AVG_FRAME_BYTES,
                 netem: bool | None = None) -> None:
        """netem: whether link delays can use netem (None: try this kernel once)."""
        if avg_frame_bytes <= 0:
            raise ValueError("avg_frame_bytes must be positive")
        self.p4c = p4c
        self.switch = switch
        self.cli = cli
        self.avg_frame_bytes = avg_frame_bytes
        self._netem = netem

    def netem_problem(self) -> str | None:
        """None if link delays can be emulated with netem here, else why not."""
        if self._netem is None:
            return netem_problem()
        return None if self._netem else "this kernel has no netem qdisc (sch_netem)"

    @property
    def capabilities(self) -> Capabilities:
        return replace(CAPABILITIES, link_delay=self.netem_problem() is None)

    def link_delay_problem(self) -> str | None:
        problem = self.netem_problem()
        return None if problem is None else f"target bmv2 emulates link delay with netem: {problem}"

    def missing(self) -> list[str]:
        return [t for t in (self.p4c, self.switch, self.cli) if shutil.which(t) is None]

    def unavailable_message(self, missing: list[str]) -> str:
        names = (" and ".join(missing) if len(missing) <= 2
                 else ", ".join(missing[:-1]) + " and " + missing[-1])
        return f"target bmv2: {names} not found; {VM_HINT}"

    # ------------------------------------------------------------------ compile

    def compile(self, p4_path: Path, build_dir: Path,
                include_dirs: tuple[Path, ...] = ()) -> CompiledPipeline:
        missing = [t for t in (self.p4c,) if shutil.which(t) is None]
        if missing:
            raise TargetUnavailable(self.unavailable_message(missing))
        p4_path, build_dir = Path(p4_path), Path(build_dir)
        if not p4_path.is_file():
            raise FileNotFoundError(f"no P4 program at {p4_path}")
        build_dir.mkdir(parents=True, exist_ok=True)
        cmd = p4c_command(p4_path, build_dir, include_dirs, self.p4c)
        r = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"p4c failed ({r.returncode}) on {p4_path}:\n"
                               f"{(r.stderr or r.stdout).strip()}")
        stem = p4_path.name.removesuffix(".p4")
        pipeline = CompiledPipeline(p4info_path=build_dir / f"{stem}.p4info.txtpb",
                                    device_config_path=build_dir / f"{stem}.json",
                                    program_name=stem)
        for f in (pipeline.p4info_path, pipeline.device_config_path):
            if not f.is_file():
                raise RuntimeError(f"p4c succeeded but did not write {f}")
        return pipeline

    # ------------------------------------------------------------------ start

    def prepare(self, spec: SwitchSpec) -> SwitchSpec:
        """Validate `spec` for BMv2 and fill in a free Thrift port."""
        spec.validate()
        if spec.netns and not spec.grpc_addr.startswith("unix:"):
            raise SpecError(
                f"switch {spec.name}: BMv2 runs inside namespace {spec.netns}, so a TCP gRPC "
                f"address ({spec.grpc_addr}) would only be reachable there; give unix:PATH")
        delayed = {num: q.delay_ns for num, q in spec.queues.items() if q.delay_ns}
        if delayed:
            problem = self.netem_problem()
            if problem is not None:
                num = min(delayed)
                raise link_delay_unsupported(f"switch {spec.name} port {num}", delayed[num],
                                             problem)
        if spec.thrift_port is None:
            spec = replace(spec, thrift_port=proc.free_tcp_port())
        return spec

    def start(self, spec: SwitchSpec, pipeline: CompiledPipeline) -> Bmv2Process:
        self.check_available()
        if spec.flow_control is not None:
            raise Unsupported("BMv2 has neither PFC nor credit flow control")
        spec = self.prepare(spec)
        assert spec.thrift_port is not None
        cmd = switch_command(spec, spec.thrift_port, switch=self.switch)
        if spec.pcap_dir is not None:
            Path(spec.pcap_dir).mkdir(parents=True, exist_ok=True)
        out: IO[bytes]
        if spec.log_path is not None:
            Path(spec.log_path).parent.mkdir(parents=True, exist_ok=True)
            out = open(str(spec.log_path).removesuffix(".txt") + ".stdout", "wb")  # noqa: SIM115
        else:
            out = tempfile.TemporaryFile(prefix=f"bmv2-{spec.name}-")  # noqa: SIM115
        if spec.grpc_addr.startswith("unix:"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(spec.grpc_addr[5:])
        try:
            popen = proc.spawn(cmd, log=out)
        except OSError:
            out.close()
            raise
        return Bmv2Process(spec, popen, out, self, cmd)


class Bmv2Process(proc.SpawnedSwitch, SwitchProcess):
    kind = "bmv2"

    def __init__(self, spec: SwitchSpec, popen: subprocess.Popen[bytes], out: IO[bytes],
                 target: Bmv2Target, cmd: list[str]) -> None:
        super().__init__(spec, popen, out, cmd)
        self.target = target
        self.thrift_port: int = spec.thrift_port or 0
        self.queues: dict[int, PortQueueConfig] = dict(spec.queues)  # current settings

    # ------------------------------------------------------------------ state




    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        spec = self.spec
        last = "not started"
        while True:
            if not self.alive():
                raise self.died("exited during start-up")
            if _GRPC_BIND_FAILED in self._output():
                # simple_switch_grpc keeps running without its server: say why now.
                raise AddressInUse(f"bmv2 switch {spec.name}: address already in use "
                                   f"(gRPC {spec.grpc_addr}, Thrift {self.thrift_port})")
            missing = [i for i in spec.ports.values() if not proc.iface_exists(i, spec.netns)]
            if missing:
                last = f"interfaces {', '.join(missing)} do not exist"
            elif spec.netns is None and not proc.tcp_answers("127.0.0.1", self.thrift_port):
                last = f"Thrift port {self.thrift_port} not answering"
            else:
                why = proc.grpc_answers(spec.grpc_addr, spec.device_id)
                if why is None:
                    break
                last = f"P4Runtime at {spec.grpc_addr}: {why}"
            if time.monotonic() >= deadline:
                raise TimeoutError(f"bmv2 switch {spec.name} not ready after {timeout_s:g} s: "
                                   f"{last}")
            time.sleep(0.1)
        # Initial queue settings: BMv2 takes them only at run time, over Thrift.
        self.apply_queues()

    def _output(self) -> str:
        """What the switch printed so far (start-up messages)."""
        try:
            if self.spec.log_path is not None:
                path = str(self.spec.log_path).removesuffix(".txt") + ".stdout"
                with open(path, "rb") as f:
                    return f.read(1 << 16).decode(errors="replace")
            return os.pread(self.out.fileno(), 1 << 16, 0).decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def apply_queues(self) -> None:
        """(Re)apply every port's current queue settings in one simple_switch_CLI call
        (the spec's, updated by set_queue). wait_ready calls it; call it again after a
        SetForwardingPipelineConfig if a pipeline change ever resets BMv2's queues."""
        lines: list[str] = []
        for num, q in sorted(self.queues.items()):
            lines += queue_cli_commands(num, q, self.target.avg_frame_bytes)
        if lines:
            self.run_cli(lines)
        for num, q in sorted(self.queues.items()):
            if q.delay_ns:
                self.set_delay(num, q.delay_ns)

    def set_delay(self, port: int, delay_ns: int) -> None:
        """The port's one-way link delay, as netem on its interface (0 removes it)."""
        if delay_ns:
            problem = self.target.netem_problem()
            if problem is not None:
                raise link_delay_unsupported(f"switch {self.spec.name} port {port}", delay_ns,
                                             problem)
        cmd = netem_command(self.spec.ports[port], delay_ns, self.spec.netns)
        r = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=20)
        if r.returncode != 0 and delay_ns:
            raise RuntimeError(f"{' '.join(cmd)}: {(r.stderr or r.stdout).strip()}")

    # ------------------------------------------------------------------ Thrift CLI

    def cli_command(self) -> list[str]:
        cmd = [self.target.cli, "--thrift-port", str(self.thrift_port)]
        if self.spec.netns:
            cmd = ["ip", "netns", "exec", self.spec.netns, *cmd]
        return cmd

    def run_cli(self, commands: Sequence[str], timeout_s: float = 20.0) -> str:
        """Feed lines to `simple_switch_CLI --thrift-port P`; its output, errors raised."""
        r = subprocess.run(self.cli_command(), input="\n".join(commands) + "\n",
                           capture_output=True, text=True, timeout=timeout_s, check=False)
        output = r.stdout + r.stderr
        if r.returncode != 0:
            raise RuntimeError(f"simple_switch_CLI exited {r.returncode} on {list(commands)}: "
                               f"{output.strip()[-500:]}")
        check_cli_output(output, commands)
        return output

    def set_queue(self, port: int | None, config: PortQueueConfig) -> None:
        self.check_queue_change(port, config)
        ports = list(self.spec.ports) if port is None else [port]
        if config.delay_ns:
            problem = self.target.netem_problem()
            if problem is not None:
                raise link_delay_unsupported(f"switch {self.spec.name} port "
                                             f"{'*' if port is None else port}",
                                             config.delay_ns, problem)
        self.run_cli(queue_cli_commands(port, config, self.target.avg_frame_bytes))
        for num in ports:
            if config.delay_ns != self.queues.get(num, PortQueueConfig()).delay_ns:
                self.set_delay(num, config.delay_ns)
            self.queues[num] = config

    def read_register(self, name: str, index: int) -> int:
        out = self.run_cli([f"register_read {name} {index}"])
        return parse_register_read(out, name, index)


def describe(spec: SwitchSpec, target: Bmv2Target | None = None) -> dict[str, Any]:
    """The command lines a spec gives (for `--dry-run` style output and docs)."""
    t = target or Bmv2Target()
    s = t.prepare(spec)
    assert s.thrift_port is not None
    return {"switch": switch_command(s, s.thrift_port, switch=t.switch),
            "queues": {num: queue_cli_commands(num, q, t.avg_frame_bytes)
                       for num, q in sorted(s.queues.items())},
            "delays": {num: netem_command(s.ports[num], q.delay_ns, s.netns)
                       for num, q in sorted(s.queues.items()) if q.delay_ns}}
