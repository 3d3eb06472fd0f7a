"""A layout for the run's plots that fits their text from font metrics.

matplotlib's tight layout finds the room each axes' text needs by laying out every
tick label of every axes, twice, before the figure is drawn (which lays them out
again); on a grid of 16 uplink panels that took longer than drawing it. Here the
tick labels are measured as strings (the same locator and formatter that the draw
uses, and the font's metrics), titles, axis labels and legends from their own
extents, and the figure's margins and gaps are set once from them. Axis labels are
placed here too, so the draw does not search for them among the tick labels.

Imported only when a figure is made: matplotlib is slow to import.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.axis import Axis, XAxis
from matplotlib.backend_bases import RendererBase
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import LayoutEngine

PAD_PT = 1.08 * 10
"""Room left at the figure's edges and between neighbouring axes' text, as tight
layout leaves by default (1.08 font sizes of 10 pt)."""


@dataclass
class _Room:
    """Pixels an axes' text reaches beyond each side of its box."""

    left: float = 0.0
    right: float = 0.0
    top: float = 0.0
    bottom: float = 0.0


class FittedLayout(LayoutEngine):
    """Margins and gaps of a figure's grid of axes, from what its text needs.

    Handles what the run's plots have: one grid of axes (a row or column may hold
    several), axes titles, axis labels, tick labels on the bottom and left, legends
    inside or to the right of their axes, and figure-level texts (suptitle,
    supxlabel, supylabel) near an edge."""

    _adjust_compatible = True
    _colorbar_gridspec = True

    def execute(self, fig: Figure) -> None:
        axes = [a for a in fig.axes if a.get_visible() and a.get_subplotspec() is not None]
        if not axes:
            return
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        metrics = _Metrics(renderer, fig.dpi)
        # Which tick labels the locator picks depends on the axes' length, which the
        # margins set: a second pass settles them (tight layout does the same).
        for _ in range(2):
            fig.subplots_adjust(**_fit(fig, axes, metrics))
        for ax in axes:
            _place_axis_labels(ax, metrics)


class _Metrics:
    """Text sizes in pixels, measured once per string and font size."""

    def __init__(self, renderer: RendererBase, dpi: float) -> None:
        self.renderer = renderer
        self.px_per_pt = dpi / 72
        self._sizes: dict[tuple[str, float], tuple[float, float]] = {}

    def size(self, text: str, fontsize: float) -> tuple[float, float]:
        key = (text, fontsize)
        if key not in self._sizes:
            prop = FontProperties(size=fontsize)
            math = text.count("$") >= 2  # e.g. a log axis's "$\\mathdefault{10^{3}}$"
            w, _, _ = self.renderer.get_text_width_height_descent(text, prop, ismath=math)
            # A one-line Text is as tall as "lp" whatever it holds (matplotlib's rule).
            _, h, _ = self.renderer.get_text_width_height_descent("lp", prop, ismath=False)
            self._sizes[key] = (w, h)
        return self._sizes[key]


def _tick_param(axis: Axis, key: str, rc_key: str) -> Any:
    """A major tick parameter of `axis`: as set on it, else matplotlib's default."""
    name = "x" if isinstance(axis, XAxis) else "y"
    return axis.get_tick_params().get(key, mpl.rcParams[f"{name}tick.{rc_key}"])  # type: ignore[index]


def _tick_font(axis: Axis) -> float:
    return float(FontProperties(size=_tick_param(axis, "labelsize", "labelsize"))
                 .get_size_in_points())


def _tick_offset_px(axis: Axis, m: _Metrics) -> float:
    """From the spine to the tick labels: the tick's length and the label's pad."""
    return float(_tick_param(axis, "length", "major.size")
                 + _tick_param(axis, "pad", "major.pad")) * m.px_per_pt


def _labels_shown(axis: Axis) -> bool:
    side = "labelbottom" if isinstance(axis, XAxis) else "labelleft"
    return bool(axis.get_visible() and axis.get_tick_params().get(side, True))


def _tick_labels(axis: Axis) -> list[tuple[float, str]]:
    """The (position, text) of the major tick labels the draw will show."""
    if not _labels_shown(axis):
        return []
    locs = list(axis.get_majorticklocs())
    texts = axis.get_major_formatter().format_ticks(locs)
    lo, hi = sorted(axis.get_view_interval())
    eps = (hi - lo) * 1e-10
    return [(v, s) for v, s in zip(locs, texts, strict=True) if s and lo - eps <= v <= hi + eps]


