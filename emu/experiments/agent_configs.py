"""Per-host agent configurations from (fabric, workload, cc, recovery, dilation).

Pure: returns `emu.roce.config.AgentConfig`s, validated as the agent validates them. One reliable-connected QP per host pair that
exchanges any flow, numbered from the peer's index so both ends agree without
negotiation; each ordered pair gets its own UDP source port (ECMP entropy).
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from emu.core.units import Dilation
from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.roce.config import (
    AgentConfig,
    FlowConfig,
    HostConfig,
    NicConfig,
    QpConfig,
    dcqcn_params,
    validate,
)
from emu.roce.dcqcn import DEFAULT_PROFILE
from emu.roce.plb import PlbParams
from emu.roce.recovery import RecoveryMode
from emu.roce.verbs import RTO_MAX_NS, retry_span_ns, rto_cap_ns
from emu.roce.wire import ACK_BYTES, DATA_HEADER_BYTES, AckClass
from emu.topo import Fabric, Port
from emu.topo.paths import W, heaviest_path_ports

from .config import CcMode
from .workloads import MAX_CHANNELS, QP_ROLES, FlowSpec, Workload

QPN_BASE = 0x100
QPN_STRIDE = 1 << 18  # a host's QPs to one peer: QPN_BASE + peer index + qp x this (24 bits)
assert QP_ROLES * MAX_CHANNELS * QPN_STRIDE <= 1 << 24
SPORT_MIN = 49152


@dataclass(frozen=True)
class AgentSettings:
    """How the host stacks run (nominal units; `dilation` maps them onto the wire)."""

    cc: CcMode = "dcqcn"
    recovery: RecoveryMode = "gbn"
    dilation: float = 1000.0  # nominal rate = wire rate x dilation (20 Mb/s -> 20 Gb/s)
    dcqcn_profile: str = DEFAULT_PROFILE
    mtu_bytes: int = 1024
    timer_resolution_ns: int = 200_000  # no real-clock timer shorter than the reactor honours
    # Pacing catch-up after a late real-clock wakeup (emu.roce NicConfig.pacing_burst_ns;
    # wire time); the NIC allows at least one MTU frame's time at the line rate.
    pacing_burst_ns: int = 500_000
    # Max outstanding packets per QP (= reorder window with sr). None: twice the QP's
    # bandwidth-delay product in packets (at least MIN_WINDOW_PKTS), so a lone flow can
    # fill its path, as a RoCE NIC's window never limits a flow on its own fabric.
    window_pkts: int | None = None
    # Retransmission timeout, in clock time (not dilated): `rto_margin` x the worst
    # queueing delay the path can hold (`path_queue_delay_s`), never below rto_wire_ms.
    # A shorter RTO fires while the packet still waits in a full switch queue: spurious
    # retransmissions with zero drops. Repeated timeouts back off exponentially (emu.roce).
    rto_wire_ms: float = 100.0
    rto_margin: float = 2.0
    rto_us: float | None = None  # a fixed base RTO, modelled (RunConfig.rto_us)
    # Virtual runs' per-link timing jitter, modelled (RunConfig.link_jitter_ns): a frame
    # may reach each link's end this much later, so the path RTO allows it on every link.
    link_jitter_ns: float = 0.0
    rto_backoff: bool = True  # False: every timeout waits the RTO (RunConfig.ack_timeout)
    retry_cnt: int | None = 7  # IBTA retry_cnt (RunConfig.retry_cnt)
    priority_queues: int = 1  # >1: CNPs (and ACKs with ack_class "cnp") ride a higher queue
    # ACK/NAK class (emu.roce NicConfig.ack_class): "qp" = the data class, as RC NICs do;
    # "cnp" = the CNP class, so ACKs too skip the data queues.
    ack_class: AckClass = "qp"
    start_delay_us: float = 0.0  # flows without dependencies start this long after START
    timeout_s: float | None = None
    plb: bool = False
    plb_rounds: int = 12  # RunConfig.plb_rounds, plb_idle_rounds
    plb_idle_rounds: int = 3


def qpn_for(peer_index: int, qp: int = 0) -> int:
    """The QPN of a host's `qp`-th queue pair to the peer at `peer_index` (FlowSpec.qp)."""
    if not 0 <= QPN_BASE + peer_index < QPN_STRIDE:
        raise ValueError(f"host index {peer_index} does not fit the QPN plan")
    return QPN_BASE + peer_index + qp * QPN_STRIDE


