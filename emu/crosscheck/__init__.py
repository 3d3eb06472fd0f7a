"""`emu crosscheck`: the same packets through a P4 program on two targets, every difference.

    emu crosscheck [--program p4src/fabric.p4] [--packets FILE | --generate N]
                   [--topo clos4 --switch leaf1 --lb ecmp [--ecn-always] [--fail-link A:B]
                    | --entries RUNTIME.json --ports 1,2,3]
                   [--against bmv2] [--registers NAME,...] [--report FILE.json]

Side A is the embedded target in-process (`emu.p4.api.P4Switch` on a virtual
clock: exact, no timing noise). Side B (`--against`, default bmv2) is a real
switch process of that target, started through `emu.targets` on veth pairs in a
throwaway namespace, given the pipeline and the same entries over P4Runtime; the
packets are sent on the host ends one at a time and whatever comes out of every
port within a settle time is collected.

Entries: for fabric.p4 the fabric controller computes them for one switch of a
topology (the same calls program both sides); for any other program give a
runtime file in the p4lang tutorials' format (`table_entries`: table, match
{field: value | [value, prefix_len] | [value, mask]}, action_name,
action_params, priority, default_action).

Packets: `--packets FILE` has one packet per line, STF-style `packet PORT HEX`
or JSON `{"port": P, "frame": "HEX"}`; `--generate N` makes N IPv4/UDP (RoCEv2)
frames with random addresses, ports, sizes, DSCP/ECN, plus some TTL-1 and
non-IP frames.

Compared: per packet, the (port, bytes) of every frame out; after the run, the
P4Info's counters (packets and/or bytes per the counter's unit) at every port
index, and the registers named with --registers. Exit 0: identical, or every
difference explained by a documented target difference (listed apart); 1:
unexplained differences (or a failure); the missing-tools message when side B's
target is not installed.

Packets go one at a time, so egress queues are empty: --ecn-always installs
ecn_config with kmin = kmax = 0 on every port (every ECT packet is marked
whatever the queue) to compare the marking path itself; --fail-link A:B tells
the controller the link failed before any packet is sent (the groups avoid it).

Documented target difference (TIME_IN_CHOICE): fabric.p4's flowlet mode hashes
the ingress timestamp into a new flowlet's member, and the two sides' clocks
differ (side A: a virtual clock; side B: microseconds since the process
started). A flowlet difference is explained when both sides sent the packet to
a member of the same group (ports towards other switches) with identical bytes
after the MAC rewrite of the egress port, and a counter's differences are
explained when its total over all indices is the same on both sides.

Imports: emu.net and every layer below it. Layer 10, beside emu.experiments (neither
imports the other) of the package layers that pyproject.toml's import-linter contracts
enforce; nothing above it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emu.control.params import LbMode

from .packets import Outputs, Packet, compare_outputs, generate_packets, read_packets

# Re-exported: part of this tool's interface (tests use them through emu.crosscheck).
__all__ = ["ROOT", "TIME_IN_CHOICE", "Outputs", "Packet", "Report", "compare_outputs",
           "counter_totals_equal", "crosscheck", "explain_time_in_choice",
           "fabric_programming", "generate_packets", "group_ports", "read_packets",
           "register", "runtime_programming"]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PROGRAM = ROOT / "p4src" / "fabric.p4"
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4

# ---------------------------------------------------------------------- data


@dataclass
class Report:
    program: str
    side_a: str
    side_b: str
    packets: int = 0
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Differences a documented target difference accounts for (see the module doc).
    explained: list[str] = field(default_factory=list)
    counters_b: dict[str, list[int]] = field(default_factory=dict)  # side B, name[i] -> values

    def to_dict(self) -> dict[str, Any]:
        return {"program": self.program, "a": self.side_a, "b": self.side_b,
                "packets": self.packets, "differences": self.differences,
                "explained": self.explained, "notes": self.notes, "counters_b": self.counters_b}


# ---------------------------------------------------------------------- entries


@dataclass
class Programming:
    """What to install: either a controller-computed fabric switch or runtime entries."""

    ports: list[int]
    switch_name: str
    device_id: int
    hosts: list[tuple[str, str, int | None]]
    fabric: Any = None
    lb: str = "ecmp"
    entries: list[Any] = field(default_factory=list)  # southbound TableEntry
    defaults: list[tuple[str, str, dict[str, int]]] = field(default_factory=list)
    ecn_always: bool = False  # fabric: mark every ECT packet (kmin = kmax = 0)
    failed_links: list[tuple[str, str]] = field(default_factory=list)  # fabric: A, B

    def apply(self, handle: Any) -> None:
        if self.fabric is not None:
            from emu.control import (
                FabricController,
                LbSettings,
                MemorySwitchHandle,
                TableEntry,
            )
            from emu.control.program import ECN_CONFIG, SET_RED

            handles = {s.name: (handle if s.name == self.switch_name
                                else MemorySwitchHandle(s.name)) for s in self.fabric.switches}
            ctl = FabricController(self.fabric, handles, lb=LbSettings(mode=LbMode(self.lb)))
            ctl.program()
            for a, b in self.failed_links:
                ctl.link_down(a, b)
            if self.ecn_always:
                # Below the controller's checks (kmin < kmax): q >= 0 always marks.
                for p in self.ports:
                    handle.modify_entry(TableEntry(
                        ECN_CONFIG, {"standard_metadata.egress_port": p}, SET_RED,
                        {"kmin": 0, "kmax": 0, "slope": 0, "at_dequeue": 1}))
            return
        for table, action, params in self.defaults:
            handle.set_default(table, action, params)
        for e in self.entries:
            handle.insert_entry(e)


def group_ports(setup: Programming) -> set[int]:
    """The switch's ports towards other switches: the members of its next-hop groups."""
    if setup.fabric is None:
        return set()
    switches = {s.name for s in setup.fabric.switches}
    out = set()
    for link in setup.fabric.links:
        for mine, peer in ((link.a, link.b), (link.b, link.a)):
            if mine.node == setup.switch_name and peer.node in switches:
                out.add(mine.port)
    return out


