"""An experiment's report: metrics.csv (every point), report.md and plots/*.png.

Per configuration (a point's options without its seed), each plotted figure is the mean
over the seeds with the standard deviation as error bars. Built from the points'
metrics.json alone, so it can be rebuilt at any time (`emu experiment --report-only`).
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .experiment import Experiment
from .fct import SIZE_BUCKETS
from .points import METRICS, Scalar, read_metrics, read_point

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# The report's table: (metrics.csv column, heading, format).
TABLE: tuple[tuple[str, str, str], ...] = (
    ("slowdown_p50", "slowdown p50", "{:.2f}"), ("slowdown_p99", "slowdown p99", "{:.2f}"),
    ("algbw_GBps", "algbw GB/s", "{:.2f}"), ("busbw_GBps", "busbw GB/s", "{:.2f}"),
    ("jain_uplinks", "Jain uplinks", "{:.2f}"), ("queue_p99_pkts", "queue p99", "{:.0f}"),
    ("queue_max_pkts", "queue max", "{:.0f}"), ("drops", "drops", "{:.0f}"),
    ("cnps", "CNPs", "{:.0f}"), ("retx_pkts", "retx", "{:.0f}"),
    ("reordered_pkts", "reordered", "{:.0f}"), ("pause_frames", "PAUSE frames", "{:.0f}"),
    ("paused_max_pct", "paused max %", "{:.1f}"),
    ("credit_waited_max_pct", "credit wait max %", "{:.1f}"))


@dataclass
class PointResult:
    id: str
    configuration: str
    seed: int
    status: str
    reason: str
    options: dict[str, str]
    has_metrics: bool  # metrics.json was there
    metrics: dict[str, Scalar]  # a row of metrics.csv
    slowdown_by_size: dict[str, dict[str, float]]  # bucket -> p50, p99, flows
    reorder_distance: dict[str, int]


def load_points(out: Path, exp: Experiment) -> list[PointResult]:
    res = []
    for p in exp.points:
        d = out / "points" / p.dir_name
        rec = read_point(d)
        status, reason = rec.get("status", "not run"), rec.get("reason", "")
        m = read_metrics(d)
        if status == "done" and m is None:  # counted done, it fell out of every table
            status, reason = "not run", f"its {METRICS} is missing or unreadable: run again"
        flat, by_size, reorder = ((m.flat, m.slowdown_by_size, m.reorder_distance)
                                  if m is not None else ({}, {}, {}))
        res.append(PointResult(p.id, p.configuration, p.seed, status, reason, p.options(),
                               m is not None, flat, by_size, reorder))
    return res


def _cell(v: Scalar) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def metrics_csv(points: Sequence[PointResult]) -> str:
    """One row per point in the file's order; the same points give the same bytes."""
    opts = list(dict.fromkeys(k for p in points for k in p.options if k != "seed"))
    cols = list(dict.fromkeys(k for p in points for k in p.metrics))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["point", "configuration", "seed", "status", "reason", *opts, *cols])
    for p in points:
        m = p.metrics
        w.writerow([p.id, p.configuration, p.seed, p.status, p.reason,
                    *(p.options.get(k, "") for k in opts), *(_cell(m.get(k)) for k in cols)])
    return buf.getvalue()


def by_configuration(points: Sequence[PointResult]) -> dict[str, list[PointResult]]:
    """The points each configuration's means are over: those that completed. A failed
    point may have written metrics.json (an incomplete run's partial figures); mixing
    those in would average a run that never finished with ones that did."""
    out: dict[str, list[PointResult]] = {}
    for p in points:
        if p.has_metrics and p.status == "done":
            out.setdefault(p.configuration, []).append(p)
    return out


def failed_by_configuration(points: Sequence[PointResult]) -> dict[str, int]:
    """How many points of each configuration failed (left out of its means)."""
    out: dict[str, int] = {}
    for p in points:
        if p.status == "failed":
            out[p.configuration] = out.get(p.configuration, 0) + 1
    return out


