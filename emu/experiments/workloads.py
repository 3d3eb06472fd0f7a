"""Workloads as flow lists: permutation, incast, ring all-reduce, all-to-all, the
collectives of a training cluster (data-, tensor-, pipeline-parallel and their mix) and
Poisson background traffic (docs/workloads.md).

Pure functions of (host names, leaf of each host, parameters): the same inputs give the
same flows, so agent configurations and tests are reproducible. A flow's `after` lists
flow ids that must have completed (sent) or arrived at its source first; the host agents
enforce it, so collectives pace themselves without a central coordinator.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

from emu.core.wire import MAX_MESSAGE_BYTES

# Background flows one plan may draw (their expected number is checked before drawing).
MAX_BACKGROUND_FLOWS = 200_000
# Flows of the pattern or collectives one plan may hold, all iterations together (checked
# on one iteration before building them all: 10^8 iterations took all memory).
MAX_PATTERN_FLOWS = 1_000_000
# Channels a collective may be split over (NCCL's MAXCHANNELS is 32; 16 keeps every QP
# of a host pair within the 24-bit QPN plan of emu.experiments.agent_configs).
MAX_CHANNELS = 16

WorkloadKind = Literal["allreduce", "permutation", "incast", "alltoall", "dp", "tp", "pp",
                       "mix", "background"]
WORKLOAD_KINDS: tuple[str, ...] = get_args(WorkloadKind)


class WorkloadError(ValueError):
    """Parameters that give no valid workload (the message says which)."""


@dataclass(frozen=True)
class WorkloadParams:
    """What to run. `message_bytes` is the per-flow size for permutation and incast, and
    the per-rank buffer for collectives (all-reduce moves chunks of message/n bytes;
    all-to-all sends message/n bytes to each peer), as nccl-tests count sizes."""

    kind: WorkloadKind = "allreduce"
    message_bytes: int = 256 * 1024
    iterations: int = 1
    hosts: tuple[str, ...] = ()  # empty: every host of the fabric
    incast_target: str = ""  # empty: the last host
    incast_senders: int = 0  # 0: every other host
    seed: int = 1
    microbatches: int = 4  # pp: activations per iteration through the pipeline
    # Background traffic (kind "background", or beside any other kind when > 0): Poisson
    # flow arrivals at each host, at this fraction of its line rate, sizes drawn from
    # `size_dist` (websearch, hadoop or a file; emu.experiments.sizedist) times
    # `size_scale`, arriving during the first `background_us` (modelled) of the run.
    background_load: float = 0.0
    size_dist: str = "websearch"
    size_scale: float = 1.0
    background_us: float = 100.0
    # NCCL channels: each collective (and each pipeline send) is split into this many
    # equal parts, each moved by its own ring or send on queue pairs of its own (own
    # QPN and UDP source port), as NCCL splits a buffer over its channels, each with
    # its own connections: more 5-tuples for ECMP to hash (Meta's "QP scaling").
    channels: int = 1

    def validate(self) -> None:
        if self.kind not in WORKLOAD_KINDS:
            raise WorkloadError(f"workload must be one of {', '.join(WORKLOAD_KINDS)}, "
                                f"got {self.kind!r}")
        if not 1 <= self.message_bytes <= MAX_MESSAGE_BYTES:
            raise WorkloadError(f"message_bytes must be 1..{MAX_MESSAGE_BYTES} (an RDMA "
                                f"message is under 2 GiB), got {self.message_bytes}")
        if self.iterations < 1:
            raise WorkloadError(f"iterations must be >= 1, got {self.iterations}")
        if self.incast_senders < 0:
            raise WorkloadError("incast_senders must be >= 0")
        if self.microbatches < 1:
            raise WorkloadError(f"microbatches must be >= 1, got {self.microbatches}")
        if not 0 <= self.background_load < 1:
            raise WorkloadError(f"background_load must be in [0, 1), got {self.background_load}")
        if self.kind == "background" and self.background_load <= 0:
            raise WorkloadError("workload background needs background_load > 0")
        if not (0 < self.size_scale < math.inf and 0 < self.background_us < math.inf):
            raise WorkloadError("size_scale and background_us must be positive and finite")
        if not 1 <= self.channels <= MAX_CHANNELS:
            raise WorkloadError(f"channels must be 1..{MAX_CHANNELS}, got {self.channels}")
        if self.channels > 1 and self.kind not in CHANNEL_KINDS:
            raise WorkloadError(
                f"channels split collectives ({', '.join(CHANNEL_KINDS)}); {self.kind} "
                f"flows are whole messages, each measured on its own: give channels 1")


# The kinds whose operations NCCL would split over channels.
CHANNEL_KINDS: tuple[str, ...] = ("allreduce", "alltoall", "dp", "tp", "pp", "mix")


# FlowSpec.qp: the workload's QPs (every flow of a single-kind workload; mix's dp ring);
# mix's tp and pp communicators (NCCL opens connections per communicator); background
# traffic beside a workload (another application). Background alone is the workload.
# Channel k of a communicator uses its QP + k x QP_ROLES (channel_qp).
QP_WORKLOAD, QP_TP, QP_PP, QP_BACKGROUND = 0, 1, 2, 3
QP_ROLES = 4


def channel_qp(qp: int, channel: int) -> int:
    """FlowSpec.qp of `channel` of the communicator whose channel 0 uses `qp`."""
    return qp + channel * QP_ROLES


@dataclass(frozen=True)
class FlowSpec:
    id: str
    src: str
    dst: str
    size_bytes: int
    after: tuple[str, ...] = ()
    collective: str = ""  # id of the collective operation it belongs to ("" for none)
    # Modelled ns after the workload starts before the flow may start (Poisson arrivals);
    # the run puts it on the wire clock through its dilation.
    start_ns: float = 0.0
    # Which of its host pair's queue pairs sends it (QP_*): each communicator and each
    # application has its own connections, and the NIC serves their messages side by
    # side; on one QP, RC would complete them in order, one waiting behind the other.
    qp: int = QP_WORKLOAD


@dataclass(frozen=True)
class Collective:
    """One collective operation (one iteration) and the flows that make it up."""

    id: str
    kind: Literal["allreduce", "alltoall"]
    ranks: tuple[str, ...]
    size_bytes: int  # per-rank buffer (nccl-tests' "size")
    flow_ids: tuple[str, ...]
    # Which repeated operation this is one of ("dp", "tp", or its kind): a run's algbw
    # and busbw are per series, never averaged over different collectives.
    series: str = ""

    @property
    def bus_factor(self) -> float:
        """busbw = algbw x this (nccl-tests: 2(n-1)/n all-reduce, (n-1)/n all-to-all)."""
        return bus_factor(self.kind, len(self.ranks))


def bus_factor(kind: str, n: int) -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n for all-reduce, (n-1)/n for all-to-all
    (ValueError for another kind: broadcast's would be 1, not (n-1)/n)."""
    if kind == "allreduce":
        return 2 * (n - 1) / n
    if kind == "alltoall":
        return (n - 1) / n
    raise ValueError(f"no bus bandwidth factor for collective kind {kind!r}")


