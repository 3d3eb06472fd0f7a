"""`emu topo ...` subcommands: show, check, draw (thin wrappers over emu.topo)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from .errors import TopologyError
from .loader import check_topology, load_topology
from .model import Fabric
from .paths import equal_cost_path_count
from .units import format_delay, format_rate


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("topo", help="inspect, check and draw fabric topologies")
    tsub = p.add_subparsers(dest="topo_command", metavar="COMMAND", required=True)

    show = tsub.add_parser("show", help="print nodes, links, addresses and ECMP path counts")
    show.add_argument("topo", metavar="TOPO", help="topology name (in topologies/) or path")
    show.add_argument("--json", action="store_true", help="print the resolved model as JSON")
    show.set_defaults(func=cmd_show)

    check = tsub.add_parser("check", help="validate a topology file")
    check.add_argument("topo", metavar="FILE", help="topology name or path")
    check.set_defaults(func=cmd_check)

    draw = tsub.add_parser("draw", help="draw the fabric as a layered picture")
    draw.add_argument("topo", metavar="TOPO", help="topology name or path")
    draw.add_argument(
        "-o", "--output", default="fabric.png", help="output image (default: fabric.png)"
    )
    draw.set_defaults(func=cmd_draw)


def cmd_check(args: argparse.Namespace) -> int:
    try:
        fabric = check_topology(args.topo)
    except TopologyError as exc:
        print(exc.report(), file=sys.stderr)
        return 1
    print(f"ok: {fabric.summary()}")
    return 0


def cmd_draw(args: argparse.Namespace) -> int:
    from .draw import draw_fabric  # matplotlib is slow to import; only pay for it here

    fabric = load_topology(args.topo)
    try:
        draw_fabric(fabric, args.output)
    except OSError as exc:  # a folder that is not there, no permission, a full disk
        print(f"emu topo draw: cannot write {args.output}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    print(f"wrote {args.output}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    fabric = load_topology(args.topo)
    if args.json:
        print(json.dumps(fabric.to_dict(), indent=2))
        return 0
    show_fabric(fabric)
    return 0


def show_fabric(fabric: Fabric) -> None:
    from rich.console import Console
    from rich.table import Table

    # Wide fixed width when piped, so tables are not squeezed to 80 columns in logs.
    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(f"[bold]{fabric.name}[/bold]: {fabric.summary()}  (source: {fabric.source})")
    d = fabric.defaults
    console.print(
        f"defaults: rate {format_rate(d.rate_bps)}, delay {format_delay(d.delay_ns)}, "
        f"queue {d.depth_pkts} pkts, mtu {d.mtu}"
    )

    t = Table(title="Switches")
    for col in ("name", "role", "device id", "mac", "ports", "subnet", "gateway", "oversub"):
        t.add_column(col)
    for sw in fabric.switches:
        ratio = fabric.oversubscription(sw.name) if sw.host_ports else None
        t.add_row(
            sw.name,
            sw.role.value,
            str(sw.device_id),
            sw.mac,
            f"{len(sw.host_ports)} host + {len(sw.fabric_ports)} fabric",
            str(sw.subnet or ""),
            str(sw.gateway or ""),
            f"{ratio:.2g}:1" if ratio is not None else "",
        )
    console.print(t)

    t = Table(title="Hosts")
    for col in ("name", "ip", "mac", "intf", "attached to", "gateway", "mtu"):
        t.add_column(col)
    for h in fabric.hosts:
        t.add_row(
            h.name,
            h.ip_with_prefix,
            h.mac,
            h.intf,
            f"{h.switch}:{h.switch_port}",
            str(h.gateway),
            str(h.mtu),
        )
    console.print(t)

    t = Table(title="Links")
    for col in ("#", "a", "b", "rate", "delay", "queue (pkts)"):
        t.add_column(col)
    for link in fabric.links:
        t.add_row(
            str(link.index),
            f"{link.a} ({link.a.intf})",
            f"{link.b} ({link.b.intf})",
            format_rate(link.rate_bps),
            format_delay(link.delay_ns),
            str(link.depth_pkts),
        )
    console.print(t)

    leaves = [leaf.name for leaf in fabric.leaves]
    counts = {(a, b): equal_cost_path_count(fabric, a, b)
              for a in leaves for b in leaves if a != b}
    if 1 < len(leaves) <= 12:
        t = Table(title="ECMP paths (row -> col)")
        t.add_column("")
        for b in leaves:
            t.add_column(b, justify="right")
        for a in leaves:
            t.add_row(a, *("-" if a == b else str(counts[a, b]) for b in leaves))
        console.print(t)
    if counts:
        summary = Counter(counts.values())
        parts = [
            f"{n} path{'s' if n != 1 else ''}: {pairs} leaf pairs"
            for n, pairs in sorted(summary.items())
        ]
        console.print("equal-cost paths: " + "; ".join(parts))
