"""One point of an experiment: run it into its folder, keep its metrics (metrics.json).

`execute_point` runs where the point runs (a local worker process, a Ray task); its
metrics are a pure function of the run's records, so the same configuration gives the
same bytes wherever it ran (wall-clock figures are left out).

    python -m emu.experiments.points OUT_DIR < pickled (RunConfig, Fabric)
runs one point in a child process (emu.experiments.sweep starts it).
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from emu.topo import Fabric

from .config import RunConfig
from .fct import SIZE_BUCKETS, size_bucket
from .metrics import FlowResult, percentile, series_bandwidths
from .results import write_text_atomic
from .summary import RunSummary

if TYPE_CHECKING:
    from rich.console import Console

# A point's outcome: status (done | failed), reason, run_dir (its run folder's name).
Outcome = dict[str, str]

OUTCOME = "outcome.json"
POINT_FILE = "point.json"  # written by the sweep: options, status, reason, wall time
METRICS = "metrics.json"
# Fields of summary.json that hold wall-clock figures or where this run was written.
WALL_KEYS = ("bringup_s",)
WALL_RUN_KEYS = ("results_dir",)


@dataclass
class Job:
    """A point being run: its folder and what runs it (a child process or a Ray task)."""

    out_dir: Path
    proc: subprocess.Popen[bytes] | None = None
    ref: object = None  # a Ray ObjectRef


def read_point(d: Path) -> dict[str, str]:
    """A point folder's point.json, as text ({}: the point never finished)."""
    try:
        data = json.loads((d / POINT_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in data.items()} \
        if isinstance(data, dict) else {}


def read_outcome(d: Path) -> Outcome | None:
    """The outcome a point's worker wrote (None: it wrote none, e.g. it was killed)."""
    try:
        data = json.loads((d / OUTCOME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {str(k): "" if v is None else str(v) for k, v in data.items()}


def read_metrics(d: Path) -> PointMetrics | None:
    """A point folder's metrics.json (None: missing, unreadable or not a point's)."""
    try:
        doc = json.loads((d / METRICS).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        return None
    flat = dict(doc["metrics"])
    if "cpu_bound" not in flat:  # written before the column: its summary's verdict
        summary = doc.get("summary")
        fid = summary.get("fidelity") if isinstance(summary, dict) else None
        flat["cpu_bound"] = fid.get("cpu_bound") if isinstance(fid, dict) else None
    return PointMetrics(flat, _slowdown_by_size(doc), dict(doc.get("reorder_distance") or {}))


def _slowdown_by_size(doc: dict[str, object]) -> dict[str, dict[str, float]]:
    """The point's slowdown per size bucket; a point written while experiments binned
    sizes their own way (<=16K, ...) has its run summary's buckets taken instead, so a
    report rebuilt over old and new points compares like with like."""
    stored = doc.get("slowdown_by_size")
    by_size = dict(stored) if isinstance(stored, dict) else {}
    if set(by_size) <= {label for label, _lo, _hi in SIZE_BUCKETS}:
        return by_size
    summary = doc.get("summary")
    rows = summary.get("fct_slowdown") if isinstance(summary, dict) else None
    return {r["bucket"]: {"flows": float(r["flows"]), "p50": r["p50"], "p99": r["p99"]}
            for r in rows if isinstance(r, dict)} if isinstance(rows, list) else {}


def is_done(d: Path) -> bool:
    """The point in folder `d` finished and its figures are there: point.json says
    done and metrics.json reads (a truncated or damaged one is a point to run again,
    not one to skip and leave out of the report)."""
    return read_point(d).get("status") == "done" and read_metrics(d) is not None


def flow_slowdowns(flows: Sequence[FlowResult]) -> list[tuple[int, float]]:
    """(size, slowdown) of every completed flow, as its run's summary computed it
    (emu.experiments.fct): one ideal FCT for `emu run` and the experiment reports."""
    return [(f.size_bytes, f.slowdown) for f in flows if f.slowdown is not None]


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


Scalar = float | int | str | bool | None


@dataclass(frozen=True)
class PointMetrics:
    """What metrics.json holds besides the summary: a row of metrics.csv (`flat`), the
    FCT slowdown per flow-size bucket ({bucket: {flows, p50, p99}}) and the packets per
    reorder distance."""

    flat: dict[str, Scalar]
    slowdown_by_size: dict[str, dict[str, float]]
    reorder_distance: dict[str, int]


def _flow_control(s: RunSummary) -> dict[str, Scalar]:
    """PAUSE frames sent and the most paused port's share of the traffic window (PFC
    runs), the longest wait for credit as such a share (credit runs); None without."""
    pfc, credit = s.pfc, s.credit
    pfc_ports = [*pfc["ports"], *pfc["hosts"]] if pfc else []
    credit_ports = [*credit["ports"], *credit["hosts"]] if credit else []
    return {"pause_frames": pfc["total"]["pause_tx"] if pfc else None,
            "paused_max_pct": max((p["paused_pct"] for p in pfc_ports), default=0.0)
            if pfc else None,
            "credit_waited_max_pct": max((p["waited_pct"] for p in credit_ports), default=0.0)
            if credit else None}


def point_metrics(s: RunSummary) -> PointMetrics:
    """The metrics of one run, from its summary."""
    dil = float(s.run.get("dilation") or 1.0)
    slow = flow_slowdowns(s.flows)
    by_bucket: dict[str, list[float]] = {}
    for size, x in slow:
        by_bucket.setdefault(size_bucket(size), []).append(x)
    # the buckets of the run's own summary (fct.SIZE_BUCKETS), in their order
    buckets = {name: {"flows": float(len(v)), "p50": percentile(v, 50),
                      "p99": percentile(v, 99)}
               for name, _lo, _hi in SIZE_BUCKETS if (v := by_bucket.get(name))}
    bws = series_bandwidths(s.collectives)
    # One series (an all-reduce, dp, ...): algbw_GBps/busbw_GBps are its. Several (mix:
    # an 8-rank dp ring beside 2-rank tp rings, other bus factors): no one figure is
    # defined, so only the per-series columns, algbw_GBps[dp], ..., hold them.
    one = bws[0] if len(bws) == 1 else None
    jains = [u.jain for u in s.uplinks]
    q = s.queues[0] if s.queues else None
    # No port ever held a packet: the depth was sampled and was 0 throughout (None only
    # when nothing was sampled), so means over seeds count this run too.
    idle = 0.0 if s.queue_samples else None
    allslow = [x for _, x in slow]
    traffic = s.traffic_s
    flat: dict[str, Scalar] = {
        "ok": s.ok, "flows": len(s.flows), "flows_verified": s.flows_verified(),
        "flows_failed": s.flows_failed(),
        "traffic_modelled_s": None if traffic is None else traffic / dil,
        "slowdown_p50": percentile(allslow, 50) if allslow else None,
        "slowdown_p99": percentile(allslow, 99) if allslow else None,
        "algbw_GBps": one.algbw_nominal_Bps / 1e9 if one else None,
        "busbw_GBps": one.busbw_nominal_Bps / 1e9 if one else None,
        "jain_uplinks": _mean(jains), "jain_uplinks_min": min(jains) if jains else None,
        "queue_p50_pkts": q.p50_pkts if q else idle, "queue_p90_pkts": q.p90_pkts if q else idle,
        "queue_p99_pkts": q.p99_pkts if q else idle, "queue_max_pkts": q.max_pkts if q else idle,
        "queue_busiest": f"{q.switch}:{q.port}" if q else None,
        "drops": s.fabric.drops, "queue_drops": s.fabric.queue_drops,
        "flow_control_drops": s.fabric.flow_control_drops,
        "ecn_marks": s.fabric.ecn_marks, "cnps": s.hosts.cnps_sent,
        "retx_pkts": s.hosts.retx_pkts, "timeouts": s.hosts.timeouts,
        "reordered_pkts": s.hosts.reordered_pkts(), "reorder_hwm_pkts": s.hosts.reorder_hwm_pkts,
        # a real-time run whose figures the host CPU shaped (summary.txt says why)
        "cpu_bound": s.fidelity.cpu_bound,
        # a virtual run that tail-dropped without timing jitter (report.md says why)
        "lockstep": s.in_lockstep,
        **_flow_control(s),
    }
    for bw in bws:
        flat[f"algbw_GBps[{bw.name}]"] = bw.algbw_nominal_Bps / 1e9
        flat[f"busbw_GBps[{bw.name}]"] = bw.busbw_nominal_Bps / 1e9
    for name, b in buckets.items():
        flat[f"slowdown_p50[{name}]"] = b["p50"]
        flat[f"slowdown_p99[{name}]"] = b["p99"]
    return PointMetrics(flat, buckets, dict(s.hosts.reorder_distance))


def deterministic_summary(summary: Mapping[str, object]) -> dict[str, object]:
    """summary.json without its wall-clock figures and where it was written."""
    out = {k: v for k, v in summary.items() if k not in WALL_KEYS}
    run = summary.get("run")
    if isinstance(run, Mapping):
        out["run"] = {k: v for k, v in run.items() if k not in WALL_RUN_KEYS}
    return out


def write_metrics(out_dir: Path, point_id: str, varied: Mapping[str, str],
                  summary: RunSummary) -> Path:
    m = point_metrics(summary)
    doc = {"point": point_id, "options": dict(varied), "metrics": m.flat,
           "slowdown_by_size": m.slowdown_by_size, "reorder_distance": m.reorder_distance,
           "summary": deterministic_summary(summary.to_dict())}
    path = out_dir / METRICS
    # atomically: a point killed while writing must not leave half a file that reads
    # as its figures
    write_text_atomic(path, json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    return path


def execute_point(cfg: RunConfig, model: Fabric, out_dir: Path, point_id: str,
                  varied: Mapping[str, str], console: Console | None = None) -> Outcome:
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
    write_metrics(out_dir, point_id, varied, summary)
    run_dir = summary.run.get("results_dir")
    outcome = {"status": "done", "reason": "", "run_dir": Path(run_dir).name if run_dir else ""}
    if summary.run.get("interrupted"):  # a signal cut the workload: partial results
        outcome.update(status="failed", reason="interrupted")
    elif not summary.ok:
        failed = summary.flows_failed()
        outcome.update(status="failed", reason=f"incomplete: {summary.flows_verified()}/"
                       f"{len(summary.flows)} flows delivered and verified"
                       + (f", {failed} failed (QP retries exhausted)" if failed else ""))
    return outcome


def run_guarded(cfg: RunConfig, model: Fabric, out_dir: Path, point_id: str,
                varied: Mapping[str, str], console: Console | None = None) -> Outcome:
    """execute_point, an exception becoming a failed outcome (its traceback printed)."""
    try:
        outcome = execute_point(cfg, model, out_dir, point_id, varied, console)
    except Exception as exc:  # any failure is this point's, not the sweep's
        traceback.print_exc()
        outcome = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    except KeyboardInterrupt:
        outcome = {"status": "failed", "reason": "interrupted"}
    write_text_atomic(out_dir / OUTCOME, json.dumps(outcome, sort_keys=True) + "\n")
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