def _numbers(values: Sequence[Scalar | float]) -> list[float]:
    return [float(v) for v in values
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)]


def mean_sd(values: Sequence[Scalar | float]) -> tuple[float, float] | None:
    """Mean and sd of the numbers among `values` (None and NaN left out: a table cell
    says how many it is over when that is fewer than its row's points, _table_cell)."""
    xs = _numbers(values)
    if not xs:
        return None
    return statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0


# --------------------------------------------------------------------------- plots


def _bars(ax: Axes, groups: Sequence[str], series: dict[str, list[tuple[float, float] | None]],
          ylabel: str, title: str) -> bool:
    """Grouped bars: x = groups, one bar per configuration (legend), error bars = sd."""
    if not any(v is not None for vals in series.values() for v in vals):
        return False
    n = max(1, len(series))
    width = 0.8 / n
    for i, (label, vals) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ys = [v[0] if v else 0.0 for v in vals]
        es = [v[1] if v else 0.0 for v in vals]
        # Every plotted metric is >= 0 (depths, counts, slowdowns, Jain): a bar stays
        # above 0 on its lower side (mean 25 +- 36 packets of queue, not down to -11).
        ax.bar(xs, ys, width, yerr=[[min(e, y) for e, y in zip(es, ys, strict=True)], es],
               capsize=3, label=label)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return True


def _figure(n: int) -> tuple[Figure, Sequence[Axes]]:
    from .plots import new_figure

    fig = new_figure((5.5 * n, 3.8), fitted=False)  # its legend goes below: saved to fit
    axes = fig.subplots(1, n, squeeze=False)
    return fig, list(axes[0])


def _legend(fig: Figure, axes: Sequence[Axes]) -> None:
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=min(4, len(labels)), fontsize="small")


def figures(configs: dict[str, list[PointResult]]) -> dict[str, Figure]:
    """The report's figures by file stem (those with any data)."""
    figs: dict[str, Figure] = {}

    def per_config(key: str) -> dict[str, list[tuple[float, float] | None]]:
        return {c: [mean_sd([p.metrics.get(key) for p in ps])] for c, ps in configs.items()}

    buckets = [b for b, _lo, _hi in SIZE_BUCKETS
               if any(b in p.slowdown_by_size for ps in configs.values()
                      for p in ps)]
    if buckets:
        fig, axes = _figure(2)
        for ax, q in zip(axes, ("p50", "p99"), strict=True):
            series = {c: [mean_sd([p.slowdown_by_size.get(b, {}).get(q) for p in ps])
                          for b in buckets] for c, ps in configs.items()}
            _bars(ax, buckets, series, "FCT / ideal FCT", f"FCT slowdown {q} by flow size")
        _legend(fig, axes)
        figs["fct_slowdown"] = fig
    singles = [("collectives", [("algbw_GBps", "GB/s", "algbw"), ("busbw_GBps", "GB/s", "busbw")]),
               ("fairness", [("jain_uplinks", "Jain index", "Jain fairness of uplink bytes")]),
               ("counters", [("drops", "packets", "drops"), ("cnps", "CNPs", "CNPs sent"),
                             ("retx_pkts", "packets", "retransmissions")])]
    for stem, panels in singles:
        if not any(mean_sd([p.metrics.get(k) for ps in configs.values() for p in ps])
                   for k, _, _ in panels):
            continue
        fig, axes = _figure(len(panels))
        for ax, (key, ylabel, title) in zip(axes, panels, strict=True):
            _bars(ax, [""], per_config(key), ylabel, title)
        _legend(fig, axes)
        figs[stem] = fig
    qs = ["queue_p50_pkts", "queue_p90_pkts", "queue_p99_pkts", "queue_max_pkts"]
    if any(p.metrics.get("queue_max_pkts") is not None for ps in configs.values() for p in ps):
        fig, axes = _figure(1)
        series = {c: [mean_sd([p.metrics.get(k) for p in ps]) for k in qs]
                  for c, ps in configs.items()}
        _bars(axes[0], ["p50", "p90", "p99", "max"], series, "packets",
              "queue depth of the busiest port")
        _legend(fig, axes)
        figs["queue_depth"] = fig
    dists = sorted({k for ps in configs.values() for p in ps
                    for k in p.reorder_distance}, key=_bucket_order)
    if dists:
        fig, axes = _figure(1)
        series = {c: [mean_sd([p.reorder_distance.get(k, 0) for p in ps])
                      for k in dists] for c, ps in configs.items()}
        _bars(axes[0], dists, series, "packets", "arrivals by reorder distance (0: in order)")
        axes[0].set_yscale("symlog")
        _legend(fig, axes)
        figs["reorder_distance"] = fig
    return figs


