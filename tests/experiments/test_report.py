"""Summary, results folder, plots and the live view, from real agent lines."""

from __future__ import annotations

import csv
import gc
import json
import re
from pathlib import Path
from typing import Any

import pytest

from emu.experiments import metrics as M
from emu.experiments.plan import RunPlan
from emu.experiments.progress import LiveView, ProgressState, render
from emu.experiments.report import (
    RunRecords,
    build_summary,
    collector_paused,
    write_plots,
    write_results,
)
from emu.experiments.results import make_run_dir, read_queue_samples, run_dir_name
from emu.experiments.sampler import Snapshot, from_target_stats, merge_p4
from emu.experiments.summary import fmt_bytes, fmt_rate, fmt_s, render_text

Run = tuple[RunPlan, dict[str, list[dict[str, Any]]]]
PNG = b"\x89PNG\r\n\x1a\n"


def _snapshots(plan: RunPlan) -> list[Snapshot]:
    """Two samples: leaf1's uplinks carried 1:2:3:4 KB, one queue filled to 30."""
    ups = plan.uplinks()["leaf1"]
    s0 = Snapshot(0.0, {("leaf1", p): M.PortCount() for p in ups},
                  [(0.0, "leaf1", ups[0], 0.0)])
    s1 = Snapshot(1.0, {("leaf1", p): M.PortCount(tx_bytes=1000 * (i + 1), ecn_marks=i,
                                                  queue_drops=1)
                        for i, p in enumerate(ups)},
                  [(1.0, "leaf1", ups[0], 30.0)])
    return [s0, s1]


def test_a_large_fabrics_uplink_table_shows_its_least_even_switches(
        allreduce_run: Run, tmp_path: Path) -> None:
    """A fattree8 run printed 48 rows of uplinks (a k=16 one 256); like the flows table,
    the summary shows 16, the least even first, and says where the rest are."""
    from dataclasses import replace

    plan, rows = allreduce_run
    s = build_summary(plan, RunRecords(rows, {h: 0.0 for h in rows}, _snapshots(plan), 1.0),
                      make_run_dir(tmp_path, "clos4", "ecmp", "dcqcn"))
    many = [M.UplinkBalance(f"sw{i}", ((1, 100), (2, 100 + i)), 1 - i / 100, 1.0)
            for i in range(20)]
    text = render_text(replace(s, uplinks=many), width=200)
    assert "Uplink balance: the 16 least even of 20 switches, all in summary.json" in \
        " ".join(text.split())  # (the title wraps to the table's width)
    listed = [ln.split()[0] for ln in text.splitlines() if re.match(r"sw\d", ln)]
    assert listed == [f"sw{i}" for i in range(19, 3, -1)]
    few = render_text(replace(s, uplinks=many[:16]), width=200)
    assert [ln.split()[0] for ln in few.splitlines() if re.match(r"sw\d", ln)] == \
        [f"sw{i}" for i in range(16)]  # all of them, in switch order


