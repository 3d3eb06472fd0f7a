"""One point of an experiment: run it into its folder, keep its metrics (metrics.json).

`execute_point` runs where the point runs (a local worker process, a Ray task); its
metrics are a pure function of the run's records, so the same configuration gives the
same bytes wherever it ran (wall-clock figures are left out).

    python -m emu.experiments.points OUT_DIR < pickled (RunConfig, Fabric)
runs one point in a child process (emu.experiments.sweep starts it).
"""

from __future__ import annotations

import json
import math
import pickle
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from emu.topo import Fabric

from .config import RunConfig
from .metrics import percentile

OUTCOME = "outcome.json"
POINT_FILE = "point.json"  # written by the sweep: options, status, reason, wall time
METRICS = "metrics.json"
# Flow-size buckets of the FCT slowdown (upper bounds in bytes; the last is open).
BUCKETS: tuple[tuple[str, float], ...] = (
    ("<=16K", 16 << 10), ("16K-64K", 64 << 10), ("64K-256K", 256 << 10),
    ("256K-1M", 1 << 20), ("1M-4M", 4 << 20), (">4M", math.inf))
# Fields of summary.json that hold wall-clock figures or where this run was written.
WALL_KEYS = ("bringup_s",)
WALL_RUN_KEYS = ("results_dir",)


