"""The switch-target interface.

A target compiles a P4 program once per run into a `CompiledPipeline` (P4Info
plus the device config that SetForwardingPipelineConfig carries), starts one
switch process per fabric switch from a `SwitchSpec`, and configures egress
queues. The controller then talks P4Runtime to `SwitchProcess.grpc_addr`,
whatever the target.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from emu.core.wire import MAX_PORT

# The interface `emu.targets` re-exports; helpers such as queue_problems stay here.
__all__ = [
    "AddressInUse",
    "Capabilities",
    "CompiledPipeline",
    "PortQueueConfig",
    "SpecError",
    "SwitchProcess",
    "SwitchSpec",
    "SwitchTarget",
    "TargetUnavailable",
    "Unsupported",
]

class TargetUnavailable(RuntimeError):
    """The target's tools are missing; the message names them and how to get them."""


class Unsupported(RuntimeError):
    """The target cannot do what was asked (see `SwitchTarget.capabilities`).

    Raised instead of silently behaving differently from another target; the
    message says what the target lacks and, where there is one, its own way.
    """


class AddressInUse(RuntimeError):
    """The switch could not listen on its P4Runtime (or Thrift) address: another process
    took the port between the bind test that chose it and the switch's own bind. The
    caller may start the switch again on other ports."""


class SpecError(ValueError):
    """A SwitchSpec (or a queue config) this target cannot run."""


@dataclass(frozen=True)
class Capabilities:
    """What a target can do, for the controller and experiments to query.

    p4runtime_registers: register entries can be read/written over P4Runtime
        (PI behind simple_switch_grpc: UNIMPLEMENTED).
    thrift_registers: registers readable through the target's Thrift CLI
        (`simple_switch_CLI register_read`); `SwitchProcess.read_register` uses
        whichever of the two the target has.
    bit_rate_queues: egress queues served in bits per second (serialisation time
        per frame size); without it, rates become packets per second (BMv2's
        `set_queue_rate <pps>`) via a documented average frame size.
    packet_rate_queues: egress queue rates in packets per second.
    link_delay: a per-port one-way link delay (BMv2: netem, where the kernel has it).
    runtime_queue_config: queue rate/depth changeable while the switch runs.
    pcap: per-port pcap files (`--pcap DIR`).
    """

    p4runtime_registers: bool
    thrift_registers: bool
    bit_rate_queues: bool
    packet_rate_queues: bool
    link_delay: bool
    runtime_queue_config: bool = True
    pcap: bool = True

    def as_dict(self) -> dict[str, bool]:
        return {f.name: bool(getattr(self, f.name)) for f in fields(self)}

    def __getitem__(self, name: str) -> bool:
        if name not in self.as_dict():
            raise KeyError(name)
        return bool(getattr(self, name))


@dataclass(frozen=True)
class CompiledPipeline:
    """What SetForwardingPipelineConfig needs, as files in the build dir."""

    p4info_path: Path  # P4Info in text format
    device_config_path: Path  # bytes for ForwardingPipelineConfig.p4_device_config
    program_name: str

    def load_p4info(self) -> Any:
        """The P4Info message (p4.config.v1.P4Info) read from `p4info_path`."""
        return load_p4info(self.p4info_path)

    def device_config(self) -> bytes:
        return self.device_config_path.read_bytes()


def load_p4info(path: Path | str) -> Any:
    """Read a P4Info file; the format goes by extension as p4c writes them:
    .txt/.txtpb/.pb.txt text format, .json JSON, anything else binary."""
    from google.protobuf import json_format, text_format
    from p4.config.v1 import p4info_pb2

    path = Path(path)
    msg = p4info_pb2.P4Info()
    name = path.name
    try:
        if name.endswith((".txt", ".txtpb", ".pb.txt", ".textproto")):
            text_format.Parse(path.read_text(), msg)
        elif name.endswith(".json"):
            json_format.Parse(path.read_text(), msg)
        else:
            msg.ParseFromString(path.read_bytes())
    except (text_format.ParseError, json_format.ParseError) as exc:
        raise ValueError(f"{path}: not a P4Info: {exc}") from None
    return msg


@dataclass(frozen=True)
class PortQueueConfig:
    """Egress queue of one switch port (link emulation lives in the switch)."""

    rate_bps: int | None = None  # None: unlimited
    depth_pkts: int = 64
    delay_ns: int = 0
    priority_queues: int = 1


