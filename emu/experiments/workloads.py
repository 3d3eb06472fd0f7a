"""Workloads as flow lists: permutation, incast, ring all-reduce, all-to-all.

Pure functions of (host names, leaf of each host, parameters): the same inputs give the
same flows, so agent configurations and tests are reproducible. A flow's `after` lists
flow ids that must have completed (sent) or arrived at its source first; the host agents
enforce it, so collectives pace themselves without a central coordinator.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

WorkloadKind = Literal["permutation", "incast", "allreduce", "alltoall"]
WORKLOAD_KINDS: tuple[str, ...] = ("permutation", "incast", "allreduce", "alltoall")


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

    def validate(self) -> None:
        if self.kind not in WORKLOAD_KINDS:
            raise WorkloadError(f"workload must be one of {', '.join(WORKLOAD_KINDS)}, "
                                f"got {self.kind!r}")
        if self.message_bytes < 1:
            raise WorkloadError(f"message_bytes must be >= 1, got {self.message_bytes}")
        if self.iterations < 1:
            raise WorkloadError(f"iterations must be >= 1, got {self.iterations}")
        if self.incast_senders < 0:
            raise WorkloadError("incast_senders must be >= 0")


@dataclass(frozen=True)
class FlowSpec:
    id: str
    src: str
    dst: str
    size_bytes: int
    after: tuple[str, ...] = ()
    collective: str = ""  # id of the collective operation it belongs to ("" for none)


@dataclass(frozen=True)
class Collective:
    """One collective operation (one iteration) and the flows that make it up."""

    id: str
    kind: Literal["allreduce", "alltoall"]
    ranks: tuple[str, ...]
    size_bytes: int  # per-rank buffer (nccl-tests' "size")
    flow_ids: tuple[str, ...]

    @property
    def bus_factor(self) -> float:
        """busbw = algbw x this (nccl-tests: 2(n-1)/n all-reduce, (n-1)/n all-to-all)."""
        n = len(self.ranks)
        return 2 * (n - 1) / n if self.kind == "allreduce" else (n - 1) / n


@dataclass(frozen=True)
class Workload:
    params: WorkloadParams
    flows: tuple[FlowSpec, ...]
    collectives: tuple[Collective, ...] = field(default=())

    def senders(self) -> list[str]:
        return sorted({f.src for f in self.flows})

    def total_bytes(self) -> int:
        return sum(f.size_bytes for f in self.flows)


def build_workload(params: WorkloadParams, host_leaf: Mapping[str, str]) -> Workload:
    """The flows of `params` over hosts `host_leaf` (host name -> its leaf switch), in
    the fabric's host order."""
    params.validate()
    hosts = list(params.hosts) if params.hosts else list(host_leaf)
    unknown = [h for h in hosts if h not in host_leaf]
    if unknown:
        raise WorkloadError(f"unknown host(s) {', '.join(unknown)}")
    if len(set(hosts)) != len(hosts):
        raise WorkloadError("hosts must be distinct")
    if len(hosts) < 2:
        raise WorkloadError(f"a workload needs at least 2 hosts, got {len(hosts)}")
    if params.kind == "permutation":
        return Workload(params, tuple(_permutation(params, hosts, host_leaf)))
    if params.kind == "incast":
        return Workload(params, tuple(_incast(params, hosts)))
    if params.kind == "allreduce":
        flows, colls = _ring_allreduce(params, hosts)
    else:
        flows, colls = _alltoall(params, hosts)
    return Workload(params, tuple(flows), tuple(colls))


def permutation_pairs(hosts: Sequence[str], host_leaf: Mapping[str, str],
                      seed: int) -> list[tuple[str, str]]:
    """Each host sends to exactly one host and receives from exactly one, always under
    another leaf (a derangement across leaves). Randomised by `seed`, deterministic."""
    rng = random.Random(seed)
    leaves = {host_leaf[h] for h in hosts}
    if len(leaves) < 2:
        raise WorkloadError("a permutation across leaves needs hosts under 2+ leaves")
    # Sattolo-style retries: cheap for fabric-sized host counts.
    for _ in range(10_000):
        dsts = list(hosts)
        rng.shuffle(dsts)
        if all(host_leaf[s] != host_leaf[d] for s, d in zip(hosts, dsts, strict=True)):
            return list(zip(hosts, dsts, strict=True))
    # A leaf holding more than half the hosts has no cross-leaf permutation.
    raise WorkloadError("no permutation sends every host to another leaf "
                        "(one leaf holds more than half of the hosts)")


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


def _ring_allreduce(p: WorkloadParams,
                    ranks: list[str]) -> tuple[list[FlowSpec], list[Collective]]:
    """Ring all-reduce: 2(n-1) steps (reduce-scatter then all-gather); in each step every
    rank sends one chunk (buffer/n) to its successor, once it has sent its previous
    chunk and received its predecessor's."""
    n = len(ranks)
    chunk = max(1, -(-p.message_bytes // n))
    steps = 2 * (n - 1)
    flows: list[FlowSpec] = []
    colls: list[Collective] = []
    for it in range(p.iterations):
        cid = f"allreduce{it}"
        ids = []
        for k in range(steps):
            for i, r in enumerate(ranks):
                prev_rank = ranks[(i - 1) % n]
                if k > 0:
                    after: tuple[str, ...] = (_ar_id(it, k - 1, r), _ar_id(it, k - 1, prev_rank))
                elif it > 0:
                    after = (_ar_id(it - 1, steps - 1, r), _ar_id(it - 1, steps - 1, prev_rank))
                else:
                    after = ()
                fid = _ar_id(it, k, r)
                flows.append(FlowSpec(fid, r, ranks[(i + 1) % n], chunk, after, cid))
                ids.append(fid)
        colls.append(Collective(cid, "allreduce", tuple(ranks), p.message_bytes, tuple(ids)))
    return flows, colls


def _ar_id(it: int, step: int, rank: str) -> str:
    return f"ar{it}-s{step}-{rank}"


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
        colls.append(Collective(cid, "alltoall", tuple(ranks), p.message_bytes, tuple(ids)))
    return flows, colls
