"""The switch daemon's admin commands (JSON-lines protocol in emu.runtime.admin).

One small handler per command, dispatched by name through COMMANDS. Each takes the
switch (anything shaped like `Switch` below) and the request object; a ValueError is
answered as a bad request. Queue settings are stored as well as applied, so they
survive pipeline changes.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, Protocol

from emu.core.port import AfPacketPort
from emu.runtime.device import LocalDevice
from emu.runtime.server import P4RuntimeServer

from .options import PortSettings, SwitchOptions, check_setting

__all__ = ["COMMANDS", "Switch", "admin_handlers"]

Request = dict[str, Any]


class Switch(Protocol):
    """What the handlers use of the daemon."""

    opts: SwitchOptions
    device: LocalDevice
    server: P4RuntimeServer
    ports: dict[int, AfPacketPort]
    delay_ns: dict[int, int]
    no_pipeline_drops: dict[int, int]
    no_port_drops: dict[int, int]
    pipeline_errors: dict[int, int]

    def settings(self, num: int | None) -> PortSettings: ...
    def settings_for_update(self, num: int | None) -> list[PortSettings]: ...
    def reset_senders(self) -> None: ...


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)  # JSON true is not a number


def _port_arg(sw: Switch, req: Request) -> int | None:
    p = req.get("port")
    if p is None:
        return None
    if not _is_int(p) or p < 0:
        raise ValueError("port must be a non-negative integer or null")
    # A typo must not configure a queue no frame will ever use.
    known = set(sw.opts.interfaces)
    if sw.opts.cpu_port is not None:
        known.add(sw.opts.cpu_port)
    if p not in known:
        raise ValueError(f"no port {p} on this switch (ports: {sorted(known)})")
    return int(p)


def ping(sw: Switch, req: Request) -> Any:
    return {"device_id": sw.opts.device_id, "pid": os.getpid(),
            "ports": {str(k): v for k, v in sw.opts.interfaces.items()},
            "pipeline": sw.device.dataplane is not None, "seed": sw.opts.seed}


def set_queue_rate(sw: Switch, req: Request) -> Any:
    port = _port_arg(sw, req)
    bps, pps = check_setting("rate_bps", req.get("rate_bps")), \
        check_setting("rate_pps", req.get("rate_pps"))
    if bps is not None and pps is not None:
        raise ValueError("give rate_bps or rate_pps, not both")
    dp = sw.device.dataplane
    if dp is not None:
        dp.set_queue_rate(port, rate_bps=bps, rate_pps=pps)
    for s in sw.settings_for_update(port):
        s.rate_bps, s.rate_pps = bps, pps
    sw.reset_senders()  # egress serialises frames at the port's rate
    return None


def set_queue_depth(sw: Switch, req: Request) -> Any:
    port = _port_arg(sw, req)
    depth = req.get("depth_pkts")
    prio = req.get("priority")
    if depth is None:
        raise ValueError("depth_pkts is required")
    check_setting("depth_pkts", depth)
    if prio is not None and (not _is_int(prio) or prio < 0):
        raise ValueError("priority must be a non-negative integer or null")
    dp = sw.device.dataplane
    if dp is not None:
        dp.set_queue_depth(port, depth, priority=prio)
    if prio is None:
        for s in sw.settings_for_update(port):
            s.depth_pkts = depth
    return None


def set_link_delay(sw: Switch, req: Request) -> Any:
    port = _port_arg(sw, req)
    delay = check_setting("delay_us", req.get("delay_us"))
    assert delay is not None  # check_setting refuses a missing delay
    for s in sw.settings_for_update(port):
        s.delay_us = float(delay)
    targets = sw.opts.interfaces if port is None else [port]
    for num in targets:
        sw.delay_ns[num] = int(delay * 1000)
    sw.reset_senders()
    return None


def get_port_config(sw: Switch, req: Request) -> Any:
    port = _port_arg(sw, req)
    if port is None:
        raise ValueError("port is required")
    out: dict[str, Any] = {"delay_us": sw.delay_ns.get(port, 0) / 1000}
    dp = sw.device.dataplane
    if dp is not None:
        out.update(dp.queue_info(port))
    else:
        s = sw.settings(port)
        out.update({"rate_bps": s.rate_bps, "rate_pps": s.rate_pps,
                    "depths_pkts": [s.depth_pkts or 64]})
    return out


def drops(sw: Switch, req: Request) -> Any:
    out: dict[str, dict[str, int]] = {}
    dp = sw.device.dataplane
    if dp is not None:
        for (port, reason), n in dp.drops.snapshot().items():
            out.setdefault(str(port), {})[reason] = n
    for port, n in sw.no_pipeline_drops.items():
        out.setdefault(str(port), {})["no_pipeline"] = n
    for port, n in sw.no_port_drops.items():
        out.setdefault(str(port), {})["no_such_port"] = n
    for port, n in sw.pipeline_errors.items():
        d = out.setdefault(str(port), {})
        d["pipeline_error"] = d.get("pipeline_error", 0) + n
    for num, p in sw.ports.items():
        k = p.kernel_drops()
        if k:
            out.setdefault(str(num), {})["kernel_rx"] = k
        if p.stats.tx_drops:
            out.setdefault(str(num), {})["tx"] = p.stats.tx_drops
    return out


def stats(sw: Switch, req: Request) -> Any:
    ports: dict[str, Any] = {}
    dp = sw.device.dataplane
    for num, p in sw.ports.items():
        st = p.stats
        ports[str(num)] = {
            "iface": p.iface, "down": p.down, "rx_frames": st.rx_frames,
            "rx_bytes": st.rx_bytes, "tx_frames": st.tx_frames,
            "tx_bytes": st.tx_bytes, "tx_drops": st.tx_drops,
            "kernel_drops": p.kernel_drops(),
            "queue": dp.queue_info(num) if dp is not None else None,
        }
    # How late the traffic manager's service turns ran since the previous `stats` call
    # (it resets): the fidelity signal "TM lag".
    lag = dp.take_tm_lag_ns() if dp is not None else None
    out = {"ports": ports, "drops": drops(sw, req), "p4runtime": dict(sw.server.stats),
           "tm_lag_ms": None if lag is None else lag / 1e6}
    pfc = getattr(dp, "flow_control_counters", None)
    counters = pfc() if pfc is not None else None
    if counters is not None:
        out["credit" if counters.get("mode") == "credit" else "pfc"] = counters
    return out


COMMANDS: dict[str, Callable[[Switch, Request], Any]] = {
    "ping": ping, "set_queue_rate": set_queue_rate, "set_queue_depth": set_queue_depth,
    "set_link_delay": set_link_delay, "get_port_config": get_port_config, "drops": drops,
    "stats": stats,
}


def admin_handlers(sw: Switch) -> dict[str, Callable[[Request], Any]]:
    """The AdminServer's handler table for one switch."""
    return {name: functools.partial(fn, sw) for name, fn in COMMANDS.items()}