@dataclass(frozen=True)
class SwitchSpec:
    """One switch process: identity, ports and where its servers listen."""

    name: str
    device_id: int
    ports: dict[int, str]  # port number -> interface name
    grpc_addr: str  # "127.0.0.1:PORT" or "unix:/path"
    cpu_port: int | None = 255
    queues: dict[int, PortQueueConfig] = field(default_factory=dict)
    netns: str | None = None  # namespace the interfaces live in (None: current)
    pcap_dir: Path | None = None
    log_path: Path | None = None
    thrift_port: int | None = None  # BMv2 only (None: a free port is picked at start)
    # Embedded only: the daemon's busy-wait before paced departures (None: its default).
    timer_spin_us: float | None = None
    # Priority flow control (emu.core.pfc.FlowControl.to_dict() plus "links"): embedded
    # only; BMv2 has none.
    flow_control: dict[str, Any] | None = None
    # Embedded only: the seed of the switch's random draws (v1model `random`: ECN marking,
    # spraying); a run passes emu.core.seeds.switch_seed(run seed, device id), as virtual
    # time does. None: the daemon's default (0).
    seed: int | None = None

    def validate(self) -> None:
        """Raise SpecError for a spec no target can run (targets check their own limits)."""
        validate_spec(self)

    @property
    def priority_queues(self) -> int:
        """Strict-priority queues per port, fixed when the switch starts."""
        return max((q.priority_queues for q in self.queues.values()), default=1)


IFNAMSIZ = 15  # Linux interface names: at most 15 characters


def validate_spec(spec: SwitchSpec) -> None:
    problems: list[str] = []
    if not spec.name:
        problems.append("empty switch name")
    if spec.device_id < 0:
        problems.append(f"device id {spec.device_id} is negative")
    if not spec.ports:
        problems.append("no ports")
    seen: dict[str, int] = {}
    for num, iface in spec.ports.items():
        if not 0 <= num <= MAX_PORT:
            problems.append(f"port {num} outside 0..{MAX_PORT}")
        if not iface or len(iface) > IFNAMSIZ or "/" in iface or "@" in iface or iface.strip() != iface:
            problems.append(f"port {num}: bad interface name {iface!r}")
        if iface in seen:
            problems.append(f"interface {iface} used by ports {seen[iface]} and {num}")
        seen[iface] = num
    if spec.cpu_port is not None:
        if not 0 <= spec.cpu_port <= MAX_PORT:
            problems.append(f"cpu port {spec.cpu_port} outside 0..{MAX_PORT}")
        elif spec.cpu_port in spec.ports:
            problems.append(f"cpu port {spec.cpu_port} is also a data port")
    if not (spec.grpc_addr.startswith("unix:") and len(spec.grpc_addr) > 5) \
            and not re.fullmatch(r"[0-9A-Za-z.\-]+:\d{1,5}|\[[0-9a-fA-F:]+\]:\d{1,5}", spec.grpc_addr):
        problems.append(f"gRPC address {spec.grpc_addr!r} is not HOST:PORT or unix:PATH")
    if spec.thrift_port is not None and not 1 <= spec.thrift_port <= 65535:
        problems.append(f"thrift port {spec.thrift_port} outside 1..65535")
    for num, q in spec.queues.items():
        if num not in spec.ports:
            problems.append(f"queue config for port {num}, which the switch does not have")
        problems.extend(f"port {num}: {p}" for p in queue_problems(q))
    if problems:
        raise SpecError(f"switch {spec.name or '?'}: " + "; ".join(problems))


def queue_problems(q: PortQueueConfig) -> list[str]:
    out = []
    if q.rate_bps is not None and q.rate_bps <= 0:
        out.append(f"rate_bps {q.rate_bps} must be positive (None: unlimited)")
    if q.depth_pkts < 1:
        out.append(f"depth_pkts {q.depth_pkts} must be at least 1")
    if q.delay_ns < 0:
        out.append(f"delay_ns {q.delay_ns} is negative")
    if not 1 <= q.priority_queues <= 8:
        out.append(f"priority_queues {q.priority_queues} outside 1..8")
    return out


