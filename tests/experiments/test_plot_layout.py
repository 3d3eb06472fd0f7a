"""The run's plots as saved: every piece of text inside the picture, none on another axes.

Read back from the drawn figures (text extents in pixels), not from pixels."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from emu.experiments import metrics as M
from emu.experiments import plots

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels


def _box(artist: Any, renderer: Any) -> Box:
    bb = artist.get_window_extent(renderer)
    return (bb.x0, bb.y0, bb.x1, bb.y1)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


def _texts(ax: Any) -> list[Any]:
    """The text an axes shows outside its box: tick labels in view, title, axis labels."""
    out = []
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = sorted(axis.get_view_interval())
        locs = axis.get_majorticklocs()
        ticks = axis.get_major_ticks(len(locs))  # positioned and labelled as drawn
        out += [t.label1 for t, v in zip(ticks, locs, strict=True)
                if t.label1.get_visible() and lo - 1e-9 * (hi - lo) <= v <= hi + 1e-9 * (hi - lo)]
        out.append(axis.label)
    out.append(ax.title)
    return [t for t in out if t.get_visible() and t.get_text()]


def assert_fits(fig: Any, path: Path) -> None:
    """Save `fig` as the report does, then check its text against the picture."""
    plots.save(fig, path)
    renderer = fig.canvas.get_renderer()
    canvas = (0.0, 0.0, fig.bbox.width, fig.bbox.height)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    frames = [_box(ax, renderer) for ax in axes]
    owned: list[tuple[int, str, Box]] = []  # (axes index, what, extent)
    for i, ax in enumerate(axes):
        owned += [(i, repr(t.get_text()), _box(t, renderer)) for t in _texts(ax)]
        legend = ax.get_legend()
        if legend is not None:
            owned.append((i, "legend", _box(legend, renderer)))
    owned += [(-1, repr(t.get_text()), _box(t, renderer)) for t in fig.texts if t.get_text()]
    for i, what, box in owned:
        assert (box[0] >= canvas[0] - 0.5 and box[1] >= canvas[1] - 0.5
                and box[2] <= canvas[2] + 0.5 and box[3] <= canvas[3] + 0.5), \
            f"{what} of axes {i} leaves the picture: {box}"
        for j, frame in enumerate(frames):
            if j != i and not (what == "legend" and j == i):
                assert not _overlap(box, frame), f"{what} of axes {i} covers axes {j}"
    for k, (i, what, box) in enumerate(owned):
        for i2, what2, box2 in owned[k + 1:]:
            if i2 != i:
                assert not _overlap(box, box2), f"{what} (axes {i}) overlaps {what2} (axes {i2})"


def _uplinks(n_switches: int, seconds: float, peak: float) -> tuple[Any, ...]:
    """Two uplinks per switch at 1 Gb/s sending `peak` of their rate for `seconds`."""
    rate, frame = 1e9, 1000
    series: dict[M.PortKey, list[tuple[float, int]]] = {}
    uplinks: dict[str, list[int]] = {}
    for s in range(n_switches):
        name = f"p{s // 8 + 1}{'ea'[s % 2]}{s % 8 // 2 + 1}"
        uplinks[name] = [3, 4]
        for p in (3, 4):
            steps = 200
            series[(name, p)] = [(seconds * k / steps,
                                  int(peak * rate / 8 * seconds * k / steps) // frame * frame)
                                 for k in range(steps + 1)]
    rates = {k: rate for k in series}
    return series, uplinks, rates, plots.TimeAxis.spanning(0.0, seconds), frame


def test_a_k8_fat_tree_uplink_grid_keeps_every_label_inside_and_apart(tmp_path: Path) -> None:
    # k=8: 64 edge and aggregation switches with uplinks, 16 rows of 4 panels.
    fig = plots.uplink_figure(*_uplinks(64, 8.0, 0.95))
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 64
    assert_fits(fig, tmp_path / "uplinks.png")


def test_uplink_labels_fit_when_readings_need_wider_tick_labels(tmp_path: Path) -> None:
    # A faulty reading of 30x the line rate gives four-digit percentages, and a run of
    # milliseconds gives long time labels: the margins follow the labels.
    fig = plots.uplink_figure(*_uplinks(6, 0.0123, 30.0))
    assert fig.axes[0].get_ylim()[1] > 1000
    assert_fits(fig, tmp_path / "uplinks.png")


def _flow(name: str, src: str, start: float, end: float, bps: float) -> M.FlowResult:
    return M.FlowResult(id=name, src=src, dst="h9", size_bytes=1000, collective="c",
                        completed=True, delivered=True, verified=True, start_s=start,
                        end_s=end, fct_s=end - start, goodput_bps=bps,
                        goodput_nominal_bps=bps)


def test_flow_and_queue_figures_keep_their_legends_and_labels_inside(tmp_path: Path) -> None:
    # Long flow names in an outside legend; then 32 flows: the summed panel above, a
    # two-line note on top.
    apart = [_flow(f"a-long-flow-name-{i}", "h1", 0.1 * i, 1 + 0.1 * i, 1e9 * (i + 1))
             for i in range(plots.MAX_FLOWS_APART)]
    assert_fits(plots.flow_figure(apart), tmp_path / "flows.png")
    many = [*apart, *(_flow(f"g{i}", f"h{i % 4}", 0.0, 2.0, 1e6) for i in range(20)),
            replace(_flow("unfinished", "h1", 0.0, 2.0, 1e6), end_s=None)]
    fig = plots.flow_figure(many)
    assert "\n" in fig.texts[0].get_text()
    assert_fits(fig, tmp_path / "many.png")
    samples = [(t / 10, "leaf1", p, float(t * p)) for t in range(50) for p in (1, 2, 3)]
    hottest = [M.QueueStats(switch="leaf1", port=p, samples=50, p50_pkts=0.0, p90_pkts=0.0,
                            p99_pkts=0.0, max_pkts=150.0) for p in (1, 2, 3)]
    assert_fits(plots.queue_figure(samples, hottest, plots.TimeAxis(0.0)),
                tmp_path / "queues.png")


def test_a_k16_fat_tree_uplinks_are_heat_maps_with_readable_switch_labels(
        tmp_path: Path) -> None:
    # k=16: 256 switches with uplinks. A panel each made a figure 4 m tall (14 s to draw);
    # beyond MAX_UPLINK_PANELS there is one row per switch in two heat maps.
    series, uplinks, rates, axis, frame = _uplinks(256, 8.0, 0.95)
    fig = plots.uplink_figure(series, uplinks, rates, axis, frame)
    images = [ax for ax in fig.axes if ax.get_images()]
    assert len(images) == 2
    for ax in images:
        assert ax.get_images()[0].get_array().shape == (256, plots.HEATMAP_BINS)
    fig.set_size_inches(fig.get_size_inches())  # as saved: the height holds every row
    assert fig.get_size_inches()[1] * 100 >= 256 * 4  # at least 4 pixels a row at 100 dpi
    assert_fits(fig, tmp_path / "uplinks.png")
    renderer = fig.canvas.get_renderer()
    labels = [t for t in images[0].get_yticklabels() if t.get_text()]
    assert labels[0].get_text() == next(iter(uplinks)) and len(labels) >= 256 // 4
    boxes = sorted(_box(t, renderer)[1::2] for t in labels)  # (y0, y1)
    assert all(b[0] >= a[1] - 0.5 for a, b in zip(boxes, boxes[1:], strict=False)), \
        "switch labels overlap"


def test_the_heat_map_rows_are_each_switchs_hottest_uplink_and_its_spread() -> None:
    nan = float("nan")
    # a: port 3 at 90%, port 4 at 10% over (0, 1]; b: one uplink, read from 0.5 s on
    curves = {("a", 3): [(0.5, 0.9), (1.0, 0.9)], ("a", 4): [(0.5, 0.1), (1.0, 0.1)],
              ("b", 3): [(1.0, 0.4)]}
    starts = {("a", 3): 0.0, ("a", 4): 0.0, ("b", 3): 0.5}
    edges, hot, spread = plots.uplink_grid(["a", "b"], {"a": [3, 4], "b": [3]}, curves,
                                           starts, bins=4)
    assert edges == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert hot[0] == [0.9] * 4 and [round(x, 9) for x in spread[0]] == [0.8] * 4
    assert str(hot[1][:2]) == str([nan, nan]) and hot[1][2:] == [0.4, 0.4]
    assert spread[1][2:] == [0.0, 0.0]
