"""`emu run` and `emu stop`.

`emu run TOPO`: the Mininet fabric of P4 switches running fabric.p4, programmed by
the controller, a RoCE workload on the hosts, then a summary and a results folder
(see emu.experiments.run). `emu stop`: remove what a killed run left behind.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from emu.experiments.config import CC_MODES, LB_MODES, RECOVERY_MODES, TARGETS, RunConfig

if TYPE_CHECKING:
    from emu.experiments.plan import RunPlan

WORKLOADS = ("allreduce", "permutation", "incast", "alltoall")


def _size(text: str) -> int:
    """'64K', '1M', '4096' -> bytes (K/M/G are powers of 1024)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if mult > 1 else t) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4096, 64K, 1M)") from None


TOPOLOGY_RATE = 0  # `--rate topology`: the rates written in the topology file


def _rate(text: str) -> int:
    from emu.topo import UnitError, parse_rate

    if text.strip().lower() == "topology":
        return TOPOLOGY_RATE

    try:
        return int(parse_rate(text))
    except (UnitError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _link(text: str) -> tuple[str, str]:
    a, sep, b = text.partition(":")
    if not sep or not a or not b:
        raise argparse.ArgumentTypeError(f"expected SWITCH:SWITCH, got {text!r}")
    return a, b


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser(
        "run", help="run the emulated fabric with a workload",
        description="Bring up TOPO as a Mininet fabric of P4 switches running fabric.p4, "
                    "program it, verify every host pair, run a RoCEv2 workload, then print a "
                    "summary and write results/<time>-<topo>-<lb>-<cc>/.")
    run.add_argument("topo", metavar="TOPO", help="topology name (in topologies/) or path")
    run.add_argument("--lb", choices=LB_MODES, default="ecmp", help="load-balancing mode")
    run.add_argument("--cc", choices=CC_MODES, default="dcqcn", help="congestion control")
    run.add_argument("--recovery", choices=RECOVERY_MODES, default="gbn",
                     help="loss recovery: go-back-N or selective repeat")
    run.add_argument("--workload", choices=WORKLOADS, default="allreduce")
    run.add_argument("--target", choices=TARGETS, default="embedded", help="switch target")
    run.add_argument("--cli", action="store_true",
                     help="open the Mininet CLI on the programmed fabric (no automatic workload)")
    w = run.add_argument_group("workload")
    w.add_argument("--size", type=_size, default=None, metavar="BYTES",
                   help="message size: per flow (permutation, incast) or per-rank buffer "
                        "(allreduce, alltoall); e.g. 64K (default 256K)")
    w.add_argument("--iterations", type=int, default=1)
    w.add_argument("--incast-senders", type=int, default=0, metavar="N",
                   help="incast: N senders (default: every other host)")
    w.add_argument("--seed", type=int, default=1, help="permutation choice and QP entropy")
    f = run.add_argument_group("fabric and hosts")
    f.add_argument("--rate", type=_rate, default=None, metavar="RATE",
                   help="every link's rate, e.g. 10Mbps (default: the rate `emu calibrate "
                        "TOPO` saved for this machine, else a built-in rate this 2-core "
                        "class of machine sustains; `--rate topology` keeps the YAML's)")
    f.add_argument("--priority-queues", type=int, default=2, metavar="N",
                   help="strict-priority queues per switch port; with 2 or more, ACKs and "
                        "CNPs (DSCP 48) ride the top one (default 2; 1 = one shared queue)")
    f.add_argument("--dilation", type=float, default=None,
                   help="time dilation: hosts model links this many times faster (default: "
                        "1000 x the topology's rate / the rate used, so the modelled network "
                        "stays the topology's at 1000x: 20 Mbps in the YAML = 20 Gb/s)")
    f.add_argument("--dcqcn-profile", choices=("hpcc", "nvidia", "paper"), default="hpcc",
                   help="DCQCN parameter profile (default hpcc)")
    f.add_argument("--window", type=int, default=32, metavar="PKTS",
                   help="outstanding packets per QP (and the sr reorder window)")
    f.add_argument("--no-link-delay", action="store_true",
                   help="every link's delay 0 (a target that cannot emulate delays here, "
                        "e.g. BMv2 without netem)")
    f.add_argument("--fail-link", type=_link, default=None, metavar="A:B",
                   help="fail the A-B link during the workload (the controller reroutes)")
    f.add_argument("--fail-after", type=float, default=1.0, metavar="S")
    o = run.add_argument_group("output")
    o.add_argument("--results", default="results", metavar="DIR", help="results root")
    o.add_argument("--pcap", action="store_true", help="per-port pcaps in the results folder")
    o.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="workload wall-clock budget")
    o.add_argument("--no-progress", action="store_true", help="no live view")
    o.add_argument("--sample-interval", type=float, default=0.05, metavar="S",
                   help="sample switch counters and queue depths every S seconds "
                        "(default %(default)s)")
    o.add_argument("--virtual", action="store_true",
                   help="run in virtual time in one process (no Mininet, no root)")
    o.add_argument("--dry-run", action="store_true",
                   help="show the plan (fabric, flows, agents) and exit")
    run.set_defaults(func=cmd_run)

    stop = sub.add_parser("stop", help="remove what a killed run left behind")
    stop.set_defaults(func=cmd_stop)