def fabric_programming(topo: str, switch: str | None, lb: str, *, ecn_always: bool = False,
                       failed_links: Sequence[tuple[str, str]] = ()) -> Programming:
    from emu.topo import load_topology

    fabric = load_topology(topo)
    names = [s.name for s in fabric.switches]
    if switch and switch not in names:
        raise ValueError(f"no switch {switch!r} in {topo} ({', '.join(names)})")
    sw = fabric.switch(switch) if switch else next(
        (s for s in fabric.switches if s.subnet is not None), fabric.switches[0])
    hosts = [(str(h.ip), h.mac, h.switch_port if h.switch == sw.name else None)
             for h in fabric.hosts]
    for a, b in failed_links:
        if not any({a, b} == {link.a.node, link.b.node} for link in fabric.links):
            raise ValueError(f"no link {a}:{b} in {topo}")
    return Programming(ports=[p.number for p in sw.ports], switch_name=sw.name,
                       device_id=sw.device_id, hosts=hosts, fabric=fabric, lb=lb,
                       ecn_always=ecn_always, failed_links=list(failed_links))


def runtime_programming(path: Path, ports: list[int]) -> Programming:
    """Entries from a p4lang-tutorials-style runtime JSON file."""
    from emu.control import Lpm, TableEntry, Ternary

    doc = json.loads(path.read_text())
    prog = Programming(ports=ports, switch_name="s1", device_id=1, hosts=[])
    for e in doc.get("table_entries", []):
        params = {k: int(v) for k, v in dict(e.get("action_params", {})).items()}
        if e.get("default_action"):
            prog.defaults.append((e["table"], e["action_name"], params))
            continue
        match: dict[str, Any] = {}
        for name, v in dict(e.get("match", {})).items():
            if isinstance(v, list):
                a, b = int(v[0]), int(v[1])
                # [value, prefix_len] is LPM; with a priority the entry is ternary [value, mask]
                match[name] = Lpm(a, b) if e.get("priority") is None else Ternary(a, b)
            else:
                match[name] = int(v)
        prog.entries.append(TableEntry(e["table"], match, e["action_name"], params,
                                       e.get("priority")))
    return prog


# ---------------------------------------------------------------------- side A: in-process


def run_in_process(program: Path, include_dirs: Sequence[Path], setup: Programming,
                   packets: Sequence[Packet], registers: Sequence[str]
                   ) -> tuple[list[Outputs], dict[str, Any], Any]:
    from emu.control.inprocess import InProcessSwitchHandle
    from emu.core.clock import VirtualClock
    from emu.p4.api import P4Switch

    sw = P4Switch.from_file(str(program), [str(d) for d in include_dirs], clock=VirtualClock(),
                            seed=setup.device_id, queue_depth_pkts=1024)
    handle = InProcessSwitchHandle(setup.switch_name, sw)
    setup.apply(handle)
    wired = set(setup.ports)
    results = []
    for pkt in packets:
        sw.inject(pkt.port, pkt.frame)
        sw.run_until_idle()
        results.append([(o.port, bytes(o.data)) for o in sw.outputs(clear=True)
                        if o.port in wired])
    state = {"registers": {f"{r}[{i}]": int(sw.register_read(r, i))
                           for r in registers for i in setup.ports}}
    return results, state, handle


