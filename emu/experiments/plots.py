"""PNG plots of a run: per-flow throughput, queue depth at the hottest ports, uplink
utilization per switch. matplotlib with the Agg backend (no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .metrics import FlowResult, PortKey, QueueStats

PortSeries = Mapping[PortKey, Sequence[tuple[float, int]]]  # (t_s, cumulative tx_bytes)


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_flows(flows: Sequence[FlowResult], path: Path, max_flows: int = 24) -> Path | None:
    """Each flow's average goodput over its lifetime (a segment from start to end), with
    the DCQCN sending rate (wire units) where the agent sampled it."""
    shown = [f for f in flows if f.start_s is not None and f.end_s is not None][:max_flows]
    if not shown:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    t0 = min(f.start_s for f in shown if f.start_s is not None)
    for i, f in enumerate(shown):
        assert f.start_s is not None and f.end_s is not None
        color = f"C{i % 10}"
        gp = (f.goodput_bps or 0) / 1e6
        ax.plot([f.start_s - t0, f.end_s - t0], [gp, gp], color=color, lw=2,
                label=f.id if len(shown) <= 12 else None)
        if len(f.rate_samples) > 1 and f.goodput_bps and f.goodput_nominal_bps:
            scale = f.goodput_bps / f.goodput_nominal_bps  # nominal -> wire
            ts = [t - t0 for t, _ in f.rate_samples] + [f.end_s - t0]
            rs = [r * scale / 1e6 for _, r in f.rate_samples]
            ax.step(ts, rs + rs[-1:], where="post", color=color, lw=0.8, ls=":")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mb/s (wire)")
    ax.set_title("Per-flow goodput (solid) and DCQCN rate (dotted)")
    if len(shown) <= 12:
        ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_queues(samples: Sequence[tuple[float, str, int, float]], hottest: Sequence[QueueStats],
                path: Path) -> Path | None:
    if not hottest or not samples:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 4))
    t0 = min(s[0] for s in samples)
    for q in hottest:
        pts = [(t - t0, d) for t, sw, p, d in samples if sw == q.switch and p == q.port]
        ax.plot([t for t, _ in pts], [d for _, d in pts], lw=1, label=f"{q.switch}:{q.port}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("queue depth (packets)")
    ax.set_title("Egress queue depth at the hottest ports")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def utilization(series: Sequence[tuple[float, int]], rate_bps: float) -> list[tuple[float, float]]:
    """(t_s, fraction of `rate_bps`) between consecutive cumulative byte samples."""
    out = []
    for (t1, b1), (t2, b2) in zip(series, series[1:], strict=False):
        if t2 > t1 and rate_bps > 0:
            out.append((t2, max(0.0, (b2 - b1) * 8 / (t2 - t1) / rate_bps)))
    return out


def plot_uplinks(series: PortSeries, uplinks: Mapping[str, Sequence[int]],
                 rates_bps: Mapping[PortKey, float], path: Path) -> Path | None:
    switches = [s for s in uplinks if any(len(series.get((s, p), ())) > 1 for p in uplinks[s])]
    if not switches:
        return None
    plt = _plt()
    n = len(switches)
    cols = min(4, n)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False,
                             sharey=True)
    t0 = min(s[0][0] for s in series.values() if s)
    for ax, sw in zip([a for row in axes for a in row], switches, strict=False):
        for p in uplinks[sw]:
            u = utilization(series.get((sw, p), ()), rates_bps.get((sw, p), 0.0))
            ax.plot([t - t0 for t, _ in u], [x * 100 for _, x in u], lw=1, label=f"port {p}")
        ax.set_title(sw, fontsize=9)
        ax.set_ylim(0, 110)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in [a for row in axes for a in row][n:]:
        ax.set_visible(False)
    fig.supxlabel("time (s)")
    fig.supylabel("uplink utilization (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
