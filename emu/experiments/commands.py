"""`emu run` and `emu stop`.

The end-to-end run (Mininet fabric of P4 switches, controller, RoCE workload,
metrics) is being built in stages; until every stage exists, `emu run` checks
and shows the topology it would build and says plainly what is not built yet.
"""

from __future__ import annotations

import argparse

LB_MODES = ("ecmp", "flowlet", "adaptive", "spray", "te")
CC_MODES = ("dcqcn", "none")
RECOVERY_MODES = ("gbn", "sr")
WORKLOADS = ("allreduce", "permutation", "incast", "alltoall")
TARGETS = ("embedded", "bmv2")

# Stages of the end-to-end run that are not in this build yet.
NOT_BUILT = (
    "embedded switch daemon and P4Runtime server",
    "fabric.p4 and the fabric controller",
    "Mininet fabric with RoCE host agents, workloads, metrics and plots",
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = sub.add_parser("run", help="run the emulated fabric with a workload")
    run.add_argument("topo", metavar="TOPO", help="topology name (in topologies/) or path")
    run.add_argument("--lb", choices=LB_MODES, default="ecmp", help="load-balancing mode")
    run.add_argument("--cc", choices=CC_MODES, default="dcqcn", help="congestion control")
    run.add_argument("--recovery", choices=RECOVERY_MODES, default="gbn",
                     help="loss recovery: go-back-N or selective repeat")
    run.add_argument("--workload", choices=WORKLOADS, default="allreduce")
    run.add_argument("--target", choices=TARGETS, default="embedded", help="switch target")
    run.add_argument("--cli", action="store_true", help="open the Mininet CLI on the fabric")
    run.set_defaults(func=cmd_run)

    stop = sub.add_parser("stop", help="remove what a killed run left behind")
    stop.set_defaults(func=cmd_stop)


def cmd_run(args: argparse.Namespace) -> int:
    from emu.topo import load_topology

    fabric = load_topology(args.topo)
    print(f"topology {fabric.summary()}")
    print(f"requested: lb={args.lb} cc={args.cc} recovery={args.recovery} "
          f"workload={args.workload} target={args.target}")
    print("not built yet, so no traffic is run:")
    for stage in NOT_BUILT:
        print(f"  - {stage}")
    print(f"see `emu topo show {args.topo}` for the fabric that will be emulated")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    print("nothing to stop: no run has recorded state")
    return 0
