"""The experiment report's table (report.md): means over the points that completed."""

from __future__ import annotations

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
