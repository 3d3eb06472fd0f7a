"""Metrics from a run's raw records: agent result lines, port counters, queue samples.

Everything here is pure (records in, typed results out), so it is tested on real
agent output without a network. Times: each agent reports ns since its epoch (the
run's START instant, one for all agents); `offsets_s` (host -> that instant on the run's
timeline) put them on one timeline.
Sizes and rates are wire values unless the name says `nominal` (x dilation).
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

from emu.core.units import Dilation
from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.p4.v1model.buffer import HEADROOM_OVERFLOW, WATCHDOG_DROP
from emu.p4.v1model.credit import CREDIT_OVERRUN
from emu.p4.v1model.traffic_manager import DropReason

from .jsontypes import Row, count, num, number, sub
from .workloads import Workload

NO_DILATION = Dilation()

PortKey = tuple[str, int]  # (switch, port number)


def read_jsonl(path: Path | str) -> list[Row]:
    """JSON lines of an agent results file (a truncated last line is skipped)."""
    rows: list[Row] = []
    p = Path(path)
    if not p.exists():
        return rows
    for line in p.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a killed agent may leave half a line
        if isinstance(row, dict):
            rows.append(row)
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
    verified: bool  # delivered exactly once, and the receiver's SHA-256 equals the sender's
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
    # Modelled FCT, its ideal on an empty fabric and their ratio (emu.experiments.fct);
    # None until computed, or when the flow did not complete.
    fct_nominal_s: float | None = None
    ideal_fct_s: float | None = None
    slowdown: float | None = None
    # How the sender's message ended (emu.roce.agent: "success", "retry_exc_err", ...;
    # emu.experiments.failures adds "dependency_failed"); None: never ended.
    status: str | None = None

    def to_dict(self) -> dict[str, object]:
        """dataclasses.asdict without its deep copy (seconds per 30,000 flows)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # all immutable


def _rows(rows: Iterable[Row], kind: str, role: str | None = None) -> list[Row]:
    return [r for r in rows if r.get("type") == kind and (role is None or r.get("role") == role)]


def _rate_samples(row: Row, offset_s: float) -> tuple[tuple[float, float], ...]:
    """A sender row's (t_ns, nominal bps) pairs as (t_s on the run timeline, bps)."""
    v = row.get("rate_samples")
    out = []
    for pair in v if isinstance(v, (list, tuple)) else []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            t, bps = number(pair[0]), number(pair[1])
            if t is not None and bps is not None:
                out.append((offset_s + t / 1e9, bps))
    return tuple(out)


def flow_results(workload: Workload, rows_by_host: Mapping[str, Sequence[Row]],
                 offsets_s: Mapping[str, float] | None = None) -> list[FlowResult]:
    """One FlowResult per workload flow, in workload order (missing reports: not completed)."""
    offsets = offsets_s or {}
    sent: dict[str, Row] = {}
    recv: dict[str, Row] = {}
    for rows in rows_by_host.values():
        for r in _rows(rows, "flow", "sender"):
            sent[str(r.get("flow"))] = r
        for r in _rows(rows, "flow", "receiver"):
            recv[str(r.get("flow"))] = r
    out = []
    for f in workload.flows:
        s = sent.get(f.id, {})
        r = recv.get(f.id, {})
        so = offsets.get(f.src, 0.0)
        ro = offsets.get(f.dst, 0.0)
        start_ns, fct_ns = num(s, "start_ns"), num(s, "fct_ns")
        start = None if start_ns is None else so + start_ns / 1e9
        end = None
        r_done, s_done = num(r, "complete_ns"), num(s, "complete_ns")
        if r.get("completed") and r_done is not None:
            end = ro + r_done / 1e9
        elif s_done is not None:
            end = so + s_done / 1e9
        out.append(FlowResult(
            id=f.id, src=f.src, dst=f.dst, size_bytes=f.size_bytes, collective=f.collective,
            completed=bool(s.get("completed")), delivered=bool(r.get("completed")),
            verified=bool(r.get("completed") and s.get("sha256")
                          and r.get("sha256") == s.get("sha256")
                          and r.get("size_bytes") == f.size_bytes
                          and r.get("deliveries") == 1),
            start_s=start, end_s=end, fct_s=None if fct_ns is None else fct_ns / 1e9,
            goodput_bps=num(s, "goodput_bps"),
            goodput_nominal_bps=num(s, "goodput_nominal_bps"),
            retx_pkts=count(s, "retx_pkts"), timeouts=count(s, "timeouts"),
            cnps_rcvd=count(s, "cnps_rcvd"), ecn_marked_rcvd=count(r, "ecn_marked_rcvd"),
            repaths=count(s, "repaths"), rate_samples=_rate_samples(s, so),
            status=str(s["status"]) if s.get("status") else None))
    return out