def udp_sport(src: str, dst: str, seed: int = 0, qp: int = 0) -> int:
    """A stable, well-spread source port per ordered host pair and queue pair."""
    key = f"{seed}:{src}->{dst}" + (f"/qp{qp}" if qp else "")
    return SPORT_MIN + zlib.crc32(key.encode()) % (65536 - SPORT_MIN)


# A data frame on the wire beyond its payload (82: Ethernet + IPv4 + UDP + BTH + ICRC,
# then preamble, FCS and gap), an ACK's (86). RETH/ImmDt: emu.experiments.fct.
FRAME_OVERHEAD_BYTES = DATA_HEADER_BYTES + WIRE_OVERHEAD_BYTES
ACK_FRAME_BYTES = ACK_BYTES + WIRE_OVERHEAD_BYTES
MIN_WINDOW_PKTS = 32


def _worst_host_path(fabric: Fabric, src: str, dst: str, weight: Callable[[Port], W],
                     key: Hashable) -> list[Port]:
    """The switch egress ports from host src to host dst on the equal-cost path whose
    ports weigh most, the one towards dst last ([] without a path)."""
    a, b = fabric.host(src), fabric.host(dst)
    path = heaviest_path_ports(fabric, a.switch, b.switch, weight, key)
    if path is None:
        return []
    return list(path) + [fabric.switch(b.switch).port(b.switch_port)]


def base_rtt_s(fabric: Fabric, src: str, dst: str, mtu_bytes: int) -> float:
    """Round trip on an empty fabric, on the slowest equal-cost path: every link's
    propagation delay both ways, one MTU frame serialised per hop out and one ACK back."""
    def one_way(s: str, d: str, frame_bytes: int) -> float:
        def hop_s(p: Port) -> float:
            return fabric.link(p.link).delay_ns / 1e9 + frame_bytes * 8 / p.rate_bps

        worst = sum(hop_s(p) for p in _worst_host_path(fabric, s, d, hop_s,
                                                         ("hop_s", frame_bytes)))
        first = fabric.link(fabric.host(s).link)
        return worst + first.delay_ns / 1e9 + frame_bytes * 8 / first.rate_bps

    frame = mtu_bytes + FRAME_OVERHEAD_BYTES
    return one_way(src, dst, frame) + one_way(dst, src, ACK_FRAME_BYTES)


def window_pkts_for(fabric: Fabric, src: str, dst: str, settings: AgentSettings) -> int:
    """The QP's window: the setting, else 2 x its bandwidth-delay product in packets."""
    if settings.window_pkts is not None:
        return max(1, settings.window_pkts)
    rate = min(fabric.link(fabric.host(h).link).rate_bps for h in (src, dst))
    frame_bits = (settings.mtu_bytes + FRAME_OVERHEAD_BYTES) * 8
    bdp = base_rtt_s(fabric, src, dst, settings.mtu_bytes) * rate / frame_bits
    return max(MIN_WINDOW_PKTS, math.ceil(2 * bdp))


def path_queue_delay_s(fabric: Fabric, src: str, dst: str, mtu_bytes: int,
                       priority_queues: int = 1, ack_class: str = "qp") -> float:
    """The longest a data packet and its ACK can wait in switch queues between hosts
    `src` and `dst`: every egress queue on the worst equal-cost path full of MTU frames,
    drained at that port's rate. An ACK in the data class (one queue per port, or
    ack_class "qp") waits behind full data queues on the way back too; in a higher
    priority queue it waits for at most one frame per hop (strict priority,
    non-preemptive)."""
    frame_bits = (mtu_bytes + FRAME_OVERHEAD_BYTES) * 8

    def egress(p: Port) -> tuple[float, float]:
        rate = float(p.rate_bps) if p.rate_bps else math.inf
        return p.depth_pkts * frame_bits / rate, frame_bits / rate

    def one_way(s: str, d: str) -> list[tuple[float, float]]:
        # the path whose queues hold most; of those, the slowest to serialise a frame
        return [egress(p) for p in _worst_host_path(fabric, s, d, egress,
                                                    ("egress_s", frame_bits))]

    fwd = sum(q for q, _f in one_way(src, dst))
    back = one_way(dst, src)
    acks_queue_with_data = priority_queues <= 1 or ack_class == "qp"
    rev = sum(q for q, _f in back) if acks_queue_with_data else sum(f for _q, f in back)
    return fwd + rev


