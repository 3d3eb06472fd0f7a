"""`emu run` and `emu stop`.

`emu run TOPO`: the Mininet fabric of P4 switches running fabric.p4, programmed by
the controller, a RoCE workload on the hosts, then a summary and a results folder
(see emu.experiments.run). `emu stop`: remove what a killed run left behind.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from emu.control.params import LbMode
from emu.core.flowmode import WATCHDOG_MODES, FlowControlMode
from emu.experiments import argtypes
from emu.experiments.config import (
    CC_MODES,
    REAL_SAMPLE_S,
    REAL_TIMEOUT_S,
    RECOVERY_MODES,
    TARGETS,
    VIRTUAL_SAMPLE_S,
    VIRTUAL_TIMEOUT_S,
    RunConfig,
    RunConfigError,
)
from emu.experiments.workloads import WORKLOAD_KINDS, WorkloadParams
from emu.roce.dcqcn import PROFILES

if TYPE_CHECKING:
    from emu.experiments.plan import RunPlan

# The flags' defaults are the library's: a run from the command line and one built in
# Python with the same settings are the same run.
_RUN = RunConfig()
_WL = _RUN.workload


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser(
        "run", help="run the emulated fabric with a workload",
        description="Bring up TOPO as a Mininet fabric of P4 switches running fabric.p4, "
                    "program it, verify every host pair, run a RoCEv2 workload, then print a "
                    "summary and write results/<time>-<topo>-<lb>-<cc>/.")
    run.add_argument("topo", metavar="TOPO",
                     help="topology name (in topologies/, e.g. clos4) or path to a YAML file")
    run.add_argument("--lb", choices=[m.value for m in LbMode], default=_RUN.lb.value,
                     help="load balancing in the switches: ecmp (per-flow hash), flowlet "
                          "(re-pick a path after an idle gap), adaptive (the path with the "
                          "shortest queue), spray (per packet), te (controller pins each flow) "
                          "(default %(default)s)")
    run.add_argument("--cc", choices=CC_MODES, default=_RUN.cc,
                     help="congestion control of the host agents: dcqcn (ECN marks -> CNPs "
                          "-> rate cuts) or none (line rate) (default %(default)s)")
    run.add_argument("--recovery", choices=RECOVERY_MODES, default=_RUN.recovery,
                     help="loss recovery: gbn (go-back-N) or sr (selective repeat) "
                          "(default %(default)s)")
    run.add_argument("--workload", choices=WORKLOAD_KINDS, default=_WL.kind,
                     help="traffic: allreduce (ring all-reduce over all hosts), permutation "
                          "(each host sends to one host under another leaf), incast (many "
                          "hosts to the last one), alltoall (every host to every other) "
                          "(default %(default)s)")
    run.add_argument("--target", choices=TARGETS, default=_RUN.target,
                     help="switch target: embedded (this project's P4 switch) or bmv2 "
                          "(simple_switch_grpc) (default %(default)s)")
    run.add_argument("--cli", action="store_true",
                     help="open the Mininet CLI on the programmed fabric instead of running "
                          "the workload (default: off)")
    _workload_args(run.add_argument_group("workload"))
    _fabric_args(run.add_argument_group("fabric and hosts"))
    _output_args(run.add_argument_group("output"))
    run.set_defaults(func=cmd_run)

    stop = sub.add_parser("stop", help="remove what a killed run left behind")
    stop.add_argument("--lock-wait", type=float, default=0.0, metavar="S",
                      help="wait up to S seconds (at least 5) for the run lock "
                           "(default %(default)s)")
    stop.set_defaults(func=cmd_stop)


def _workload_args(w: argparse._ArgumentGroup) -> None:
    w.add_argument("--size", type=argtypes.size, default=None, metavar="BYTES",
                   help="message size: per flow (permutation, incast) or per-rank buffer "
                        f"(allreduce, alltoall); e.g. 4096, 64K, 1M (default {_WL.message_bytes // 1024}K)")
    w.add_argument("--iterations", type=int, default=_WL.iterations, metavar="N",
                   help="repeat the workload N times, each round after the previous "
                        "(default %(default)s)")
    w.add_argument("--incast-senders", type=int, default=_WL.incast_senders, metavar="N",
                   help="incast: the first N hosts send to the last host (default: all "
                        "the other hosts)")
    add_training_args(w)
    w.add_argument("--seed", type=int, default=_WL.seed,
                   help="seed of the permutation's pairing and of the QPs' UDP source "
                        "ports (ECMP entropy) (default %(default)s)")


def _fabric_args(f: argparse._ArgumentGroup) -> None:
    f.add_argument("--rate", type=argtypes.rate, default=None, metavar="RATE",
                   help="wire rate of the topology's fastest link, e.g. 10Mbps; every link "
                        "is slowed by the same ratio (the dilation) and every delay and timer "
                        "stretched by it (default: the rate `emu calibrate TOPO` saved for "
                        "this machine, else a built-in rate this 2-core class of machine "
                        "sustains)")
    f.add_argument("--priority-queues", type=int, default=_RUN.priority_queues, metavar="N",
                   help="strict-priority queues per switch port; with 2 or more, CNPs "
                        "(DSCP 48) ride the top one (default %(default)s; 1 = one shared queue)")
    f.add_argument("--dilation", type=float, default=None,
                   help="time dilation instead of --rate: the wire runs the topology's "
                        "modelled network this many times slower (default: the topology's "
                        "fastest rate / the wire rate)")
    f.add_argument("--dcqcn-profile", choices=PROFILES, default=_RUN.dcqcn_profile,
                   help="DCQCN parameters (docs/dcqcn-profiles.md): hpcc (the HPCC "
                        "simulator's, a CNP per marked packet), nvidia (ConnectX defaults), "
                        "paper (the DCQCN paper's values) (default %(default)s)")
    f.add_argument("--window", type=int, default=None, metavar="PKTS",
                   help="outstanding packets per QP and the sr reorder window (default: "
                        "twice the QP's bandwidth-delay product, at least 32)")
    rto = f.add_mutually_exclusive_group()
    rto.add_argument("--rto", type=float, default=None, metavar="US",
                     help="each QP's base retransmission timeout in modelled us, doubled on "
                          "repeated timeouts (default: twice the sum of the QP's base round "
                          "trip, the worst queueing its path can hold and --jitter on "
                          "every link of the round trip)")
    rto.add_argument("--ack-timeout", type=argtypes.ack_timeout, default=None, metavar="T",
                     help="instead of --rto: each QP's IBTA local ACK timeout, 1..31, as a "
                          "RoCE NIC runs it: every timeout waits 4.096 us x 2^T modelled, "
                          "never doubled (NCCL_IB_TIMEOUT; NCCL's default 20 is 4.3 s) "
                          "(default: off)")
    f.add_argument("--retry-cnt", type=argtypes.retry_cnt, default=_RUN.retry_cnt, metavar="N",
                   help="each QP's transport retry count (IBTA retry_cnt, 0..7): after N "
                        "timeouts in a row without progress the next one moves the QP to "
                        "the error state and its messages fail, as a RoCE NIC's do; 'inf' "
                        "retries until the run's budget ends (default %(default)s, NCCL's)")
    f.add_argument("--plb", action="store_true",
                   help="PLB on every QP (Linux tcp_plb's rules; needs --cc dcqcn): move "
                        "to a new UDP source port (a new ECMP path) after 3 consecutive "
                        "round trips with half their packets marked (as CNPs tell) and "
                        "nothing in flight, or 12 with packets in flight, and at once on a "
                        "timeout (default: off)")
    _flow_control_args(f)
    f.add_argument("--no-link-delay", action="store_true",
                   help="every link's delay 0 (a target that cannot emulate delays here, "
                        "e.g. BMv2 without netem) (default: off, the topology's delays)")
    f.add_argument("--jitter", type=float, default=0.0, metavar="NS",
                   help="virtual runs: each frame reaches the end of its link up to NS "
                        "modelled ns later (uniform, in order), the timing noise of real "
                        "hardware; without it senders at one rate stay in lockstep and a "
                        "full queue drops the same ones (default 0)")
    f.add_argument("--fail-link", type=argtypes.link, default=None, metavar="A:B",
                   help="fail the link between switches A and B during the workload (the "
                        "controller reroutes) (default: none)")
    f.add_argument("--fail-after", type=float, default=_RUN.fail_after_s, metavar="S",
                   help="with --fail-link: fail it S seconds of the wire clock (S / D "
                        "modelled) after traffic first reaches a host, at the first sample "
                        "after it (virtual runs: S seconds after the workload starts, "
                        "exactly) (default %(default)s)")


def _output_args(o: argparse._ArgumentGroup) -> None:
    o.add_argument("--results", default=str(_RUN.results_root), metavar="DIR",
                   help="write the run's folder under DIR (default %(default)s)")
    o.add_argument("--pcap", action="store_true",
                   help="capture every switch port to pcap files in the results folder, "
                        "stamped in modelled time (default: off)")
    o.add_argument("--timeout", type=float, default=None, metavar="S",
                   help=f"the workload's budget; agents still running after it are stopped "
                        f"and their partial results kept (default {REAL_TIMEOUT_S:g} s of "
                        f"wall time; virtual runs: {VIRTUAL_TIMEOUT_S:g} s of virtual time; "
                        f"longer for a workload that needs more than a quarter of that on "
                        f"the wire: four times what it needs; virtual runs add the longest "
                        f"a QP retries before it fails)")
    o.add_argument("--lock-wait", type=float, default=_RUN.lock_wait_s, metavar="S",
                   help="wait up to S seconds for another live run to end instead of "
                        "refusing at once (default %(default)s)")
    o.add_argument("--no-progress", action="store_true",
                   help="no live view while the workload runs (default: a live view when "
                        "stdout is a terminal)")
    o.add_argument("--sample-interval", type=float, default=None, metavar="S",
                   help=f"sample switch counters and queue depths every S seconds (default "
                        f"{REAL_SAMPLE_S:g} of wall time; virtual runs: {VIRTUAL_SAMPLE_S:g} "
                        f"of the wire clock)")
    o.add_argument("--virtual", action="store_true",
                   help="run in virtual time in one process: the same switches' pipeline "
                        "and host agents, no Mininet, no root (default: off)")
    o.add_argument("--dry-run", action="store_true",
                   help="check the topology and options, show the plan (fabric, rate, "
                        "flows, agents) and exit (default: off)")


def add_training_args(w: argparse._ActionsContainer) -> None:
    """Options of the training workloads and the background traffic (docs/workloads.md)."""
    w.add_argument("--microbatches", type=int, default=_WL.microbatches, metavar="N",
                   help="pp, mix: microbatches per iteration (default %(default)s)")
    w.add_argument("--channels", type=int, default=_WL.channels, metavar="N",
                   help="collectives (allreduce, alltoall, dp, tp, pp, mix): split each "
                        "operation over N NCCL-like channels, each on queue pairs of its "
                        "own (own UDP source port: N times the ECMP entropy) "
                        "(default %(default)s)")
    w.add_argument("--background-load", type=float, default=_WL.background_load, metavar="F",
                   help="Poisson background flows at this fraction of each host's line "
                        "rate, beside the workload (workload background: alone) "
                        "(default %(default)s)")
    w.add_argument("--size-dist", default=_WL.size_dist, metavar="NAME|FILE",
                   help="background flow sizes: websearch, hadoop or a CDF file "
                        "(docs/workloads.md) (default %(default)s)")
    w.add_argument("--size-scale", type=float, default=_WL.size_scale, metavar="X",
                   help="multiply background flow sizes by X (default %(default)s)")
    w.add_argument("--background-us", type=float, default=_WL.background_us, metavar="US",
                   help="background arrivals during the first US modelled microseconds "
                        "(default %(default)s)")


def _flow_control_args(f: argparse._ArgumentGroup) -> None:
    f.add_argument("--flow-control", choices=[m.value for m in FlowControlMode],
                   default=_RUN.flow_control.value,
                   help="link-level flow control: none (lossy), pfc (802.1Qbb, data lossless; "
                        "embedded target), credit (InfiniBand-style link credits, docs/credit.md) "
                        "(default %(default)s)")
    f.add_argument("--pfc-watchdog", choices=WATCHDOG_MODES, default=_RUN.pfc_watchdog,
                   help="PFC watchdog action on a queue paused too long (default %(default)s)")
    f.add_argument("--pfc-watchdog-ms", type=float, default=_RUN.pfc_watchdog_ms, metavar="MS",
                   help="the watchdog's detection and restoration time, modelled "
                        "(default %(default)s)")


def config_from_args(args: argparse.Namespace) -> RunConfig:
    from pathlib import Path

    wl = WorkloadParams(kind=args.workload, iterations=args.iterations,
                        incast_senders=args.incast_senders, seed=args.seed,
                        microbatches=args.microbatches, channels=args.channels,
                        background_load=args.background_load, size_dist=args.size_dist,
                        size_scale=args.size_scale, background_us=args.background_us,
                        **({"message_bytes": args.size} if args.size else {}))
    from emu.experiments.rates import choose_rate

    if args.dilation is not None:
        if args.rate is not None:
            raise RunConfigError("give --rate or --dilation, not both: one follows from the "
                                 "other and the topology's fastest link")
        rate, reason = None, f"--dilation {args.dilation:g}"
    elif args.virtual and args.rate is None:
        # Virtual time keeps every timer exactly at any dilation: no CPU limit to respect,
        # so no calibrated rate (whose large dilation would only stretch the virtual clock).
        rate, reason = None, "virtual time: the library's default wire rate"
    else:
        choice = choose_rate(args.topo, args.target, args.rate)
        rate, reason = choice.rate_bps, choice.reason
    dilation = args.dilation
    return RunConfig(topo=args.topo, lb=LbMode(args.lb), cc=args.cc, recovery=args.recovery,
                     target=args.target, workload=wl, dilation=dilation,
                     dcqcn_profile=args.dcqcn_profile, priority_queues=args.priority_queues,
                     rate_bps=rate, rate_reason=reason,
                     window_pkts=args.window, rto_us=args.rto, ack_timeout=args.ack_timeout,
                     retry_cnt=args.retry_cnt,
                     plb=args.plb,
                     timeout_s=args.timeout,
                     pcap=args.pcap, lock_wait_s=args.lock_wait, cli=args.cli,
                     progress=not args.no_progress,
                     sample_interval_s=args.sample_interval,
                     virtual=args.virtual, results_root=Path(args.results),
                     fail_link=args.fail_link, fail_after_s=args.fail_after,
                     link_delay=not args.no_link_delay, link_jitter_ns=args.jitter,
                     flow_control=FlowControlMode(args.flow_control),
                     pfc_watchdog=args.pfc_watchdog, pfc_watchdog_ms=args.pfc_watchdog_ms)


def cmd_run(args: argparse.Namespace) -> int:
    import sys

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

        print(rate_line(plan, cfg.rate_reason))
        for note in plan.notes:
            print(f"warning: {note}")
        print(f"workload {cfg.workload.kind}: {len(plan.workload.flows)} flows, "
              f"{plan.workload.total_bytes()} bytes, {len(plan.agents)} agents; budget "
              f"{plan.budget_s:g} s of wire time")
        for fl in plan.workload.flows[:20]:
            dep = f" after {','.join(fl.after)}" if fl.after else ""
            print(f"  {fl.id}: {fl.src} -> {fl.dst} {fl.size_bytes} B{dep}")
        if len(plan.workload.flows) > 20:
            print(f"  ... {len(plan.workload.flows) - 20} more")
        return 0
    return _run(cfg, plan)


def _run(cfg: RunConfig, plan: RunPlan) -> int:
    import sys

    from emu.experiments.run import USER_ERRORS, run_experiment, user_message

    try:
        summary = run_experiment(cfg, plan=plan)
    except USER_ERRORS as exc:
        print(user_message(exc, "run"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # before the workload: nothing measured, nothing written
        print("emu run: interrupted; the fabric was torn down", file=sys.stderr)
        return 130
    if summary.run.get("interrupted"):  # partial results written and their path printed
        return 130
    return 0 if (summary.ok or cfg.cli) else 1


def cmd_stop(args: argparse.Namespace) -> int:
    import os
    import shutil
    import sys

    from emu.core.runstate import stop_runs

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
    return stop_runs(lock_wait_s=args.lock_wait)