def _room(ax: Axes, m: _Metrics) -> _Room:
    r = _Room()
    box = ax.get_window_extent()
    xs = _tick_labels(ax.xaxis)
    if xs:
        size = _tick_font(ax.xaxis)
        h = max(m.size(s, size)[1] for _, s in xs)
        r.bottom = _tick_offset_px(ax.xaxis, m) + h
        # The first and last labels are centred on their ticks: they may stick out.
        for v, s in (xs[0], xs[-1]):
            x = ax.transData.transform((v, 0))[0]
            w = m.size(s, size)[0]
            r.left = max(r.left, box.x0 - (x - w / 2))
            r.right = max(r.right, x + w / 2 - box.x1)
    ys = _tick_labels(ax.yaxis)
    if ys:
        size = _tick_font(ax.yaxis)
        r.left = max(r.left, _tick_offset_px(ax.yaxis, m) + max(m.size(s, size)[0] for _, s in ys))
        for v, s in (ys[0], ys[-1]):
            y = ax.transData.transform((0, v))[1]
            h = m.size(s, size)[1]
            r.top = max(r.top, y + h / 2 - box.y1)
            r.bottom = max(r.bottom, box.y0 - (y - h / 2))
    for axis, side in ((ax.xaxis, "bottom"), (ax.yaxis, "left")):
        if axis.label.get_visible() and axis.label.get_text():
            bb = axis.label.get_window_extent(m.renderer)
            extra = axis.labelpad * m.px_per_pt + (bb.height if side == "bottom" else bb.width)
            setattr(r, side, getattr(r, side) + extra)
    if ax.title.get_visible() and ax.title.get_text():  # the run's plots: centred titles
        r.top = max(r.top, ax.title.get_window_extent(m.renderer).y1 - box.y1)
    legend = ax.get_legend()
    if legend is not None and legend.get_visible():
        bb = legend.get_window_extent(m.renderer)
        r.right = max(r.right, bb.x1 - box.x1)
        r.top = max(r.top, bb.y1 - box.y1)
    return r


def _figure_texts(fig: Figure, m: _Metrics) -> _Room:
    """Room the figure's own texts (suptitle, supxlabel, supylabel) take at its edges."""
    r = _Room()
    width, height = fig.bbox.width, fig.bbox.height
    for t in fig.texts:
        if not (t.get_visible() and t.get_text()):
            continue
        bb = t.get_window_extent(m.renderer)
        if bb.width >= bb.height:  # horizontal: at the top or the bottom
            if bb.y0 + bb.y1 > height:
                r.top = max(r.top, height - bb.y0)
            else:
                r.bottom = max(r.bottom, bb.y1)
        elif bb.x0 + bb.x1 < width:  # vertical, on the left
            r.left = max(r.left, bb.x1)
        else:
            r.right = max(r.right, width - bb.x0)
    return r


def _spacing(total: float, n: int, gap: float) -> float:
    """subplots_adjust's wspace/hspace (a fraction of the mean cell) for a gap in pixels."""
    if n < 2:
        return 0.0
    cell = (total - (n - 1) * gap) / n
    return gap / cell if cell > 0 else 0.0


def _max(values: Iterable[float]) -> float:
    return max(values, default=0.0)


def _fit(fig: Figure, axes: list[Axes], m: _Metrics) -> dict[str, float]:
    gs = axes[0].get_subplotspec().get_gridspec()  # type: ignore[union-attr]
    rows, cols = gs.get_geometry()
    pad = PAD_PT * m.px_per_pt
    spans = []
    for ax in axes:
        spec = ax.get_subplotspec()
        assert spec is not None
        spans.append((spec.rowspan, spec.colspan, _room(ax, m)))
    edge = _figure_texts(fig, m)
    width, height = fig.bbox.width, fig.bbox.height
    left = edge.left + _max(r.left for _, c, r in spans if c.start == 0) + pad
    right = edge.right + _max(r.right for _, c, r in spans if c.stop == cols) + pad
    top = edge.top + _max(r.top for rw, _, r in spans if rw.start == 0) + pad
    bottom = edge.bottom + _max(r.bottom for rw, _, r in spans if rw.stop == rows) + pad
    wgap = _max(_max(r.right for _, c, r in spans if c.stop == k)
                + _max(r.left for _, c, r in spans if c.start == k) for k in range(1, cols))
    hgap = _max(_max(r.bottom for rw, _, r in spans if rw.stop == k)
                + _max(r.top for rw, _, r in spans if rw.start == k) for k in range(1, rows))
    # Never less than the figure can hold: a crowded figure keeps some of each axes.
    left, right = min(left, width * 0.45), min(right, width * 0.45)
    top, bottom = min(top, height * 0.45), min(bottom, height * 0.45)
    return {"left": left / width, "right": 1 - right / width,
            "bottom": bottom / height, "top": 1 - top / height,
            "wspace": _spacing(width - left - right, cols, wgap + pad),
            "hspace": _spacing(height - top - bottom, rows, hgap + pad)}


def _place_axis_labels(ax: Axes, m: _Metrics) -> None:
    """Put each axis label just beyond its tick labels (where the draw would search for
    it); an axis without a label gets a fixed spot, so the draw does not search either."""
    box = ax.get_window_extent()
    x_ticks = _tick_labels(ax.xaxis)
    below = 0.0
    if x_ticks:
        below = _tick_offset_px(ax.xaxis, m) + max(
            m.size(s, _tick_font(ax.xaxis))[1] for _, s in x_ticks)
    ax.xaxis.set_label_coords(0.5, -(below + ax.xaxis.labelpad * m.px_per_pt) / box.height)
    y_ticks = _tick_labels(ax.yaxis)
    beside = 0.0
    if y_ticks:
        beside = _tick_offset_px(ax.yaxis, m) + max(
            m.size(s, _tick_font(ax.yaxis))[0] for _, s in y_ticks)
    ax.yaxis.set_label_coords(-(beside + ax.yaxis.labelpad * m.px_per_pt) / box.width, 0.5)
