"""The experiment report's table (report.md): means over the points that completed."""

from __future__ import annotations

from pathlib import Path

from emu.experiments.report_md import PointResult, by_configuration, report_text


class _Exp:
    name = "x"
    description = ""
    base: dict[str, str] = {}
    axes = ["lb"]
    seeds = [1, 2, 3]


def _point(seed: int, status: str, metrics: dict[str, float | None]) -> PointResult:
    return PointResult(f"lb=ecmp,seed={seed}", "lb=ecmp", seed, status,
                       "" if status == "done" else "incomplete: 7/8 flows delivered and verified",
                       {"lb": "ecmp"}, True, dict(metrics), {}, {})


def test_a_failed_point_is_left_out_of_its_configurations_means() -> None:
    """An incomplete run writes metrics.json too (p99 1.2 without its unfinished flow,
    no busbw); the row averaged it in: seeds 2, p99 4.65 ± 4.88, busbw 3.50 over one
    point. Now the mean is the completed seed's alone and the row says one failed."""
    ok = _point(1, "done", {"slowdown_p99": 8.1, "busbw_GBps": 3.5})
    bad = _point(2, "failed", {"slowdown_p99": 1.2, "busbw_GBps": None})
    assert {c: [p.seed for p in ps] for c, ps in by_configuration([ok, bad]).items()} == \
        {"lb=ecmp": [1]}
    text = report_text(_Exp(), [ok, bad], [])
    assert "| lb=ecmp | 1 (1 failed) | 8.10 | 3.50 |" in text
    assert "- `lb=ecmp,seed=2`: incomplete: 7/8 flows" in text


def test_a_metric_missing_in_some_completed_points_says_its_count() -> None:
    pts = [_point(1, "done", {"slowdown_p99": 2.0, "busbw_GBps": 3.0}),
           _point(2, "done", {"slowdown_p99": 4.0, "busbw_GBps": None})]
    # one value has no spread: no "± 0.00" that reads as two equal ones
    assert "| lb=ecmp | 2 | 3.00 ± 1.41 | 3.00 (n=1) |" in report_text(_Exp(), pts, [])


def test_a_configuration_whose_points_all_failed_keeps_its_row() -> None:
    pts = [_point(1, "done", {"slowdown_p99": 2.0}),
           PointResult("lb=spray,seed=1", "lb=spray", 1, "failed", "boom", {"lb": "spray"},
                       True, {"slowdown_p99": 1.0}, {}, {})]
    text = report_text(_Exp(), pts, [])
    assert "| lb=spray | 0 (1 failed) | - |" in text and "| lb=ecmp | 1 | 2.00 |" in text


def test_a_count_whose_mean_is_not_whole_keeps_a_decimal() -> None:
    """Drops 0 and 1 over two seeds read "0 ± 1" (0.5 rounded half to even): a mean of
    0 beside a configuration that did drop."""
    pts = [_point(1, "done", {"drops": 0, "cnps": 180}), _point(2, "done", {"drops": 1, "cnps": 0})]
    assert "| lb=ecmp | 2 | 0.5 ± 0.7 | 90 ± 127 |" in report_text(_Exp(), pts, [])


def test_a_run_whose_queues_stayed_empty_has_queue_depth_0() -> None:
    """No switch port ever held a packet (one flow at line rate): the busiest-queue
    metrics were None, as if the run had not sampled queues, so a configuration's
    queue p99 was the mean of its other seeds alone, marked (n=1)."""
    from emu.experiments.config import RunConfig
    from emu.experiments.plan import plan_run
    from emu.experiments.points import point_metrics
    from emu.experiments.virtual import run_virtual
    from emu.experiments.workloads import WorkloadParams

    wl = WorkloadParams("incast", message_bytes=64 * 1024, incast_senders=1)
    s = run_virtual(plan_run(RunConfig(virtual=True, progress=False, workload=wl)), write=False)
    assert s.ok and s.queues == [] and s.queue_samples > 0
    flat = point_metrics(s).flat
    assert flat["cpu_bound"] is False  # virtual time: exact
    assert [flat[f"queue_{k}_pkts"] for k in ("p50", "p90", "p99", "max")] == [0.0] * 4
    assert flat["queue_busiest"] is None
    pts = [_point(1, "done", {"queue_p99_pkts": flat["queue_p99_pkts"]}),
           _point(2, "done", {"queue_p99_pkts": 50.0})]
    assert "| lb=ecmp | 2 | 25 ± 35 |" in report_text(_Exp(), pts, [])


def test_error_bars_of_a_metric_stop_at_0() -> None:
    """A queue p99 of 50 and 0 packets over two seeds (25 +- 35) drew its error bar down
    to -10 packets: no metric the report plots can be negative."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from emu.experiments.report_md import _bars

    fig, ax = plt.subplots()
    assert _bars(ax, ["p99", "max"], {"lb=flowlet": [(25.0, 35.4), (30.0, 42.4)],
                                      "lb=ecmp": [(51.0, 0.5), None]}, "packets", "queue")
    lows = [seg[:, 1].min() for coll in ax.collections for seg in coll.get_segments()]
    assert lows and min(lows) == 0.0
    highs = [seg[:, 1].max() for coll in ax.collections for seg in coll.get_segments()]
    assert max(highs) == 30.0 + 42.4
    plt.close(fig)


def test_points_that_ran_cpu_bound_are_flagged_above_and_in_the_table() -> None:
    """`emu experiment --real` on this 2-core machine: every point of lb-modes was
    CPU-BOUND in its summary.txt, and report.md showed their slowdowns (1.56 for spray,
    1.00 in virtual time) without a word about it."""
    bound = _point(1, "done", {"slowdown_p99": 1.6, "cpu_bound": True})
    fine = _point(2, "done", {"slowdown_p99": 1.0, "cpu_bound": False})
    text = report_text(_Exp(), [bound, fine], [])
    assert "**Fidelity: 1 of 2 completed points ran CPU-bound** (`lb=ecmp,seed=1`)" in text
    assert "| configuration | seeds | CPU-bound | slowdown p99 |" in text
    assert "| lb=ecmp | 2 | 1/2 | 1.30 ± 0.42 |" in text
    # virtual-time points never are: no warning, no column
    clean = report_text(_Exp(), [fine, _point(3, "done", {"slowdown_p99": 1.0,
                                                         "cpu_bound": False})], [])
    assert "CPU-bound" not in clean and "Fidelity" not in clean


def test_a_point_written_before_the_cpu_bound_column_takes_its_summary_verdict(
        tmp_path: Path) -> None:
    import json

    from emu.experiments.points import read_metrics

    (tmp_path / "metrics.json").write_text(json.dumps({
        "metrics": {"slowdown_p99": 1.6}, "summary": {"fidelity": {"cpu_bound": True}}}))
    m = read_metrics(tmp_path)
    assert m is not None and m.flat["cpu_bound"] is True