def _bucket_order(label: str) -> tuple[float, str]:
    head = label.split("-")[0].rstrip("+")
    try:
        return float(head), label
    except ValueError:
        return math.inf, label


# --------------------------------------------------------------------------- report


def report_text(exp: Experiment, points: Sequence[PointResult],
                images: Sequence[str]) -> str:
    configs = by_configuration(points)
    done = sum(p.status == "done" for p in points)
    failed = [p for p in points if p.status == "failed"]
    lines = [f"# Experiment {exp.name}", ""]
    if exp.description:
        lines += [exp.description, ""]
    base = ", ".join(f"{k}={v}" for k, v in exp.base.items()) or "defaults"
    lines += [f"Base: {base}. Grid: {', '.join(exp.axes) or 'none'}; seeds "
              f"{', '.join(map(str, exp.seeds))}. Points: {len(points)}, {done} done, "
              f"{len(failed)} failed, {len(points) - done - len(failed)} not run. "
              "Every point's metrics: metrics.csv.", ""]
    lines += ["Mean over the seeds whose point completed (± standard deviation); failed "
              "points are left out (seeds: completed (failed)); (n=k): only k of them have "
              "that metric. Slowdown = FCT / ideal FCT on an "
              "empty fabric (the flow alone, store-and-forward on the fastest path, modelled).", ""]
    bound = cpu_bound_points(points)
    if bound:
        lines += [fidelity_warning(bound, done), ""]
    lockstep = [p for p in points if p.status == "done" and p.metrics.get("lockstep") is True]
    if lockstep:
        lines += [lockstep_warning(lockstep, done), ""]
    # Columns no point has (algbw without collectives, ...) would only say "-".
    table = [t for t in TABLE if any(mean_sd([p.metrics.get(t[0]) for p in ps])
                                     for ps in configs.values())]
    table += _series_columns(configs)
    head = ["configuration", "seeds", *(["CPU-bound"] if bound else []), *[h for _, h, _ in table]]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    nfailed = failed_by_configuration(points)
    for c in dict.fromkeys(p.configuration for p in points
                           if p.configuration in configs or p.configuration in nfailed):
        ps = configs.get(c, [])
        seeds = str(len(ps)) + (f" ({nfailed[c]} failed)" if c in nfailed else "")
        cpu = [f"{sum(map(_cpu_bound, ps))}/{len(ps)}"] if bound else []
        cells = [c, seeds, *cpu, *(_table_cell([p.metrics.get(key) for p in ps], fmt)
                                   for key, _h, fmt in table)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if failed:
        lines += ["## Failed points", ""]
        lines += [f"- `{p.id}`: {p.reason}" for p in failed]
        lines.append("")
    for img in images:
        lines += [f"![{Path(img).stem}]({img})", ""]
    return "\n".join(lines)


def _cpu_bound(p: PointResult) -> bool:
    """A completed point whose (real-time) run judged itself CPU-bound."""
    return p.status == "done" and p.metrics.get("cpu_bound") is True


def cpu_bound_points(points: Sequence[PointResult]) -> list[PointResult]:
    return [p for p in points if _cpu_bound(p)]


def lockstep_warning(points: Sequence[PointResult], done: int) -> str:
    """What the report says when virtual points tail-dropped without timing jitter:
    which packets their full queues dropped is the model's lockstep as much as the
    fabric's (docs/experiments.md, "Timing jitter and phase effects")."""
    return (f"**Timing: {len(points)} of {done} completed points tail-dropped in virtual "
            "time without timing jitter**: senders at one rate reach a full queue in the "
            "same order packet after packet, so the same ones lose (phase effects), and "
            "drops, resends and FCTs can differ a lot from a fabric with any timing "
            "noise. Compare with a grid axis `link_jitter_ns: [0, 10]` over several "
            "seeds.")


def fidelity_warning(bound: Sequence[PointResult], done: int) -> str:
    """What the report says above its table when some points ran CPU-bound: their
    figures are this machine's as much as the modelled network's."""
    ids = [f"`{p.id}`" for p in bound]
    shown = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
    return (f"**Fidelity: {len(bound)} of {done} completed points ran CPU-bound** ({shown}): "
            "the host CPU, not only the modelled network, shaped their figures (each "
            "point's summary.txt says which bound its run broke). Lower the link rate "
            "(`rate`; `emu calibrate` suggests one) or run in virtual time (no `--real`).")


def _series_columns(configs: dict[str, list[PointResult]]) -> list[tuple[str, str, str]]:
    """busbw per collective series (busbw_GBps[dp], ...) of runs with several series
    (mix), which have no single busbw: averaging a dp ring's with tp rings' would mix
    different collectives."""
    pts = [p for ps in configs.values() for p in ps if p.metrics.get("busbw_GBps") is None]
    keys = dict.fromkeys(k for p in pts for k in p.metrics
                         if k.startswith("busbw_GBps[") and p.metrics[k] is not None)
    return [(k, f"busbw GB/s {k[len('busbw_GBps['):-1]}", "{:.2f}") for k in keys]


def _table_cell(values: Sequence[Scalar], fmt: str) -> str:
    """mean ± sd over the row's completed points; "(n=k)" when only k of them have the
    metric, so a mean over fewer points never passes for one over all of them."""
    xs = _numbers(values)
    ms = mean_sd(xs)
    if ms is None:
        return "-"
    cell = _number(fmt, ms[0]) + (f" ± {_number(fmt, ms[1])}" if len(xs) > 1 else "")
    return cell + (f" (n={len(xs)})" if len(xs) < len(values) else "")


def _number(fmt: str, x: float) -> str:
    """`x` in the column's format; a count's mean or spread below 10 that is not whole
    keeps one decimal (drops 0 and 1 over two seeds: 0.5 ± 0.7, not "0 ± 1")."""
    if fmt == "{:.0f}" and abs(x) < 10 and x != round(x):
        return f"{x:.1f}"
    return fmt.format(x)


def write_report(out: Path, exp: Experiment) -> tuple[Path, list[PointResult]]:
    """metrics.csv, the plots and report.md under `out`; report.md's path and the points
    that ran CPU-bound."""
    import logging

    from .plots import save

    points = load_points(out, exp)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.csv").write_text(metrics_csv(points))
    plot_dir = out / "plots"
    plot_dir.mkdir(exist_ok=True)
    images = []
    try:
        for stem, fig in figures(by_configuration(points)).items():
            save(fig, plot_dir / f"{stem}.png")
            images.append(f"plots/{stem}.png")
    except Exception as exc:  # a plot must never cost the report its table
        logging.getLogger(__name__).warning("experiment plots: %s", exc)
    path = out / "report.md"
    path.write_text(report_text(exp, points, images))
    return path, cpu_bound_points(points)
