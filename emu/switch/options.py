"""The switch daemon's options: ports, addresses, queue and link settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from emu.core.pfc import FlowControl

__all__ = ["PortSettings", "SwitchOptions"]


@dataclass
class PortSettings:
    """Queue and link settings of one port (None: the target's default)."""

    rate_bps: float | None = None
    rate_pps: float | None = None
    depth_pkts: int | None = None
    delay_us: float = 0.0


@dataclass
class SwitchOptions:
    device_id: int = 0
    interfaces: dict[int, str] = field(default_factory=dict)
    grpc_addr: str = "127.0.0.1:9559"
    cpu_port: int | None = None
    pcap_dir: str | None = None
    program: str | None = None
    include_dirs: tuple[str, ...] = ()
    admin_socket: str | None = None
    ready_file: str | None = None
    ready_fd: int | None = None
    port_netns: str | None = None
    priority_queues: int = 1
    seed: int = 0  # the pipeline's random draws (v1model `random`)
    default_port: PortSettings = field(default_factory=PortSettings)
    ports: dict[int, PortSettings] = field(default_factory=dict)
    pdeathsig: bool = True
    parent_pid: int | None = None  # the launcher (default: the parent seen at start)
    # PreciseClock's busy-wait before a timer: exact pacing on a dedicated core, but CPU
    # taken from every other process when many switches share the cores.
    timer_spin_ns: int = 100_000
    # emu.core.pfc.FlowControl; None or mode "off": no flow control (the default).
    flow_control: FlowControl | None = None
    # Port -> (modelled rate bps, one-way delay ns, MTU) of its link: the headroom each
    # lossless priority needs there (emu.core.pfc.headroom_bytes; --pfc-config "links").
    pfc_links: dict[int, tuple[float, int, int]] = field(default_factory=dict)