@dataclass(frozen=True)
class Workload:
    params: WorkloadParams
    flows: tuple[FlowSpec, ...]
    collectives: tuple[Collective, ...] = field(default=())

    def senders(self) -> list[str]:
        return sorted({f.src for f in self.flows})

    def total_bytes(self) -> int:
        return sum(f.size_bytes for f in self.flows)

    def lost_flows(self, failed: Iterable[str]) -> set[str]:
        """`failed` (flows that can no longer arrive: their QP went to the error state)
        and every flow that waits on one of them, directly or through others."""
        lost = set(failed)
        grew = bool(lost)
        while grew:
            grew = False
            for f in self.flows:
                if f.id not in lost and any(d in lost for d in f.after):
                    lost.add(f.id)
                    grew = True
        return lost


def build_workload(params: WorkloadParams, host_leaf: Mapping[str, str],
                   host_rate_bps: Mapping[str, float] | None = None) -> Workload:
    """The flows of `params` over hosts `host_leaf` (host name -> its leaf switch), in
    the fabric's host order. `host_rate_bps` (host -> modelled line rate) sets the
    arrival rate of background traffic, which needs it."""
    params.validate()
    hosts = list(params.hosts) if params.hosts else list(host_leaf)
    unknown = [h for h in hosts if h not in host_leaf]
    if unknown:
        raise WorkloadError(f"unknown host(s) {', '.join(unknown)}")
    if len(set(hosts)) != len(hosts):
        raise WorkloadError("hosts must be distinct")
    if len(hosts) < 2:
        raise WorkloadError(f"a workload needs at least 2 hosts, got {len(hosts)}")
    per = flows_per_iteration(params, hosts, host_leaf)
    if per * params.iterations > MAX_PATTERN_FLOWS:
        what = (f"{params.kind} over {len(hosts)} hosts makes {per}" if params.iterations == 1
                else f"{params.iterations} iterations of {per} flows make "
                     f"{per * params.iterations}")
        raise WorkloadError(f"{what} flows; at most {MAX_PATTERN_FLOWS} in one run")
    flows: list[FlowSpec] = []
    colls: list[Collective] = []
    if params.kind == "permutation":
        flows = _permutation(params, hosts, host_leaf)
    elif params.kind == "incast":
        flows = _incast(params, hosts)
    elif params.kind in CHANNEL_KINDS:
        flows, colls = _collectives(params, hosts, host_leaf)
    if params.background_load > 0:
        if host_rate_bps is None:
            raise WorkloadError("background traffic needs the hosts' line rates")
        background = _background(params, hosts, host_rate_bps)
        if params.kind != "background":
            background = [replace(f, qp=QP_BACKGROUND) for f in background]
        flows = flows + background
    return Workload(params, tuple(flows), tuple(colls))


