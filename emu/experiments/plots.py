"""PNG plots of a run: per-flow throughput, queue depth at the hottest ports, uplink
utilization per switch. matplotlib with the Agg backend (no display needed).

All of them show the modelled network: time and rates of the fabric the topology
describes, not of the slowed wire a run plays it on (a run's records are on the wire's
timeline; `TimeAxis` divides by the dilation). They share one `TimeAxis` (the report
starts it at the first flow's start), so a moment in one plot is the same moment in the
others. Each `*_figure` function returns the figure (tests read its lines and legends);
`plot_*` saves it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .metrics import FlowResult, PortKey, QueueStats

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

TITLE_Y = 1.0
"""Axes titles sit on the axes' top edge (plus the usual pad). Given, not left to the
draw to find: nothing is drawn above the axes, and finding it measures every tick label."""

PortSeries = Mapping[PortKey, Sequence[tuple[float, int]]]  # (t_s, cumulative tx_bytes)

MAX_FLOWS_APART = 12
"""Up to this many flows each get a colour and a legend entry; beyond, flows are
grouped (one colour and legend entry per group) and their sum is drawn."""
MAX_GROUPS = 10  # matplotlib's default colour cycle
UTIL_WINDOW_FRAMES = 10
"""Utilisation is averaged over windows of at least this many full frames at the port's
rate: counters move by whole frames, so a window of one or two frame times reads 0% or
200%; over ten frames the quantisation is within 10%."""

MAX_UPLINK_PANELS = 64
"""Up to this many switches (a k=8 fat tree's) each get a panel of their uplinks'
curves; beyond, heat maps with a row per switch: a k=16 fat tree's 256 panels made a
figure 4 m tall, drawn in 14 s."""
HEATMAP_BINS = 200

TIME_JITTER = 0.1
"""The uncertainty of a utilisation window's length, as a fraction of it (see
`utilization`): a few milliseconds on windows of about 100 ms."""


@dataclass(frozen=True)
class TimeAxis:
    """The plots' x axis: modelled time since `t0`, a moment on the run's (wire)
    timeline, in the unit that suits the run (s, ms or us). A time t on the timeline is
    (t - t0) / dilation modelled seconds after t0."""

    t0: float = 0.0
    dilation: float = 1.0
    unit: str = "s"

    @classmethod
    def spanning(cls, t0: float, t_end: float, dilation: float = 1.0) -> TimeAxis:
        span = (t_end - t0) / dilation
        unit = "s" if span >= 1.0 else "ms" if span >= 1e-3 else "us"
        return cls(t0, dilation, unit)

    @property
    def per_second(self) -> float:
        return {"s": 1.0, "ms": 1e3, "us": 1e6}[self.unit]

    def x(self, t: float) -> float:
        """The axis value of timeline time t."""
        return (t - self.t0) / self.dilation * self.per_second

    def length(self, dt: float) -> float:
        """A timeline duration, in the axis' unit."""
        return dt / self.dilation * self.per_second

    @property
    def label(self) -> str:
        return f"modelled time since the first flow started ({self.unit})"


def rate_unit(peak_bps: float) -> tuple[str, float]:
    """A rate axis' unit and its size in bit/s: Gb/s from 1 Gb/s up, else Mb/s."""
    return ("Gb/s", 1e9) if peak_bps >= 1e9 else ("Mb/s", 1e6)