def config_from_args(args: argparse.Namespace) -> RunConfig:
    from pathlib import Path

    from emu.experiments.workloads import WorkloadParams

    wl = WorkloadParams(kind=args.workload, iterations=args.iterations,
                        incast_senders=args.incast_senders, seed=args.seed,
                        **({"message_bytes": args.size} if args.size else {}))
    from emu.experiments.rates import choose_rate, default_dilation

    if args.rate == TOPOLOGY_RATE:
        rate, reason = None, "as written in the topology: --rate topology"
    else:
        choice = choose_rate(args.topo, args.target, args.rate)
        rate, reason = choice.rate_bps, choice.reason
    dilation = args.dilation if args.dilation is not None else default_dilation(args.topo, rate)
    return RunConfig(topo=args.topo, lb=args.lb, cc=args.cc, recovery=args.recovery,
                     target=args.target, workload=wl, dilation=dilation,
                     dcqcn_profile=args.dcqcn_profile, priority_queues=args.priority_queues,
                     rate_bps=rate, rate_reason=reason,
                     window_pkts=args.window, timeout_s=args.timeout,
                     pcap=args.pcap, cli=args.cli, progress=not args.no_progress,
                     sample_interval_s=args.sample_interval,
                     virtual=args.virtual, results_root=Path(args.results),
                     fail_link=args.fail_link, fail_after_s=args.fail_after,
                     link_delay=not args.no_link_delay)


def cmd_run(args: argparse.Namespace) -> int:
    import sys

    from emu.experiments.config import RunConfigError
    from emu.experiments.plan import plan_run
    from emu.experiments.workloads import WorkloadError

    try:
        cfg = config_from_args(args)
        plan = plan_run(cfg)
    except (RunConfigError, WorkloadError) as exc:
        print(f"emu run: {exc}", file=sys.stderr)
        return 1
    if args.dry_run:
        print(f"topology {plan.fabric.name}: {plan.fabric.summary()}")
        from emu.experiments.rates import rate_line

        print(rate_line(plan.fabric, cfg.rate_reason, cfg.dilation))
        print(f"workload {cfg.workload.kind}: {len(plan.workload.flows)} flows, "
              f"{plan.workload.total_bytes()} bytes, {len(plan.agents)} agents")
        for fl in plan.workload.flows[:20]:
            dep = f" after {','.join(fl.after)}" if fl.after else ""
            print(f"  {fl.id}: {fl.src} -> {fl.dst} {fl.size_bytes} B{dep}")
        if len(plan.workload.flows) > 20:
            print(f"  ... {len(plan.workload.flows) - 20} more")
        return 0
    return _run(cfg, plan)


def _run(cfg: RunConfig, plan: RunPlan) -> int:
    import sys

    from emu.experiments.run import RunError, run_experiment

    try:
        from emu.experiments.state import StateError
    except ImportError:  # state.py is another module's; never let it block a run
        StateError = RuntimeError  # type: ignore[misc,assignment]  # noqa: N806
    try:
        summary = run_experiment(cfg, plan=plan)
    except (RunError, StateError) as exc:
        print(str(exc) if str(exc).startswith("emu") else f"emu run: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("emu run: interrupted; the fabric was torn down", file=sys.stderr)
        return 130
    return 0 if (summary.ok or cfg.cli) else 1


def cmd_stop(args: argparse.Namespace) -> int:
    import os
    import shutil
    import sys

    from emu.experiments.state import stop_runs

    # One clear line instead of a traceback halfway through a cleanup.
    if os.geteuid() != 0:
        print("emu stop: needs root (it kills processes and deletes interfaces); "
              "run it as root or with sudo", file=sys.stderr)
        return 1
    missing = [tool for tool in ("ip", "tc", "nsenter") if shutil.which(tool) is None]
    if missing:
        print(f"emu stop: missing {', '.join(missing)} (apt-get install iproute2 util-linux)",
              file=sys.stderr)
        return 1
    return stop_runs()
