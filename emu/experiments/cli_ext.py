"""The Mininet CLI on a running experiment, with fabric commands:

    tables [SWITCH ...]        entries the controller installed, and the LB mode (MACs
                               and IPv4 addresses as addresses; all switches by default)
    counters [SWITCH ...]      per-port counters (fabric.p4) and next-hop group members
    lbmode MODE [SWITCH ...]   change the load-balancing mode (all switches by default)
    fail A B / restore A B     take the A-B link down / up; the controller reroutes
    workload KIND [SIZE] [N]   run a workload (permutation, incast, allreduce, alltoall)
                               with SIZE bytes and N iterations; prints its summary
    pfc [SWITCH ...]           per-port PFC state: pausing the peer (XOFF), paused by it,
                               lossless ingress bytes, PAUSE sent/received, watchdog
    credit [SWITCH ...]        per-port credit state (--flow-control credit): blocks in
                               use, waiting for credit now, waits and time waited, updates

plus everything Mininet's CLI has (nodes, net, links, pingall, `h1 ping h2`, ...).
Command bodies are plain functions of (experiment, argument words) returning text, so
they are testable without a terminal.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from emu.control.params import LbMode
from emu.core.signals import Interrupted, stop_requests, unwinding_on_termination

from . import argtypes
from .config import reorder_gbn_warning
from .pfc import Counters

if TYPE_CHECKING:
    from mininet.cli import CLI

    from emu.control import FabricController
    from emu.control.southbound import MatchValue
    from emu.net import EmuNet

    from .plan import RunPlan
    from .report import RunRecords
    from .workloads import WorkloadKind

USAGE = {
    "tables": "tables [SWITCH ...]",
    "counters": "counters [SWITCH ...]",
    "lbmode": "lbmode MODE [SWITCH ...]",
    "fail": "fail A B",
    "restore": "restore A B",
    "workload": "workload KIND [SIZE] [ITERATIONS]  (SIZE as emu run --size: 4096, 64K, 1M)",
    "pfc": "pfc [SWITCH ...]",
    "credit": "credit [SWITCH ...]",
}


class CliSession(Protocol):
    """What the commands use of a running experiment (emu.experiments.run.Experiment)."""

    runs: int  # workloads run from the CLI so far

    @property
    def plan(self) -> RunPlan: ...

    @property
    def controller(self) -> FabricController: ...

    @property
    def net(self) -> EmuNet: ...

    @property
    def run_dir(self) -> Path: ...

    def link_down(self, a: str, b: str) -> None: ...

    def link_up(self, a: str, b: str) -> None: ...

    def run_workload(self, plan: RunPlan, *, tag: str = "") -> RunRecords: ...

    def pfc_counters(self, switch: str) -> Counters | None:
        """The switch's flow-control counters, PFC's or credit's ("mode": "credit")."""


class CommandError(ValueError):
    """Bad arguments to a CLI command; the message is shown to the user."""


def _switches(exp: CliSession, args: list[str]) -> list[str]:
    """The switches named (all of them when none is), each checked."""
    known = [s.name for s in exp.plan.fabric.switches]
    unknown = [a for a in args if a not in known]
    if unknown:
        raise CommandError(f"unknown switch {', '.join(unknown)} (switches: {', '.join(known)})")
    return args or known


def _is_mac(field: str) -> bool:
    name = field.rsplit(".", 1)[-1].lower()
    return name.endswith("mac") or ("ethernet" in field and name.endswith("addr"))


def _is_ipv4(field: str) -> bool:
    return "ipv4" in field and field.rsplit(".", 1)[-1].lower().endswith("addr")


def format_value(field: str, value: MatchValue) -> str:
    """A match or parameter value as a person reads it: MACs as aa:bb:.., IPv4 addresses
    dotted (with /len for an LPM, &&& mask for a ternary), the rest as numbers."""
    import ipaddress

    from emu.control.southbound import Lpm, Ternary

    def one(v: int) -> str:
        if _is_mac(field) and 0 <= v < 1 << 48:
            return ":".join(f"{b:02x}" for b in v.to_bytes(6, "big"))
        if _is_ipv4(field) and 0 <= v < 1 << 32:
            return str(ipaddress.IPv4Address(v))
        return str(v)

    if isinstance(value, Lpm):
        return f"{one(value.value)}/{value.prefix_len}"
    if isinstance(value, Ternary):
        return f"{one(value.value)} &&& {one(value.mask)}"
    return one(value) if isinstance(value, int) else str(value)


def show_tables(exp: CliSession, args: list[str]) -> str:
    ctl = exp.controller
    lines = []
    for sw in _switches(exp, args):
        lb = ctl.lb(sw)
        lines.append(f"{sw}: lb {lb.mode} (flowlet_timeout_us={lb.flowlet_timeout_us}, "
                     f"qdepth_max_age_us={lb.qdepth_max_age_us})")
        for e in sorted(ctl.installed(sw), key=lambda e: (e.table, str(e.match))):
            match = ", ".join(f"{k}={format_value(k, v)}" for k, v in e.match.items())
            params = ", ".join(f"{k}={format_value(k, v)}" for k, v in e.params.items())
            lines.append(f"  {e.table}  {match} -> {e.action}({params})")
    return "\n".join(lines)