def traffic_window_s(flows: Sequence[FlowResult]) -> float | None:
    """First flow start to last flow arrival (the agents' start-up excluded)."""
    starts = [f.start_s for f in flows if f.start_s is not None]
    ends = [f.end_s for f in flows if f.end_s is not None]
    if not starts or not ends or max(ends) <= min(starts):
        return None
    return max(ends) - min(starts)


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
    series: str = ""  # the repeated operation it is one of (Collective.series)


def collective_results(workload: Workload, flows: Sequence[FlowResult],
                       dilation: Dilation = NO_DILATION) -> list[CollectiveResult]:
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
        tn = None if t is None else dilation.modelled_s(t)
        alg = None if tn is None else c.size_bytes / tn
        out.append(CollectiveResult(c.id, c.kind, len(c.ranks), c.size_bytes, done, t, tn, alg,
                                    None if alg is None else alg * c.bus_factor,
                                    c.series or c.kind))
    return out


@dataclass(frozen=True)
class SeriesBandwidth:
    """A run's bandwidth for one series of equal collectives, as nccl-tests reports it:
    algbw = size / the mean operation time (not the mean of size / time, which weighs
    the fast iterations up: 122 and 1220 us gave 0.295 GB/s for 0.098), busbw = algbw x
    the series' bus factor."""

    name: str  # the series ("dp", "tp", "allreduce", ...); "tp-3" if its ring sizes differ
    kind: str
    ranks: int
    size_bytes: int
    operations: int  # completed operations the mean time is over
    time_nominal_s: float
    algbw_nominal_Bps: float
    busbw_nominal_Bps: float


def series_bandwidths(colls: Sequence[CollectiveResult]) -> list[SeriesBandwidth]:
    """Per series (and rank count, size) of the completed collectives, in first-seen order."""
    from .workloads import bus_factor

    groups: dict[tuple[str, str, int, int], list[float]] = {}
    for c in colls:
        if c.completed and c.time_nominal_s:
            key = (c.series or c.kind, c.kind, c.ranks, c.size_bytes)
            groups.setdefault(key, []).append(c.time_nominal_s)
    shapes: dict[str, int] = {}
    for series, *_ in groups:
        shapes[series] = shapes.get(series, 0) + 1
    out = []
    for (series, kind, n, size), ts in groups.items():
        name = series if shapes[series] == 1 else f"{series}-{n}x{size}"
        t = sum(ts) / len(ts)
        alg = size / t
        out.append(SeriesBandwidth(name, kind, n, size, len(ts), t, alg, alg * bus_factor(kind, n)))
    return out


# --------------------------------------------------------------------------- hosts


@dataclass
class HostTotals:
    """Sums over every host's QPs (agents' `summary` lines)."""

    data_pkts_sent: int = 0
    retx_pkts: int = 0
    timeouts: int = 0
    repaths: int = 0  # PLB moves to a new UDP source port
    cnps_sent: int = 0
    cnps_rcvd: int = 0
    ecn_marked_rcvd: int = 0
    out_of_sequence: int = 0
    duplicates: int = 0
    reorder_hwm_pkts: int = 0  # the largest reorder-buffer occupancy seen on any QP
    late_pkts: int = 0  # arrived after a higher PSN: reordered on the way (not lost)
    lost_gaps: int = 0  # PSNs overtaken by a higher one that only a retransmission filled
    # late packets by how far below the highest PSN received they arrived ("0": in order)
    reorder_distance: dict[str, int] = field(default_factory=dict)  # bucket ("0", "2-3") -> pkts
    nic_drops: int = 0
    kernel_drops: int = 0  # host AF_PACKET receive-ring drops
    tx_stalls: int = 0  # sends the kernel refused (socket buffer full): a CPU-bound sign
    tx_lag_p99_us: float = 0.0  # the worst host's p99 transmit-turn lateness
    tx_lag_max_us: float = 0.0
    tx_lag_turns: int = 0  # transmit turns measured, all hosts
    hosts_done: int = 0
    hosts_reported: int = 0

    def reordered_pkts(self) -> int:
        """Packets that arrived late (reordering); gaps left by losses are `lost_gaps`."""
        return self.late_pkts


