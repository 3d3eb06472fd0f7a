"""The switch daemon's options: ports, addresses, queue and link settings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from emu.core.pfc import FlowControl
from emu.core.units import MAX_LINE_RATE_BPS, MAX_TIME_NS

__all__ = ["PortSettings", "SwitchOptions", "check_setting"]

# The largest value of each port setting; rates also refuse 0 < r < 1, which the
# traffic manager would round to 0 ("no limit").
_LIMITS = {"rate_bps": MAX_LINE_RATE_BPS, "rate_pps": MAX_LINE_RATE_BPS / 512,
           "depth_pkts": 2**31 - 1, "delay_us": MAX_TIME_NS / 1000}


def check_setting(name: str, value: object) -> float | None:
    """A port setting as given on the command line, in --port-config or on the admin
    socket: None, or a finite number in range (an integer for depth_pkts); ValueError
    naming the setting otherwise."""
    if value is None and name != "delay_us":
        return None
    limit = _LIMITS.get(name)
    if limit is None:
        raise ValueError(f"unknown port setting {name!r}; known: {sorted(_LIMITS)}")
    kinds = int if name == "depth_pkts" else (int, float)
    # bool is an int to Python, but JSON true is no number
    if not (isinstance(value, kinds) and not isinstance(value, bool)
            and math.isfinite(value) and 0 <= value <= limit):
        what, top = ("an integer", f"{limit:.0f}") if kinds is int else ("a number", f"{limit:g}")
        raise ValueError(f"{name} must be {what} in 0..{top}, got {value!r}")
    if name.startswith("rate_") and 0 < value < 1:
        raise ValueError(f"{name} {value!r} is below 1 (0 removes the limit)")
    return value


@dataclass
class PortSettings:
    """Queue and link settings of one port (None: the target's default)."""

    rate_bps: float | None = None
    rate_pps: float | None = None
    depth_pkts: int | None = None
    delay_us: float = 0.0

    def check(self) -> None:
        """ValueError naming the first setting out of range."""
        for f in fields(self):
            check_setting(f.name, getattr(self, f.name))
        if self.rate_bps and self.rate_pps:
            raise ValueError("give rate_bps or rate_pps, not both")


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
    # Whether P4Runtime clients may load compiled programs (Python run by the switch)
    # rather than P4 sources it compiles: only when every client is trusted.
    trust_compiled_configs: bool = False
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
