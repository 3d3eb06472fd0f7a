"""The run's plots, read back from their figures (lines, legends, notes), not pixels."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from emu.experiments import metrics as M
from emu.experiments import plots
from emu.experiments.plan import RunPlan
from emu.experiments.report import RunRecords, build_summary, run_figures
from emu.experiments.sampler import Snapshot

Run = tuple[RunPlan, dict[str, list[dict[str, Any]]]]


def _flow(i: int, start: float, end: float, src: str = "h1", rate_samples: Any = ()
          ) -> M.FlowResult:
    return M.FlowResult(id=f"f{i}", src=src, dst="h2", size_bytes=1000, collective="c",
                        completed=True, delivered=True, verified=True, start_s=start,
                        end_s=end, fct_s=end - start, goodput_bps=1e6 + i,
                        goodput_nominal_bps=1e9, rate_samples=rate_samples)


def _segments(ax: Any) -> list[Any]:
    """The flows' goodput segments: a line each, or (many flows) in line collections."""
    return [ln.get_xydata() for ln in ax.get_lines() if len(ln.get_xdata()) == 2] + \
        [seg for c in ax.collections for seg in c.get_segments()]


def test_every_flow_is_drawn_and_many_are_aggregated_with_a_note() -> None:
    # 30 flows used to be cut to the first 24, with no legend and no word about it.
    flows = [_flow(i, 1.0 + i / 100, 2.0 + i / 100, src=f"h{i % 3 + 1}") for i in range(30)]
    fig = plots.flow_figure(flows)
    top, ax = fig.axes
    segs = _segments(ax)
    assert len(segs) == 30
    # each from its start to its end (1 s long), at its 1 Gb/s, one colour per source host
    assert sorted((round(s[1][0] - s[0][0], 9), s[0][1], s[1][1]) for s in segs) == \
        [(1.0, 1.0, 1.0)] * 30
    assert len({tuple(c.get_color()[0]) for c in ax.collections}) == 3
    note = fig._suptitle.get_text()
    assert "30 flows" in note and "aggregated" in note and "coloured by source host" in note
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["h1", "h2", "h3"]
    # The summed panel: 30 flows of 1 Gb/s (modelled), all active between 1.29 s and 2.0 s.
    (total,) = top.get_lines()
    assert max(total.get_ydata()) == pytest.approx(30.0, rel=1e-6)
    assert top.get_ylabel() == "Gb/s"


def test_few_flows_get_one_legend_entry_each_and_none_for_lines_not_drawn() -> None:
    flows = [_flow(i, 0.5, 1.0) for i in range(5)]
    fig = plots.flow_figure(flows)
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"f{i}" for i in range(5)]
    assert "DCQCN" not in ax.get_title()  # no rate samples: no dotted lines, no mention
    sampled = [replace(flows[0], rate_samples=((0.5, 1e9), (0.7, 5e8)))]
    ax = plots.flow_figure(sampled).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["f0", "DCQCN rate"]
    assert any(ln.get_linestyle() == ":" and len(ln.get_xdata()) > 2 for ln in ax.get_lines())


def test_incomplete_flows_are_counted_in_a_note() -> None:
    flows = [_flow(0, 0.5, 1.0), replace(_flow(1, 0.5, 1.0), end_s=None)]
    fig = plots.flow_figure(flows)
    assert "1 flow without a start and end" in fig._suptitle.get_text()


def test_utilisation_jitter_and_frame_quantisation_stay_within_100_percent() -> None:
    # A port sending at exactly its line rate (1 Mb/s, 1000-byte frames), sampled every
    # 10 ms with the sample times off by up to 2 ms: pairwise it read up to 150%.
    rate, frame = 1e6, 1000
    series = []
    for k in range(200):
        t = k * 0.01 + (0.002 if k % 2 else -0.002)
        sent = int(k * 0.01 * rate / 8) // frame * frame  # counters move by whole frames
        series.append((t, sent))
    assert max(u for _, u in plots.utilization(series, rate)) > 1.4  # the old reading
    window = plots.UTIL_WINDOW_FRAMES * frame * 8 / rate
    u = plots.utilization(series, rate, window, frame)
    assert u and max(x for _, x in u) <= 1.0 and min(x for _, x in u[1:]) >= 0.85


def test_utilisation_beyond_quantisation_is_shown_not_clipped() -> None:
    # 3 Mb/s through a 1 Mb/s port is a fault to see: the axis must reach it.
    series = [(k * 0.1, k * 37_500) for k in range(20)]
    fig = plots.uplink_figure({("leaf1", 3): series}, {"leaf1": [3]}, {("leaf1", 3): 1e6},
                              axis=plots.TimeAxis(0.0), frame_bytes=1000)
    ax = fig.axes[0]
    ys = [y for ln in ax.get_lines() for y in ln.get_ydata() if ln.get_label() == "port 3"]
    assert max(ys) == pytest.approx(300)
    assert ax.get_ylim()[1] >= max(ys)