def test_summary_and_results_folder(allreduce_run: Run, tmp_path: Path) -> None:
    plan, rows = allreduce_run
    rec = RunRecords(rows, {h: 0.0 for h in rows}, _snapshots(plan), 1.0,
                     bringup_s={"ready_s": 6.5})
    run_dir = make_run_dir(tmp_path, "clos4", "ecmp", "dcqcn")
    s = build_summary(plan, rec, run_dir)
    assert s.ok and s.flows_verified() == len(plan.workload.flows)
    assert s.fabric.ecn_marks == 0 + 1 + 2 + 3 and s.fabric.queue_drops == 4
    assert s.uplinks[0].switch == "leaf1" and s.uplinks[0].max_over_mean == pytest.approx(1.6)
    assert s.queues[0].max_pkts == 30

    text = render_text(s)
    for needle in ("OK: 112/112 flows verified", "allreduce0", "algbw GB/s", "busbw GB/s",
                   "ECN marks", "CNPs sent / received", "Busiest queues", "leaf1:3",
                   "Uplink balance", "network-bound", "FCT nominal"):
        assert needle in text, needle
    # The flows table gives the modelled FCT beside the wire's (x dilation apart).
    slowest = max(s.flows, key=lambda f: f.fct_s or 0)
    assert slowest.fct_nominal_s is not None and slowest.fct_s is not None
    row = next(ln for ln in text.splitlines() if ln.startswith(slowest.id + " "))
    assert f" {fmt_s(slowest.fct_s)} " in row and f" {fmt_s(slowest.fct_nominal_s)} " in row
    assert s.traffic_s is not None
    assert f"({fmt_s(s.traffic_s / s.run['dilation'])} modelled; agents ran" in text

    files = write_results(run_dir, plan, rec, s)
    names = {p.relative_to(run_dir).as_posix() for p in files}
    for n in ("config.json", "flows.jsonl", "ports.csv", "port_samples.csv", "queues.csv",
              "summary.json", "summary.txt", "agents/h1.json", "plots/flow_throughput.png",
              "plots/queue_depth.png", "plots/uplink_utilization.png"):
        assert n in names, n
    for png in run_dir.glob("plots/*.png"):
        assert png.read_bytes()[:8] == PNG
    summary = json.loads((run_dir / "summary.json").read_text())  # strict JSON: no NaN
    assert summary["flows_verified"] == summary["flows_total"] == 112
    assert summary["collectives"][0]["busbw_nominal_Bps"] > 0
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["run"]["workload"]["kind"] == "allreduce" and cfg["topology"]["name"] == "clos4"
    lines = (run_dir / "flows.jsonl").read_text().splitlines()
    assert len(lines) == 112 and json.loads(lines[0])["verified"] is True
    with (run_dir / "ports.csv").open() as fh:
        ports = list(csv.DictReader(fh))
    assert {r["uplink"] for r in ports if r["switch"] == "leaf1"} == {"True"}
    assert read_queue_samples(run_dir / "queues.csv")[-1] == (1.0, "leaf1", 3, 30.0)
    # each sample's moment in the modelled network beside the wire's (the plots' axis)
    d = plan.dilation.factor
    for name in ("queues.csv", "port_samples.csv"):
        with (run_dir / name).open() as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(float(r["t_nominal_us"]) == pytest.approx(
            float(r["t_s"]) / d * 1e6, abs=1e-3) for r in rows), name


def test_plotting_pauses_the_cycle_collector_and_restores_it(allreduce_run: Run,
                                                              tmp_path: Path) -> None:
    plan, rows = allreduce_run
    rec = RunRecords(rows, {h: 0.0 for h in rows}, _snapshots(plan), 1.0)
    summary = build_summary(plan, rec, None)
    assert len(write_plots(tmp_path, plan, rec, summary)) == 3
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a plot failed")
    assert gc.isenabled()  # back on after a failure too
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


def test_incomplete_and_cpu_bound_runs_say_so(incast_run: Run) -> None:
    plan, rows = incast_run
    rows = {h: r for h, r in rows.items() if h != "h8"}  # the receiver never reported
    snaps = [Snapshot(0.0, {("leaf4", 1): M.PortCount()}),
             Snapshot(1.0, {("leaf4", 1): M.PortCount(kernel_drops=500)})]
    s = build_summary(plan, RunRecords(rows, {}, snaps, 1.0), None)
    assert not s.ok
    text = render_text(s)
    assert "INCOMPLETE: 0/7 flows verified" in text
    assert "CPU-BOUND" in text and "500 frames dropped in kernel" in text


def test_cc_none_summary_reports_no_cnps_and_separates_late_from_lost(incast_run: Run) -> None:
    """Issue #13.6/#13.9: cc none has no CNP counts to show; drops are lost gaps, not
    reordering."""
    plan, rows = incast_run
    s = build_summary(plan, RunRecords(rows, {}, [], 1.0), None)
    assert s.run.get("cc") == "none" and s.hosts.cnps_sent == s.hosts.cnps_rcvd == 0
    text = render_text(s)
    assert "none (cc none: no notification point)" in text
    row = next(ln for ln in text.splitlines() if "late (reordered) packets / lost gaps" in ln)
    assert row.endswith(f" 0 / {s.hosts.lost_gaps}")
    assert s.hosts.lost_gaps > 0 and s.to_dict()["hosts"]["reordered_pkts"] == 0


