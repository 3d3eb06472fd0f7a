"""Metrics from real agent result lines (agents run in virtual time) and synthetic
counter records whose right answers are known."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from emu.experiments import metrics as M
from emu.experiments.plan import RunPlan
from emu.experiments.workloads import WorkloadParams, build_workload

Run = tuple[RunPlan, dict[str, list[dict[str, Any]]]]


def test_allreduce_flows_all_verified_and_ordered(allreduce_run: Run) -> None:
    plan, rows = allreduce_run
    flows = M.flow_results(plan.workload, rows)
    assert len(flows) == len(plan.workload.flows) == 14 * 8
    assert all(f.completed and f.delivered and f.verified for f in flows)
    by_id = {f.id: f for f in flows}
    for f in plan.workload.flows:  # a step never starts before its dependencies arrived
        for dep in f.after:
            assert by_id[f.id].start_s >= by_id[dep].end_s - 1e-9  # type: ignore[operator]


def test_collective_bandwidths_follow_nccl_tests(allreduce_run: Run) -> None:
    plan, rows = allreduce_run
    flows = M.flow_results(plan.workload, rows)
    (c,) = M.collective_results(plan.workload, flows, dilation=plan.dilation)
    assert c.completed and c.ranks == 8
    t = max(f.end_s for f in flows) - min(f.start_s for f in flows)  # type: ignore[type-var,operator]
    assert c.time_s == pytest.approx(t)
    assert c.time_nominal_s == pytest.approx(t / plan.dilation.factor)
    assert c.algbw_nominal_Bps == pytest.approx(32 * 1024 / c.time_nominal_s)
    assert c.busbw_nominal_Bps == pytest.approx(c.algbw_nominal_Bps * 2 * 7 / 8)


def test_tampered_or_missing_data_is_not_verified(allreduce_run: Run) -> None:
    plan, rows = allreduce_run
    bad = copy.deepcopy(rows)
    victim = plan.workload.flows[0]
    for r in bad[victim.dst]:
        if r.get("flow") == victim.id and r.get("role") == "receiver":
            r["sha256"] = "0" * 64
    del bad[plan.workload.flows[1].dst]  # an agent that never reported
    flows = {f.id: f for f in M.flow_results(plan.workload, bad)}
    assert flows[victim.id].delivered and not flows[victim.id].verified
    assert not flows[plan.workload.flows[1].id].delivered
    (c,) = M.collective_results(plan.workload, list(flows.values()))
    assert not c.completed and c.algbw_nominal_Bps is None


def test_a_duplicate_delivery_is_not_verified(allreduce_run: Run) -> None:
    """Issue #13.10: equal digests are not enough, the flow must arrive exactly once."""
    plan, rows = allreduce_run
    victim = plan.workload.flows[2]
    for deliveries, ok in ((1, True), (2, False), (None, False)):
        bad = copy.deepcopy(rows)
        for r in bad[victim.dst]:
            if r.get("flow") == victim.id and r.get("role") == "receiver":
                r["deliveries"] = deliveries
        f = {f.id: f for f in M.flow_results(plan.workload, bad)}[victim.id]
        assert f.delivered and f.verified is ok


def test_offsets_put_agents_on_one_timeline(allreduce_run: Run) -> None:
    plan, rows = allreduce_run
    f0 = plan.workload.flows[0]
    base = {f.id: f for f in M.flow_results(plan.workload, rows)}[f0.id]
    shifted = {f.id: f for f in M.flow_results(plan.workload, rows,
                                              {f0.src: 1.5, f0.dst: 2.0})}[f0.id]
    assert shifted.start_s == pytest.approx(base.start_s + 1.5)  # type: ignore[operator]
    assert shifted.end_s == pytest.approx(base.end_s + 2.0)  # type: ignore[operator]


def test_host_totals_count_loss_recovery(incast_run: Run) -> None:
    plan, rows = incast_run
    flows = M.flow_results(plan.workload, rows)
    assert all(f.verified for f in flows)
    t = M.host_totals(rows)
    assert t.hosts_reported == t.hosts_done == 8
    assert t.retx_pkts > 0 and t.retx_pkts == sum(f.retx_pkts for f in flows)
    assert t.data_pkts_sent >= 7 * 64
    # tail drops leave gaps that retransmissions fill; the star never reorders, so none
    # of them is a late (reordered) packet (issue #13.9: they all were)
    assert t.out_of_sequence > 0 and t.lost_gaps > 0
    assert t.late_pkts == t.reordered_pkts() == 0
    assert sum(n for k, n in t.reorder_distance.items() if k != "0") == 0