def host_totals(rows_by_host: Mapping[str, Sequence[Row]]) -> HostTotals:
    t = HostTotals()
    for rows in rows_by_host.values():
        for s in _rows(rows, "summary"):
            t.hosts_reported += 1
            t.hosts_done += bool(s.get("done"))
            drops = sub(s, "nic_drops")
            t.nic_drops += sum(count(drops, k) for k in drops)
            t.kernel_drops += count(sub(s, "port"), "kernel_drops")
            t.tx_stalls += count(s, "tx_stalls")
            lag = sub(s, "tx_lag")
            if lag.get("turns"):
                t.tx_lag_turns += count(lag, "turns")
                t.tx_lag_p99_us = max(t.tx_lag_p99_us, num(lag, "p99_us") or 0.0)
                t.tx_lag_max_us = max(t.tx_lag_max_us, num(lag, "max_us") or 0.0)
            qps = sub(s, "qps")
            for qpn in qps:
                _add_qp(t, sub(qps, qpn))
    return t


def _add_qp(t: HostTotals, qp: Row) -> None:
    rq, rs = sub(qp, "requester"), sub(qp, "responder")
    t.data_pkts_sent += count(rq, "data_pkts_sent")
    t.retx_pkts += count(rq, "retx_pkts")
    t.timeouts += count(rq, "timeouts")
    t.repaths += count(rq, "repaths")
    t.cnps_rcvd += count(rq, "cnps_rcvd")
    t.cnps_sent += count(rs, "cnps_sent")
    t.ecn_marked_rcvd += count(rs, "ecn_marked_rcvd")
    t.out_of_sequence += count(rs, "out_of_sequence")
    t.duplicates += count(rs, "duplicates")
    t.reorder_hwm_pkts = max(t.reorder_hwm_pkts, count(rs, "reorder_hwm"))
    t.late_pkts += count(rs, "late_pkts")
    t.lost_gaps += count(rs, "lost_gaps")
    dist = sub(rs, "reorder_distance")
    for k in dist:
        t.reorder_distance[str(k)] = t.reorder_distance.get(str(k), 0) + count(dist, k)


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
    # The lossless modes' own drops (DROP_FIELDS): a lossless packet lost
    # in the switch's buffer accounting, not at a full queue.
    flow_control_drops: int = 0

    def minus(self, other: PortCount) -> PortCount:
        return PortCount(*(max(0, a - b) for a, b in
                           zip(self.as_tuple(), other.as_tuple(), strict=True)))

    def as_tuple(self) -> tuple[int, ...]:
        """The counts in FIELDS order (the CSV columns)."""
        return tuple(getattr(self, name) for name in FIELDS)

    @property
    def drops(self) -> int:
        """What the switch lost in its pipeline and buffers: pipeline, full queue and
        flow control (frames a port down refused are `link_drops`, apart)."""
        return self.pipeline_drops + self.queue_drops + self.flow_control_drops


FIELDS = tuple(f.name for f in fields(PortCount))
# The switch drop reasons each PortCount drop field sums (pipeline_drops comes from
# fabric.p4's own counter): a full queue or one the packet's priority has none of; a
# PFC queue the watchdog flushed (action drop), a packet beyond XOFF + headroom, a
# frame beyond the credit granted (the lossless modes).
DROP_FIELDS: dict[str, tuple[str, ...]] = {
    "queue_drops": (DropReason.TAIL_DROP, DropReason.PRIORITY_OUT_OF_RANGE),
    "flow_control_drops": (WATCHDOG_DROP, HEADROOM_OVERFLOW, CREDIT_OVERRUN),
}


def drop_counts(reason_count: Callable[[str], int]) -> dict[str, int]:
    """PortCount's drop fields of one port, from its count per switch drop reason."""
    return {name: sum(reason_count(r) for r in reasons) for name, reasons in DROP_FIELDS.items()}


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


def weighted_percentile(pairs: Sequence[tuple[float, int]], q: float) -> float:
    """`percentile` of the values each repeated its weight times (pairs (value, weight),
    weights >= 1), without expanding them."""
    if not pairs:
        return math.nan
    xs = sorted(pairs)
    n = sum(w for _v, w in xs)
    pos = (n - 1) * q / 100
    lo = math.floor(pos)
    cum = list(itertools.accumulate(w for _v, w in xs))

    def at(i: int) -> float:
        return xs[bisect.bisect_right(cum, i)][0]

    a = at(lo)
    return a + (at(min(lo + 1, n - 1)) - a) * (pos - lo)