def read_point(d: Path) -> dict[str, Any] | None:
    """A point folder's point.json (None: the point never finished)."""
    try:
        data = json.loads((d / POINT_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def bucket_of(size_bytes: int) -> str:
    return next(name for name, top in BUCKETS if size_bytes <= top)


def base_rtt_s(model: Fabric, src: str, dst: str) -> float:
    """Twice the one-way propagation delay from host src to host dst on the modelled
    fabric's shortest path (host links included)."""
    from emu.topo.paths import equal_cost_paths

    hs, hd = model.host(src), model.host(dst)
    one_way = model.links[hs.link].delay_ns + model.links[hd.link].delay_ns
    paths = equal_cost_paths(model, hs.switch, hd.switch)
    if paths:
        one_way += min(sum(lk.delay_ns for lk in p.links) for p in paths)
    return 2 * one_way / 1e9


def ideal_fct_s(model: Fabric, src: str, dst: str, size_bytes: int) -> float:
    """FCT on an empty fabric, modelled: size x 8 / line rate + base RTT."""
    rate = min(model.links[model.host(h).link].rate_bps for h in (src, dst))
    return size_bytes * 8 / rate + base_rtt_s(model, src, dst)


def flow_slowdowns(model: Fabric, dilation: float,
                   flows: Sequence[Mapping[str, Any]]) -> list[tuple[int, float]]:
    """(size, FCT / ideal FCT) of every flow with an FCT; FCTs are wire times, so
    / dilation gives the modelled time the ideal is in."""
    out = []
    for f in flows:
        if f.get("fct_s") is None:
            continue
        ideal = ideal_fct_s(model, f["src"], f["dst"], int(f["size_bytes"]))
        out.append((int(f["size_bytes"]), f["fct_s"] / dilation / ideal))
    return out


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def point_metrics(summary: Mapping[str, Any], model: Fabric) -> dict[str, Any]:
    """The flat metrics of one run (a row of metrics.csv) and its distributions."""
    run = summary["run"]
    dil = float(run.get("dilation") or 1.0)
    slow = flow_slowdowns(model, dil, summary["flows"])
    by_bucket: dict[str, list[float]] = {}
    for size, s in slow:
        by_bucket.setdefault(bucket_of(size), []).append(s)
    buckets = {name: {"flows": len(v), "p50": percentile(v, 50), "p99": percentile(v, 99)}
               for name, _ in BUCKETS if (v := by_bucket.get(name))}
    colls = [c for c in summary["collectives"] if c.get("algbw_nominal_Bps") is not None]
    ups = [u["jain"] for u in summary["uplinks"] if u.get("jain") is not None]
    q = summary["queues"][0] if summary["queues"] else {}
    h, fab = summary["hosts"], summary["fabric"]
    allslow = [s for _, s in slow]
    traffic = summary.get("traffic_s")
    flat: dict[str, Any] = {
        "ok": summary["ok"],
        "flows": summary["flows_total"],
        "flows_verified": summary["flows_verified"],
        "traffic_modelled_s": None if traffic is None else traffic / dil,
        "slowdown_p50": percentile(allslow, 50) if allslow else None,
        "slowdown_p99": percentile(allslow, 99) if allslow else None,
        "algbw_GBps": _mean([c["algbw_nominal_Bps"] / 1e9 for c in colls]),
        "busbw_GBps": _mean([c["busbw_nominal_Bps"] / 1e9 for c in colls]),
        "jain_uplinks": _mean(ups),
        "jain_uplinks_min": min(ups) if ups else None,
        "queue_p50_pkts": q.get("p50_pkts"), "queue_p90_pkts": q.get("p90_pkts"),
        "queue_p99_pkts": q.get("p99_pkts"), "queue_max_pkts": q.get("max_pkts"),
        "queue_busiest": f"{q['switch']}:{q['port']}" if q else None,
        "drops": fab["drops"], "queue_drops": fab["queue_drops"],
        "ecn_marks": fab["ecn_marks"], "cnps": h["cnps_sent"],
        "retx_pkts": h["retx_pkts"], "timeouts": h["timeouts"],
        "reordered_pkts": h["reordered_pkts"], "reorder_hwm_pkts": h["reorder_hwm_pkts"],
    }
    for name, b in buckets.items():
        flat[f"slowdown_p50[{name}]"] = b["p50"]
        flat[f"slowdown_p99[{name}]"] = b["p99"]
    return {"metrics": flat, "slowdown_by_size": buckets,
            "reorder_distance": dict(h.get("reorder_distance") or {})}


def deterministic_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json without its wall-clock figures and where it was written."""
    out = {k: v for k, v in summary.items() if k not in WALL_KEYS}
    out["run"] = {k: v for k, v in summary["run"].items() if k not in WALL_RUN_KEYS}
    return out


def write_metrics(out_dir: Path, point_id: str, varied: Mapping[str, Any],
                  summary: Mapping[str, Any], model: Fabric) -> Path:
    doc = {"point": point_id, "options": dict(varied), **point_metrics(summary, model),
           "summary": deterministic_summary(summary)}
    path = out_dir / METRICS
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    return path


def execute_point(cfg: RunConfig, model: Fabric, out_dir: Path, point_id: str,
                  varied: Mapping[str, Any], console: Any = None) -> dict[str, Any]:
    """Run one point into `out_dir` (its run folder, metrics.json); its outcome."""
    from dataclasses import replace

    from .plan import plan_run

    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = replace(cfg, results_root=out_dir)
    plan = plan_run(cfg, model)
    if cfg.virtual:
        from .virtual import run_virtual

        summary = run_virtual(plan, console=console, write=True)
    else:
        from .run import run_experiment

        summary = run_experiment(cfg, plan=plan)
    d = summary.to_dict()
    write_metrics(out_dir, point_id, varied, d, model)
    run_dir = d["run"].get("results_dir")
    outcome: dict[str, Any] = {"status": "done", "reason": "",
                               "run_dir": Path(run_dir).name if run_dir else None}
    if not summary.ok:
        outcome.update(status="failed", reason=f"incomplete: {d['flows_verified']}/"
                       f"{d['flows_total']} flows delivered and verified")
    return outcome


def run_guarded(cfg: RunConfig, model: Fabric, out_dir: Path, point_id: str,
                varied: Mapping[str, Any], console: Any = None) -> dict[str, Any]:
    """execute_point, an exception becoming a failed outcome (its traceback printed)."""
    try:
        outcome = execute_point(cfg, model, out_dir, point_id, varied, console)
    except Exception as exc:  # any failure is this point's, not the sweep's
        traceback.print_exc()
        outcome = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    except KeyboardInterrupt:
        outcome = {"status": "failed", "reason": "interrupted"}
    (out_dir / OUTCOME).write_text(json.dumps(outcome, sort_keys=True) + "\n")
    return outcome


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m emu.experiments.points OUT_DIR < pickled point",
              file=sys.stderr)
        return 2
    cfg, model, point_id, varied = pickle.loads(sys.stdin.buffer.read())
    from rich.console import Console

    outcome = run_guarded(cfg, model, Path(argv[0]), point_id, varied,
                          Console(file=sys.stdout, width=120, color_system=None))
    return 0 if outcome["status"] == "done" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
