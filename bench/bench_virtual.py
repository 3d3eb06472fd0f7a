"""Virtual-time engine benchmark: switch packet-hops per wall second and peak memory of
a whole `emu run --virtual` (fabric, agents, sampling, results and plots written).

    .venv/bin/python bench/bench_virtual.py [--only quick|fattree4|allreduce128|fattree8]
                                            [--all]

Workload: a permutation (every host sends one message to a host under another edge
switch), ECMP, no congestion control. Variants: quick (fattree4, 16 x 256 KB),
fattree4 (16 x 4 MB; targets >= 50k hops/s and <= 300 MB peak), and with --all
fattree8 (k=8: 80 switches, 128 hosts, 1 MB each; must finish within 10 virtual
minutes). allreduce128 is a ring all-reduce of 64 KB over fattree8's 128 hosts: 254
small steps per rank (32,512 flows), each waiting on the one before, so it measures
the per-flow costs (the agents' bookkeeping, flows.jsonl, the flow plot) as much as
the packets. Each variant runs in its own process so its peak RSS is its own.
A packet-hop is one packet taken in by a switch (its pipeline ran on it).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

VARIANTS = {"quick": ("fattree4", "permutation", 256 * 1024),
            "fattree4": ("fattree4", "permutation", 4 * 1024 * 1024),
            "allreduce128": ("fattree8", "allreduce", 64 * 1024),
            "fattree8": ("fattree8", "permutation", 1024 * 1024)}
TARGET_HOPS_S = 50_000
TARGET_PEAK_MB = 300


def run_one(name: str) -> dict[str, float]:
    from emu.experiments.config import RunConfig
    from emu.experiments.plan import plan_run
    from emu.experiments.virtual import run_virtual
    from emu.experiments.workloads import WorkloadParams

    topo, kind, size = VARIANTS[name]
    with tempfile.TemporaryDirectory(prefix="bench-virtual-") as tmp:
        cfg = RunConfig(topo=topo, cc="none", virtual=True, progress=False,
                        workload=WorkloadParams(kind, message_bytes=size),
                        results_root=Path(tmp))
        t0 = time.monotonic()
        s = run_virtual(plan_run(cfg), console=None, write=True)
        wall = time.monotonic() - t0
    return {"wall_s": wall, "virtual_s": s.duration_s, "hops": float(s.fabric.rx_pkts),
            "tx": float(s.fabric.tx_pkts), "flows": float(len(s.flows)),
            "verified": float(s.flows_verified()),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "cpu_s": (lambda u: u.ru_utime + u.ru_stime)(resource.getrusage(resource.RUSAGE_SELF))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=sorted(VARIANTS), help="run one variant")
    ap.add_argument("--all", action="store_true", help="also the k=8 fat-tree (minutes)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child)))
        return 0
    from bench._machine import describe

    print(describe())
    names = [args.only] if args.only else ["quick", "fattree4", "allreduce128"] + (
        ["fattree8"] if args.all else [])
    ok = True
    for name in names:
        out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True,
                             text=True)
        if out.returncode != 0:
            print(f"{name}: failed\n{out.stderr[-2000:]}")
            ok = False
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        topo, kind, size = VARIANTS[name]
        rate = r["hops"] / r["wall_s"]
        what = (f"{int(r['flows'])} x {size // 1024} KB" if kind == "permutation" else
                f"of {size // 1024} KB per rank, {int(r['flows'])} flows")
        line = (f"{name}: {topo} {kind} {what}: "
                f"{r['hops']:.0f} switch packet-hops in {r['wall_s']:.1f} s wall = "
                f"{rate / 1e3:.1f}k hops/s ({r['hops'] / r['cpu_s'] / 1e3:.1f}k per CPU second, "
                f"the process ran {r['cpu_s']:.1f} s of CPU); peak memory {r['peak_mb']:.0f} MB; "
                f"{r['virtual_s']:.2f} s virtual; {int(r['verified'])}/{int(r['flows'])} "
                f"verified ({r['flows'] / r['wall_s']:.0f} flows/s)")
        if name == "fattree4":
            met = rate >= TARGET_HOPS_S and r["peak_mb"] <= TARGET_PEAK_MB
            line += (f" (targets >= {TARGET_HOPS_S // 1000}k hops/s, <= {TARGET_PEAK_MB} MB"
                     f"{'' if met else ': MISSED'})")
        if name == "fattree8" and r["virtual_s"] > 600:
            line += " (MISSED: over 10 virtual minutes)"
        ok &= r["verified"] == r["flows"]
        print(line, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