def new_figure(figsize: tuple[float, float], fitted: bool = True) -> Figure:
    """An empty figure drawn by the Agg canvas (no display needed). `fitted`: laid out
    by `plot_layout.FittedLayout` when saved; else `save` fits the saved area to it.

    Not through pyplot: nothing is shown, so its figure manager would only keep every
    figure alive until told to forget it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    layout = None
    if fitted:
        from .plot_layout import FittedLayout

        layout = FittedLayout()
    fig = Figure(figsize=figsize, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, path: Path) -> Path:
    engine = fig.get_layout_engine()
    if engine is None:  # legends placed outside: the saved area must grow to hold them
        fig.savefig(path, dpi=100, bbox_inches="tight")
    else:
        # Lay it out once and draw it once: left to savefig, some engines (tight
        # layout) lay the figure out in a draw of their own before the real one.
        engine.execute(fig)
        fig.set_layout_engine(None)
        fig.savefig(path, dpi=100)
    return path


def time_origin(flows: Sequence[FlowResult], times: Sequence[float] = ()) -> float:
    """The plots' common t = 0: the first flow's start, else the first sample."""
    starts = [f.start_s for f in flows if f.start_s is not None]
    if starts:
        return min(starts)
    return min(times) if times else 0.0


def time_axis(flows: Sequence[FlowResult], times: Sequence[float] = (),
              dilation: float = 1.0) -> TimeAxis:
    """The axis from `time_origin` to the last flow end or sample."""
    ends = [f.end_s for f in flows if f.end_s is not None] + list(times)
    t0 = time_origin(flows, times)
    return TimeAxis.spanning(t0, max(ends, default=t0), dilation)


def _nominal_bps(f: FlowResult) -> float:
    """A flow's average goodput in the modelled network."""
    return f.goodput_nominal_bps or 0.0


def _groups(flows: Sequence[FlowResult]) -> tuple[str, list[str]]:
    """How to colour many flows: by collective, else by source host, else not at all."""
    for what, keys in (("collective", [f.collective for f in flows]),
                       ("source host", [f.src for f in flows])):
        if 1 < len(set(keys)) <= MAX_GROUPS:
            return what, keys
    return "", ["" for _ in flows]


def flow_figure(flows: Sequence[FlowResult], axis: TimeAxis | None = None) -> Figure | None:
    """Each flow's average goodput over its lifetime (a segment from start to end), in
    the modelled network's rates.

    Up to MAX_FLOWS_APART flows: one colour and legend entry each, with the DCQCN
    sending rate where the agent sampled it. More: every flow still drawn, coloured by
    group, under a panel with their sum; a note on the figure says so."""
    shown = [f for f in flows if f.start_s is not None and f.end_s is not None]
    if not shown:
        return None
    axis = axis or time_axis(shown)
    apart = len(shown) <= MAX_FLOWS_APART
    peak = max([_nominal_bps(f) for f in shown]
               + [r for f in shown if apart for _, r in f.rate_samples])
    unit, size = rate_unit(peak)
    notes: list[str] = []
    if apart:
        fig = new_figure((10, 4.5))
        ax = fig.subplots()
        group_by, keys = "flow", [f.id for f in shown]
    else:
        fig = new_figure((10, 6.5))
        top, ax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [1, 2]})
        ts, total = _sum_of_flows(shown, axis)
        top.step(ts, [x / size for x in total], where="post", color="k", lw=1.5)
        top.set_ylabel(unit)
        top.set_title(f"All {len(shown)} flows: sum of their average goodputs", fontsize=10,
                      y=TITLE_Y)
        top.set_ylim(0, None)
        top.grid(alpha=0.3)
        group_by, keys = _groups(shown)
        notes.append(f"{len(shown)} flows, more than {MAX_FLOWS_APART}: aggregated "
                     f"(each flow a thin line, {'coloured by ' + group_by if group_by else 'one colour'}; "
                     "DCQCN rates not drawn)")
    colours = {k: f"C{i % 10}" for i, k in enumerate(dict.fromkeys(keys))}
    rate_drawn = False
    if not apart:  # one artist per group: a line each costs seconds per 10,000 flows
        _group_segments(ax, shown, keys, colours, axis, size)
    for f in shown if apart else ():  # a colour and legend entry each (keys: the ids)
        assert f.start_s is not None and f.end_s is not None
        gp = _nominal_bps(f) / size
        ax.plot([axis.x(f.start_s), axis.x(f.end_s)], [gp, gp], color=colours[f.id], lw=2,
                label=f.id)
        if len(f.rate_samples) > 1:
            # (time on the timeline, modelled bit/s) from the sender's DCQCN state
            ts = [axis.x(t) for t, _ in f.rate_samples] + [axis.x(f.end_s)]
            rs = [r / size for _, r in f.rate_samples]
            ax.step(ts, rs + rs[-1:], where="post", color=colours[f.id], lw=0.8, ls=":")
            rate_drawn = True
    if rate_drawn:  # one entry for every dotted line, and only if there is one
        ax.plot([], [], color="0.3", lw=0.8, ls=":", label="DCQCN rate")
    missing = len(flows) - len(shown)
    if missing:
        notes.append(f"{missing} flow{'s' if missing != 1 else ''} without a start and end "
                     "(not completed) not drawn")
    ax.set_xlabel(axis.label)
    ax.set_ylabel(unit)
    ax.set_title("Per-flow average goodput" + (" and DCQCN sending rate" if rate_drawn else ""),
                 fontsize=10, y=TITLE_Y)
    ax.set_ylim(0, None)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, title=group_by or None, fontsize=8, title_fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 + len(labels) // 16)
    ax.grid(alpha=0.3)
    if notes:
        fig.suptitle("\n".join(notes), fontsize=9)
    return fig