def test_all_plots_share_one_time_origin(allreduce_run: Run) -> None:
    plan, rows = allreduce_run
    offsets = {h: 2.0 for h in rows}  # agents READY 2 s into the run timeline
    ups = plan.uplinks()["leaf1"]
    snaps = [Snapshot(t, {("leaf1", p): M.PortCount(tx_bytes=int(t * 1e5)) for p in ups},
                      [(t, "leaf1", ups[0], 3.0)]) for t in (1.0, 2.0, 3.0, 4.0, 5.0)]
    rec = RunRecords(rows, offsets, snaps, 5.0)
    summary = build_summary(plan, rec, None)
    figs = run_figures(plan, rec, summary)
    first_start = min(f.start_s for f in summary.flows if f.start_s is not None)
    # (the run's timeline is the wire's: the plots show it in modelled time)
    d = plan.dilation.factor
    flow_ax = figs["flow_throughput"].axes[-1]
    unit = flow_ax.get_xlabel().rsplit("(", 1)[1].rstrip(")")
    per_s = {"s": 1.0, "ms": 1e3, "us": 1e6}[unit]
    assert min(seg[0][0] for seg in _segments(flow_ax)) == pytest.approx(0.0)
    queue_x = list(figs["queue_depth"].axes[0].get_lines()[0].get_xdata())
    assert queue_x == pytest.approx([(t - first_start) / d * per_s
                                     for t in (1.0, 2.0, 3.0, 4.0, 5.0)])
    up_x = [x for ln in figs["uplink_utilization"].axes[0].get_lines()
            if ln.get_label().startswith("port") for x in ln.get_xdata()]
    assert max(up_x) == pytest.approx((5.0 - first_start) / d * per_s)
    for fig in figs.values():
        labels = [ax.get_xlabel() for ax in fig.axes] + [fig.get_supxlabel()]
        assert f"modelled time since the first flow started ({unit})" in labels


def test_plots_show_the_modelled_network_not_the_slowed_wire() -> None:
    """A virtual clos4 run (100 Gbit/s modelled, D = 5000) plotted its flows at 20 Mb/s
    over 0.8 s: the wire's rates and times. Goodput and DCQCN rate are now modelled
    Gb/s, time modelled microseconds."""
    d = 5000.0
    f = replace(_flow(0, 0.3, 0.3 + 0.1, rate_samples=((0.3, 100e9), (0.35, 50e9))),
                goodput_bps=12.5e6, goodput_nominal_bps=62.5e9)
    axis = plots.time_axis([f], dilation=d)
    assert (axis.unit, axis.x(0.3), axis.x(0.4)) == ("us", 0.0, pytest.approx(20.0))
    ax = plots.flow_figure([f], axis).axes[0]
    assert ax.get_ylabel() == "Gb/s"
    assert ax.get_xlabel() == "modelled time since the first flow started (us)"
    (seg,) = _segments(ax)
    assert list(seg[:, 1]) == [62.5, 62.5]
    assert list(seg[:, 0]) == pytest.approx([0.0, 20.0])
    (rate,) = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
    assert list(rate.get_ydata()) == [100.0, 50.0, 50.0]
    assert list(rate.get_xdata()) == pytest.approx([0.0, 10.0, 20.0])
    # a modelled run of a few seconds is shown in seconds, of a few ms in ms
    assert plots.TimeAxis.spanning(0.0, 2.0 * d, d).unit == "s"
    assert plots.TimeAxis.spanning(0.0, 0.002 * d, d).unit == "ms"


def test_each_switch_is_timed_when_it_was_read() -> None:
    # A sample reads the switches one after another; timing all of them at the sample's
    # start made a slow read of one switch look like a burst on the next.
    from emu.experiments.report import port_series
    from emu.experiments.sampler import FabricSampler

    now = [0.0]

    def stats(switch: str) -> dict[str, Any]:
        now[0] += 0.5 if switch == "s1" else 0.1  # s1 answers slowly
        return {"ports": {"1": {"tx_bytes": int(now[0] * 1000)}}}

    sampler = FabricSampler(["s1", "s2"], stats, None, t0=0.0, clock=lambda: now[0])
    snap = sampler.sample()
    assert snap.t_s == 0.0
    assert snap.switch_t == {"s1": pytest.approx(0.25), "s2": pytest.approx(0.55)}
    series = port_series([snap])
    assert series[("s2", 1)] == [(pytest.approx(0.55), 600)]
