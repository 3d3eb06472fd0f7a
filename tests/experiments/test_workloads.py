"""Workload flow lists: who sends what to whom, and in which order."""

from __future__ import annotations

from collections import Counter

import pytest

from emu.experiments.workloads import (
    Collective,
    WorkloadError,
    WorkloadParams,
    build_workload,
    bus_factor,
    permutation_pairs,
)
from emu.topo import load_topology

FABRIC = load_topology("clos4")
LEAF = {h.name: h.switch for h in FABRIC.hosts}
HOSTS = list(LEAF)


def test_permutation_is_a_cross_leaf_derangement() -> None:
    for seed in range(20):
        pairs = permutation_pairs(HOSTS, LEAF, seed)
        assert sorted(s for s, _ in pairs) == sorted(HOSTS)
        assert sorted(d for _, d in pairs) == sorted(HOSTS)
        assert all(LEAF[s] != LEAF[d] for s, d in pairs)
    assert permutation_pairs(HOSTS, LEAF, 3) == permutation_pairs(HOSTS, LEAF, 3)
    assert len({tuple(permutation_pairs(HOSTS, LEAF, s)) for s in range(10)}) > 1


def test_permutation_impossible_when_one_leaf_holds_most_hosts() -> None:
    leaf = {"a": "l1", "b": "l1", "c": "l1", "d": "l2"}
    with pytest.raises(WorkloadError, match="more than half"):
        permutation_pairs(list(leaf), leaf, 1)


@pytest.mark.parametrize("leaves, per_leaf", [(16, 16), (3, 40), (2, 9), (100, 30)])
def test_permutation_with_many_hosts_per_leaf(leaves: int, per_leaf: int) -> None:
    """Random shuffles were drawn until none stayed within a leaf: with m hosts per leaf
    one succeeds about e^-m of the time, so 16 per leaf (a common rack) always failed,
    after 10,000 draws, blaming the topology ("one leaf holds more than half")."""
    leaf = {f"h{i}-{j}": f"leaf{i}" for i in range(leaves) for j in range(per_leaf)}
    hosts = list(leaf)
    pairs = permutation_pairs(hosts, leaf, 7)
    assert [s for s, _ in pairs] == hosts and sorted(d for _, d in pairs) == sorted(hosts)
    assert all(leaf[s] != leaf[d] for s, d in pairs)
    assert pairs == permutation_pairs(hosts, leaf, 7) != permutation_pairs(hosts, leaf, 8)
    # spread: one leaf's hosts send to several leaves, not all to the next one
    assert len({leaf[d] for s, d in pairs if leaf[s] == "leaf0"}) >= min(leaves - 1, 3)


def test_permutation_iterations_chain_per_pair() -> None:
    w = build_workload(WorkloadParams("permutation", message_bytes=1000, iterations=3), LEAF)
    assert len(w.flows) == 3 * 8
    by_id = {f.id: f for f in w.flows}
    for f in w.flows:
        for dep in f.after:
            assert by_id[dep].src == f.src and by_id[dep].dst == f.dst
    assert w.total_bytes() == 24_000


def test_incast_n_to_one() -> None:
    w = build_workload(WorkloadParams("incast", message_bytes=500, incast_senders=3,
                                      incast_target="h1"), LEAF)
    assert [(f.src, f.dst) for f in w.flows] == [("h2", "h1"), ("h3", "h1"), ("h4", "h1")]
    assert w.senders() == ["h2", "h3", "h4"]
    with pytest.raises(WorkloadError, match="only 7 other hosts"):
        build_workload(WorkloadParams("incast", incast_senders=8), LEAF)
    with pytest.raises(WorkloadError, match="not one of the hosts"):
        build_workload(WorkloadParams("incast", incast_target="h99"), LEAF)


def test_ring_allreduce_steps_chunks_and_dependencies() -> None:
    w = build_workload(WorkloadParams("allreduce", message_bytes=8000, iterations=2), LEAF)
    n = 8
    assert len(w.flows) == 2 * 2 * (n - 1) * n
    assert {f.size_bytes for f in w.flows} == {1000}
    by_id = {f.id: f for f in w.flows}
    ring = {h: HOSTS[(i + 1) % n] for i, h in enumerate(HOSTS)}
    for f in w.flows:
        assert f.dst == ring[f.src]
        for dep in f.after:  # own previous step, and the predecessor's (received here)
            d = by_id[dep]
            assert d.src == f.src or d.dst == f.src
    # inside an iteration a step waits only for the chunk it forwards (NCCL's ring), not
    # for the ACK of its own previous send: that put a one-way trip per step in the time
    assert by_id["ar0-s1-h2"].after == ("ar0-s0-h1",)
    firsts = [f for f in w.flows if not f.after]
    assert len(firsts) == n and all(f.id.startswith("ar0-s0-") for f in firsts)
    # the second iteration waits for the last step of the first
    assert by_id["ar1-s0-h2"].after == ("ar0-s13-h2", "ar0-s13-h1")
    c = w.collectives[0]
    assert c.kind == "allreduce" and c.size_bytes == 8000 and len(c.flow_ids) == 14 * 8
    assert c.bus_factor == pytest.approx(2 * 7 / 8)