def show_counters(exp: CliSession, args: list[str]) -> str:
    return "\n".join(_counters(exp, sw) for sw in _switches(exp, args))


def _counters(exp: CliSession, sw: str) -> str:
    ctl = exp.controller
    lines = [f"{sw}: port  rx_pkts  tx_pkts  tx_bytes  ecn_marks  drops"]
    for port, c in sorted(ctl.port_counters(sw).items()):
        lines.append(f"  {port:>4} {c.rx_pkts:>8} {c.tx_pkts:>8} {c.tx_bytes:>9} "
                     f"{c.ecn_marks:>10} {c.drops:>6}")
    for g in ctl.group_counters(sw):
        members = " ".join(f"port{p}:{n}" for p, n in zip(g.members, g.packets, strict=False))
        lines.append(f"  group {g.group_id}: {members}")
    return "\n".join(lines)


def set_lb_mode(exp: CliSession, args: list[str]) -> str:
    if not args:
        raise CommandError(f"usage: {USAGE['lbmode']}")
    switches = args[1:] or None
    try:
        mode = LbMode.parse(args[0])
        exp.controller.set_lb(mode, switches=switches)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    out = f"lb {mode} on {', '.join(switches) if switches else 'every switch'}"
    warning = reorder_gbn_warning(mode, exp.plan.config.recovery)
    return f"{out}\nwarning: {warning}" if warning else out


def _link_args(cmd: str, args: list[str]) -> tuple[str, str]:
    if len(args) != 2:
        raise CommandError(f"usage: {USAGE[cmd]}")
    return args[0], args[1]


def _change_link(cmd: str, change: Callable[[str, str], None], args: list[str]) -> str:
    a, b = _link_args(cmd, args)
    try:
        change(a, b)
    except (ValueError, KeyError) as exc:
        raise CommandError(str(exc)) from None
    return f"link {a}-{b}"


def fail_link(exp: CliSession, args: list[str]) -> str:
    return _change_link("fail", exp.link_down, args) + " down; routes recomputed around it"


def restore_link(exp: CliSession, args: list[str]) -> str:
    return _change_link("restore", exp.link_up, args) + " up; routes recomputed"