def test_port_deltas_totals_and_drops() -> None:
    a = {("s", 1): M.PortCount(tx_pkts=10, tx_bytes=100, queue_drops=1)}
    b = {("s", 1): M.PortCount(tx_pkts=25, tx_bytes=400, queue_drops=4, ecn_marks=2),
         ("s", 2): M.PortCount(rx_pkts=3, pipeline_drops=1)}
    d = M.port_deltas(a, b)
    assert d[("s", 1)] == M.PortCount(tx_pkts=15, tx_bytes=300, queue_drops=3, ecn_marks=2)
    tot = M.totals(d)
    assert (tot.tx_pkts, tot.rx_pkts, tot.drops, tot.ecn_marks) == (15, 3, 4, 2)


def test_percentiles_and_busiest_queues() -> None:
    assert M.percentile([1, 2, 3, 4], 50) == 2.5
    assert M.percentile([5], 99) == 5
    assert math.isnan(M.percentile([], 50))
    samples = [(float(i), "leaf1", 3, float(i % 10)) for i in range(100)]
    samples += [(float(i), "leaf2", 5, 40.0) for i in range(10)]
    samples += [(float(i), "spine1", 1, 0.0) for i in range(10)]  # idle: left out
    top = M.queue_stats(samples, top=5)
    assert [(q.switch, q.port) for q in top] == [("leaf2", 5), ("leaf1", 3)]
    assert top[1].max_pkts == 9 and top[1].p50_pkts == pytest.approx(4.5)


def test_uplink_balance_and_jain() -> None:
    even = {("l", p): M.PortCount(tx_bytes=100) for p in (3, 4, 5, 6)}
    one = {("l", 3): M.PortCount(tx_bytes=400)}
    (e,) = M.uplink_balance(even, {"l": [3, 4, 5, 6]})
    (o,) = M.uplink_balance(one, {"l": [3, 4, 5, 6]})
    assert e.jain == pytest.approx(1.0) and e.max_over_mean == pytest.approx(1.0)
    assert o.jain == pytest.approx(0.25) and o.max_over_mean == pytest.approx(4.0)
    assert M.uplink_balance({}, {"l": [3]}) == []


FRAME_MS = 0.44  # one 1102-byte frame at 20 Mb/s


def test_fidelity_flags_cpu_bound_runs() -> None:
    ok = M.fidelity(0, M.HostTotals(), None, 10_000)
    assert not ok.cpu_bound and ok.reasons == ()
    drops = M.fidelity(50, M.HostTotals(kernel_drops=5), None, 10_000)
    assert drops.cpu_bound and "55 frames dropped in kernel" in drops.reasons[0]
    stalls = M.fidelity(0, M.HostTotals(tx_stalls=900), None, 10_000)
    assert stalls.cpu_bound


def test_traffic_manager_lag_is_judged_on_its_p90_in_frame_times() -> None:
    # One 30 ms hiccup among quiet windows: reported, not a verdict.
    hiccup = M.fidelity(0, M.HostTotals(), [0.1] * 19 + [30.0], 10_000, frame_time_ms=FRAME_MS)
    assert not hiccup.cpu_bound
    assert hiccup.tm_lag_max_ms == 30.0 and hiccup.tm_lag_p90_ms == pytest.approx(0.1)
    # Most windows several frame times late: the modelled links lost capacity.
    late = M.fidelity(0, M.HostTotals(), [5.0] * 20, 10_000, frame_time_ms=FRAME_MS)
    assert late.cpu_bound and "traffic managers behind schedule" in late.reasons[0]
    assert "11 frame times" in late.reasons[0]
    # The same lag is fine where a frame takes longer than that (a slow link).
    assert not M.fidelity(0, M.HostTotals(), [5.0] * 20, 10_000, frame_time_ms=4.4).cpu_bound
    # No frame time: the absolute bound.
    assert M.fidelity(0, M.HostTotals(), [120.0] * 3, 10_000).cpu_bound
    assert not M.fidelity(0, M.HostTotals(), [5.0] * 3, 10_000).cpu_bound


def test_sender_pacing_lag_relative_to_the_frame_time() -> None:
    on_time = M.HostTotals(tx_lag_p99_us=255, tx_lag_max_us=900, tx_lag_turns=5000)
    f = M.fidelity(0, on_time, None, 10_000, frame_time_ms=FRAME_MS)
    assert not f.cpu_bound and f.tx_lag_p99_ms == pytest.approx(0.255)
    behind = M.HostTotals(tx_lag_p99_us=8191, tx_lag_max_us=14000, tx_lag_turns=5000)
    f = M.fidelity(0, behind, None, 10_000, frame_time_ms=FRAME_MS)
    assert f.cpu_bound and "pacing lag 8.2 ms = 19 frame times" in f.reasons[0]
    assert f.tx_lag_max_ms == pytest.approx(14.0)
    # No transmit turns measured (old agents, virtual time): no signal, no verdict.
    assert M.fidelity(0, M.HostTotals(), None, 10_000, frame_time_ms=FRAME_MS).tx_lag_p99_ms is None


