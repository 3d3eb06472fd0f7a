"""Metrics from a run's raw records: agent result lines, port counters, queue samples.

Everything here is pure (records in, typed results out), so it is tested on real
agent output without a network. Times: each agent reports ns since its own READY;
`offsets_s` (host -> READY time on the run's timeline) put them on one timeline.
Sizes and rates are wire values unless the name says `nominal` (x dilation).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .workloads import Workload

PortKey = tuple[str, int]  # (switch, port number)


def read_jsonl(path: Path | str) -> list[dict[str, Any]]:
    """JSON lines of an agent results file (a truncated last line is skipped)."""
    rows: list[dict[str, Any]] = []
    p = Path(path)
    if not p.exists():
        return rows
    for line in p.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a killed agent may leave half a line
    return rows


# --------------------------------------------------------------------------- flows


@dataclass(frozen=True)
class FlowResult:
    id: str
    src: str
    dst: str
    size_bytes: int
    collective: str
    completed: bool  # sender saw it acknowledged
    delivered: bool  # receiver got the whole message
    verified: bool  # receiver's SHA-256 equals the sender's
    start_s: float | None  # on the run timeline
    end_s: float | None  # receiver completion (sender ACK if the receiver did not report)
    fct_s: float | None  # sender: post to last ACK
    goodput_bps: float | None
    goodput_nominal_bps: float | None
    retx_pkts: int = 0
    timeouts: int = 0
    cnps_rcvd: int = 0
    ecn_marked_rcvd: int = 0
    repaths: int = 0
    rate_samples: tuple[tuple[float, float], ...] = ()  # (t_s on the timeline, nominal bps)


def _rows(rows: Iterable[Mapping[str, Any]], kind: str, role: str | None = None
          ) -> list[Mapping[str, Any]]:
    return [r for r in rows if r.get("type") == kind and (role is None or r.get("role") == role)]


def flow_results(workload: Workload, rows_by_host: Mapping[str, Sequence[Mapping[str, Any]]],
                 offsets_s: Mapping[str, float] | None = None) -> list[FlowResult]:
    """One FlowResult per workload flow, in workload order (missing reports: not completed)."""
    offsets = offsets_s or {}
    sent: dict[str, Mapping[str, Any]] = {}
    recv: dict[str, Mapping[str, Any]] = {}
    for host, rows in rows_by_host.items():
        for r in _rows(rows, "flow", "sender"):
            sent[r["flow"]] = {**r, "_host": host}
        for r in _rows(rows, "flow", "receiver"):
            recv[r["flow"]] = {**r, "_host": host}
    out = []
    for f in workload.flows:
        s = sent.get(f.id, {})
        r = recv.get(f.id, {})
        so = offsets.get(f.src, 0.0)
        ro = offsets.get(f.dst, 0.0)
        start = None if s.get("start_ns") is None else so + s["start_ns"] / 1e9
        end = None
        if r.get("completed") and r.get("complete_ns") is not None:
            end = ro + r["complete_ns"] / 1e9
        elif s.get("complete_ns") is not None:
            end = so + s["complete_ns"] / 1e9
        fct = None if s.get("fct_ns") is None else s["fct_ns"] / 1e9
        samples = tuple((so + t / 1e9, float(v)) for t, v in s.get("rate_samples") or [])
        out.append(FlowResult(
            id=f.id, src=f.src, dst=f.dst, size_bytes=f.size_bytes, collective=f.collective,
            completed=bool(s.get("completed")), delivered=bool(r.get("completed")),
            verified=bool(r.get("completed") and s.get("sha256")
                          and r.get("sha256") == s.get("sha256")
                          and r.get("size_bytes") == f.size_bytes),
            start_s=start, end_s=end, fct_s=fct, goodput_bps=s.get("goodput_bps"),
            goodput_nominal_bps=s.get("goodput_nominal_bps"),
            retx_pkts=int(s.get("retx_pkts") or 0), timeouts=int(s.get("timeouts") or 0),
            cnps_rcvd=int(s.get("cnps_rcvd") or 0),
            ecn_marked_rcvd=int(r.get("ecn_marked_rcvd") or 0),
            repaths=int(s.get("repaths") or 0), rate_samples=samples))
    return out


@dataclass(frozen=True)
class CollectiveResult:
    id: str
    kind: str
    ranks: int
    size_bytes: int
    completed: bool
    time_s: float | None  # first flow start to last flow arrival (wire time)
    time_nominal_s: float | None  # time_s / dilation
    algbw_nominal_Bps: float | None  # nccl-tests: size / time
    busbw_nominal_Bps: float | None  # algbw x 2(n-1)/n (all-reduce) or (n-1)/n (all-to-all)


def collective_results(workload: Workload, flows: Sequence[FlowResult],
                       dilation: float = 1.0) -> list[CollectiveResult]:
    by_id = {f.id: f for f in flows}
    out = []
    for c in workload.collectives:
        members = [by_id[i] for i in c.flow_ids if i in by_id]
        done = len(members) == len(c.flow_ids) and all(m.delivered for m in members)
        starts = [m.start_s for m in members if m.start_s is not None]
        ends = [m.end_s for m in members if m.end_s is not None]
        t = (max(ends) - min(starts)) if done and starts and ends else None
        if t is not None and t <= 0:
            t = None
        tn = None if t is None else t / dilation
        alg = None if tn is None else c.size_bytes / tn
        out.append(CollectiveResult(c.id, c.kind, len(c.ranks), c.size_bytes, done, t, tn, alg,
                                    None if alg is None else alg * c.bus_factor))
    return out


# --------------------------------------------------------------------------- hosts


@dataclass
class HostTotals:
    """Sums over every host's QPs (agents' `summary` lines)."""

    data_pkts_sent: int = 0
    retx_pkts: int = 0
    timeouts: int = 0
    cnps_sent: int = 0
    cnps_rcvd: int = 0
    ecn_marked_rcvd: int = 0
    out_of_sequence: int = 0
    duplicates: int = 0
    reorder_hwm_pkts: int = 0  # the largest reorder-buffer occupancy seen on any QP
    reorder_distance: dict[str, int] = field(default_factory=dict)  # bucket ("0", "2-3") -> pkts
    nic_drops: int = 0
    kernel_drops: int = 0  # host AF_PACKET receive-ring drops
    tx_stalls: int = 0  # sends the kernel refused (socket buffer full): a CPU-bound sign
    hosts_done: int = 0
    hosts_reported: int = 0

    def reordered_pkts(self) -> int:
        return sum(n for d, n in self.reorder_distance.items() if d != "0")


def host_totals(rows_by_host: Mapping[str, Sequence[Mapping[str, Any]]]) -> HostTotals:
    t = HostTotals()
    for rows in rows_by_host.values():
        for s in _rows(rows, "summary"):
            t.hosts_reported += 1
            t.hosts_done += bool(s.get("done"))
            t.nic_drops += sum(int(v) for v in (s.get("nic_drops") or {}).values())
            t.kernel_drops += int((s.get("port") or {}).get("kernel_drops") or 0)
            t.tx_stalls += int(s.get("tx_stalls") or 0)
            for qp in (s.get("qps") or {}).values():
                rq, rs = qp.get("requester", {}), qp.get("responder", {})
                t.data_pkts_sent += int(rq.get("data_pkts_sent", 0))
                t.retx_pkts += int(rq.get("retx_pkts", 0))
                t.timeouts += int(rq.get("timeouts", 0))
                t.cnps_rcvd += int(rq.get("cnps_rcvd", 0))
                t.cnps_sent += int(rs.get("cnps_sent", 0))
                t.ecn_marked_rcvd += int(rs.get("ecn_marked_rcvd", 0))
                t.out_of_sequence += int(rs.get("out_of_sequence", 0))
                t.duplicates += int(rs.get("duplicates", 0))
                t.reorder_hwm_pkts = max(t.reorder_hwm_pkts, int(rs.get("reorder_hwm", 0)))
                for k, v in (rs.get("reorder_distance") or {}).items():
                    t.reorder_distance[str(k)] = t.reorder_distance.get(str(k), 0) + int(v)
    return t


# --------------------------------------------------------------------------- ports


@dataclass(frozen=True)
class PortCount:
    """Cumulative counters of one switch port (fabric.p4 counters + target statistics)."""

    rx_pkts: int = 0
    rx_bytes: int = 0
    tx_pkts: int = 0
    tx_bytes: int = 0
    ecn_marks: int = 0
    pipeline_drops: int = 0  # fabric.p4 port_drops (no route, TTL, bad checksum)
    queue_drops: int = 0  # traffic-manager tail drops (target statistics)
    kernel_drops: int = 0  # AF_PACKET receive-ring drops on the switch port
    link_drops: int = 0  # frames the switch could not put on the link (port down, send error)

    def minus(self, other: PortCount) -> PortCount:
        return PortCount(*(max(0, a - b) for a, b in
                           zip(self.as_tuple(), other.as_tuple(), strict=True)))

    def as_tuple(self) -> tuple[int, ...]:
        return (self.rx_pkts, self.rx_bytes, self.tx_pkts, self.tx_bytes, self.ecn_marks,
                self.pipeline_drops, self.queue_drops, self.kernel_drops, self.link_drops)

    @property
    def drops(self) -> int:
        return self.pipeline_drops + self.queue_drops


FIELDS = ("rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "ecn_marks", "pipeline_drops",
          "queue_drops", "kernel_drops", "link_drops")


def port_deltas(before: Mapping[PortKey, PortCount],
                after: Mapping[PortKey, PortCount]) -> dict[PortKey, PortCount]:
    return {k: v.minus(before.get(k, PortCount())) for k, v in after.items()}


def totals(ports: Mapping[PortKey, PortCount]) -> PortCount:
    sums = [0] * len(FIELDS)
    for c in ports.values():
        for i, v in enumerate(c.as_tuple()):
            sums[i] += v
    return PortCount(*sums)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100), as numpy's default."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class QueueStats:
    switch: str
    port: int
    samples: int
    p50_pkts: float
    p90_pkts: float
    p99_pkts: float
    max_pkts: float


def queue_stats(samples: Iterable[tuple[float, str, int, float]],
                top: int = 5) -> list[QueueStats]:
    """Percentiles of sampled queue depth per port, the `top` busiest first (by p99,
    then max, then mean); ports that never held a packet are left out."""
    by_port: dict[PortKey, list[float]] = {}
    for _t, sw, port, depth in samples:
        by_port.setdefault((sw, port), []).append(float(depth))
    stats = []
    for (sw, port), vals in by_port.items():
        if max(vals) <= 0:
            continue
        stats.append((percentile(vals, 99), max(vals), sum(vals) / len(vals),
                      QueueStats(sw, port, len(vals), percentile(vals, 50), percentile(vals, 90),
                                 percentile(vals, 99), max(vals))))
    stats.sort(key=lambda s: (-s[0], -s[1], -s[2], s[3].switch, s[3].port))
    return [s[3] for s in stats[:top]]


@dataclass(frozen=True)
class UplinkBalance:
    """How evenly one switch spread bytes over its uplinks."""

    switch: str
    tx_bytes: tuple[tuple[int, int], ...]  # (port, bytes), port order
    jain: float  # Jain's fairness index: 1 = perfectly even, 1/n = one uplink carries all
    max_over_mean: float


def jain_index(values: Sequence[float]) -> float:
    s = sum(values)
    sq = sum(v * v for v in values)
    if not values or sq == 0:
        return math.nan
    return s * s / (len(values) * sq)


def uplink_balance(deltas: Mapping[PortKey, PortCount],
                   uplinks: Mapping[str, Sequence[int]]) -> list[UplinkBalance]:
    """Per switch with uplinks (`uplinks`: switch -> its up-facing ports), the balance of
    transmitted bytes; switches that sent nothing up are left out."""
    out = []
    for sw, ports in uplinks.items():
        tx = [(p, deltas.get((sw, p), PortCount()).tx_bytes) for p in sorted(ports)]
        vals = [float(b) for _p, b in tx]
        if not vals or sum(vals) == 0:
            continue
        mean = sum(vals) / len(vals)
        out.append(UplinkBalance(sw, tuple(tx), jain_index(vals), max(vals) / mean))
    return out


# --------------------------------------------------------------------------- fidelity


@dataclass(frozen=True)
class Fidelity:
    """Signs that the host CPU, not the modelled network, shaped the results."""

    switch_kernel_drops: int
    host_kernel_drops: int
    tm_lag_max_ms: float | None  # traffic manager behind its schedule (if the target says)
    send_stalls: int  # agents' sends the kernel refused (socket buffer full)
    cpu_bound: bool
    reasons: tuple[str, ...]


def fidelity(switch_kernel_drops: int, host: HostTotals, tm_lag_max_ms: float | None,
             data_pkts: int, *, drop_fraction: float = 0.001,
             lag_ms: float = 20.0, stall_fraction: float = 0.05) -> Fidelity:
    """A run is flagged CPU-bound when packets were lost in kernel buffers (beyond
    `drop_fraction` of the data packets), the traffic manager fell more than `lag_ms`
    behind, or more than `stall_fraction` of sends were refused by a full socket buffer."""
    reasons = []
    pkts = max(1, data_pkts)
    kd = switch_kernel_drops + host.kernel_drops
    if kd > drop_fraction * pkts:
        reasons.append(f"{kd} frames dropped in kernel socket buffers "
                       f"({switch_kernel_drops} at switches, {host.kernel_drops} at hosts)")
    if tm_lag_max_ms is not None and tm_lag_max_ms > lag_ms:
        reasons.append(f"traffic manager up to {tm_lag_max_ms:.0f} ms behind schedule")
    if host.tx_stalls > stall_fraction * pkts:
        reasons.append(f"{host.tx_stalls} host sends refused by full socket buffers")
    return Fidelity(switch_kernel_drops, host.kernel_drops, tm_lag_max_ms, host.tx_stalls,
                    bool(reasons), tuple(reasons))