def rto_wire_ms(fabric: Fabric, src: str, dst: str, settings: AgentSettings) -> float:
    """The QP's retransmission timeout in clock time (see AgentSettings): the run's fixed
    one (rto_us, modelled, x the dilation), else the margin x (the base round trip + the
    worst queueing on the path + the jitter of every link of the round trip); never
    below the floor, rto_wire_ms."""
    if settings.rto_us is not None:
        return max(settings.rto_wire_ms, settings.rto_us * settings.dilation / 1e3)
    delay = path_queue_delay_s(fabric, src, dst, settings.mtu_bytes, settings.priority_queues,
                               settings.ack_class)
    delay += base_rtt_s(fabric, src, dst, settings.mtu_bytes)
    if settings.link_jitter_ns:
        delay += (path_links(fabric, src, dst) + path_links(fabric, dst, src)) \
            * settings.link_jitter_ns * settings.dilation / 1e9
    return max(settings.rto_wire_ms, settings.rto_margin * delay * 1e3)


def path_links(fabric: Fabric, src: str, dst: str) -> int:
    """Links a frame crosses from host src to host dst on the longest equal-cost path:
    the sender's own link, then one per switch egress port."""
    return 1 + len(_worst_host_path(fabric, src, dst, lambda _p: 1, "links"))


def retry_span_wire_s(agents: Mapping[str, AgentConfig], timeouts: int | None = None) -> float:
    """The longest wire time a QP of `agents` spends, after its last progress, in
    `timeouts` timeouts in a row (None: all it may make, its retries and the one that
    fails it; QPs that retry forever do not count), as their NICs will run them."""
    span = 0
    for a in agents.values():
        d = Dilation(a.nic.time_dilation)
        for q in a.qps:
            n = timeouts if timeouts is not None else \
                None if q.retry_cnt is None else q.retry_cnt + 1
            if n is None:
                continue
            rto = max(d.wire_ns(q.rto_ns), a.nic.min_rto_ns)
            span = max(span, retry_span_ns(rto, rto_cap_ns(rto, d.wire_ns(RTO_MAX_NS),
                                                           q.rto_backoff), n))
    return span / 1e9


def rto_floor_note(fabric: Fabric, agents: Mapping[str, AgentConfig],
                   settings: AgentSettings) -> str | None:
    """A warning when the wire-time RTO floor, not the path, sets queue pairs' timeouts:
    at a small dilation 100 ms of wire time is more, modelled, than the path's RTO, and
    a run that loses packets then waits longer for them than the modelled network."""
    if settings.rto_wire_ms <= 0:
        return None
    pathwise = dataclasses.replace(settings, rto_wire_ms=0.0)
    pairs = {(host, q.peer) for host, a in agents.items() for q in a.qps}
    path_ms = {pair: rto_wire_ms(fabric, *pair, pathwise) for pair in pairs}
    below = sorted(ms for ms in path_ms.values() if ms < settings.rto_wire_ms)
    if not below:
        return None
    d = settings.dilation
    return (f"RTO: the {settings.rto_wire_ms:g} ms wire-time floor (real-time timers can "
            f"wake late) is {settings.rto_wire_ms * 1e3 / d:.3g} us modelled, above the "
            f"QPs' own RTO ({below[0] * 1e3 / d:.3g} us at the least) for {len(below)} of "
            f"{len(path_ms)} host pairs: a lost packet waits longer than in the modelled "
            f"network (a lower --rate, i.e. a higher dilation, or --virtual avoids it)")


def _start_us(f: FlowSpec, settings: AgentSettings, dilation: Dilation) -> float:
    """The agent's start time (clock us after its epoch: START, or READY alone): a flow with dependencies starts
    when they are met; one with a modelled start time (Poisson arrivals) that long,
    stretched onto the wire, after the common start delay."""
    if f.after and not f.start_ns:
        return 0.0
    return settings.start_delay_us + dilation.wire_ns(f.start_ns) / 1e3