# ---------------------------------------------------------------------- side B: a process


@contextlib.contextmanager
def veth_ports(ports: Sequence[int]) -> Iterator[tuple[str, dict[int, str], dict[int, str]]]:
    """A namespace with one veth pair per port: (ns, switch ends, host ends)."""
    from emu.core import netns

    tag = uuid.uuid4().hex[:6]
    ns = f"emuxc-{tag}"
    netns.add(ns)
    try:
        for key in ("all", "default"):
            netns.run(ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1", check=False)
        sw_end = {p: f"xs{tag}{p}" for p in ports}
        host_end = {p: f"xh{tag}{p}" for p in ports}
        for p in ports:
            netns.run(ns, "ip", "link", "add", sw_end[p], "type", "veth", "peer", "name",
                      host_end[p])
            for i in (sw_end[p], host_end[p]):
                netns.run(ns, "ip", "link", "set", i, "up")
        yield ns, sw_end, host_end
    finally:
        netns.delete(ns)


def collect(socks: Mapping[int, socket.socket], settle_s: float, max_s: float) -> Outputs:
    out: Outputs = []
    by_fd = {s.fileno(): (p, s) for p, s in socks.items()}
    deadline = time.monotonic() + max_s
    quiet_until = time.monotonic() + settle_s
    while True:
        now = time.monotonic()
        wait = min(quiet_until, deadline) - now
        if wait <= 0:
            return out
        ready, _, _ = select.select(list(by_fd), [], [], wait)
        for fd in ready:
            port, s = by_fd[fd]
            data, addr = s.recvfrom(65535)
            if addr[2] != PACKET_OUTGOING:
                out.append((port, data))
                quiet_until = time.monotonic() + settle_s


def run_process(target_name: str, program: Path, include_dirs: Sequence[Path],
                build_dir: Path, setup: Programming, packets: Sequence[Packet],
                registers: Sequence[str], settle_s: float
                ) -> tuple[list[Outputs], dict[str, Any], Any, Any]:
    from emu.control.p4rt import P4RuntimeSwitchHandle
    from emu.core import netns
    from emu.runtime.client import P4RuntimeClient
    from emu.targets import SwitchSpec, get_target

    target = get_target(target_name)
    pipe = target.compile(program, build_dir, tuple(include_dirs))
    p4info = pipe.load_p4info()
    sockdir = tempfile.mkdtemp(prefix="emuxc-")
    results: list[Outputs] = []
    try:
        with veth_ports(setup.ports) as (ns, sw_end, host_end):
            spec = SwitchSpec(setup.switch_name, setup.device_id, dict(sw_end),
                              f"unix:{sockdir}/p4rt.sock", netns=ns)
            with target.start(spec, pipe) as proc:
                proc.wait_ready(120)
                client = P4RuntimeClient(spec.grpc_addr, setup.device_id)
                socks: dict[int, socket.socket] = {}
                try:
                    client.set_pipeline(p4info, pipe.device_config())
                    handle = P4RuntimeSwitchHandle(setup.switch_name, client, p4info)
                    setup.apply(handle)
                    with netns.inside(ns):
                        for p, iface in host_end.items():
                            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                              socket.htons(ETH_P_ALL))
                            s.bind((iface, 0))
                            socks[p] = s
                    collect(socks, 0.05, 0.5)  # drain anything from start-up
                    for pkt in packets:
                        socks[pkt.port].send(pkt.frame)
                        results.append(collect(socks, settle_s, max(2.0, 10 * settle_s)))
                    state = {"registers": {f"{r}[{i}]": proc.read_register(r, i)
                                           for r in registers for i in setup.ports}}
                    counters = read_counters(handle, p4info, setup.ports)
                finally:
                    for s in socks.values():
                        s.close()
                    client.close()
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
    return results, state, counters, p4info


