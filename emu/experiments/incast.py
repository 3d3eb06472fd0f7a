"""N:1 incast in virtual time, measured finely enough to judge congestion control.

The scenario behind the congestion-control validation suite (tests/validation) and the
README's incast figures: N senders and one receiver on one leaf, every link at the
same modelled rate, each sender writing one message to the receiver through fabric.p4
(ECN marking on the receiver's port) and the real host stack (DCQCN, recovery). It runs
through the ordinary run plan (`plan_run`, the same dilation rule, the same agents) on a
SimFabric, and records what a `RunSummary` does not:

- per flow, the bytes that reached the receiver in every window of `window_rtts` base
  round trips (rates at the bottleneck, independent of any sampling policy of runs);
- the bottleneck queue (the leaf's port towards the receiver) sampled every
  `sample_ns` of modelled time;
- drops (switch queues and NICs), CNPs, ECN marks, retransmissions, and each flow's
  completion time, all in modelled units.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from emu.core import argtypes as nums
from emu.core.units import Dilation
from emu.core.wire import MAX_MESSAGE_BYTES
from emu.roce import dcqcn
from emu.topo.addressing import MAX_HOSTS_PER_LEAF

from . import argtypes
from .agent_configs import FRAME_OVERHEAD_BYTES, base_rtt_s
from .config import CcMode, RunConfig
from .failures import share_failures
from .jsontypes import count, sub
from .plan import RunPlan, plan_run
from .workloads import WorkloadParams

if TYPE_CHECKING:
    from emu.control import QosSettings
    from emu.roce.agent import Agent
    from emu.sim.fabric import SimFabric

IPV4_SRC = slice(26, 30)


def _messages(spec: IncastSpec) -> int:
    largest = max(spec.flow_bytes_each or (spec.flow_bytes,))
    return max(1, -(-largest // spec.max_message_bytes))


# The senders and the receiver are hosts of one leaf (one /24 of the addressing plan).
MAX_SENDERS = MAX_HOSTS_PER_LEAF - 1


@dataclass(frozen=True)
class IncastSpec:
    senders: int
    flow_bytes: int
    profile: str = dcqcn.DEFAULT_PROFILE  # emu.roce.dcqcn profile: its DCQCN, marking and buffer values
    cc: CcMode = "dcqcn"
    link_rate_bps: int = 25_000_000_000  # modelled, every link
    link_delay_ns: int = 1_000  # modelled, every link
    mtu_bytes: int = 1024
    dilation: float = 1000.0
    stagger_ns: int = 0  # modelled: sender k starts k x stagger_ns after the first
    # Per sender, bytes instead of flow_bytes and modelled start times instead of the
    # stagger: flows that join at chosen times and end together, so a run does not go
    # on after the last segment it measures.
    flow_bytes_each: tuple[int, ...] | None = None
    start_ns_each: tuple[int, ...] | None = None
    # A flow larger than this goes as several equal messages back to back on its QP (a
    # RoCE message carries less than 2 GiB); every sender posts as many.
    max_message_bytes: int = 1 << 30
    # Marking and buffer (bytes): None takes the profile's (dcqcn.profile_spec).
    kmin_bytes: int | None = None
    kmax_bytes: int | None = None
    pmax: float | None = None
    buffer_bytes: int | None = None
    # Outstanding packets per QP: the sources' NICs have no window, only DCQCN limits a
    # sender; this is large enough never to bind (runs default to 2 x BDP instead).
    window_pkts: int = 4096
    window_rtts: int = 10
    sample_ns: int = 1_000  # modelled time between queue samples
    max_modelled_ns: int = 1_000_000_000
    seed: int = 1  # the run's seed: the switches' random draws (SimFabric.switch_seed)


@dataclass
class IncastRecord:
    spec: IncastSpec
    base_rtt_ns: float  # modelled
    window_ns: float  # modelled width of a rate window
    frame_bytes: int
    kmin_pkts: int
    kmax_pkts: int
    buffer_pkts: int
    pmax: float
    # flow index -> bytes delivered per window (window w covers [w, w+1) x window_ns
    # after the first sender's start)
    window_bytes: dict[int, list[int]] = field(default_factory=dict)
    queue_pkts: list[int] = field(default_factory=list)  # one per sample_ns
    start_ns: dict[int, float] = field(default_factory=dict)  # modelled, per flow
    end_ns: dict[int, float] = field(default_factory=dict)  # modelled completion per flow
    frames: int = 0  # data frames delivered to the receiver
    frame_bytes_delivered: int = 0  # their bytes, without the wire overhead
    drops: int = 0
    cnps: int = 0
    ecn_marks: int = 0
    retx_pkts: int = 0
    timeouts: int = 0
    delivered_ok: bool = False

    def rates_bps(self, flow: int) -> list[float]:
        """The flow's delivered rate per window, modelled bits/s."""
        return [b * 8 / (self.window_ns / 1e9) for b in self.window_bytes.get(flow, [])]

    def mean_rate_bps(self, flow: int, windows: range) -> float:
        """The flow's mean delivered rate over `windows` (0 for none), modelled bits/s.
        One pass over the rates: indexing `rates_bps(flow)` per window rebuilds the list
        each time, quadratic in a long run's windows."""
        rates = self.rates_bps(flow)
        return sum(rates[w] for w in windows) / max(1, len(windows))

    @property
    def fair_share_bps(self) -> float:
        return self.spec.link_rate_bps / self.spec.senders

    @property
    def completion_ns(self) -> float:
        return max(self.end_ns.values()) - min(self.start_ns.values())


