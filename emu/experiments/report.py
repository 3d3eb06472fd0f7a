"""After the workload: raw records -> RunSummary -> results folder (data, plots, text).

Shared by the Mininet run and the virtual-time run; pure apart from writing files.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from emu.core.flowmode import FlowControlMode
from emu.core.wire import WIRE_OVERHEAD_BYTES

from . import metrics as M
from . import plots, results
from .agent_configs import FRAME_OVERHEAD_BYTES, base_rtt_s
from .failures import failure_note, with_failures
from .fct import beat_ideal_note, median_slowdown, slowdown_buckets, with_slowdown
from .jsontypes import JsonDict, Row
from .pfc import PfcSeries
from .plan import RunPlan
from .sampler import Snapshot
from .summary import RunInfo, RunSummary, print_summary, render_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.console import Console

log = logging.getLogger(__name__)


@dataclass
class RunRecords:
    """Everything measured during one run."""

    rows_by_host: Mapping[str, Sequence[Row]]  # host -> its agent's result lines
    offsets_s: dict[str, float]  # host -> its agent's epoch (START) on the run timeline
    snapshots: list[Snapshot]  # first: before traffic, last: after
    duration_s: float
    bringup_s: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)  # (t_s as samples, what)
    interrupted: bool = False  # Ctrl-C during the workload: the records are partial
    # Switch flow-control counters over time (virtual runs; Mininet runs carry them in
    # the snapshots): emu.experiments.pfc.PfcSeries.
    pfc_series: PfcSeries = field(default_factory=list)


def build_summary(plan: RunPlan, rec: RunRecords, run_dir: Path | None) -> RunSummary:
    cfg = plan.config
    flows = with_slowdown(with_failures(plan.workload, M.flow_results(
        plan.workload, rec.rows_by_host, rec.offsets_s)), plan.model, plan.dilation,
        cfg.mtu_bytes)
    colls = M.collective_results(plan.workload, flows, plan.dilation)
    hosts = M.host_totals(rec.rows_by_host)
    first = rec.snapshots[0].ports if rec.snapshots else {}
    last = rec.snapshots[-1].ports if rec.snapshots else {}
    deltas = M.port_deltas(first, last)
    fabric = M.totals(deltas)
    queue_samples = [q for s in rec.snapshots for q in s.queues]
    weights = [w for s in rec.snapshots
               for w in (s.queue_weights if s.queue_weights is not None else [1] * len(s.queues))]
    fid = M.fidelity(fabric.kernel_drops, hosts, tm_lags_ms(rec.snapshots),
                     hosts.data_pkts_sent, frame_time_ms=frame_time_ms(plan),
                     dcqcn=cfg.cc == "dcqcn", fabric_drops=fabric.drops,
                     virtual=cfg.virtual,
                     # (a virtual run's verdict needs neither)
                     window_cap=1.0 if cfg.virtual else window_cap(plan),
                     slowdown_p50=None if cfg.virtual else median_slowdown(flows),
                     **efficiency(plan, deltas, flows))
    run: RunInfo = {"topo": plan.fabric.name, "lb": cfg.lb.value, "cc": cfg.cc, "recovery": cfg.recovery,
           "workload": cfg.workload.kind, "target": "virtual" if cfg.virtual else cfg.target,
           "dilation": plan.dilation.factor, "message_bytes": cfg.workload.message_bytes,
           "iterations": cfg.workload.iterations,
           "link_rate_bps": sorted({lk.rate_bps for lk in plan.fabric.links}),
           "results_dir": str(run_dir) if run_dir else None}
    if rec.interrupted:
        run["interrupted"] = True
    if cfg.plb:
        run["plb"] = True
    if cfg.link_jitter_ns:
        run["link_jitter_ns"] = cfg.link_jitter_ns
    if cfg.ack_timeout is not None:
        run["ack_timeout"] = cfg.ack_timeout
    if cfg.workload.channels > 1:
        run["channels"] = cfg.workload.channels
    ok = bool(flows) and all(f.verified for f in flows)
    from .credit_report import credit_summary
    from .pfc import pfc_summary

    # Flow-control figures: a port's paused (waited) % is of the traffic window.
    window_s = M.traffic_window_s(flows) or rec.duration_s
    credit = cfg.flow_control is FlowControlMode.CREDIT
    fc = (credit_summary if credit else pfc_summary)(pfc_series(rec), rec.rows_by_host,
                                                     window_s)
    summary = RunSummary(run=run, ok=ok, duration_s=rec.duration_s, flows=flows,
                         collectives=colls, hosts=hosts, fabric=fabric,
                         queues=M.queue_stats(queue_samples, top=5, weights=weights),
                         uplinks=M.uplink_balance(deltas, plan.uplinks()), fidelity=fid,
                         bringup_s=dict(rec.bringup_s),
                         notes=[*plan.notes, *rec.notes, *beat_ideal_note(flows),
                                *failure_note(flows, cfg.retry_cnt)],
                         events=list(rec.events), fct_slowdown=slowdown_buckets(flows),
                         pfc=None if credit else fc, credit=fc if credit else None,
                         queue_samples=len(queue_samples))
    summary.notes.extend(lockstep_note(summary))
    return summary


def lockstep_note(s: RunSummary) -> list[str]:
    """The user's note on a run in lockstep (RunSummary.in_lockstep): a few ns of jitter
    can change which flows lose and their completion times a lot."""
    if not s.in_lockstep:
        return []
    return [f"{s.fabric.queue_drops} packets tail-dropped in virtual time without timing "
            "jitter: which ones a full queue drops follows from the exact order of arrivals, "
            "which senders at one rate keep in lockstep (phase effects); a little jitter "
            "can change which flows lose and when they finish: compare with --jitter 10 "
            "(ns, modelled) over several seeds (docs/experiments.md)"]


def pfc_series(rec: RunRecords) -> PfcSeries:
    return rec.pfc_series or [(s.t_s, s.pfc) for s in rec.snapshots if s.pfc]


def tm_lags_ms(snaps: Sequence[Snapshot]) -> list[float]:
    """The switches' worst traffic-manager lag per sample window of the workload. The
    first snapshot is skipped: it holds the lag since the switch started (bring-up)."""
    return [s.tm_lag_ms for s in snaps[1:] if s.tm_lag_ms is not None]


def frame_time_ms(plan: RunPlan) -> float | None:
    """One MTU-sized frame at the slowest host's line rate, on the wire."""
    rates = [a.nic.line_rate_bps / a.nic.time_dilation for a in plan.agents.values()
             if a.nic.line_rate_bps]
    if not rates:
        return None
    return (plan.config.mtu_bytes + FRAME_OVERHEAD_BYTES) * 8 / min(rates) * 1e3