def test_alltoall_everyone_to_everyone() -> None:
    w = build_workload(WorkloadParams("alltoall", message_bytes=8000), LEAF)
    pairs = Counter((f.src, f.dst) for f in w.flows)
    assert len(pairs) == 56 and set(pairs.values()) == {1}
    assert {f.size_bytes for f in w.flows} == {1000}
    assert w.collectives[0].bus_factor == pytest.approx(7 / 8)


def test_bus_factor_definitions() -> None:
    assert Collective("x", "allreduce", ("a", "b"), 1, ()).bus_factor == 1.0
    assert Collective("x", "alltoall", ("a", "b", "c", "d"), 1, ()).bus_factor == 0.75
    with pytest.raises(ValueError, match="no bus bandwidth factor for collective kind"):
        bus_factor("broadcast", 4)  # nccl-tests: 1, not the (n-1)/n once returned


@pytest.mark.parametrize("params, match", [
    (WorkloadParams("bogus"), "workload must be"),  # type: ignore[arg-type]
    (WorkloadParams(message_bytes=0), "message_bytes"),
    (WorkloadParams(message_bytes=1 << 31), "message_bytes must be 1..2147483647"),
    (WorkloadParams(iterations=0), "iterations"),
    (WorkloadParams(hosts=("h1",)), "at least 2 hosts"),
    (WorkloadParams(hosts=("h1", "hx")), "unknown host"),
])
def test_bad_parameters_say_which(params: WorkloadParams, match: str) -> None:
    with pytest.raises(WorkloadError, match=match):
        build_workload(params, LEAF)


def test_too_many_iterations_is_an_error_before_any_flow_is_built() -> None:
    """`emu run --iterations 100000000` built 11,200,000,000 flows until memory ran out;
    it is refused from one iteration's count."""
    from emu.experiments.workloads import MAX_PATTERN_FLOWS

    with pytest.raises(WorkloadError, match="100000000 iterations of 112 flows make "
                       "11200000000 flows; at most 1000000 in one run"):
        build_workload(WorkloadParams("allreduce", iterations=100_000_000), LEAF)
    per = len(build_workload(WorkloadParams("allreduce"), LEAF).flows)
    most = MAX_PATTERN_FLOWS // per
    assert len(build_workload(WorkloadParams("allreduce", message_bytes=1024,
                                             iterations=3), LEAF).flows) == 3 * per
    with pytest.raises(WorkloadError):
        build_workload(WorkloadParams("allreduce", iterations=most + 1), LEAF)


@pytest.mark.parametrize("topo", ["clos4", "fattree4", "oversub4", "asym4"])
def test_flows_are_counted_before_they_are_built(topo: str) -> None:
    """The count that guards memory is each pattern's real size, so no run is refused
    that would fit and none is built that would not: a ring all-reduce over 4,096 hosts
    (33.5 million flows) took 20 GB and minutes before, the limit being checked on one
    iteration built first."""
    from emu.experiments.workloads import WORKLOAD_KINDS, flows_per_iteration

    leaf = {h.name: h.switch for h in load_topology(topo).hosts}
    hosts = list(leaf)
    for kind in WORKLOAD_KINDS:
        if kind == "background":
            continue
        for iterations in (1, 3):
            p = WorkloadParams(kind, message_bytes=4096, iterations=iterations,  # type: ignore[arg-type]
                               microbatches=2)
            try:
                w = build_workload(p, leaf)
            except WorkloadError:
                continue  # tp on a fabric without 2 hosts on a leaf, and the like
            assert len(w.flows) == iterations * flows_per_iteration(p, hosts, leaf), kind
    big = {f"h{i}": f"leaf{i // 64}" for i in range(4096)}
    with pytest.raises(WorkloadError, match="allreduce over 4096 hosts makes 33546240 "
                       "flows; at most 1000000 in one run"):
        build_workload(WorkloadParams("allreduce"), big)
