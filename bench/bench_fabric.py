"""Fabric benchmark: time until a topology is ready for traffic, teardown time, and the
fabric's sustained packet rate end to end.

    sudo .venv/bin/python bench/bench_fabric.py [--topos clos4,fattree4] [--size 256K]

Ready = fabric.p4 compiled, Mininet hosts/links/switch processes up, every switch
programmed by the controller over P4Runtime, and every ordered host pair answering a
ping through the P4 switches. Targets (issue 7): clos4 <= 10 s, fattree4 <= 20 s,
teardown <= 5 s. Sustained rate: a permutation workload (every host sends to a host
under another leaf, no congestion control) on clos4; packets the switches sent per
second of workload, and whether the run stayed network-bound.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARGETS_S = {"clos4": 10.0, "fattree4": 20.0}
TEARDOWN_TARGET_S = 5.0


def bench_bringup(topo: str, root: Path) -> dict[str, float]:
    from emu.experiments.config import RunConfig
    from emu.experiments.plan import plan_run
    from emu.experiments.run import bring_up

    plan = plan_run(RunConfig(topo=topo))
    run_dir = root / f"bringup-{topo}"
    run_dir.mkdir(parents=True)
    net, _ctl, _pipe, timings = bring_up(plan, run_dir, lambda _m: None)
    t0 = time.monotonic()
    errors = net.stop()
    timings["teardown_s"] = time.monotonic() - t0
    net.__exit__(None, None, None)
    if errors:
        print(f"  teardown problems: {errors}")
    return timings


def bench_traffic(topo: str, size: int, root: Path) -> dict[str, float]:
    from emu.experiments.config import RunConfig
    from emu.experiments.run import run_experiment
    from emu.experiments.workloads import WorkloadParams

    class Quiet:
        def print(self, *_a: object, **_k: object) -> None:
            pass

    cfg = RunConfig(topo=topo, cc="none", workload=WorkloadParams("permutation",
                                                                   message_bytes=size),
                    progress=False, results_root=root / "traffic", timeout_s=120)
    s = run_experiment(cfg, console=Quiet(), log=lambda _m: None)
    dur = s.traffic_s or float("nan")  # first flow start to last arrival
    return {"switch_pps": s.fabric.tx_pkts / dur, "host_goodput_bps":
            s.bytes_delivered * 8 / dur, "verified": float(s.flows_verified()),
            "flows": float(len(s.flows)), "cpu_bound": float(s.fidelity.cpu_bound),
            "kernel_drops": float(s.fidelity.switch_kernel_drops + s.fidelity.host_kernel_drops),
            "duration_s": dur}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topos", default="clos4,fattree4")
    ap.add_argument("--size", default="1024K", help="bytes per flow (traffic part)")
    ap.add_argument("--no-traffic", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_fabric: skipped (needs root for Mininet)")
        return 0
    from emu.experiments.config import RunConfig
    from emu.experiments.run import RunError, preflight

    try:
        preflight(RunConfig())
    except RunError as exc:
        print(f"bench_fabric: skipped ({exc})")
        return 0
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-fabric-") as tmp:
        root = Path(tmp)
        for topo in [t.strip() for t in args.topos.split(",") if t.strip()]:
            try:
                t = bench_bringup(topo, root)
            except RunError as exc:
                print(f"{topo}: {exc}")
                ok = False
                continue
            target = TARGETS_S.get(topo)
            ready_ok = target is None or t["ready_s"] <= target
            down_ok = t["teardown_s"] <= TEARDOWN_TARGET_S
            ok &= ready_ok and down_ok
            print(f"{topo}: ready for traffic {t['ready_s']:.1f} s"
                  f"{f' (target <= {target:.0f} s)' if target else ''} "
                  f"[compile {t['compile_s']:.1f}, net {t.get('net_start_s', 0):.1f}, "
                  f"program {t['program_s']:.1f}, all-pairs ping {t['reachability_s']:.1f}]; "
                  f"teardown {t['teardown_s']:.1f} s (target <= {TEARDOWN_TARGET_S:.0f} s)"
                  f"{'' if ready_ok and down_ok else '  MISSED'}")
        if not args.no_traffic:
            size = int(args.size.rstrip("Kk")) * (1024 if args.size[-1] in "Kk" else 1)
            r = bench_traffic("clos4", size, root)
            print(f"clos4 permutation ({int(r['flows'])} flows x {size} B, no CC): "
                  f"switches forwarded {r['switch_pps']:.0f} pps sustained, hosts received "
                  f"{r['host_goodput_bps'] / 1e6:.1f} Mb/s in {r['duration_s']:.1f} s; "
                  f"{int(r['verified'])}/{int(r['flows'])} verified; kernel drops "
                  f"{int(r['kernel_drops'])}; "
                  f"{'CPU-BOUND' if r['cpu_bound'] else 'network-bound'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