def run_workload(exp: CliSession, args: list[str]) -> str:
    from .plan import plan_run
    from .report import build_summary, write_results
    from .summary import render_text
    from .workloads import WORKLOAD_KINDS, WorkloadError

    if not args or args[0] not in WORKLOAD_KINDS:
        raise CommandError(f"usage: {USAGE['workload']} (KIND: {', '.join(WORKLOAD_KINDS)})")
    cfg = exp.plan.config
    kind = cast("WorkloadKind", args[0])  # one of WORKLOAD_KINDS, checked above
    wl = dataclasses.replace(cfg.workload, kind=kind)
    try:
        if len(args) > 1:
            wl = dataclasses.replace(wl, message_bytes=argtypes.size(args[1]))
        if len(args) > 2:
            wl = dataclasses.replace(wl, iterations=int(args[2]))
        plan = plan_run(dataclasses.replace(cfg, workload=wl), model=exp.plan.model)
    except (ValueError, WorkloadError, argparse.ArgumentTypeError) as exc:
        raise CommandError(str(exc)) from None
    exp.runs += 1
    tag = f"-cli{exp.runs}"
    rec = exp.run_workload(plan, tag=tag)
    out_dir = exp.run_dir / f"workload{exp.runs}-{args[0]}"
    summary = build_summary(plan, rec, out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_results(out_dir, plan, rec, summary)
    except OSError as exc:  # disk full, folder removed: the files, not the measurement
        return (render_text(summary) + f"\n*** cannot write the results in {out_dir}: "
                f"{exc.strerror or exc} (the summary above is what the run measured)")
    return render_text(summary) + f"\nresults in {out_dir}"


def show_pfc(exp: CliSession, args: list[str]) -> str:
    """`pfc [switch ...]`: per port, whether it pauses its peer (XOFF) or is paused by
    it, the lossless ingress bytes, PAUSE frames sent/received, paused time, watchdog."""
    out: list[str] = []
    for sw in _switches(exp, args):
        c = exp.pfc_counters(sw)
        if not c:
            out.append(f"{sw}: flow control off (emu run --flow-control pfc)")
            continue
        if c.get("mode") == "credit":
            out.append(f"{sw}: link-level credit, not PFC (the `credit` command)")
            continue
        out.append(f"{sw}:")
        out.append(f"  {'port':>4}  {'pausing peer':<12}  {'paused by peer':<14}  "
                   f"{'ingress B':>9}  {'PAUSE tx/rx':>11}  {'paused ms':>9}  watchdog")
        storms = {k: w for k, w in (c.get("watchdog") or {}).items()}
        for port, e in sorted(c.get("ports", {}).items(), key=lambda kv: int(kv[0])):
            now = [p for p, on in enumerate(e.get("paused_now", [])) if on]
            wd = ", ".join(f"p{k.split(':')[1]} {'STORM' if w['stormed'] else 'ok'} "
                           f"({w['detected']} detected)" for k, w in storms.items()
                           if k.split(":")[0] == str(port)) or "-"
            out.append(
                f"  {port!s:>4}  {_prios(e.get('xoff', [])):<12}  {_prios(now):<14}  "
                f"{sum((e.get('ingress_bytes') or {}).values()):>9}  "
                f"{sum(e.get('pause_tx', [])):>5}/{sum(e.get('pause_rx', [])):<5}  "
                f"{max(e.get('paused_ns') or [0]) / 1e6:>9.2f}  {wd}")
    return "\n".join(out)


def show_credit(exp: CliSession, args: list[str]) -> str:
    """`credit [switch ...]`: per port, the lossless priorities waiting for credit now,
    the blocks the peer holds in this port's buffer, how often and how long its queues
    waited for credit, and the updates sent/received."""
    out: list[str] = []
    for sw in _switches(exp, args):
        c = exp.pfc_counters(sw)
        if not c or c.get("mode") != "credit":
            mode = "PFC (the `pfc` command)" if c else "off"
            out.append(f"{sw}: credit flow control {mode}; emu run --flow-control credit")
            continue
        out.append(f"{sw}:")
        out.append(f"  {'port':>4}  {'waiting now':<11}  {'blocks used':>11}  {'waits':>6}  "
                   f"{'waited ms':>9}  {'updates tx/rx':>13}")
        for port, e in sorted(c.get("ports", {}).items(), key=lambda kv: int(kv[0])):
            now = [p for p, on in enumerate(e.get("blocked_now", [])) if on]
            out.append(
                f"  {port!s:>4}  {_prios(now):<11}  {sum(e.get('used_blocks', [])):>11}  "
                f"{sum(e.get('blocked', [])):>6}  "
                f"{max(e.get('blocked_ns') or [0]) / 1e6:>9.2f}  "
                f"{sum(e.get('updates_tx', [])):>6}/{sum(e.get('updates_rx', [])):<6}")
    return "\n".join(out)


def _prios(prios: list[int]) -> str:
    return " ".join(f"p{p}" for p in sorted(prios)) or "-"


COMMANDS: dict[str, Callable[[CliSession, list[str]], str]] = {
    "tables": show_tables,
    "counters": show_counters,
    "lbmode": set_lb_mode,
    "fail": fail_link,
    "restore": restore_link,
    "workload": run_workload,
    "pfc": show_pfc,
    "credit": show_credit,
}


class _Leave(BaseException):
    """A termination signal under Mininet's CLI, which takes every KeyboardInterrupt
    (our Interrupted too) for a Ctrl-C and goes on; carries the Interrupted out."""

    def __init__(self, interrupted: Interrupted) -> None:
        super().__init__(str(interrupted))
        self.interrupted = interrupted


def run_cli(exp: CliSession) -> None:
    """Mininet's CLI on `exp.net`, with COMMANDS added as do_<name> methods. Ctrl-C
    cancels what runs (a fabric command first finishes the switch call it is in: one
    cut half way can leave its gRPC channel stuck); SIGTERM or SIGHUP ends the CLI
    and so the run, whatever command it came in, where Mininet would go on."""
    from mininet.cli import CLI

    def make(name: str) -> Callable[[CLI, str], None]:
        fn = COMMANDS[name]

        def do(self: CLI, line: str) -> None:
            with stop_requests():  # one it records reaches `term` below on exit
                try:
                    print(fn(exp, line.split()))
                except CommandError as exc:
                    print(f"*** {exc}")
                except Exception as exc:  # keep the CLI alive: one bad command, one message
                    print(f"*** {name}: {type(exc).__name__}: {exc}")
        do.__doc__ = USAGE[name]
        return do

    with unwinding_on_termination() as term:

        def cmdloop(self: CLI, intro: str | None = None) -> None:
            try:
                CLI.cmdloop(self, intro)
            except Interrupted as exc:
                raise _Leave(exc) from None

        def postcmd(self: CLI, stop: bool, line: str) -> bool:
            if term.requested:  # also when a Mininet command swallowed the signal
                raise _Leave(Interrupted(term.describe()))
            return stop

        methods: dict[str, object] = {f"do_{name}": make(name) for name in COMMANDS}
        cls = type("EmuCLI", (CLI,), {**methods, "cmdloop": cmdloop, "postcmd": postcmd})
        print("fabric commands: " + "; ".join(USAGE.values()))
        try:
            cls(exp.net.mininet)
        except _Leave as leave:
            raise leave.interrupted from None
