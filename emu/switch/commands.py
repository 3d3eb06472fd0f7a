"""`python -m emu.switch ...`: command line of the switch daemon (simple_switch_grpc's)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from emu.core import argtypes
from emu.core.credit import check_link_buffers
from emu.core.pfc import FlowControl
from emu.core.wire import MAX_PORT

from .daemon import run_switch, setup_logging
from .options import PortSettings, SwitchOptions, check_setting

_PORT = argtypes.integer(0, MAX_PORT, f"9-bit ports; {MAX_PORT + 1} drops")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _port_value(text: str, conv: Any) -> tuple[int | None, Any]:
    """'[PORT=]VALUE' -> (port or None, value)."""
    port, sep, value = text.partition("=")
    if sep:
        return int(port), conv(value)
    return None, conv(text)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m emu.switch",
        description="A switch daemon like simple_switch_grpc: AF_PACKET ports on interfaces, "
                    "the pipeline over P4Runtime. Exits 0 when stopped, 98 (EADDRINUSE) "
                    "when the gRPC address is taken, 1 on any other start-up error.")
    p.add_argument("program", nargs="?", metavar="PROG.p4",
                   help="P4 program compiled and loaded at start (else: --no-p4)")
    p.add_argument("--no-p4", action="store_true",
                   help="start without a pipeline; push one with SetForwardingPipelineConfig")
    p.add_argument("--device-id", type=argtypes.integer(0, (1 << 64) - 1, "a P4Runtime uint64"),
                   default=0)
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="bind port number PORT to interface IFACE (repeatable)")
    p.add_argument("--grpc-addr", "--grpc-server-addr", default="127.0.0.1:9559",
                   metavar="HOST:PORT|unix:PATH")
    p.add_argument("--cpu-port", type=_PORT, default=None,
                   help="the port whose frames are PacketIn/PacketOut (e.g. 255)")
    p.add_argument("--pcap", metavar="DIR", help="write <iface>_in.pcap / <iface>_out.pcap")
    p.add_argument("--log-console", action="store_true")
    p.add_argument("--log-file", metavar="F")
    p.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS)
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR")
    p.add_argument("--admin-socket", metavar="PATH",
                   help="JSON-lines admin socket (queue rate/depth, link delay, stats)")
    p.add_argument("--ready-file", metavar="PATH", help="written once every port is open")
    p.add_argument("--ready-fd", type=int, metavar="FD", help="written and closed when ready")
    p.add_argument("--port-netns", metavar="NAME",
                   help="open the ports inside this network namespace")
    p.add_argument("--priority-queues", type=argtypes.integer(1, 8), default=1)
    p.add_argument("--trust-compiled-configs", action="store_true",
                   help="let P4Runtime clients load compiled programs (emu-compiled-v1, "
                        "<prog>.emu.json), which are Python this process runs: only when "
                        "every client that reaches the gRPC address is trusted (default: "
                        "P4 sources only, compiled here)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the pipeline's random draws (v1model `random`: ECN "
                        "marking, spraying); a run gives each switch its own")
    p.add_argument("--queue-depth", action="append", default=[], metavar="[PORT=]PKTS")
    p.add_argument("--queue-rate-bps", action="append", default=[], metavar="[PORT=]BPS")
    p.add_argument("--queue-rate-pps", action="append", default=[], metavar="[PORT=]PPS")
    p.add_argument("--link-delay-us", action="append", default=[], metavar="[PORT=]US")
    p.add_argument("--port-config", metavar="FILE.json",
                   help='{"default": {...}, "ports": {"1": {"rate_bps": .., "rate_pps": .., '
                        '"depth_pkts": .., "delay_us": ..}}}')
    p.add_argument("--pfc-config", metavar="FILE.json|JSON",
                   help="priority flow control (emu.core.pfc.FlowControl.to_dict), plus "
                        '"links": {"PORT": [rate_bps, delay_ns, mtu]} for the headroom each '
                        "port needs (default: no flow control)")
    p.add_argument("--timer-spin-us", type=argtypes.non_negative, default=100.0, metavar="US",
                   help="busy-wait up to this long for a paced departure (precise rates on a "
                        "core of its own; 0 when many switches share the CPUs)")
    p.add_argument("--no-pdeathsig", action="store_true",
                   help="keep running when the parent process exits")
    p.add_argument("--parent-pid", type=int, default=None, metavar="PID",
                   help="stop when process PID (the launcher) is not the parent any more "
                        "(default: the parent at start); exact even when the launcher "
                        "exits before the daemon has started")
    return p


def options_from_args(args: argparse.Namespace) -> SwitchOptions:
    if args.program and args.no_p4:
        raise SystemExit("error: give PROG.p4 or --no-p4, not both")
    ifaces: dict[int, str] = {}
    for item in args.interface:
        num, sep, iface = item.partition("@")
        if not sep or not num.isdigit() or not iface:
            raise SystemExit(f"error: bad -i {item!r}: expected PORT@IFACE")
        if int(num) > MAX_PORT:
            raise SystemExit(f"error: bad -i {item!r}: ports are 0..{MAX_PORT} (9 bits; "
                             f"{MAX_PORT + 1} drops)")
        if int(num) in ifaces:
            raise SystemExit(f"error: port {num} given twice")
        ifaces[int(num)] = iface
    default = PortSettings()
    ports: dict[int, PortSettings] = {}
    if args.port_config:
        default, ports = _port_config(args.port_config)

    def put(items: list[str], attr: str, conv: Any) -> None:
        for item in items:
            try:
                port, value = _port_value(item, conv)
                check_setting(attr, value)
                if port is not None and not 0 <= port <= MAX_PORT:
                    raise ValueError(f"ports are 0..{MAX_PORT}")
            except ValueError as exc:
                raise SystemExit(f"error: bad [PORT=]VALUE {item!r}: {exc}") from None
            if port is None:
                setattr(default, attr, value)
                for s in ports.values():
                    setattr(s, attr, value)
            else:
                s = ports.setdefault(port, PortSettings(**default.__dict__))
                setattr(s, attr, value)

    put(args.queue_depth, "depth_pkts", int)
    put(args.queue_rate_bps, "rate_bps", float)
    put(args.queue_rate_pps, "rate_pps", float)
    put(args.link_delay_us, "delay_us", float)
    fc, links = _pfc_config(args.pfc_config)
    return SwitchOptions(
        flow_control=fc, pfc_links=links, device_id=args.device_id, interfaces=ifaces, grpc_addr=args.grpc_addr,
        cpu_port=args.cpu_port, pcap_dir=args.pcap, program=args.program,
        include_dirs=tuple(args.include_dirs), admin_socket=args.admin_socket,
        ready_file=args.ready_file, ready_fd=args.ready_fd, port_netns=args.port_netns,
        priority_queues=args.priority_queues, trust_compiled_configs=args.trust_compiled_configs,
        default_port=default, ports=ports, pdeathsig=not args.no_pdeathsig,
        parent_pid=args.parent_pid, seed=args.seed,
        timer_spin_ns=int(args.timer_spin_us * 1000))


def _port_config(path: str) -> tuple[PortSettings, dict[int, PortSettings]]:
    """--port-config FILE.json: {"default": {setting: value}, "ports": {"PORT": {...}}}."""
    try:
        with open(path) as f:
            cfg = json.load(f)
        if not isinstance(cfg, dict):
            raise ValueError("expected a JSON object")
        default = PortSettings(**cfg.get("default", {}))
        default.check()
        ports = {}
        for k, v in cfg.get("ports", {}).items():
            if not 0 <= int(k) <= MAX_PORT:
                raise ValueError(f"port {k}: ports are 0..{MAX_PORT}")
            ports[int(k)] = s = PortSettings(**{**default.__dict__, **v})
            s.check()
        return default, ports
    except (OSError, ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
        raise SystemExit(f"error: --port-config {path}: {exc}") from None


def _pfc_config(text: str | None) -> tuple[FlowControl | None,
                                           dict[int, tuple[float, int, int]]]:
    """--pfc-config: inline JSON (starts with '{') or a file of it."""
    if not text:
        return None, {}
    try:
        if text.lstrip().startswith("{"):
            d = json.loads(text)
        else:
            with open(text) as f:
                d = json.load(f)
        links = {int(p): (float(v[0]), int(v[1]), int(v[2]))
                 for p, v in d.pop("links", {}).items()}
        fc = FlowControl.from_dict(d)
        if fc.mode == "credit":  # refused here, before the switch starts
            check_link_buffers(fc.credit.buffer_bytes, links)
        return fc, links
    except (OSError, ValueError, TypeError, IndexError, AttributeError, OverflowError,
            RecursionError) as exc:
        raise SystemExit(f"error: --pfc-config: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.log_console, args.log_file, args.log_level)
    return run_switch(options_from_args(args))