class Efficiency(TypedDict):
    """The busiest link's utilisation over the traffic window, and which port it is."""

    efficiency: float | None
    busiest_port: str | None


def window_cap(plan: RunPlan) -> float:
    """The largest fraction of its line rate any QP's window lets it send at on the
    empty modelled fabric: window x (MTU + headers) / base RTT (1: no window limits)."""
    cap = 0.0
    for host, agent in plan.agents.items():
        rate = agent.nic.line_rate_bps
        frame_bits = (agent.nic.mtu + FRAME_OVERHEAD_BYTES) * 8
        for q in agent.qps:
            if not rate or q.peer not in plan.agents:
                return 1.0
            rtt = base_rtt_s(plan.model, host, q.peer, agent.nic.mtu)
            share = q.max_outstanding_pkts * frame_bits / (rtt * rate)
            if share >= 1.0:  # the usual case (windows of 2 BDPs): no need to look further
                return 1.0
            cap = max(cap, share)
    return cap or 1.0


def efficiency(plan: RunPlan, deltas: Mapping[M.PortKey, M.PortCount],
               flows: Sequence[M.FlowResult]) -> Efficiency:
    util, port = M.busiest_link_utilisation(deltas, plan.port_rates(), M.traffic_window_s(flows))
    return {"efficiency": util, "busiest_port": None if port is None else f"{port[0]}:{port[1]}"}


def write_results(run_dir: Path, plan: RunPlan, rec: RunRecords, summary: RunSummary
                  ) -> list[Path]:
    """Write the results folder; returns the files written."""
    from .effective import effective_values

    written = [results.write_json(run_dir / "config.json", {
        "run": plan.config.to_dict(), "topology": plan.fabric.to_dict(),
        "topology_modelled": plan.model.to_dict(), "effective": effective_values(plan),
        "bringup_s": rec.bringup_s})]
    for host, cfg in plan.agents.items():
        written.append(results.write_json(run_dir / "agents" / f"{host}.json", cfg.to_dict()))
    written.append(results.write_flows(run_dir / "flows.jsonl", summary.flows))
    # A run's records always hold its first sample (taken before the agents start).
    first, last = rec.snapshots[0].ports, rec.snapshots[-1].ports
    ups = plan.uplinks()
    info: dict[M.PortKey, JsonDict] = {
        (s.name, p.number): {"peer": str(p.peer), "rate_bps": p.rate_bps,
                             "uplink": p.number in ups.get(s.name, [])}
        for s in plan.fabric.switches for p in s.ports}
    written.append(results.write_ports(run_dir / "ports.csv", M.port_deltas(first, last), info))
    d = plan.dilation.factor
    written.append(results.write_port_samples(run_dir / "port_samples.csv",
                                              [(s.t_s, s.ports) for s in rec.snapshots], d))
    qs = [q for s in rec.snapshots for q in s.queues]
    written.append(results.write_queue_samples(run_dir / "queues.csv", qs, d))
    written.append(results.write_json(run_dir / "summary.json", summary.to_dict()))
    (run_dir / "summary.txt").write_text(render_text(summary))
    written.append(run_dir / "summary.txt")
    written.extend(write_plots(run_dir / "plots", plan, rec, summary))
    return written