class SwitchProcess(ABC):
    """A running switch. `stop()` is idempotent and leaves no process behind."""

    spec: SwitchSpec
    pid: int

    @property
    def grpc_addr(self) -> str:
        return self.spec.grpc_addr

    @abstractmethod
    def wait_ready(self, timeout_s: float) -> None:
        """Block until every port is open and P4Runtime answers; raise on failure."""

    @abstractmethod
    def set_queue(self, port: int | None, config: PortQueueConfig) -> None:
        """Change an egress queue at run time (port None: every port)."""

    def check_queue_change(self, port: int | None, config: PortQueueConfig) -> None:
        """What every target refuses in `set_queue`: a bad config (SpecError), a port the
        switch does not have (SpecError), another number of priority queues than at
        start (Unsupported; 1 leaves it as it is)."""
        problems = queue_problems(config)
        if problems:
            raise SpecError("; ".join(problems))
        if port is not None and port not in self.spec.ports:
            raise SpecError(f"switch {self.spec.name} has no port {port}")
        nq = self.spec.priority_queues
        if config.priority_queues not in (1, nq):
            raise Unsupported(f"switch {self.spec.name}: the number of priority queues is "
                              f"fixed at start (--priority-queues {nq})")

    @abstractmethod
    def alive(self) -> bool: ...

    @abstractmethod
    def stop(self, timeout_s: float = 5.0) -> None: ...

    def output(self) -> str:
        """What the process wrote so far (its tail), for error messages."""
        return ""

    @abstractmethod
    def died(self, what: str) -> RuntimeError:
        """The error for this process found dead: `what` it did, its exit status, its output."""

    def read_register(self, name: str, index: int) -> int:
        """One register cell, by the register's P4Info/BMv2 name, the target's own way.

        The embedded target reads over P4Runtime; BMv2 through Thrift
        (`simple_switch_CLI register_read`), since PI has no P4Runtime registers.
        """
        raise Unsupported(f"{type(self).__name__} cannot read registers")

    def __enter__(self) -> SwitchProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SwitchTarget(ABC):
    name: str

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this target can do (query before relying on a feature)."""

    @abstractmethod
    def missing(self) -> list[str]:
        """Tools this target needs that are not installed (empty: usable)."""

    def check_available(self) -> None:
        missing = self.missing()
        if missing:
            raise TargetUnavailable(self.unavailable_message(missing))

    def unavailable_message(self, missing: list[str]) -> str:
        return f"target {self.name}: missing {', '.join(missing)}"

    def link_delay_problem(self) -> str | None:
        """None if this target can emulate link delays here, else why not (one line)."""
        return None if self.capabilities.link_delay else f"target {self.name} has no link delay"

    @abstractmethod
    def compile(self, p4_path: Path, build_dir: Path,
                include_dirs: tuple[Path, ...] = ()) -> CompiledPipeline: ...

    @abstractmethod
    def start(self, spec: SwitchSpec, pipeline: CompiledPipeline) -> SwitchProcess:
        """Start the switch process (not yet programmed: the controller pushes the pipeline)."""


def spec_from_topology(fabric: Any, switch: str, grpc_addr: str, *,
                       capabilities: Capabilities | None = None, priority_queues: int = 1,
                       **kw: Any) -> SwitchSpec:
    """The SwitchSpec of topology switch `switch` (an emu.topo Fabric): ports on the
    topology's interface names, each port's queue from its link (rate, depth, delay).

    With `capabilities` of a target without `link_delay` (BMv2), a topology with
    link delays raises Unsupported rather than quietly dropping the delay; pass
    `link_delay=False` explicitly (kw) to run without delays on such a target.
    Other keywords go to SwitchSpec (netns, pcap_dir, log_path, cpu_port, ...).
    """
    keep_delay = bool(kw.pop("link_delay", True))
    sw = fabric.switch(switch)
    links = {link.index: link for link in fabric.links}
    queues: dict[int, PortQueueConfig] = {}
    delayed: list[int] = []
    for p in sw.ports:
        delay = int(links[p.link].delay_ns) if keep_delay else 0
        if delay:
            delayed.append(p.number)
        queues[p.number] = PortQueueConfig(rate_bps=int(p.rate_bps), depth_pkts=int(p.depth_pkts),
                                           delay_ns=delay, priority_queues=priority_queues)
    if delayed and capabilities is not None and not capabilities.link_delay:
        raise Unsupported(
            f"switch {switch}: the topology gives ports {delayed} a link delay and this "
            "target has none; pass link_delay=False to run without it (and say so in results)")
    return SwitchSpec(name=sw.name, device_id=sw.device_id,
                      ports={p.number: p.intf for p in sw.ports}, grpc_addr=grpc_addr,
                      queues=queues, **kw)