def agent_configs(fabric: Fabric, workload: Workload, settings: AgentSettings,
                  seed: int = 0) -> dict[str, AgentConfig]:
    """Host name -> agent configuration, for every host that sends or receives."""
    hosts = {h.name for h in fabric.hosts}
    for f in workload.flows:
        for name in (f.src, f.dst):
            if name not in hosts:
                raise ValueError(f"flow {f.id}: no host {name!r} in fabric {fabric.name}")
        if f.src == f.dst:
            raise ValueError(f"flow {f.id}: source and destination are both {f.src}")
    peers: dict[str, set[tuple[str, int]]] = {}  # host -> (peer, qp) of each queue pair
    for f in workload.flows:
        peers.setdefault(f.src, set()).add((f.dst, f.qp))
        peers.setdefault(f.dst, set()).add((f.src, f.qp))
    index = {h.name: i for i, h in enumerate(fabric.hosts)}
    sends: dict[str, list[FlowSpec]] = {}
    expects: dict[str, list[str]] = {}
    for f in workload.flows:  # one pass, not one per host: fabrics of thousands of hosts
        sends.setdefault(f.src, []).append(f)
        expects.setdefault(f.dst, []).append(f.id)
    return {h.name: _host_config(fabric, sends.get(h.name, []), expects.get(h.name, []),
                                 settings, h.name, peers[h.name], seed, index)
            for h in fabric.hosts if h.name in peers}


def _host_config(fabric: Fabric, sends: list[FlowSpec], expects: list[str],
                 settings: AgentSettings, name: str, peers: set[tuple[str, int]], seed: int,
                 index: dict[str, int]) -> AgentConfig:
    dilation = Dilation(settings.dilation)
    h = fabric.host(name)
    qps = []
    for peer, qp in sorted(peers, key=lambda pq: (pq[1], index[pq[0]])):
        p = fabric.host(peer)
        window = window_pkts_for(fabric, name, peer, settings)
        qps.append(QpConfig(
            qpn=qpn_for(index[peer], qp), peer=peer, peer_ip=str(p.ip), peer_mac=p.mac,
            peer_qpn=qpn_for(index[name], qp), udp_sport=udp_sport(name, peer, seed, qp),
            recovery=settings.recovery, reorder_window_pkts=window,
            max_outstanding_pkts=window, retry_cnt=settings.retry_cnt,
            rto_backoff=settings.rto_backoff,
            # The QP's RTO is nominal (the NIC multiplies it by the dilation): give the
            # nominal value that lands on the clock-time RTO.
            rto_ns=max(1, int(dilation.modelled_ns(
                rto_wire_ms(fabric, name, peer, settings) * 1e6)))))
    flows = [FlowConfig(id=f.id, qpn=qpn_for(index[f.dst], f.qp), size_bytes=f.size_bytes,
                        op="write", after=list(f.after),
                        start_us=_start_us(f, settings, dilation))
             for f in sends]
    link_rate = fabric.link(h.link).rate_bps
    nic = NicConfig(line_rate_bps=dilation.modelled_rate_bps(float(link_rate)),
                    time_dilation=float(settings.dilation),
                    timer_resolution_ns=settings.timer_resolution_ns, mtu=settings.mtu_bytes,
                    pacing_burst_ns=settings.pacing_burst_ns,
                    min_rto_ns=int(settings.rto_wire_ms * 1e6), ack_class=settings.ack_class,
                    host_link_delay_ns=fabric.link(h.link).delay_ns)
    dcqcn = dcqcn_params(settings.dcqcn_profile, nic.line_rate_bps,
                         {"enabled": settings.cc == "dcqcn"})
    cfg = AgentConfig(host=HostConfig(name=name, ip=str(h.ip), mac=h.mac), qps=qps, nic=nic,
                      dcqcn=dcqcn, flows=flows,
                      plb=PlbParams(enabled=settings.plb, congested_rounds=settings.plb_rounds,
                                    idle_congested_rounds=settings.plb_idle_rounds),
                      expect=expects,
                      timeout_s=None if settings.timeout_s is None
                      else float(settings.timeout_s))
    validate(cfg)
    return cfg