def read_counters(handle: Any, p4info: Any, indices: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """Every indirect counter of the P4Info at `indices`: name[i] -> the unit's values."""
    out: dict[str, tuple[int, ...]] = {}
    for c in p4info.counters:
        unit = c.spec.unit  # 1 BYTES, 2 PACKETS, 3 BOTH
        cells = handle.read_counters(c.preamble.name, [i for i in indices if i < c.size])
        for i, (pk, by) in cells.items():
            vals = {1: (by,), 2: (pk,)}.get(unit, (pk, by))
            out[f"{c.preamble.name}[{i}]"] = tuple(int(v) for v in vals)
    return out


# ---------------------------------------------------------------------- driver


# LB modes whose member choice hashes the ingress timestamp (see the module doc).
TIME_IN_CHOICE = {"flowlet"}


def explain_time_in_choice(diffs: list[tuple[str, Packet, Outputs, Outputs]],
                           members: set[int]) -> tuple[list[str], list[str]]:
    """(explained, unexplained) of per-packet differences under TIME_IN_CHOICE: one frame
    out on each side, both on group members, identical past the Ethernet addresses."""
    explained: list[str] = []
    unexplained: list[str] = []
    for text, _pkt, a, b in diffs:
        ok = (len(a) == len(b) == 1 and a[0][0] in members and b[0][0] in members
              and a[0][1][12:] == b[0][1][12:])
        (explained if ok else unexplained).append(text)
    return explained, unexplained


def counter_totals_equal(name: str, a: Mapping[str, tuple[int, ...]],
                         b: Mapping[str, tuple[int, ...]]) -> bool:
    """Whether counter `name` has the same totals over all its indices on both sides."""
    def total(c: Mapping[str, tuple[int, ...]]) -> list[int]:
        cells = [v for k, v in c.items() if k.rsplit("[", 1)[0] == name]
        return [sum(col) for col in zip(*cells, strict=True)] if cells else []
    return total(a) == total(b)


def crosscheck(program: Path, include_dirs: Sequence[Path], setup: Programming,
               packets: Sequence[Packet], *, against: str = "bmv2",
               build_dir: Path = ROOT / "build" / "crosscheck",
               registers: Sequence[str] = (), settle_s: float = 0.1) -> Report:
    rep = Report(program=str(program), side_a="embedded (in-process)", side_b=against,
                 packets=len(packets))
    names = ("embedded", against)
    time_in_choice = setup.fabric is not None and setup.lb in TIME_IN_CHOICE
    res_b, state_b, counters_b, p4info = run_process(against, program, include_dirs, build_dir,
                                                     setup, packets, registers, settle_s)
    res_a, state_a, handle_a = run_in_process(program, include_dirs, setup, packets, registers)
    counters_a = read_counters(handle_a, p4info, setup.ports)
    per_packet = []
    for i, (pkt, a, b) in enumerate(zip(packets, res_a, res_b, strict=True)):
        per_packet += [(d, pkt, a, b) for d in compare_outputs(i, pkt, a, b, names)]
    if time_in_choice:
        ok, bad = explain_time_in_choice(per_packet, group_ports(setup))
        rep.explained += [f"{d} [flowlet member from the ingress timestamp]" for d in ok]
        rep.differences += bad
    else:
        rep.differences += [d for d, *_ in per_packet]
    for key in sorted(set(counters_a) | set(counters_b)):
        if counters_a.get(key) != counters_b.get(key):
            text = (f"counter {key}: {names[0]} {counters_a.get(key)} vs "
                    f"{names[1]} {counters_b.get(key)}")
            if time_in_choice and counter_totals_equal(key.rsplit("[", 1)[0], counters_a,
                                                       counters_b):
                rep.explained.append(f"{text} [same total; flowlet spread]")
            else:
                rep.differences.append(text)
    for key in sorted(state_a["registers"]):
        va, vb = state_a["registers"][key], state_b["registers"].get(key)
        if va != vb:
            rep.differences.append(f"register {key}: {names[0]} {va} vs {names[1]} {vb}")
    rep.counters_b = {k: list(v) for k, v in sorted(counters_b.items())}
    sent = sum(len(r) for r in res_a)
    rep.notes.append(f"{len(packets)} packets in, {sent} frames out on {names[0]}, "
                     f"{sum(len(r) for r in res_b)} on {names[1]}")
    return rep


def register(sub: Any) -> None:
    p = sub.add_parser("crosscheck", help="same packets through a P4 program on the embedded "
                       "target and BMv2; report every difference",
                       description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--program", type=Path, default=DEFAULT_PROGRAM, metavar="PROG.p4")
    p.add_argument("-I", dest="include_dirs", type=Path, action="append", default=[],
                   metavar="DIR")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--packets", type=Path, metavar="FILE",
                     help="`packet PORT HEX` or JSON {port, frame} per line")
    src.add_argument("--generate", type=int, metavar="N", default=None,
                     help="N random frames (default 200)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--topo", default="clos4", help="topology whose switch is programmed "
                   "by the fabric controller (fabric.p4)")
    p.add_argument("--switch", help="which switch of --topo (default: the first leaf)")
    p.add_argument("--lb", default=LbMode.ECMP.value, choices=[m.value for m in LbMode])
    p.add_argument("--ecn-always", action="store_true",
                   help="fabric.p4: mark every ECT packet on every port (kmin = kmax = 0)")
    p.add_argument("--fail-link", action="append", default=[], metavar="A:B",
                   help="fabric.p4: the controller reroutes around this link first "
                        "(repeatable)")
    p.add_argument("--entries", type=Path, metavar="RUNTIME.json",
                   help="table entries (p4lang tutorials runtime format) instead of the "
                        "fabric controller; for programs other than fabric.p4")
    p.add_argument("--ports", default="1,2,3,4", help="switch ports with --entries")
    p.add_argument("--registers", default="", metavar="NAME,...",
                   help="registers to compare at every port index")
    p.add_argument("--against", default="bmv2", choices=("bmv2", "embedded"),
                   help="side B: a switch process of this target (embedded: the daemon)")
    p.add_argument("--build-dir", type=Path, default=ROOT / "build" / "crosscheck")
    p.add_argument("--settle-ms", type=float, default=100.0,
                   help="quiet time after the last output frame of a packet")
    p.add_argument("--report", type=Path, metavar="FILE.json")
    p.set_defaults(func=cmd_crosscheck)


def cmd_crosscheck(args: argparse.Namespace) -> int:
    from emu.p4.frontend.diagnostics import P4Error
    from emu.targets import get_target

    target = get_target(args.against)
    missing = target.missing()
    if missing:
        print(target.unavailable_message(missing), file=sys.stderr)
        return 1
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("crosscheck: needs root and iproute2 (it puts the switch on veth pairs in a "
              "network namespace)", file=sys.stderr)
        return 1
    if not args.program.is_file():
        print(f"crosscheck: no program {args.program}", file=sys.stderr)
        return 1
    includes = list(args.include_dirs) or [args.program.parent]
    try:
        if args.entries is not None:
            ports = [int(x) for x in args.ports.split(",") if x]
            setup = runtime_programming(args.entries, ports)
        else:
            failed = []
            for spec in args.fail_link:
                a, sep, b = spec.partition(":")
                if not (sep and a and b):
                    raise ValueError(f"--fail-link {spec!r}: expected A:B (two node names)")
                failed.append((a, b))
            setup = fabric_programming(args.topo, args.switch, args.lb,
                                       ecn_always=args.ecn_always, failed_links=failed)
        if args.packets is not None:
            packets = read_packets(args.packets)
            bad = sorted({p.port for p in packets} - set(setup.ports))
            if bad:
                raise ValueError(f"packets on ports {bad}, which the switch does not have "
                                 f"(ports {setup.ports})")
        else:
            packets = generate_packets(args.generate or 200, setup.ports, args.seed, setup.hosts)
        registers = [r for r in args.registers.split(",") if r]
        rep = crosscheck(args.program, includes, setup, packets, against=args.against,
                         build_dir=args.build_dir, registers=registers,
                         settle_s=args.settle_ms / 1000)
    except (ValueError, OSError, RuntimeError, TimeoutError, KeyError, P4Error,
            subprocess.CalledProcessError) as exc:
        print(f"crosscheck: {exc}", file=sys.stderr)
        return 1
    explained = (f", {len(rep.explained)} explained by a documented target difference"
                 if rep.explained else "")
    print(f"crosscheck {args.program.name}: {rep.packets} packets, embedded (in-process) vs "
          f"{args.against}: {len(rep.differences)} difference(s){explained}")
    for note in rep.notes:
        print(f"  {note}")
    for d in rep.differences:
        print(f"  - {d}")
    for d in rep.explained[:10]:
        print(f"  = {d}")
    if len(rep.explained) > 10:
        print(f"  = ... {len(rep.explained) - 10} more explained (--report for all)")
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(rep.to_dict(), indent=2) + "\n")
    return 0 if not rep.differences else 1