def queue_stats(samples: Iterable[tuple[float, str, int, float]],
                top: int = 5, weights: Iterable[int] | None = None) -> list[QueueStats]:
    """Percentiles of sampled queue depth per port, the `top` busiest first (by p99,
    then max, then mean); ports that never held a packet are left out. `weights`: per
    sample, how many sampling ticks it stands for (default one each)."""
    by_port: dict[PortKey, list[tuple[float, int]]] = {}
    samples = list(samples)
    ws = [1] * len(samples) if weights is None else list(weights)
    if len(ws) != len(samples):
        raise ValueError(f"{len(ws)} weights for {len(samples)} queue samples")
    for (_t, sw, port, depth), w in zip(samples, ws, strict=True):
        by_port.setdefault((sw, port), []).append((float(depth), w))
    stats = []
    for (sw, port), vals in by_port.items():
        mx = max(v for v, _w in vals)
        if mx <= 0:
            continue
        n = sum(w for _v, w in vals)
        mean = sum(v * w for v, w in vals) / n
        p99 = weighted_percentile(vals, 99)
        stats.append((p99, mx, mean,
                      QueueStats(sw, port, n, weighted_percentile(vals, 50),
                                 weighted_percentile(vals, 90), p99, mx)))
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


def busiest_link_utilisation(deltas: Mapping[PortKey, PortCount],
                             rates_bps: Mapping[PortKey, float],
                             traffic_s: float | None) -> tuple[float | None, PortKey | None]:
    """The most loaded switch egress port's utilisation over the traffic window: its
    frames' wire time / the window. The workloads here are bandwidth-bound (each flow
    sends at the line rate unless congestion control slows it), so on a network-bound
    run the bottleneck link (a collided uplink, an incast receiver's downlink, a ring
    hop) stays busy most of the window; a busiest link mostly idle means the CPU, not
    the modelled network, set the pace."""
    if not traffic_s or traffic_s <= 0:
        return None, None
    best: tuple[float, PortKey] | None = None
    for key, c in deltas.items():
        rate = rates_bps.get(key)
        if not rate or not math.isfinite(rate) or c.tx_pkts == 0:
            continue
        # what the port serialises: the frame + preamble, SFD, FCS and gap (the plot's
        # port_series counts the same)
        busy_s = (c.tx_bytes + WIRE_OVERHEAD_BYTES * c.tx_pkts) * 8 / rate
        if best is None or busy_s > best[0]:
            best = (busy_s, key)
    if best is None:
        return None, None
    return min(1.0, best[0] / traffic_s), best[1]


@dataclass(frozen=True)
class FidelityLimits:
    """Where a run stops counting as network-bound (see `fidelity`)."""

    kernel_drop_fraction: float = 0.001  # of data packets
    # The switches' traffic-manager lag: a service turn late by L leaves the modelled
    # link idle for L, i.e. L / frame time packets of capacity lost. Judged on the p90 of
    # the per-sample-window maxima (one GC pause or scheduler hiccup is not a verdict),
    # in frame times at the host line rate (absolute ms when the frame time is unknown).
    tm_lag_frames: float = 4.0
    tm_lag_ms: float = 20.0
    tx_lag_frames: float = 4.0  # senders' p99 lateness, in frame times at the line rate
    stall_fraction: float = 0.05  # of data packets, sends refused by a full socket buffer
    # The busiest link's utilisation while traffic ran, when nothing in the model explains
    # idle links: senders at line rate (no congestion control) and no drops (go-back-N
    # and timeouts idle links legitimately). DCQCN may hold senders below the capacity
    # (virtual-time clos4 runs, free of CPU effects: 0.37..0.98), hence its lower bound.
    min_efficiency: float = 0.5
    min_efficiency_dcqcn: float = 0.2
    # ...unless the flows ran at about their ideal FCT (median slowdown at most this): a
    # latency-bound workload (a ring all-reduce's dependent steps) idles links by itself,
    # and a CPU that cannot keep up makes flows slower than the empty fabric allows.
    ideal_slowdown: float = 1.25


@dataclass(frozen=True)
class Fidelity:
    """Signs that the host CPU, not the modelled network, shaped the results."""

    switch_kernel_drops: int
    host_kernel_drops: int
    tm_lag_max_ms: float | None  # traffic manager behind its schedule (None: target has none)
    send_stalls: int  # agents' sends the kernel refused (socket buffer full)
    cpu_bound: bool
    reasons: tuple[str, ...]
    tm_lag_p90_ms: float | None = None  # p90 over sample windows of the switches' worst lag
    tx_lag_p99_ms: float | None = None  # senders' transmit turns behind the paced schedule
    tx_lag_max_ms: float | None = None
    frame_time_ms: float | None = None  # one MTU frame at the host line rate (wire)
    efficiency: float | None = None  # busiest link's utilisation while traffic ran
    busiest_port: str | None = None  # "leaf1:6"
    virtual: bool = False  # a virtual-time run: exact, never CPU-bound