def jain(xs: list[float]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one takes everything."""
    s = sum(xs)
    q = sum(x * x for x in xs)
    return (s * s) / (len(xs) * q) if q > 0 else 1.0


def _topology_yaml(spec: IncastSpec, buffer_pkts: int) -> str:
    return (f"name: incast{spec.senders}\n"
            f"description: {spec.senders}:1 incast on one leaf\n"
            f"defaults:\n  rate: {spec.link_rate_bps}bps\n  delay: {spec.link_delay_ns}ns\n"
            f"  queue_depth_pkts: {buffer_pkts}\n  mtu: 9000\n"
            f"generator: clos\nparams:\n  leaves: 1\n  spines: 1\n"
            f"  hosts_per_leaf: {spec.senders + 1}\n")


def plan_incast(spec: IncastSpec) -> tuple[RunPlan, IncastRecord]:
    from emu.topo import loads_topology

    if not 0 < spec.max_message_bytes <= MAX_MESSAGE_BYTES:
        raise ValueError(f"max_message_bytes must be in 1 .. {MAX_MESSAGE_BYTES} (a RoCE "
                         f"message's length), got {spec.max_message_bytes}")
    sizes, starts = spec.flow_bytes_each, spec.start_ns_each
    if sizes is not None and (len(sizes) != spec.senders or min(sizes) <= 0):
        raise ValueError(f"flow_bytes_each needs {spec.senders} positive sizes, got {sizes}")
    if starts is not None and (len(starts) != spec.senders or min(starts) < 0):
        raise ValueError(f"start_ns_each needs {spec.senders} times >= 0, got {starts}")
    frame = spec.mtu_bytes + FRAME_OVERHEAD_BYTES
    ps = dcqcn.profile_spec(spec.profile, spec.link_rate_bps)
    kmin_b = ps.kmin_bytes if spec.kmin_bytes is None else spec.kmin_bytes
    kmax_b = ps.kmax_bytes if spec.kmax_bytes is None else spec.kmax_bytes
    pmax = ps.pmax if spec.pmax is None else spec.pmax
    buf_b = ps.buffer_bytes if spec.buffer_bytes is None else spec.buffer_bytes
    # fabric.p4 marks on enq_qdepth in packets: thresholds in whole MTU frames.
    kmin, kmax = max(1, round(kmin_b / frame)), max(2, round(kmax_b / frame))
    buffer_pkts = max(kmax + 1, round(buf_b / frame))
    model = loads_topology(_topology_yaml(spec, buffer_pkts), f"<incast{spec.senders}>")
    receiver = model.hosts[-1].name
    cfg = RunConfig(topo=model.name, cc=spec.cc, virtual=True, dilation=spec.dilation,
                    workload=WorkloadParams("incast",
                                            message_bytes=-(-spec.flow_bytes // _messages(spec)),
                                            iterations=_messages(spec),
                                            incast_senders=spec.senders,
                                            incast_target=receiver, seed=spec.seed),
                    dcqcn_profile=spec.profile, ecn_kmin_pkts=kmin, ecn_kmax_pkts=kmax,
                    ecn_pmax=pmax, ecn_mark_at=ps.mark_at, mtu_bytes=spec.mtu_bytes,
                    start_delay_s=0.0,
                    window_pkts=spec.window_pkts,
                    timeout_s=1e9, progress=False)
    plan = plan_run(cfg, model)
    rtt = base_rtt_s(model, model.hosts[0].name, receiver, spec.mtu_bytes) * 1e9
    rec = IncastRecord(spec, rtt, spec.window_rtts * rtt, frame, kmin, kmax, buffer_pkts, pmax)
    return plan, rec


def run_incast(spec: IncastSpec) -> IncastRecord:
    from emu.roce.agent import Agent
    from emu.sim.fabric import SimFabric

    plan, rec = plan_incast(spec)
    d = Dilation(spec.dilation)
    cfg = plan.config
    sim = SimFabric(plan.fabric, lb=plan.lb_settings(), ecn=plan.ecn_settings(), qos=_qos(cfg),
                    seed=cfg.workload.seed)
    clock = sim.clock
    receiver = cfg.workload.incast_target
    senders = [h.name for h in plan.fabric.hosts if h.name != receiver]
    # sender's IPv4 source address, as the frame carries it -> flow index
    index = {plan.fabric.host(h).ip.packed: i for i, h in enumerate(senders)}
    sizes, starts = spec.flow_bytes_each, spec.start_ns_each
    for i, h in enumerate(senders):  # staggered starts, on the wire clock
        for f in plan.agents[h].flows:
            start = i * spec.stagger_ns if starts is None else starts[i]
            f.start_us = d.wire_ns(start) / 1e3
            if sizes is not None:
                f.size_bytes = -(-sizes[i] // _messages(spec))
    agents = {h: Agent(c, clock, sim.port(h, 0)) for h, c in plan.agents.items()}

    window_wire = d.wire_ns(rec.window_ns)
    rec.window_bytes = {i: [] for i in range(len(senders))}
    port = sim.port(receiver, 0)
    deliver = port.receiver
    # bytes on the wire, as the link serialises them (preamble, FCS, gap included)
    overhead = sim.links[plan.fabric.host(receiver).link].overhead_bytes

    def tap(frame: bytes) -> None:
        i = index.get(frame[IPV4_SRC])
        if i is not None:
            w = int(clock.now_ns() // window_wire)
            bins = rec.window_bytes[i]
            if len(bins) <= w:
                bins.extend([0] * (w + 1 - len(bins)))
            bins[w] += len(frame) + overhead
            rec.frames += 1
            rec.frame_bytes_delivered += len(frame)
        if deliver is not None:
            deliver(frame)

    port.set_receiver(tap)
    leaf = plan.fabric.host(receiver).switch
    leaf_port = plan.fabric.host(receiver).switch_port
    tm = sim.switches[leaf].sw.tm
    sample_wire = d.wire_ns(spec.sample_ns)

    agents_done = tuple(a.done for a in agents.values())

    def sample() -> None:
        rec.queue_pkts.append(tm.occupancy(leaf_port)[0])
        if not all(done() for done in agents_done):
            clock.call_later(sample_wire, sample)

    for a in agents.values():
        a.start()
    clock.call_later(sample_wire, sample)
    limit = d.wire_ns(spec.max_modelled_ns)
    step = max(sample_wire, d.wire_ns(100_000))
    while clock.now_ns() < limit:
        share_failures(plan.workload, agents)
        if all(a.done() for a in agents.values()):
            break
        clock.advance(step)
    clock.advance(d.wire_ns(10 * rec.base_rtt_ns))  # the last ACKs
    _collect(rec, plan, agents, sim, senders, d)
    return rec


def _qos(cfg: RunConfig) -> QosSettings:
    from emu.control import QosSettings

    return QosSettings.roce(cfg.priority_queues)


def _collect(rec: IncastRecord, plan: RunPlan, agents: dict[str, Agent], sim: SimFabric,
             senders: list[str], d: Dilation) -> None:
    rows = {h: a.results() for h, a in agents.items()}
    delivered = 0
    for i, h in enumerate(senders):
        starts: list[float] = []
        ends: list[float] = []
        flows = 0
        for r in rows[h]:
            if r.get("type") == "summary" or r.get("role") != "sender":
                continue
            flows += 1
            if r.get("start_ns") is not None:
                starts.append(d.modelled_ns(count(r, "start_ns")))
            if r.get("completed"):
                ends.append(d.modelled_ns(count(r, "complete_ns")))
            rec.cnps += count(r, "cnps_rcvd")
            rec.retx_pkts += count(r, "retx_pkts")
            rec.timeouts += count(r, "timeouts")
        # a flow of several messages: from its first message's start to its last's end
        if starts:
            rec.start_ns[i] = min(starts)
        if ends and len(ends) == flows:
            rec.end_ns[i] = max(ends)
    for rs in rows.values():
        for r in rs:
            if r.get("role") == "receiver" and r.get("completed"):
                delivered += 1
            if r.get("role") == "receiver":
                rec.ecn_marks += count(r, "ecn_marked_rcvd")
            if r.get("type") == "summary":
                drops = sub(r, "nic_drops")
                rec.drops += sum(count(drops, k) for k in drops)
    for sw in sim.switches.values():
        rec.drops += sw.drops.reason_total("tail_drop")
    rec.delivered_ok = (delivered == len(senders) * _messages(rec.spec)
                        and len(rec.end_ns) == len(senders))


def steady_windows(rec: IncastRecord, skip_fraction: float = 0.2) -> range:
    """Windows after the first `skip_fraction` of the transfer until the first flow
    completes (while every flow is still sending)."""
    t0 = min(rec.start_ns.values())
    first_end = min(rec.end_ns.values()) - t0
    total = rec.completion_ns
    lo = math.ceil((max(rec.start_ns.values()) - t0 + skip_fraction * total) / rec.window_ns)
    hi = math.floor(first_end / rec.window_ns)
    return range(lo, hi)


def plot_incast(records: dict[str, IncastRecord], path: Path) -> Path:
    """Per profile (a column): each flow's delivered rate per window over time, and the
    bottleneck queue with the marking band (Kmin, Kmax), in modelled units."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(records)
    fig, axes = plt.subplots(2, n, figsize=(4.6 * n, 6.2), sharex="col", squeeze=False)
    for col, (name, rec) in enumerate(records.items()):
        ax, aq = axes[0][col], axes[1][col]
        t0 = min(rec.start_ns.values())
        for i in sorted(rec.window_bytes):
            rates = rec.rates_bps(i)
            ts = [((w + 0.5) * rec.window_ns - t0) / 1e6 for w in range(len(rates))]
            ax.plot(ts, [r / 1e9 for r in rates], lw=1, label=f"flow {i + 1}")
        ax.axhline(rec.fair_share_bps / 1e9, color="k", ls="--", lw=0.8, label="fair share")
        ax.set_title(f"{name}: {rec.spec.senders}:1 incast at "
                     f"{rec.spec.link_rate_bps / 1e9:g} Gb/s")
        ax.set_ylabel("delivered rate (Gb/s)")
        ax.set_ylim(bottom=0)
        if col == 0:
            ax.legend(fontsize=7, ncol=2, loc="upper right")
        tq = [(k * rec.spec.sample_ns - t0) / 1e6 for k in range(1, len(rec.queue_pkts) + 1)]
        aq.plot(tq, rec.queue_pkts, lw=0.8, color="C3")
        aq.axhline(rec.kmin_pkts, color="k", ls=":", lw=0.8, label=f"Kmin {rec.kmin_pkts}")
        aq.axhline(rec.kmax_pkts, color="k", ls="--", lw=0.8, label=f"Kmax {rec.kmax_pkts}")
        aq.set_ylabel("bottleneck queue (packets)")
        aq.set_xlabel("modelled time (ms)")
        aq.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def summarise(rec: IncastRecord) -> dict[str, float]:
    """The validation figures of one run: steady-state mean rates, utilisation, Jain
    fairness, the queue's p90 in the steady state, drops and CNPs."""
    ws = steady_windows(rec)
    flows = sorted(rec.window_bytes)
    means = [rec.mean_rate_bps(i, ws) for i in flows]
    t0 = min(rec.start_ns.values())
    lo, hi = ws.start * rec.window_ns, ws.stop * rec.window_ns
    qs = sorted(q for k, q in enumerate(rec.queue_pkts, start=1)
                if lo <= k * rec.spec.sample_ns - t0 < hi) or [0]
    return {"min_rate_gbps": min(means) / 1e9, "max_rate_gbps": max(means) / 1e9,
            "fair_gbps": rec.fair_share_bps / 1e9,
            "utilisation": sum(means) / rec.spec.link_rate_bps, "jain": jain(means),
            "queue_p90_pkts": qs[int(0.9 * (len(qs) - 1))], "kmax_pkts": rec.kmax_pkts,
            "drops": rec.drops, "cnps": rec.cnps, "completion_ms": rec.completion_ns / 1e6}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "incast", help="N:1 incast per DCQCN profile in virtual time: figures and a plot",
        description="Runs the congestion-control validation scenario (N senders, one "
                    "receiver, one leaf; each profile with its source's marking and buffer) "
                    "in virtual time, prints each profile's steady-state figures and writes "
                    "a plot of rates over time and the bottleneck queue.")
    p.add_argument("--senders", type=nums.integer(1, MAX_SENDERS, "hosts of one leaf"),
                   default=8, help="N (default %(default)s)")
    p.add_argument("--rate", type=argtypes.rate, default="25Gbps",
                   help="modelled link rate (default %(default)s)")
    p.add_argument("--ms", type=nums.positive, default=320.0,
                   help="each flow carries this many ms of its fair share (default %(default)s)")
    p.add_argument("--mtu", type=nums.integer(256, 4096, "RoCE path MTU"), default=None,
                   help="RoCE MTU (default: each profile's source's, profile_spec().mtu_bytes)")
    p.add_argument("--profiles", type=nums.one_of_each(dcqcn.PROFILES),
                   default="hpcc,nvidia,paper",
                   help="comma-separated DCQCN profiles (default %(default)s)")
    p.add_argument("--plot", default="incast.png", help="PNG to write (default %(default)s)")
    p.set_defaults(func=_cmd_incast)