def _group_segments(ax: Axes, flows: Sequence[FlowResult], keys: Sequence[str],
                    colours: Mapping[str, str], axis: TimeAxis, size: float) -> None:
    """Each flow's goodput segment, thin, in one LineCollection per group (legend entry:
    the group, or "each flow")."""
    from matplotlib.collections import LineCollection

    segments: dict[str, list[list[tuple[float, float]]]] = {k: [] for k in colours}
    for f, key in zip(flows, keys, strict=True):
        assert f.start_s is not None and f.end_s is not None
        gp = _nominal_bps(f) / size
        segments[key].append([(axis.x(f.start_s), gp), (axis.x(f.end_s), gp)])
    for key, segs in segments.items():
        ax.add_collection(LineCollection(segs, colors=colours[key], linewidths=1, alpha=0.7,
                                         label=key or "each flow"))
    ax.autoscale_view()


def _sum_of_flows(flows: Sequence[FlowResult], axis: TimeAxis
                  ) -> tuple[list[float], list[float]]:
    """Step function of the summed average goodput (modelled bit/s) of the flows active
    at each time."""
    edges: list[tuple[float, float]] = []
    for f in flows:
        assert f.start_s is not None and f.end_s is not None
        gp = _nominal_bps(f)
        edges += [(axis.x(f.start_s), gp), (axis.x(f.end_s), -gp)]
    ts: list[float] = []
    total: list[float] = []
    level = 0.0
    for t, d in sorted(edges):
        level += d
        if ts and ts[-1] == t:
            total[-1] = max(0.0, level)
        else:
            ts.append(t)
            total.append(max(0.0, level))
    return ts, total


def plot_flows(flows: Sequence[FlowResult], path: Path, axis: TimeAxis | None = None
               ) -> Path | None:
    fig = flow_figure(flows, axis)
    return None if fig is None else save(fig, path)