def fidelity(switch_kernel_drops: int, host: HostTotals, tm_lags_ms: Sequence[float] | None,
             data_pkts: int, *, frame_time_ms: float | None = None,
             efficiency: float | None = None, busiest_port: str | None = None,
             dcqcn: bool = False, fabric_drops: int = 0,
             limits: FidelityLimits | None = None, virtual: bool = False,
             window_cap: float = 1.0, slowdown_p50: float | None = None) -> Fidelity:
    """A run is flagged CPU-bound when packets were lost in kernel buffers, the switches'
    traffic managers or the senders ran behind their schedules, sends were refused by
    full socket buffers, or the busiest link was mostly idle while traffic ran (see
    FidelityLimits for the bounds). Each reason names its figure and its bound.

    A virtual-time run (`virtual`) never is: no CPU paces it, so an idle link there is
    the model's own doing (a small window, a latency-bound workload, timeouts).
    `window_cap`: the largest fraction of its line rate any QP's window lets it reach
    on the empty fabric (window x frame / base RTT); the utilisation bound shrinks with
    it, since senders held by their windows leave links idle whatever the CPU does.
    `slowdown_p50`: the flows' median FCT slowdown; near 1, idle links are the
    workload's (latency-bound), not the CPU's."""
    lim = limits or FidelityLimits()
    if virtual:
        return Fidelity(switch_kernel_drops, host.kernel_drops, None, host.tx_stalls, False, (),
                        frame_time_ms=frame_time_ms, efficiency=efficiency,
                        busiest_port=busiest_port, virtual=True)
    reasons = []
    pkts = max(1, data_pkts)
    kd = switch_kernel_drops + host.kernel_drops
    if kd > lim.kernel_drop_fraction * pkts:
        reasons.append(f"{kd} frames dropped in kernel socket buffers "
                       f"({switch_kernel_drops} at switches, {host.kernel_drops} at hosts)")
    tm_max = max(tm_lags_ms) if tm_lags_ms else None
    tm_p90 = percentile(tm_lags_ms, 90) if tm_lags_ms else None
    if tm_p90 is not None:
        if frame_time_ms:
            if tm_p90 > lim.tm_lag_frames * frame_time_ms:
                reasons.append(f"switch traffic managers behind schedule: p90 {tm_p90:.1f} ms "
                               f"= {tm_p90 / frame_time_ms:.0f} frame times (bound "
                               f"{lim.tm_lag_frames:g}), max {tm_max:.0f} ms")
        elif tm_p90 > lim.tm_lag_ms:
            reasons.append(f"switch traffic managers behind schedule: p90 {tm_p90:.1f} ms "
                           f"(bound {lim.tm_lag_ms:g} ms)")
    tx_p99 = None if host.tx_lag_turns == 0 else host.tx_lag_p99_us / 1e3
    tx_max = None if host.tx_lag_turns == 0 else host.tx_lag_max_us / 1e3
    if tx_p99 is not None and frame_time_ms and tx_p99 > lim.tx_lag_frames * frame_time_ms:
        reasons.append(f"senders' p99 pacing lag {tx_p99:.1f} ms = "
                       f"{tx_p99 / frame_time_ms:.0f} frame times (bound "
                       f"{lim.tx_lag_frames:g})")
    if host.tx_stalls > lim.stall_fraction * pkts:
        reasons.append(f"{host.tx_stalls} host sends refused by full socket buffers")
    bound = (lim.min_efficiency_dcqcn if dcqcn else lim.min_efficiency) * min(1.0, window_cap)
    at_ideal = slowdown_p50 is not None and slowdown_p50 <= lim.ideal_slowdown
    if efficiency is not None and fabric_drops == 0 and not at_ideal and efficiency < bound:
        where = f" ({busiest_port})" if busiest_port else ""
        held = f", windows allowing {window_cap:.0%}" if window_cap < 1 else ""
        reasons.append(f"busiest link{where} only {efficiency:.0%} utilised while traffic "
                       f"ran (bound {bound:.0%}{' with DCQCN' if dcqcn else ''}{held})")
    return Fidelity(switch_kernel_drops, host.kernel_drops, tm_max, host.tx_stalls,
                    bool(reasons), tuple(reasons), tm_p90, tx_p99, tx_max, frame_time_ms,
                    efficiency, busiest_port)
