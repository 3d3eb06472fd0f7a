"""algbw and busbw of a run as nccl-tests reports them: per series of equal collectives,
size / mean operation time, busbw with that series' own bus factor."""

from __future__ import annotations

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.metrics import CollectiveResult, series_bandwidths
from emu.experiments.plan import plan_run
from emu.experiments.points import point_metrics
from emu.experiments.virtual import run_virtual
from emu.experiments.workloads import WorkloadParams


def _op(i: int, series: str, ranks: int, t: float, kind: str = "allreduce") -> CollectiveResult:
    return CollectiveResult(f"{series}{i}", kind, ranks, 65536, True, t, t, 65536 / t, None,
                            series)


def test_algbw_is_size_over_the_mean_time_not_the_mean_of_rates() -> None:
    """Iterations of 122 and 1220 us: the mean of size/t gave 0.2955 GB/s; nccl-tests'
    size / mean time is 65536 B / 671 us = 0.0977 GB/s."""
    (bw,) = series_bandwidths([_op(0, "allreduce", 8, 122e-6), _op(1, "allreduce", 8, 1220e-6)])
    assert bw.operations == 2 and bw.time_nominal_s == pytest.approx(671e-6)
    assert bw.algbw_nominal_Bps / 1e9 == pytest.approx(0.097669, abs=1e-6)
    assert bw.busbw_nominal_Bps == pytest.approx(bw.algbw_nominal_Bps * 2 * 7 / 8)
    (a2a,) = series_bandwidths([_op(0, "alltoall", 4, 100e-6, "alltoall")])
    assert a2a.busbw_nominal_Bps == pytest.approx(65536 / 100e-6 * 3 / 4)


def test_series_of_other_shapes_are_kept_apart() -> None:
    bws = series_bandwidths([_op(0, "dp", 8, 1e-4), _op(0, "tp", 2, 2e-5), _op(1, "tp", 3, 4e-5)])
    assert [(b.name, b.ranks) for b in bws] == [("dp", 8), ("tp-2x65536", 2), ("tp-3x65536", 3)]
    assert bws[2].busbw_nominal_Bps == pytest.approx(65536 / 4e-5 * 4 / 3)


def test_a_mix_run_reports_dp_and_tp_apart_and_no_single_busbw() -> None:
    """mix on clos4 (one 8-rank dp ring, four 2-rank tp rings, 128 KB): the point's
    algbw/busbw averaged all five operations (algbw 3.73, busbw 3.79 GB/s, when this was
    written); dp's busbw was 0.729 and tp's 4.40, so no one figure stands for both."""
    cfg = RunConfig(topo="clos4", cc="dcqcn", virtual=True, progress=False, start_delay_s=0.0,
                    workload=WorkloadParams("mix", message_bytes=128 * 1024))
    s = run_virtual(plan_run(cfg), write=False)
    m = point_metrics(s).flat
    assert m["algbw_GBps"] is None and m["busbw_GBps"] is None
    dp = [c.time_nominal_s for c in s.collectives if c.series == "dp"]
    tp = [c.time_nominal_s for c in s.collectives if c.series == "tp"]
    assert len(dp) == 1 and len(tp) == 4 and all(dp + tp)
    alg_dp = 128 * 1024 / dp[0] / 1e9
    assert m["algbw_GBps[dp]"] == pytest.approx(alg_dp)
    assert m["busbw_GBps[dp]"] == pytest.approx(alg_dp * 2 * 7 / 8)
    alg_tp = 128 * 1024 / (sum(tp) / 4) / 1e9
    assert m["algbw_GBps[tp]"] == pytest.approx(alg_tp)
    assert m["busbw_GBps[tp]"] == pytest.approx(alg_tp)  # 2 ranks: factor 1
    # the two series are far apart: one average over them would describe neither
    assert m["busbw_GBps[tp]"] > 3 * m["busbw_GBps[dp]"]


def test_a_single_series_run_keeps_algbw_and_busbw() -> None:
    cfg = RunConfig(topo="clos4", cc="none", virtual=True, progress=False, start_delay_s=0.0,
                    workload=WorkloadParams("allreduce", message_bytes=32 * 1024, iterations=2))
    s = run_virtual(plan_run(cfg), write=False)
    ts = [c.time_nominal_s for c in s.collectives]
    assert len(ts) == 2 and all(ts)
    m = point_metrics(s).flat
    alg = 32 * 1024 / (sum(ts) / 2) / 1e9
    assert m["algbw_GBps"] == pytest.approx(alg) == m["algbw_GBps[allreduce]"]
    assert m["busbw_GBps"] == pytest.approx(alg * 2 * 7 / 8)
