"""`emu crosscheck`: the same packets through a P4 program on two targets, every difference.

    emu crosscheck [--program p4src/fabric.p4] [--packets FILE | --generate N]
                   [--topo clos4 --switch leaf1 --lb ecmp [--ecn-always] [--fail-link A:B]
                    | --entries RUNTIME.json --ports 1,2,3]
                   [--random-entries SEED]
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
{field: value | [value, prefix_len] | [value, mask] | [low, high], by the field's
match kind}, action_name, action_params, priority, default_action; values are
ints or MAC, IPv4 or IPv6 address strings; `multicast_group_entries`,
`clone_session_entries`: `runtime_file.py`), or an STF file: its `add`,
`setdefault` and `remove all` commands, as `python -m emu.p4 stf` reads them
(`stf_setup.py`; its other set-up is listed as left out). `--random-entries SEED` adds, for every
table a controller may write, a few entries that packets are likely to hit and a
default action (members and groups for a table behind an action profile or
selector), all drawn from the P4Info with that seed (see `random_entries.py`):
without entries every lookup misses, and the actions a controller installs are
never compared. A dry run of side A first records the keys the packets look up,
and half the entries of a table sit on one of them, so exact keys on header
fields hit too.

Packets: `--packets FILE` has one packet per line, STF-style `packet PORT HEX`
or JSON `{"port": P, "frame": "HEX"}`, or is an STF file (`.stf`: its `packet`
commands; its table set-up comes with `--entries` naming the same file); a frame
is at least 14 bytes, an Ethernet header, the least a veth carries; `--generate N`
makes N IPv4/UDP (RoCEv2) frames with random addresses, ports, sizes, DSCP/ECN,
plus some TTL-1 and non-IP frames.

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

Documented target difference (RANDOM_CHOICE): fabric.p4's flowlet mode draws a
new flowlet's member with random(), and the two sides' random sources differ
(side A: the switch's seeded generator; side B: BMv2's own). A flowlet
difference is explained when both sides sent the packet to a member of the
same group (ports towards other switches) with identical bytes after the MAC
rewrite of the egress port, and a counter's differences are explained when its
total over all indices is the same on both sides.

Explained too, for a program without registers and meters (so no state a packet
can read): a packet whose frames differ, but which gives the same frames on both
sides when sent again alone to fresh switches, while side A's frames do not change.
BMv2 keeps the fields of a header a packet did not extract from the packet before
(reading them is undefined in P4), the embedded target starts each packet with
zeros (docs/v1model.md). The first 10 such packets are re-run.

Explained too: a frame side A sends shorter than an Ethernet header (14 bytes; a
program can strip that much), which side B's port cannot send (the socket refuses
it), so side B shows it dropped.

Imports: emu.net and every layer below it. Layer 10, beside emu.experiments (neither
imports the other) of the package layers that pyproject.toml's import-linter contracts
enforce; nothing above it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emu.control.params import LbMode
from emu.core import argtypes, signals
from emu.core.wire import MAX_PORT

from .model import (
    DEFAULT_PROGRAM,
    MIN_FRAME,
    RANDOM_CHOICE,
    ROOT,
    Outputs,
    Packet,
    Report,
    compare_outputs,
    counter_totals_equal,
    explain_earlier_packets,
    explain_random_choice,
    generate_packets,
    read_packets,
)
from .programming import Programming, fabric_programming, group_ports
from .random_entries import with_random_entries
from .runtime_file import runtime_programming
from .sides import compile_side_a, observed_keys, read_counters, run_in_process, run_process
from .stf_setup import stf_programming

__all__ = ["DEFAULT_PROGRAM", "MIN_FRAME", "RANDOM_CHOICE", "ROOT", "Packet", "Programming", "Report",
           "compare_outputs", "counter_totals_equal", "crosscheck", "explain_random_choice",
           "fabric_programming", "generate_packets", "group_ports", "read_packets",
           "register", "runtime_programming", "stf_programming", "with_random_entries"]


def crosscheck(program: Path, include_dirs: Sequence[Path], setup: Programming,
               packets: Sequence[Packet], *, against: str = "bmv2",
               build_dir: Path = ROOT / "build" / "crosscheck",
               registers: Sequence[str] = (), settle_s: float = 0.1,
               random_entries: int | None = None) -> Report:
    """The packets through `program` on both sides, every difference. `random_entries`:
    a seed; every table a controller may write gets random entries and a random default
    action too (`random_entries.py`), the same on both sides."""
    from emu.targets import get_target

    if random_entries is not None and setup.fabric is not None:
        raise ValueError("random entries go with --entries: the fabric controller fills "
                         "fabric.p4's tables itself")
    rep = Report(program=str(program), side_a="embedded (in-process)", side_b=against,
                 packets=len(packets), notes=list(setup.notes))
    names = ("embedded", against)
    random_choice = setup.fabric is not None and setup.lb in RANDOM_CHOICE
    pipe = get_target(against).compile(program, build_dir, tuple(include_dirs))
    p4info = pipe.load_p4info()
    # named as either side's read would (full name or alias), checked before anything
    # runs: BMv2's CLI answered an unknown one with its own session dump
    known = {n for r in p4info.registers for n in (r.preamble.name, r.preamble.alias)}
    for name in registers:
        if name not in known:
            raise KeyError(f"no register named {name!r} in the switch's P4Info")
    compiled = compile_side_a(program, include_dirs)
    if random_entries is not None:
        observed = observed_keys(compiled, setup, packets)
        setup = with_random_entries(setup, p4info, random_entries, observed=observed)
        kinds = Counter(type(w).__name__ for w in setup.trial)
        rep.notes.append(f"random entries (seed {random_entries}): "
                         f"{kinds['TableEntry']} entries, {kinds['DefaultAction']} default "
                         f"actions, {kinds['ProfileMember']} profile members, "
                         f"{kinds['ProfileGroup']} groups")
    res_b, state_b, counters_b, refused_b = run_process(against, pipe, setup, packets,
                                                        registers, settle_s)
    res_a, state_a, handle_a, refused_a = run_in_process(compiled, setup, packets, registers,
                                                         skip=refused_b)
    rep.notes += [f"{names[1]} refused the {setup.trial_write(i)} ({why}); left out on both "
                  f"sides" for i, why in sorted(refused_b.items())]
    rep.differences += [f"{names[0]} refused the {setup.trial_write(i)} ({why}); {names[1]} "
                        f"took it" for i, why in sorted(refused_a.items())]
    counters_a = read_counters(handle_a, p4info, setup.ports)
    per_packet = []
    indices = []
    for i, (pkt, a, b) in enumerate(zip(packets, res_a, res_b, strict=True)):
        short = [(p, f) for p, f in a if len(f) < MIN_FRAME]
        if short:  # side B's port could not send them (EINVAL): not a difference
            a = [o for o in a if o not in short]
            rep.explained += [f"packet {i}: {names[0]} sent {len(f)} B on port {p} "
                              f"[under {MIN_FRAME} B, no real port sends it]" for p, f in short]
        found = compare_outputs(i, pkt, a, b, names)
        per_packet += [(d, pkt, a, b) for d in found]
        indices += [i] * len(found)
    if random_choice:
        ok, bad = explain_random_choice(per_packet, group_ports(setup))
        rep.explained += [f"{d} [flowlet member drawn at random]" for d in ok]
        rep.differences += bad
    elif per_packet and not (p4info.registers or p4info.meters or p4info.direct_meters):
        # No state a packet can read: a difference that goes away on fresh switches is
        # BMv2's stale header fields (explain_earlier_packets).
        def alone(i: int) -> tuple[Outputs, Outputs]:
            rb, *_ = run_process(against, pipe, setup, [packets[i]], (), settle_s)
            ra, *_ = run_in_process(compiled, setup, [packets[i]], (), skip=refused_b)
            return [o for o in ra[0] if len(o[1]) >= MIN_FRAME], rb[0]

        ok, bad = explain_earlier_packets(
            [(i, d, a) for i, (d, _pkt, a, _b) in zip(indices, per_packet, strict=True)], alone,
            names[1])
        rep.explained += ok
        rep.differences += bad
    else:
        rep.differences += [d for d, *_ in per_packet]
    for key in sorted(set(counters_a) | set(counters_b)):
        if counters_a.get(key) != counters_b.get(key):
            text = (f"counter {key}: {names[0]} {counters_a.get(key)} vs "
                    f"{names[1]} {counters_b.get(key)}")
            if random_choice and counter_totals_equal(key.rsplit("[", 1)[0], counters_a,
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
                     help="`packet PORT HEX` or JSON {port, frame} per line, or an STF "
                          "file's packets")
    src.add_argument("--generate", type=argtypes.integer(1, 1_000_000), metavar="N",
                     default=None,
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
    p.add_argument("--entries", type=Path, metavar="RUNTIME.json|FILE.stf",
                   help="table entries (p4lang tutorials runtime format, or an STF file's "
                        "add/setdefault commands) instead of the fabric controller; for "
                        "programs other than fabric.p4")
    p.add_argument("--ports", type=argtypes.integers(0, MAX_PORT, "v1model ports; 511 drops"),
                   default="1,2,3,4", help="switch ports with --entries")
    p.add_argument("--random-entries", type=int, metavar="SEED", default=None,
                   help="also give every table a controller may write random entries and "
                        "a random default action (the same on both sides), so that the "
                        "actions behind entries are compared too")
    p.add_argument("--registers", default="", metavar="NAME,...",
                   help="registers to compare at every port index")
    p.add_argument("--against", default="bmv2", choices=("bmv2", "embedded"),
                   help="side B: a switch process of this target (embedded: the daemon)")
    p.add_argument("--build-dir", type=Path, default=ROOT / "build" / "crosscheck")
    p.add_argument("--settle-ms", type=argtypes.positive, default=100.0,
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
            ports = args.ports
            setup = (stf_programming(args.entries, args.program, includes, ports)
                     if args.entries.suffix == ".stf"
                     else runtime_programming(args.entries, args.program, includes, ports))
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
        # killed (SIGTERM/SIGHUP): unwind, so the namespace and the switch are removed
        with signals.unwinding_on_termination():
            rep = crosscheck(args.program, includes, setup, packets, against=args.against,
                             build_dir=args.build_dir, registers=registers,
                             settle_s=args.settle_ms / 1000,
                             random_entries=args.random_entries)
    except (ValueError, OSError, RuntimeError, TimeoutError, KeyError, P4Error,
            subprocess.CalledProcessError) as exc:
        # str(KeyError) is the repr of its message, quotes and escapes included
        why = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"crosscheck: {why}", file=sys.stderr)
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
        try:
            args.report.parent.mkdir(parents=True, exist_ok=True)
            args.report.write_text(json.dumps(rep.to_dict(), indent=2) + "\n")
        except OSError as exc:
            print(f"crosscheck: cannot write {args.report}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 1
    return 0 if not rep.differences else 1