def queue_figure(samples: Sequence[tuple[float, str, int, float]],
                 hottest: Sequence[QueueStats], axis: TimeAxis | None = None) -> Figure | None:
    if not hottest or not samples:
        return None
    fig = new_figure((10, 4))
    ax = fig.subplots()
    axis = axis or TimeAxis.spanning(min(s[0] for s in samples), max(s[0] for s in samples))
    for q in hottest:
        pts = [(axis.x(t), d) for t, sw, p, d in samples if sw == q.switch and p == q.port]
        ax.plot([t for t, _ in pts], [d for _, d in pts], lw=1, label=f"{q.switch}:{q.port}")
    ax.set_xlabel(axis.label)
    ax.set_ylabel("queue depth (packets)")
    ax.set_title("Egress queue depth at the hottest ports", y=TITLE_Y)
    ax.legend(fontsize=8, title="port", title_fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    return fig


def plot_queues(samples: Sequence[tuple[float, str, int, float]], hottest: Sequence[QueueStats],
                path: Path, axis: TimeAxis | None = None) -> Path | None:
    fig = queue_figure(samples, hottest, axis)
    return None if fig is None else save(fig, path)


def utilization(series: Sequence[tuple[float, int]], rate_bps: float, min_window_s: float = 0.0,
                frame_bytes: int = 0) -> list[tuple[float, float]]:
    """(t_s, fraction of `rate_bps`) over windows of consecutive samples of cumulative
    bytes on the wire (frames + emu.core.wire.WIRE_OVERHEAD_BYTES each, as
    report.port_series gives them), each at least `min_window_s` long.

    A link cannot send faster than its rate, so a window's excess over 100% that the
    measurement explains is read as 100%: one frame of `frame_bytes` (counters move by
    whole frames) plus TIME_JITTER of the window (when a switch's counters were read is
    known to a few milliseconds). A larger excess is kept: it would be a real fault."""
    out: list[tuple[float, float]] = []
    if rate_bps <= 0 or not series:
        return out
    t1, b1 = series[0]
    for t2, b2 in series[1:]:
        if t2 - t1 < max(min_window_s, 1e-12):
            continue
        busy_s = max(0, b2 - b1) * 8 / rate_bps
        span = t2 - t1
        if span < busy_s <= span * (1 + TIME_JITTER) + frame_bytes * 8 / rate_bps:
            busy_s = span
        out.append((t2, busy_s / span))
        t1, b1 = t2, b2
    return out


def uplink_figure(series: PortSeries, uplinks: Mapping[str, Sequence[int]],
                  rates_bps: Mapping[PortKey, float], axis: TimeAxis | None = None,
                  frame_bytes: int = 0) -> Figure | None:
    """A panel per switch of its uplinks' utilisation; beyond MAX_UPLINK_PANELS
    switches, heat maps with a row per switch (`uplink_heatmap`). `rates_bps` are the
    ports' rates on the run's timeline (the wire's), as `series` is."""
    switches = [s for s in uplinks if any(len(series.get((s, p), ())) > 1 for p in uplinks[s])]
    if not switches:
        return None
    axis = axis or TimeAxis.spanning(min(s[0][0] for s in series.values() if s),
                                     max(s[-1][0] for s in series.values() if s))
    windows: set[float] = set()
    curves: dict[PortKey, list[tuple[float, float]]] = {}
    for sw in switches:
        for p in uplinks[sw]:
            rate = rates_bps.get((sw, p), 0.0)
            window = UTIL_WINDOW_FRAMES * frame_bytes * 8 / rate if rate > 0 else 0.0
            windows.add(window)
            curves[(sw, p)] = utilization(series.get((sw, p), ()), rate, window, frame_bytes)
    peak = max([1.0, *(x for c in curves.values() for _, x in c)])
    note = (f"averaged over windows of at least {UTIL_WINDOW_FRAMES} frames "
            f"({axis.length(max(windows)):.3g} {axis.unit} at the slowest uplink)"
            if frame_bytes and max(windows, default=0) > 0 else "")
    if len(switches) > MAX_UPLINK_PANELS:
        starts = {k: series[k][0][0] for k in curves if series.get(k)}
        return uplink_heatmap(switches, uplinks, curves, starts, axis, peak, note)
    return _uplink_panels(switches, uplinks, curves, axis, peak, note)


def _uplink_panels(switches: Sequence[str], uplinks: Mapping[str, Sequence[int]],
                   curves: Mapping[PortKey, Sequence[tuple[float, float]]], axis: TimeAxis,
                   peak: float, note: str) -> Figure:
    n = len(switches)
    cols = min(4, n)
    rows = -(-n // cols)
    fig = new_figure((3.2 * cols, 2.4 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    # Never cut the curves off: a reading above 100% is shown, not hidden. Set once and
    # before the curves: the panels share the y axis, and each curve drawn on an
    # autoscaled panel would rescale all of them (minutes for a k=16 fat tree).
    axes[0][0].set_ylim(0, max(110.0, peak * 105))
    for ax, sw in zip([a for row in axes for a in row], switches, strict=False):
        for p in uplinks[sw]:
            # Each value is the average over the window ending at its time: steps.
            ax.step([axis.x(t) for t, _ in curves[(sw, p)]],
                    [x * 100 for _, x in curves[(sw, p)]], where="pre", lw=1,
                    label=f"port {p}")
        ax.axhline(100, color="0.5", lw=0.6, ls="--")
        ax.set_title(sw, fontsize=9, y=TITLE_Y)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    for ax in [a for row in axes for a in row][n:]:
        ax.set_visible(False)
    fig.supxlabel(axis.label)
    fig.supylabel("uplink utilization (%)")
    if note:
        fig.suptitle(note, fontsize=9)
    return fig


def uplink_grid(switches: Sequence[str], uplinks: Mapping[str, Sequence[int]],
                curves: Mapping[PortKey, Sequence[tuple[float, float]]],
                starts: Mapping[PortKey, float], bins: int = HEATMAP_BINS,
                ) -> tuple[list[float], list[list[float]], list[list[float]]]:
    """Bin edges (s) and, per switch and bin, its hottest uplink's utilisation and the
    spread between its hottest and coolest uplink (fractions of the rate; NaN where a
    bin has no reading). A bin takes the window (of `utilization`) its middle falls in."""
    import numpy as np

    keys = [(sw, p) for sw in switches for p in uplinks[sw] if curves.get((sw, p))]
    lo = min(starts.get(k, curves[k][0][0]) for k in keys)
    hi = max(curves[k][-1][0] for k in keys)
    edges = np.linspace(lo, hi, bins + 1)
    mids = (edges[:-1] + edges[1:]) / 2
    hot, spread = [], []
    for sw in switches:
        rows = []
        for p in uplinks[sw]:
            c = curves.get((sw, p))
            if not c:
                continue
            ends = np.array([t for t, _ in c])
            vals = np.append(np.array([x for _, x in c]), np.nan)  # past the last: no reading
            i = np.searchsorted(ends, mids, side="left")
            row = vals[i]
            row[mids <= starts.get((sw, p), ends[0])] = np.nan
            rows.append(row)
        m = np.array(rows) if rows else np.full((1, bins), np.nan)
        seen = ~np.isnan(m).all(axis=0)
        h = np.full(bins, np.nan)
        sp = np.full(bins, np.nan)
        h[seen] = np.nanmax(m[:, seen], axis=0)
        sp[seen] = h[seen] - np.nanmin(m[:, seen], axis=0)
        hot.append(h.tolist())
        spread.append(sp.tolist())
    return edges.tolist(), hot, spread


def uplink_heatmap(switches: Sequence[str], uplinks: Mapping[str, Sequence[int]],
                   curves: Mapping[PortKey, Sequence[tuple[float, float]]],
                   starts: Mapping[PortKey, float], axis: TimeAxis, peak: float,
                   note: str = "") -> Figure:
    """Two heat maps, a row per switch against time: its hottest uplink's utilisation,
    and the spread from its coolest (an ECMP collision: one uplink hot, the others idle)."""
    import numpy as np

    edges, hot, spread = uplink_grid(switches, uplinks, curves, starts)
    n = len(switches)
    row_in = 0.05
    fig = new_figure((13.0, min(1.8 + n * row_in, 40.0)), fitted=False)
    fig.set_layout_engine("constrained")  # two axes and their colour bars: cheap to fit
    axes = fig.subplots(1, 2, sharey=True)
    extent = (axis.x(edges[0]), axis.x(edges[-1]), n - 0.5, -0.5)
    top = max(100.0, peak * 100)
    for ax, data, title, cmap in (
            (axes[0], hot, "hottest uplink (%)", "viridis"),
            (axes[1], spread, "hottest minus coolest uplink (points)", "magma")):
        im = ax.imshow(np.array(data) * 100, aspect="auto", extent=extent, cmap=cmap,
                       vmin=0, vmax=top, interpolation="nearest")
        fig.colorbar(im, ax=ax, fraction=0.05, pad=0.01, aspect=60)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(axis.label)
    # A label every ~9 points of height, in switch order (the topology's own).
    step = math.ceil(9 / (row_in * 72))
    axes[0].set_yticks(range(0, n, step), [switches[i] for i in range(0, n, step)],
                       fontsize=7)
    axes[0].set_ylabel(f"switch ({n}, blank = no reading)")
    head = f"uplink utilization of {n} switches, {len(edges) - 1} time bins"
    fig.suptitle(f"{head}; {note}" if note else head, fontsize=9)
    return fig


def plot_uplinks(series: PortSeries, uplinks: Mapping[str, Sequence[int]],
                 rates_bps: Mapping[PortKey, float], path: Path, axis: TimeAxis | None = None,
                 frame_bytes: int = 0) -> Path | None:
    fig = uplink_figure(series, uplinks, rates_bps, axis, frame_bytes)
    return None if fig is None else save(fig, path)