def write_and_show(run_dir: Path, plan: RunPlan, rec: RunRecords, summary: RunSummary,
                   console: Console | None) -> None:
    """The results folder, then the summary and the run's last line. A folder that
    cannot be written (disk full, removed meanwhile) costs its files, never what the
    run measured: the summary is printed all the same, then ResultsError says why."""
    try:
        write_results(run_dir, plan, rec, summary)
    except OSError as exc:
        print_summary(summary, console)
        raise results.ResultsError(
            f"emu run: cannot write the results in {run_dir}: {exc.strerror or exc} "
            "(the summary above is what the run measured)") from None
    print_summary(summary, console)
    results.print_results_path(run_dir, summary)


def write_plots(plot_dir: Path, plan: RunPlan, rec: RunRecords,
                summary: RunSummary) -> list[Path]:
    plot_dir.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    try:
        with collector_paused():
            for name, fig in run_figures(plan, rec, summary).items():
                out.append(plots.save(fig, plot_dir / f"{name}.png"))
    except Exception as exc:  # a plot must never cost the run its data
        log.warning("plots: %s", exc)
        summary.notes.append(f"plots failed: {exc}")
    return out


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the block, as it was after. Plotting makes
    objects by the hundred thousand (matplotlib's import, the artists), and each time
    enough pile up the collector would walk the whole run's records again: about a
    tenth of a second per run on a 4-ary fat tree. The figures' own cycles go at the
    next collection after the block."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def run_figures(plan: RunPlan, rec: RunRecords, summary: RunSummary) -> dict[str, Figure]:
    """The run's plots by file stem, in the modelled network's time and rates, all on one
    time axis (from the first flow's start)."""
    qs = [q for s in rec.snapshots for q in s.queues]
    axis = plots.time_axis(summary.flows, [s.t_s for s in rec.snapshots],
                           plan.dilation.factor)
    figs = {
        "flow_throughput": plots.flow_figure(summary.flows, axis),
        "queue_depth": plots.queue_figure(qs, summary.queues, axis),
        "uplink_utilization": plots.uplink_figure(
            port_series(rec.snapshots), plan.uplinks(), plan.port_rates(), axis,
            plan.config.mtu_bytes + FRAME_OVERHEAD_BYTES),
    }
    if summary.pfc:
        from .pfc import paused_figure

        figs["pfc_paused"] = paused_figure(pfc_series(rec), axis)
    return {name: fig for name, fig in figs.items() if fig is not None}


def port_series(snaps: Sequence[Snapshot]) -> dict[M.PortKey, list[tuple[float, int]]]:
    """Each port's (t_s, cumulative bytes on the wire: tx_bytes + WIRE_OVERHEAD_BYTES per
    frame, what the port serialises), timed when its switch was read (a sample reads the
    switches one after another; the sample's own time would add jitter). Without the
    overhead a saturated 1082 B-frame link read 97.8%, a 314 B one 92.9%."""
    series: dict[M.PortKey, list[tuple[float, int]]] = {}
    for s in snaps:
        for key, c in s.ports.items():
            series.setdefault(key, []).append(
                (s.switch_t.get(key[0], s.t_s), c.tx_bytes + WIRE_OVERHEAD_BYTES * c.tx_pkts))
    return series


def snapshots_bytes_to_hosts(snap: Snapshot, plan: RunPlan) -> int:
    """Bytes the leaves sent to their hosts (the live 'moved' figure)."""
    host_ports = {(s.name, p.number) for s in plan.fabric.switches for p in s.host_ports}
    return sum(c.tx_bytes for k, c in snap.ports.items() if k in host_ports)


def hottest(snap: Snapshot) -> str:
    if not snap.queues:
        return "-"
    _t, sw, port, d = max(snap.queues, key=lambda q: q[3])
    return f"{sw}:{port} {d:.0f} pkts"