def _cmd_incast(args: argparse.Namespace) -> int:
    rate = args.rate
    size = int(rate / args.senders * args.ms / 1e3 / 8)
    if size < 1:
        print(f"emu incast: --ms {args.ms:g} gives each flow {size} bytes; raise it",
              file=sys.stderr)
        return 1
    recs: dict[str, IncastRecord] = {}
    for name in args.profiles:
        mtu = args.mtu or dcqcn.profile_spec(name, rate).mtu_bytes
        rec = run_incast(IncastSpec(senders=args.senders, flow_bytes=size, profile=name,
                                    link_rate_bps=rate, mtu_bytes=mtu))
        recs[name] = rec
        f = summarise(rec)
        if not steady_windows(rec):  # zeros here would read as a starved bottleneck
            print(f"{name:7s} no steady state: the first flow ended "
                  f"{(min(rec.end_ns.values()) - min(rec.start_ns.values())) / 1e3:.1f} us "
                  f"in, before a whole {rec.window_ns / 1e3:.1f} us window past the first "
                  f"20% (raise --ms)  drops {f['drops']}  CNPs {f['cnps']}  "
                  f"completion {f['completion_ms']:.2f} ms")
            continue
        print(f"{name:7s} rates {f['min_rate_gbps']:.2f}-{f['max_rate_gbps']:.2f} Gb/s "
              f"(fair {f['fair_gbps']:.3f})  utilisation {f['utilisation']:.1%}  "
              f"Jain {f['jain']:.3f}  queue p90 {f['queue_p90_pkts']} pkts "
              f"(Kmax {f['kmax_pkts']})  drops {f['drops']}  CNPs {f['cnps']}  "
              f"completion {f['completion_ms']:.1f} ms")
    try:
        print(f"plot: {plot_incast(recs, Path(args.plot))}")
    except OSError as exc:  # the figures above stand; only the picture is lost
        print(f"emu incast: cannot write {args.plot}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