def _collectives(p: WorkloadParams, hosts: list[str], host_leaf: Mapping[str, str]
                 ) -> tuple[list[FlowSpec], list[Collective]]:
    """The collective kinds, over `p.channels` channels: the operations are built for
    one channel's share of the buffer (rounded up), then repeated per channel with flow
    ids suffixed `-c<k>`, dependencies within the channel and each channel on queue
    pairs of its own; each collective keeps the whole buffer as its size."""
    c = p.channels
    share = p if c == 1 else replace(p, message_bytes=-(-p.message_bytes // c))
    if p.kind == "allreduce":
        flows, colls = _ring_allreduce(share, hosts)
    elif p.kind == "alltoall":
        flows, colls = _alltoall(share, hosts)
    else:
        flows, colls = _training(share, hosts, host_leaf)
    if c == 1:
        return flows, colls

    def cid(fid: str, k: int) -> str:
        return f"{fid}-c{k}"

    split = [replace(f, id=cid(f.id, k), after=tuple(cid(a, k) for a in f.after),
                     qp=channel_qp(f.qp, k))
             for f in flows for k in range(c)]
    whole = [replace(x, size_bytes=p.message_bytes,
                     flow_ids=tuple(cid(i, k) for k in range(c) for i in x.flow_ids))
             for x in colls]
    return split, whole


def permutation_pairs(hosts: Sequence[str], host_leaf: Mapping[str, str],
                      seed: int) -> list[tuple[str, str]]:
    """Each host sends to exactly one host and receives from exactly one, always under
    another leaf (a derangement across leaves). Randomised by `seed`, deterministic."""
    rng = random.Random(seed)
    sizes = Counter(host_leaf[h] for h in hosts)
    if len(sizes) < 2:
        raise WorkloadError("a permutation across leaves needs hosts under 2+ leaves")
    if 2 * max(sizes.values()) > len(hosts):
        raise WorkloadError("no permutation sends every host to another leaf "
                            "(one leaf holds more than half of the hosts)")
    # A uniform shuffle lands within its own leaf about sum(m^2)/n times, so it succeeds
    # with probability about e^-that: draw shuffles while that is likely (every shipped
    # topology: a few hosts per leaf), else build one (racks of 16+ hosts: e^-16).
    if sum(m * m for m in sizes.values()) / len(hosts) <= _SHUFFLE_MAX_SAME_LEAF:
        for _ in range(10_000):
            dsts = list(hosts)
            rng.shuffle(dsts)
            if all(host_leaf[s] != host_leaf[d] for s, d in zip(hosts, dsts, strict=True)):
                return list(zip(hosts, dsts, strict=True))
    return _built_permutation(hosts, host_leaf, rng)


# Expected same-leaf pairs of a shuffle up to which shuffles are drawn (e^-5: ~150 draws).
_SHUFFLE_MAX_SAME_LEAF = 5.0


def _built_permutation(hosts: Sequence[str], host_leaf: Mapping[str, str],
                       rng: random.Random) -> list[tuple[str, str]]:
    """A cross-leaf derangement by construction, then mixed by random swaps. Hosts in
    a random order grouped by leaf, each sends m places on (m: the largest leaf): no leaf
    spans more than m places and m <= n/2, so the m places on are always another leaf's.
    Rotating the destinations of two or three senders where all stay cross-leaf keeps it
    one (swaps alone cannot leave the cycle leaf1 -> leaf2 -> leaf3 -> leaf1)."""
    by_leaf: dict[str, list[str]] = {}
    for h in hosts:
        by_leaf.setdefault(host_leaf[h], []).append(h)
    groups = list(by_leaf.values())
    rng.shuffle(groups)
    order = [h for g in groups for h in rng.sample(g, len(g))]
    n, m = len(order), max(len(g) for g in groups)
    dst = {order[i]: order[(i + m) % n] for i in range(n)}
    senders = list(hosts)
    for _ in range(8 * n):
        group = rng.sample(senders, 2 if rng.random() < 0.5 else 3)
        moved = [dst[x] for x in group[1:] + group[:1]]  # each takes the next one's
        if all(host_leaf[x] != host_leaf[d] for x, d in zip(group, moved, strict=True)):
            dst.update(zip(group, moved, strict=True))
    return [(h, dst[h]) for h in hosts]


def _permutation(p: WorkloadParams, hosts: list[str],
                 host_leaf: Mapping[str, str]) -> list[FlowSpec]:
    pairs = permutation_pairs(hosts, host_leaf, p.seed)
    flows = []
    for it in range(p.iterations):
        for src, dst in pairs:
            prev = (f"perm{it - 1}-{src}-{dst}",) if it else ()
            flows.append(FlowSpec(f"perm{it}-{src}-{dst}", src, dst, p.message_bytes, prev))
    return flows


def _incast(p: WorkloadParams, hosts: list[str]) -> list[FlowSpec]:
    target = p.incast_target or hosts[-1]
    if target not in hosts:
        raise WorkloadError(f"incast target {target!r} is not one of the hosts")
    others = [h for h in hosts if h != target]
    n = p.incast_senders or len(others)
    if n > len(others):
        raise WorkloadError(f"incast_senders={n} but only {len(others)} other hosts")
    senders = others[:n]
    flows = []
    for it in range(p.iterations):
        for s in senders:
            prev = (f"incast{it - 1}-{s}",) if it else ()
            flows.append(FlowSpec(f"incast{it}-{s}", s, target, p.message_bytes, prev))
    return flows


def _ring_allreduce(p: WorkloadParams, ranks: list[str], fid: str = "ar",
                    cname: str = "allreduce", series: str = "allreduce",
                    ) -> tuple[list[FlowSpec], list[Collective]]:
    """Ring all-reduce: 2(n-1) steps (reduce-scatter then all-gather); in each step every
    rank sends one chunk (buffer/n) to its successor once it has received its
    predecessor's chunk of the step before, as NCCL's ring forwards what it receives:
    the rank's own previous send is not waited for (it shares the QP to the successor,
    so the new chunk queues behind it); waiting for its ACK put a one-way trip per step
    on the critical path. An iteration starts on a rank when its last send of the one
    before completed and its last receive arrived. Flow ids start with `fid`,
    collective ids with `cname`."""
    n = len(ranks)
    chunk = max(1, -(-p.message_bytes // n))
    steps = 2 * (n - 1)
    flows: list[FlowSpec] = []
    colls: list[Collective] = []
    for it in range(p.iterations):
        cid = f"{cname}{it}"
        ids = []
        for k in range(steps):
            for i, r in enumerate(ranks):
                prev_rank = ranks[(i - 1) % n]
                if k > 0:
                    after: tuple[str, ...] = (_ar_id(it, k - 1, prev_rank, fid),)
                elif it > 0:
                    after = (_ar_id(it - 1, steps - 1, r, fid),
                             _ar_id(it - 1, steps - 1, prev_rank, fid))
                else:
                    after = ()
                this = _ar_id(it, k, r, fid)
                flows.append(FlowSpec(this, r, ranks[(i + 1) % n], chunk, after, cid))
                ids.append(this)
        colls.append(Collective(cid, "allreduce", tuple(ranks), p.message_bytes, tuple(ids),
                                series))
    return flows, colls


def _ar_id(it: int, step: int, rank: str, prefix: str = "ar") -> str:
    return f"{prefix}{it}-s{step}-{rank}"


def _alltoall(p: WorkloadParams, ranks: list[str]) -> tuple[list[FlowSpec], list[Collective]]:
    """All-to-all: every rank sends buffer/n bytes to every other rank, all at once; the
    next iteration starts on a rank once its sends completed and its receives arrived."""
    n = len(ranks)
    part = max(1, -(-p.message_bytes // n))
    flows: list[FlowSpec] = []
    colls: list[Collective] = []
    for it in range(p.iterations):
        cid = f"alltoall{it}"
        ids = []
        for src in ranks:
            after: tuple[str, ...] = ()
            if it > 0:
                after = tuple([f"a2a{it - 1}-{src}-{d}" for d in ranks if d != src]
                              + [f"a2a{it - 1}-{s}-{src}" for s in ranks if s != src])
            for dst in ranks:
                if dst != src:
                    fid = f"a2a{it}-{src}-{dst}"
                    flows.append(FlowSpec(fid, src, dst, part, after, cid))
                    ids.append(fid)
        colls.append(Collective(cid, "alltoall", tuple(ranks), p.message_bytes, tuple(ids),
                                "alltoall"))
    return flows, colls


# --------------------------------------------------------------------------- training


def flows_per_iteration(p: WorkloadParams, hosts: Sequence[str],
                        host_leaf: Mapping[str, str]) -> int:
    """How many flows one iteration of the pattern or collective holds, counted before
    any is built: a ring all-reduce over 4,096 hosts is 33.5 million flows, which took
    all memory while the limit was checked on one iteration built first."""
    def ring(g: int) -> int:
        return 2 * g * (g - 1)

    n = len(hosts)
    groups = [len(g) for g in leaf_groups(hosts, host_leaf)]
    dp = ring(n) if p.kind in ("dp", "mix") else 0
    tp = sum(ring(g) for g in groups if g >= 2) if p.kind in ("tp", "mix") else 0
    pp = (2 * min(groups) * p.microbatches * (len(groups) - 1)
          if p.kind in ("pp", "mix") and len(groups) >= 2 else 0)
    one = {"permutation": n, "incast": p.incast_senders or n - 1, "allreduce": ring(n),
           "alltoall": n * (n - 1), "background": 0}.get(p.kind, dp + tp + pp)
    return one * p.channels


def leaf_groups(hosts: Sequence[str], host_leaf: Mapping[str, str]) -> list[list[str]]:
    """The hosts grouped by leaf, leaves in order of their first host."""
    groups: dict[str, list[str]] = {}
    for h in hosts:
        groups.setdefault(host_leaf[h], []).append(h)
    return list(groups.values())


def _training(p: WorkloadParams, hosts: list[str],
              host_leaf: Mapping[str, str]) -> tuple[list[FlowSpec], list[Collective]]:
    """dp: one ring all-reduce over every host, the ring walking leaf by leaf (as NCCL
    orders its rings, so it crosses each leaf boundary once); tp: a ring all-reduce among
    the hosts of each leaf, all leaves at once; pp: point-to-point between pipeline
    stages, one stage per leaf; mix: the three at once, each paced by its own
    dependencies (communication of a 3D-parallel training step overlapping)."""
    groups = leaf_groups(hosts, host_leaf)
    flows: list[FlowSpec] = []
    colls: list[Collective] = []
    if p.kind in ("dp", "mix"):
        f, c = _ring_allreduce(p, [h for g in groups for h in g], "dp", "dp", "dp")
        flows += f
        colls += c
    # mix: each parallelism is its own communicator, on QPs of its own.
    own = p.kind == "mix"
    if p.kind in ("tp", "mix"):
        tp = [g for g in groups if len(g) >= 2]
        if not tp:
            raise WorkloadError("tensor parallelism needs a leaf with 2+ hosts")
        for g in tp:
            leaf = host_leaf[g[0]]
            f, c = _ring_allreduce(p, g, f"tp-{leaf}-", f"tp-{leaf}-", "tp")
            flows += [replace(x, qp=QP_TP) for x in f] if own else f
            colls += c
    if p.kind in ("pp", "mix"):
        f = _pipeline(p, groups)
        flows += [replace(x, qp=QP_PP) for x in f] if own else f
    return flows, colls


def _pipeline(p: WorkloadParams, stages: list[list[str]]) -> list[FlowSpec]:
    """Pipeline parallelism, one stage per leaf, `lanes` parallel pipelines (host j of
    every stage forms lane j). Per iteration, each of `microbatches` activations goes
    forward stage by stage, then its gradient comes back in reverse order (GPipe-like):
    a stage forwards microbatch m once it received m and sent m-1; the last stage
    returns the gradient of m once m arrived; earlier stages pass gradients on as they
    arrive. `message_bytes` per activation (and per gradient)."""
    if len(stages) < 2:
        raise WorkloadError("pipeline parallelism needs hosts under 2+ leaves (one stage each)")
    lanes = min(len(s) for s in stages)
    n_st = len(stages)
    flows: list[FlowSpec] = []
    for it in range(p.iterations):
        for lane in range(lanes):
            def fw(m: int, s: int, it: int = it, lane: int = lane) -> str:
                return f"pp{it}-l{lane}-f{m}-s{s}"  # microbatch m, stage s -> s+1

            def bw(m: int, s: int, it: int = it, lane: int = lane) -> str:
                return f"pp{it}-l{lane}-b{m}-s{s}"  # gradient of m, stage s+1 -> s

            prev_it = (f"pp{it - 1}-l{lane}-b{p.microbatches - 1}-s0",) if it else ()
            for m in range(p.microbatches):
                for s in range(n_st - 1):
                    after = ((fw(m - 1, s),) if m else ()) + \
                        ((fw(m, s - 1),) if s else prev_it)
                    flows.append(FlowSpec(fw(m, s), stages[s][lane], stages[s + 1][lane],
                                          p.message_bytes, after))
            # Every dependency is a flow its sender sent or received (the agents see no
            # other), so the last stage starts gradients once the last forward arrived.
            last = n_st - 2
            for m in range(p.microbatches):
                for s in reversed(range(n_st - 1)):
                    if s == last:
                        after = (fw(p.microbatches - 1, s),) if m == 0 else (bw(m - 1, s),)
                    else:
                        after = (bw(m, s + 1),) + ((bw(m - 1, s),) if m else ())
                    flows.append(FlowSpec(bw(m, s), stages[s + 1][lane], stages[s][lane],
                                          p.message_bytes, after))
    return flows


# --------------------------------------------------------------------------- background


def _background(p: WorkloadParams, hosts: list[str],
                rate_bps: Mapping[str, float]) -> list[FlowSpec]:
    """Poisson arrivals at every host (mean gap = mean size / (load x line rate)), each
    flow to a uniformly drawn other host, sizes from the distribution; in arrival order."""
    from .sizedist import SizeDistError, load_size_dist

    try:
        dist = load_size_dist(p.size_dist)
    except SizeDistError as exc:
        raise WorkloadError(str(exc)) from None
    rng = random.Random(f"background:{p.seed}")
    mean_bits = dist.mean() * p.size_scale * 8
    missing = [h for h in hosts if h not in rate_bps]
    if missing:
        raise WorkloadError(f"no line rate for host {missing[0]}")
    per_s = {src: p.background_load * rate_bps[src] / mean_bits for src in hosts}
    # Refused before drawing: a long window or a tiny size scale would otherwise draw
    # flows without end (a plan, not a run, must stay cheap).
    expected = sum(per_s.values()) * p.background_us * 1e-6
    if expected > MAX_BACKGROUND_FLOWS:
        raise WorkloadError(f"background traffic would start about {expected:.3g} flows; at "
                            f"most {MAX_BACKGROUND_FLOWS}: shorten background_us, lower "
                            "background_load or raise size_scale")
    arrivals: list[tuple[float, str, str, int]] = []
    for src in hosts:
        t = rng.expovariate(per_s[src])
        while t < p.background_us * 1e-6:
            dst = rng.choice([h for h in hosts if h != src])
            size = max(1, round(dist.sample(rng) * p.size_scale))
            if size > MAX_MESSAGE_BYTES:
                raise WorkloadError(f"size_scale {p.size_scale:g} makes a background flow of "
                                    f"{size} bytes; an RDMA message is under 2 GiB")
            arrivals.append((t, src, dst, size))
            t += rng.expovariate(per_s[src])
    arrivals.sort()
    return [FlowSpec(f"bg{i}-{src}-{dst}", src, dst, size, start_ns=t * 1e9)
            for i, (t, src, dst, size) in enumerate(arrivals)]