def test_efficiency_bounds_depend_on_what_explains_idle_links() -> None:
    def f(eff: float, **kw: Any) -> M.Fidelity:
        return M.fidelity(0, M.HostTotals(), None, 10_000, efficiency=eff,
                          busiest_port="leaf1:6", **kw)

    low = f(0.11)
    assert low.cpu_bound and "busiest link (leaf1:6) only 11% utilised" in low.reasons[0]
    assert f(0.11, dcqcn=True).cpu_bound  # below even DCQCN's bound
    assert not f(0.3, dcqcn=True).cpu_bound  # DCQCN may hold senders below capacity
    assert f(0.3).cpu_bound  # line-rate senders should keep the bottleneck busy
    assert not f(0.11, fabric_drops=40).cpu_bound  # loss recovery idles links legitimately
    assert not f(0.9).cpu_bound


def test_busiest_link_utilisation() -> None:
    rate = 8e6  # 1 MB/s
    deltas = {("l", 1): M.PortCount(tx_pkts=100, tx_bytes=497_600),  # + 24 B each: 0.5 s on the wire
              ("l", 2): M.PortCount(tx_pkts=10, tx_bytes=10_000),
              ("l", 3): M.PortCount(tx_pkts=5000, tx_bytes=5_000_000)}  # no rate known
    rates = {("l", 1): rate, ("l", 2): rate}
    util, port = M.busiest_link_utilisation(deltas, rates, 1.0)
    assert port == ("l", 1) and util == pytest.approx(0.5)
    assert M.busiest_link_utilisation(deltas, rates, 0.25)[0] == 1.0  # capped
    assert M.busiest_link_utilisation(deltas, rates, None) == (None, None)
    assert M.busiest_link_utilisation({}, rates, 1.0) == (None, None)


def test_host_totals_take_the_worst_senders_pacing_lag() -> None:
    rows = {"h1": [{"type": "summary", "tx_lag": {"max_us": 900, "p99_us": 255, "turns": 10}}],
            "h2": [{"type": "summary", "tx_lag": {"max_us": 300, "p99_us": 511, "turns": 5}}],
            "h3": [{"type": "summary"}]}
    t = M.host_totals(rows)
    assert (t.tx_lag_p99_us, t.tx_lag_max_us, t.tx_lag_turns) == (511, 900, 15)


def test_read_jsonl_skips_a_torn_last_line(tmp_path: Any) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text('{"type": "flow", "flow": "a"}\n{"type": "summ')
    assert M.read_jsonl(p) == [{"type": "flow", "flow": "a"}]
    assert M.read_jsonl(tmp_path / "missing.jsonl") == []


def test_workload_without_reports_yields_incomplete_flows() -> None:
    w = build_workload(WorkloadParams("incast", message_bytes=10), {"a": "l1", "b": "l2"})
    (f,) = M.flow_results(w, {})
    assert not f.completed and not f.verified and f.start_s is None


def test_window_limited_senders_are_not_a_cpu_verdict() -> None:
    """`emu run leafspine2 --workload incast --window 4` (real time): 4 packets per
    base RTT hold each sender near 4% of its line rate, the busiest link ran 12% busy,
    and the summary called the run CPU-BOUND. The utilisation bound now scales with
    what the windows allow (report.window_cap)."""
    from emu.experiments.config import RunConfig
    from emu.experiments.plan import plan_run
    from emu.experiments.report import window_cap
    from emu.experiments.workloads import WorkloadParams

    wl = WorkloadParams("incast", message_bytes=64 * 1024)
    small = window_cap(plan_run(RunConfig(topo="leafspine2", workload=wl, window_pkts=4)))
    assert 0.02 < small < 0.15  # 4 x 1102 B per base RTT (a few us) at 100 Gb/s
    assert window_cap(plan_run(RunConfig(topo="leafspine2", workload=wl))) == 1.0

    def f(eff: float, cap: float) -> M.Fidelity:
        return M.fidelity(0, M.HostTotals(), None, 10_000, efficiency=eff, dcqcn=True,
                          busiest_port="leaf1:1", window_cap=cap)

    assert not f(0.12, small).cpu_bound
    low = f(0.001, small)
    assert low.cpu_bound and "windows allowing" in low.reasons[0]
    assert f(0.12, 1.0).cpu_bound  # windows of 2 BDPs: the bound as before


def test_flows_at_their_ideal_fct_are_not_a_cpu_verdict() -> None:
    """`emu run clos4 --cc none` (real time, the default ring all-reduce): every flow
    within 2% of its ideal FCT, the busiest link 26% busy between the ring's dependent
    steps, and the summary called the run CPU-BOUND (the same run with DCQCN passed
    only by its lower bound). Flows at about their ideal FCT are not CPU-bound."""
    def f(eff: float, p50: float | None) -> M.Fidelity:
        return M.fidelity(0, M.HostTotals(), None, 10_000, efficiency=eff,
                          busiest_port="leaf1:1", slowdown_p50=p50)

    assert not f(0.26, 1.02).cpu_bound
    assert f(0.26, 2.5).cpu_bound  # slower than the empty fabric allows: the bound holds
    assert f(0.26, None).cpu_bound
