"""The end-of-run summary: one typed object, written as summary.json and shown as tables."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from emu.roce.verbs import local_ack_timeout_ns

from .failures import FAILURES
from .fct import SlowdownBucket
from .figures import fmt_bytes, fmt_rate, fmt_s
from .jsontypes import JsonDict, JsonValue
from .metrics import (
    CollectiveResult,
    Fidelity,
    FlowResult,
    HostTotals,
    PortCount,
    QueueStats,
    UplinkBalance,
    traffic_window_s,
)
from .pfc import Counters

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


class _RunInfoOptional(TypedDict, total=False):
    interrupted: bool  # Ctrl-C during the workload: partial results
    plb: bool  # hosts re-path congested QPs (written when on)
    channels: int  # collectives split over this many channels (written when > 1)
    link_jitter_ns: float  # virtual runs' per-frame timing jitter, modelled (when > 0)
    ack_timeout: int  # the QPs' IBTA local ACK timeout T (when the run sets one)


class RunInfo(_RunInfoOptional):
    """What ran: the summary's heading and summary.json's `run`."""

    topo: str
    lb: str
    cc: str
    recovery: str
    workload: str
    target: str
    dilation: float
    message_bytes: int
    iterations: int
    link_rate_bps: list[int]
    results_dir: str | None


@dataclass
class RunSummary:
    run: RunInfo
    ok: bool  # every flow delivered and verified
    duration_s: float  # workload wall time (first start to last agent exit)
    flows: list[FlowResult]
    collectives: list[CollectiveResult]
    hosts: HostTotals
    fabric: PortCount  # summed over every switch port
    queues: list[QueueStats]  # the busiest ports that ever held a packet
    uplinks: list[UplinkBalance]
    fidelity: Fidelity
    bringup_s: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)  # (t_s, what) e.g. failures
    fct_slowdown: list[SlowdownBucket] = field(default_factory=list)  # per flow-size bucket
    pfc: Counters | None = None  # PFC figures (emu.experiments.pfc)
    credit: Counters | None = None  # link-level credit figures (emu.experiments.credit_report)
    queue_samples: int = 0  # depth samples taken: with `queues` empty, every one was 0

    @property
    def traffic_s(self) -> float | None:
        """First flow start to last flow arrival (the agents' start-up excluded)."""
        return traffic_window_s(self.flows)

    @property
    def in_lockstep(self) -> bool:
        """A virtual run without timing jitter whose queues tail-dropped: which packets a
        full queue drops follows from the exact order of arrivals, which senders at one
        rate keep from one packet to the next (phase effects; docs/experiments.md)."""
        return (self.fidelity.virtual and not self.run.get("link_jitter_ns")
                and self.fabric.queue_drops > 0)

    @property
    def bytes_delivered(self) -> int:
        return sum(f.size_bytes for f in self.flows if f.delivered)

    def flows_verified(self) -> int:
        return sum(f.verified for f in self.flows)

    def flows_failed(self) -> int:
        """Flows whose QP ran out of retries, flushed behind one, or waiting on one."""
        return sum(f.status in FAILURES for f in self.flows)

    def to_dict(self) -> JsonDict:
        d = dataclasses.asdict(dataclasses.replace(self, flows=[]))
        d["flows"] = [f.to_dict() for f in self.flows]
        d["bytes_delivered"] = self.bytes_delivered
        d["traffic_s"] = self.traffic_s
        d["flows_verified"] = self.flows_verified()
        d["flows_total"] = len(self.flows)
        d["hosts"]["reordered_pkts"] = self.hosts.reordered_pkts()
        d["fabric"]["drops"] = self.fabric.drops
        return {k: _finite(v) for k, v in d.items()}


def _finite(x: JsonValue) -> JsonValue:
    """JSON has no NaN/Infinity: write null instead."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Mapping):
        return {str(k): _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


# --------------------------------------------------------------------------- formatting


def _jitter(r: RunInfo) -> str:
    j = r.get("link_jitter_ns", 0.0)
    return f"  jitter {j:g} ns" if j else ""


def _ack_timeout(r: RunInfo) -> str:
    t = r.get("ack_timeout")
    return "" if t is None else f" ack_timeout={t} ({fmt_s(local_ack_timeout_ns(t) / 1e9)})"


def _channels(r: RunInfo) -> str:
    n = r.get("channels", 1)
    return f" x{n} channels" if n > 1 else ""


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        t.add_row(*r)
    return t


def tables(s: RunSummary, max_flows: int = 16, max_switches: int = 16) -> list[Table | str]:
    """rich renderables, in display order."""
    out: list[Table | str] = []
    r = s.run
    head = (f"{r['topo']}  lb={r['lb']}{'+plb' if r.get('plb') else ''} cc={r['cc']} "
            f"recovery={r['recovery']}{_ack_timeout(r)} "
            f"workload={r['workload']}{_channels(r)} target={r['target']}  "
            f"dilation x{r['dilation']:g}{_jitter(r)}")
    failed = s.flows_failed()
    verdict = "OK" if s.ok else f"FAILED ({failed} flows)" if failed else "INCOMPLETE"
    traffic = s.traffic_s
    modelled = "" if traffic is None or not r["dilation"] else \
        f"{fmt_s(traffic / r['dilation'])} modelled; "
    out.append(f"[bold]{head}[/bold]\n{verdict}: {s.flows_verified()}/{len(s.flows)} flows "
               f"verified, {fmt_bytes(s.bytes_delivered)} delivered in {fmt_s(traffic)} "
               f"({modelled}agents ran {fmt_s(s.duration_s)})")

    if s.collectives:
        rows = [[c.id, c.kind, str(c.ranks), fmt_bytes(c.size_bytes), fmt_s(c.time_s),
                 fmt_s(c.time_nominal_s),
                 "-" if c.algbw_nominal_Bps is None else f"{c.algbw_nominal_Bps / 1e9:.2f}",
                 "-" if c.busbw_nominal_Bps is None else f"{c.busbw_nominal_Bps / 1e9:.2f}"]
                for c in s.collectives]
        out.append(_table("Collectives (nominal = wire time / dilation; GB/s as nccl-tests)",
                          ["collective", "kind", "ranks", "size", "time", "nominal",
                           "algbw GB/s", "busbw GB/s"], rows))

    flows = s.flows
    shown = sorted(flows, key=lambda f: (f.status not in FAILURES, f.fct_s is None,
                                         -(f.fct_s or 0)))[:max_flows]
    # The modelled network's figures beside the wire's: at dilation 5000 a 100 us FCT
    # is 500 ms on the wire, and a reader must not take one for the other.
    rows = [[f.id, f"{f.src}->{f.dst}", fmt_bytes(f.size_bytes), fmt_s(f.fct_s),
             fmt_s(f.fct_nominal_s), fmt_rate(f.goodput_nominal_bps), str(f.retx_pkts),
             str(f.cnps_rcvd), "yes" if f.verified else
             f"NO: {FAILURES[f.status]}" if f.status in FAILURES else "NO"] for f in shown]
    title = "Flows (nominal = modelled: wire time / dilation" + \
        ("" if len(flows) <= max_flows else
         f"; the {max_flows} slowest of {len(flows)}, all in flows.jsonl") + ")"
    if flows:
        fcts = [f.fct_nominal_s for f in flows if f.fct_nominal_s is not None]
        if fcts:
            from .metrics import percentile
            title += (f"  nominal FCT p50 {fmt_s(percentile(fcts, 50))} "
                      f"p99 {fmt_s(percentile(fcts, 99))}")
    out.append(_table(title, ["flow", "path", "size", "FCT", "FCT nominal", "goodput nominal",
                              "retx", "CNPs", "verified"], rows))

    if s.fct_slowdown:
        rows = [[b.bucket, str(b.flows), f"{b.p50:.2f}", f"{b.p95:.2f}", f"{b.p99:.2f}",
                 f"{b.max:.2f}"] for b in s.fct_slowdown]
        out.append(_table("FCT slowdown by flow size (FCT / ideal on an empty fabric)",
                          ["size", "flows", "p50", "p95", "p99", "max"], rows))

    h, fab = s.hosts, s.fabric
    cnt = [["ECN marks (switches)", str(fab.ecn_marks)],
           ["CNPs sent / received",
            "none (cc none: no notification point)"
            if r.get("cc") == "none" and not (h.cnps_sent or h.cnps_rcvd)
            else f"{h.cnps_sent} / {h.cnps_rcvd}"],
           ["queue tail drops", str(fab.queue_drops)],
           ["pipeline drops", str(fab.pipeline_drops)],
           *([["flow-control drops (PFC watchdog, headroom; credit)",
               str(fab.flow_control_drops)]]
             if s.pfc is not None or s.credit is not None or fab.flow_control_drops
             else []),
           *([["link drops (sent to a port that was down)", str(fab.link_drops)]]
             if fab.link_drops else []),
           ["retransmitted packets / timeouts", f"{h.retx_pkts} / {h.timeouts}"],
           *([["PLB re-paths (new UDP source port)", str(h.repaths)]] if r.get("plb") else []),
           ["out-of-sequence / duplicates", f"{h.out_of_sequence} / {h.duplicates}"],
           ["late (reordered) packets / lost gaps", f"{h.late_pkts} / {h.lost_gaps}"],
           ["reorder buffer max", f"{h.reorder_hwm_pkts} pkts"],
           ["switch packets rx / tx", f"{fab.rx_pkts} / {fab.tx_pkts}"]]
    out.append(_table("Counters", ["counter", "value"], cnt))

    if s.queues:
        rows = [[f"{q.switch}:{q.port}", str(q.samples), f"{q.p50_pkts:.0f}", f"{q.p90_pkts:.0f}",
                 f"{q.p99_pkts:.0f}", f"{q.max_pkts:.0f}"] for q in s.queues]
        out.append(_table("Busiest queues (sampled depth, packets)",
                          ["port", "samples", "p50", "p90", "p99", "max"], rows))
    if s.uplinks:
        out.append(_uplink_table(s.uplinks, max_switches))

    out.append(fidelity_text(s.fidelity))
    for n in s.notes:
        out.append(f"note: {n}")
    if s.pfc:
        from .pfc import pfc_tables

        out.extend(pfc_tables(s.pfc, r["dilation"]))
    if s.credit:
        from .credit_report import credit_tables

        out.extend(credit_tables(s.credit, r["dilation"]))
    return out


def _uplink_table(uplinks: list[UplinkBalance], max_switches: int) -> Table:
    ups, title = uplinks, "Uplink balance (bytes sent per uplink; Jain 1.00 = even)"
    if len(ups) > max_switches:  # a fat tree's hundreds of rows: the worst, first
        ups = sorted(ups, key=lambda u: u.jain)[:max_switches]
        title = (f"Uplink balance: the {max_switches} least even of {len(uplinks)} "
                 "switches, all in summary.json (bytes sent per uplink; Jain 1.00 = even)")
    rows = [[u.switch, " ".join(f"{p}:{fmt_bytes(b)}" for p, b in u.tx_bytes),
             f"{u.jain:.2f}", f"{u.max_over_mean:.2f}"] for u in ups]
    return _table(title, ["switch", "per uplink", "Jain", "max/mean"], rows)


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f} ms"


def fidelity_text(fd: Fidelity) -> str:
    """Every fidelity signal with its value, then the verdict and its reasons."""
    eff = "n/a" if fd.efficiency is None else f"{fd.efficiency:.0%}"
    where = f" ({fd.busiest_port})" if fd.busiest_port and fd.efficiency is not None else ""
    if fd.virtual:
        return ("fidelity: exact (virtual time: no CPU, kernel buffer or scheduling in the "
                f"results; busiest link utilisation {eff}{where})")
    frame = "" if fd.frame_time_ms is None else f" (frame time {fd.frame_time_ms:.2f} ms)"
    signals = (f"kernel drops: switches {fd.switch_kernel_drops}, hosts {fd.host_kernel_drops}; "
               f"TM lag p90 {_ms(fd.tm_lag_p90_ms)}, max {_ms(fd.tm_lag_max_ms)}; sender pacing lag p99 "
               f"{_ms(fd.tx_lag_p99_ms)}, max {_ms(fd.tx_lag_max_ms)}{frame}; refused sends "
               f"{fd.send_stalls}; busiest link utilisation {eff}{where}")
    if fd.cpu_bound:
        return ("[bold red]fidelity: CPU-BOUND[/bold red] (" + signals + ")\n  these results "
                "reflect the host CPU, not the modelled network: " + "; ".join(fd.reasons) +
                ".\n  Lower the link rate (--rate; `emu calibrate` measures one) or the load.")
    return f"fidelity: network-bound ({signals})"


def render_text(s: RunSummary, width: int = 120) -> str:
    """The summary as plain text (for summary.txt and tests)."""
    import io

    from rich.console import Console

    con = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    for t in tables(s):
        con.print(t)
        con.print()
    return con.export_text()


def print_summary(s: RunSummary, console: Console | None = None) -> None:
    import sys

    from rich.console import Console

    # Not a terminal (CI logs, pipes): rich would assume 80 columns and truncate.
    con = console or Console(width=None if sys.stdout.isatty() else 120)
    for t in tables(s):
        con.print(t)
        con.print()