def test_target_stats_become_port_counts() -> None:
    stats = {"ports": {"1": {"rx_frames": 5, "rx_bytes": 500, "tx_frames": 4, "tx_bytes": 400,
                             "kernel_drops": 2, "tx_drops": 1, "queue": {"queued_pkts": 7}}},
             "drops": {"1": {"tail_drop": 3, "pipeline_drop": 9}}}
    ports, queues, lag = from_target_stats("s1", stats, 2.5)
    assert ports[("s1", 1)] == M.PortCount(5, 500, 4, 400, 0, 0, 3, 2, 1)
    assert queues == [(2.5, "s1", 1, 7.0)] and lag is None

    class P4:
        rx_pkts, rx_bytes, tx_pkts, tx_bytes, ecn_marks, drops = 9, 900, 8, 800, 6, 1

    merged = merge_p4(ports, {("s1", 1): P4(), ("s1", 2): P4()})
    assert merged[("s1", 1)].ecn_marks == 6 and merged[("s1", 1)].tx_pkts == 4  # target's
    assert merged[("s1", 2)].tx_pkts == 8  # P4 counters where the target has none


def test_target_traffic_manager_lag_is_read_per_switch() -> None:
    stats = {"ports": {"1": {"queue": {"queued_pkts": 0}}}, "drops": {}, "tm_lag_ms": 3.5}
    assert from_target_stats("s1", stats, 0.0)[2] == 3.5
    assert from_target_stats("s1", {**stats, "tm_lag_ms": None}, 0.0)[2] is None  # BMv2


def test_summary_shows_every_fidelity_signal_and_skips_bringup_lag(allreduce_run: Run) -> None:
    plan, rows = allreduce_run
    snaps = _snapshots(plan)
    snaps[0].tm_lag_ms = 900.0  # since the switch started: bring-up, not the workload
    snaps[1].tm_lag_ms = 0.2
    s = build_summary(plan, RunRecords(rows, {h: 0.0 for h in rows}, snaps, 1.0), None)
    assert s.fidelity.tm_lag_max_ms == 0.2
    assert s.fidelity.frame_time_ms == pytest.approx((1024 + 82) * 8 / 20e6 * 1e3)
    text = render_text(s)
    for needle in ("TM lag p90 0.2 ms", "sender pacing lag p99", "frame time 0.44 ms",
                   "busiest link utilisation", "refused sends 0", "kernel drops"):
        assert needle in text, needle


def test_progress_view_shows_agent_counters_live() -> None:
    from rich.console import Console

    state = ProgressState(phase="running", cnps=17, ecn_marked_rcvd=21, retx_pkts=3,
                          timeouts=1, tm_lag_max_ms=2.5, tx_lag_max_ms=1.25)
    con = Console(width=120, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    con.print(render(state))
    out = con.export_text()
    assert "CNPs 17" in out and "hosts saw 21" in out and "3 pkts, 1 timeouts" in out
    assert "switches 2.5 ms" in out and "senders 1.2 ms" in out
    assert "(at end)" not in out


def test_progress_view_renders_without_terminal() -> None:
    from rich.console import Console

    state = ProgressState(phase="running", elapsed_s=3.2, bytes_total=1000, bytes_moved=500,
                          hosts=8, hosts_done=2, ecn_marks=12, drops=3, hottest="leaf1:3 9 pkts",
                          rate_bps=2e6, dilation=50_000)
    con = Console(width=120, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    con.print(render(state))
    out = con.export_text()
    assert "50%" in out and "hosts done 2/8" in out and "ECN marks" in out and "leaf1:3" in out
    # 2 Mb/s on a wire slowed 50,000 times: the modelled network moves 100 Gb/s
    assert "now 100.00 Gb/s modelled" in out
    with LiveView(False) as view:  # disabled: a no-op
        view.update(state)


def test_formatting_and_names() -> None:
    assert fmt_bytes(1500) == "1.5 KB" and fmt_bytes(None) == "-"
    assert fmt_rate(2.5e9) == "2.50 Gb/s" and fmt_rate(None) == "-"
    assert fmt_s(0.0025) == "2.5 ms" and fmt_s(2) == "2.00 s"
    assert run_dir_name("topologies/clos4.yaml", "spray", "none", 0).endswith("-clos4-spray-none")


def test_run_dirs_do_not_collide(tmp_path: Path) -> None:
    a = make_run_dir(tmp_path, "clos4", "ecmp", "dcqcn")
    b = make_run_dir(tmp_path, "clos4", "ecmp", "dcqcn")
    assert a != b and a.is_dir() and b.is_dir()
