"""Large-fabric set-up benchmark: what a run costs before and after its packets on a
k=16 fat tree (320 switches, 1,024 hosts; generated, not shipped).

    .venv/bin/python bench/bench_plan.py [--k 16]

Figures: the run plan (a permutation's flows, each host's paths and agent settings),
the controller's routes for every switch, and the uplink-utilization figure (a panel
per edge and aggregation switch, drawn and saved as PNG).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def fat_tree(k: int, folder: Path) -> Path:
    path = folder / f"fattree{k}.yaml"
    path.write_text(f"name: fattree{k}\ndescription: k={k} fat tree (benchmark)\n"
                    "defaults: {rate: 100Gbps, delay: 1us, queue_depth_pkts: 64, mtu: 1500}\n"
                    f"generator: fattree\nparams: {{k: {k}}}\n")
    return path


def main() -> int:
    from _machine import describe

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=16, help="fat-tree arity (default 16)")
    args = ap.parse_args()
    print(describe())

    from emu.control import FabricController, MemorySwitchHandle
    from emu.experiments import plots
    from emu.experiments.config import RunConfig
    from emu.experiments.plan import plan_run
    from emu.experiments.workloads import WorkloadParams
    from emu.topo import load_topology
    from emu.topo.draw import draw_fabric

    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        t0 = time.perf_counter()
        fabric = load_topology(str(fat_tree(args.k, Path(tmp))))
        t1 = time.perf_counter()
        plan = plan_run(RunConfig(topo=fabric.name, workload=WorkloadParams(
            "permutation", message_bytes=65536)), model=fabric)
        uplinks = plan.uplinks()
        t2 = time.perf_counter()
        handles = {s.name: MemorySwitchHandle(s.name) for s in fabric.switches}
        FabricController(fabric, handles).program()
        t3 = time.perf_counter()
        # One second of every uplink at half its rate (heat maps beyond 64 switches).
        series = {(sw, p): [(0.0, 0), (1.0, 100_000_000 // 16)] for sw, ports in
                  uplinks.items() for p in ports}
        fig = plots.uplink_figure(series, uplinks, {k: 1e8 for k in series}, None, 1500)
        assert fig is not None
        plots.save(fig, Path(tmp) / "uplinks.png")
        t4 = time.perf_counter()
        draw_fabric(fabric, Path(tmp) / "fabric.png")
        t5 = time.perf_counter()
    print(f"fattree{args.k}: {len(fabric.switches)} switches, {len(fabric.hosts)} hosts, "
          f"{len(plan.workload.flows)} flows")
    print(f"  topology {t1 - t0:6.2f} s   plan {t2 - t1:6.2f} s   routes (controller) "
          f"{t3 - t2:6.2f} s   uplink figure ({len(uplinks)} switches) {t4 - t3:6.2f} s   "
          f"topo draw {t5 - t4:6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
