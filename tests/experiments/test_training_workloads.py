"""Training-cluster workloads (dp, tp, pp, mix), Poisson background traffic, size
distributions and FCT slowdown."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from emu.core.units import Dilation
from emu.experiments.config import RunConfig
from emu.experiments.fct import IdealFct, slowdown_buckets, with_slowdown
from emu.experiments.metrics import FlowResult
from emu.experiments.plan import host_rates, plan_run
from emu.experiments.sizedist import SizeDistError, load_size_dist, parse_size_dist
from emu.experiments.workloads import (
    QP_BACKGROUND,
    QP_PP,
    QP_TP,
    WORKLOAD_KINDS,
    WorkloadError,
    WorkloadParams,
    build_workload,
)
from emu.topo import load_topology

FABRIC = load_topology("clos4")
LEAF = {h.name: h.switch for h in FABRIC.hosts}
RATES = host_rates(FABRIC)


def build(kind: str, **kw: object) -> object:
    return build_workload(WorkloadParams(kind, **kw), LEAF, RATES)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
def test_every_dependency_is_local_to_the_sender(kind: str) -> None:
    """An agent only sees flows it sent or received: a dependency on anything else
    would never be met (the run would hang)."""
    w = build_workload(WorkloadParams(kind, message_bytes=4000, iterations=2,  # type: ignore[arg-type]
                                      background_load=0.3, size_scale=0.01), LEAF, RATES)
    by_id = {f.id: f for f in w.flows}
    assert len(by_id) == len(w.flows)
    for f in w.flows:
        for dep in f.after:
            assert f.src in (by_id[dep].src, by_id[dep].dst), (f.id, dep)


def test_dp_is_one_ring_over_every_host_leaf_by_leaf() -> None:
    w = build("dp", message_bytes=8000)
    (c,) = w.collectives
    assert c.id == "dp0" and c.ranks == tuple(LEAF) and c.kind == "allreduce"
    cross = {(f.src, f.dst) for f in w.flows if LEAF[f.src] != LEAF[f.dst]}
    assert len(cross) == 4  # one hop per leaf boundary of the ring


def test_tp_is_an_allreduce_per_leaf_that_never_leaves_it() -> None:
    w = build("tp", message_bytes=8000)
    assert sorted(c.id for c in w.collectives) == [f"tp-leaf{i}-0" for i in range(1, 5)]
    assert all(LEAF[f.src] == LEAF[f.dst] for f in w.flows)
    assert all(len(c.ranks) == 2 for c in w.collectives)


def test_pp_moves_activations_forward_and_gradients_back_between_leaves() -> None:
    w = build("pp", message_bytes=1000, microbatches=3, iterations=2)
    # 4 stages (leaves) x 2 lanes: 3 boundaries, 3 microbatches, both directions
    assert len(w.flows) == 2 * 2 * 3 * 3 * 2
    assert all(LEAF[f.src] != LEAF[f.dst] for f in w.flows)
    by_id = {f.id: f for f in w.flows}
    assert [f.id for f in w.flows if not f.after] == ["pp0-l0-f0-s0", "pp0-l1-f0-s0"]
    # the last stage turns microbatch 0 around once the last forward arrived
    assert by_id["pp0-l0-b0-s2"].after == ("pp0-l0-f2-s2",)
    assert by_id["pp1-l0-f0-s0"].after == ("pp0-l0-b2-s0",)  # next step after the last gradient
    assert w.collectives == ()


def test_mix_runs_the_three_at_once() -> None:
    w = build("mix", message_bytes=8000)
    prefixes = Counter(f.id.split("-")[0].rstrip("0123456789") for f in w.flows)
    assert set(prefixes) == {"dp", "tp", "pp"}
    assert len(w.collectives) == 1 + 4


def test_tp_and_pp_reject_fabrics_they_cannot_use() -> None:
    with pytest.raises(WorkloadError, match="2\\+ leaves"):
        build_workload(WorkloadParams("pp", hosts=("h1", "h2")), LEAF)
    with pytest.raises(WorkloadError, match="leaf with 2\\+ hosts"):
        build_workload(WorkloadParams("tp", hosts=("h1", "h3", "h5")), LEAF)


def test_background_offers_the_target_load_as_poisson_arrivals() -> None:
    dist = load_size_dist("websearch")
    w = build("background", background_load=0.4, background_us=20_000, size_scale=0.01)
    starts = [f.start_ns for f in w.flows]
    assert starts == sorted(starts) and 0 < starts[0] and starts[-1] < 20_000e3
    assert all(f.src != f.dst and not f.after for f in w.flows)
    for h in LEAF:  # offered bytes per host ~ load x line rate x window
        sent = sum(f.size_bytes for f in w.flows if f.src == h) * 8
        assert 0.25 < sent / (100e9 * 20e-3) < 0.6, h
    total = sum(f.size_bytes for f in w.flows) * 8 / (8 * 100e9 * 20e-3)
    assert total == pytest.approx(0.4, rel=0.15)
    # exponential gaps: their coefficient of variation is ~1
    gaps = [b - a for a, b in zip(sorted(f.start_ns for f in w.flows if f.src == "h1"),
                                  sorted(f.start_ns for f in w.flows if f.src == "h1")[1:],
                                  strict=False)]
    mean = sum(gaps) / len(gaps)
    sd = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5
    assert 0.8 < sd / mean < 1.2
    assert dist.sizes[-1] * 0.01 >= max(f.size_bytes for f in w.flows)
    assert w == build("background", background_load=0.4, background_us=20_000, size_scale=0.01)


def test_background_rides_beside_another_workload() -> None:
    w = build("allreduce", message_bytes=8000, background_load=0.2, size_dist="hadoop")
    assert any(f.id.startswith("bg") for f in w.flows) and w.collectives
    with pytest.raises(WorkloadError, match="line rates"):
        build_workload(WorkloadParams("background", background_load=0.2), LEAF)
    with pytest.raises(WorkloadError, match="background_load > 0"):
        build("background")
    with pytest.raises(WorkloadError, match="not a built-in"):
        build("background", background_load=0.2, size_dist="/nonexistent.cdf")


def test_background_beside_a_workload_has_its_own_queue_pairs() -> None:
    """Background traffic is another application's: its own QP per host pair, with its
    own UDP source port, so the NIC serves it beside the workload's messages. Sharing
    the workload's QP put a ring step behind a whole background message (RC completes
    a QP's messages in order). Background alone keeps the first QPs."""
    from emu.experiments.agent_configs import AgentSettings, agent_configs

    w = build("allreduce", message_bytes=8000, background_load=0.2, size_dist="hadoop")
    assert {f.qp for f in w.flows if f.id.startswith("bg")} == {QP_BACKGROUND}
    assert {f.qp for f in w.flows if not f.id.startswith("bg")} == {0}
    cfgs = agent_configs(FABRIC, w, AgentSettings())  # type: ignore[arg-type]
    for name, cfg in cfgs.items():
        qps = {q.qpn: q for q in cfg.qps}
        for f in cfg.flows:
            peer = qps[f.qpn].peer
            same_pair = [q for q in cfg.qps if q.peer == peer]
            if f.id.startswith("bg") and any(not g.id.startswith("bg") and
                                             qps[g.qpn].peer == peer for g in cfg.flows):
                assert len(same_pair) == 2  # the workload's QP and the background's
                assert len({q.udp_sport for q in same_pair}) == 2
            # The peer's QP answers this one.
            back = {q.qpn: q for q in cfgs[peer].qps}[qps[f.qpn].peer_qpn]
            assert back.peer == name and back.peer_qpn == f.qpn
    alone = build("background", background_load=0.2, size_dist="hadoop")
    assert {f.qp for f in alone.flows} == {0}


def test_mix_gives_each_parallelism_its_own_queue_pairs() -> None:
    """NCCL connects each communicator on its own: in mix, the dp ring and the tp ring of
    a leaf both send h1 -> h2, and on one QP a tp step waited behind a dp chunk."""
    w = build("mix", message_bytes=8000)
    by_qp = {kind: {f.qp for f in w.flows if f.id.startswith(kind)}
             for kind in ("dp", "tp", "pp")}
    assert by_qp == {"dp": {0}, "tp": {QP_TP}, "pp": {QP_PP}}
    pairs = {kind: {(f.src, f.dst) for f in w.flows if f.id.startswith(kind)}
             for kind in ("dp", "tp")}
    assert pairs["dp"] & pairs["tp"]  # the case this is about
    for kind in ("tp", "pp"):  # alone, a parallelism is the workload
        assert {f.qp for f in build(kind, message_bytes=8000).flows} == {0}


def test_a_background_message_does_not_hold_up_the_collective() -> None:
    """Seed 19 draws a 1.5 MB background message h1 -> h3 at 0.45 us, beside a 2-rank
    all-reduce between the same hosts (31.3 us alone). On the workload's own QP the
    first all-reduce waited for the whole message (159 us); on its own QP the two
    share the link (49 us) and every all-reduce ends within twice its time alone."""
    from emu.experiments.virtual import run_virtual

    def times(load: float) -> list[float]:
        wl = WorkloadParams("allreduce", message_bytes=256 * 1024, hosts=("h1", "h3"),
                            iterations=8, background_load=load, background_us=100.0,
                            seed=19)
        plan = plan_run(RunConfig(topo="clos4", virtual=True, progress=False, workload=wl))
        if load:
            big = [f for f in plan.workload.flows if f.size_bytes > 1_000_000]
            assert [(f.src, f.dst) for f in big] == [("h1", "h3")] and big[0].start_ns < 1e3
        s = run_virtual(plan, write=False)
        assert s.ok
        return [c.time_nominal_s for c in s.collectives if c.time_nominal_s is not None]

    alone, shared = times(0.0), times(0.9)
    assert len(alone) == len(shared) == 8
    assert max(shared) < 2 * max(alone)
    assert max(shared) > 1.2 * max(alone)  # the link is shared: slower, not untouched


def test_size_distributions_ship_and_sample_their_cdf() -> None:
    web, hdp = load_size_dist("websearch"), load_size_dist("hadoop")
    assert web.cdf[-1] == hdp.cdf[-1] == 100
    rng = random.Random(3)
    xs = sorted(hdp.sample(rng) for _ in range(20_000))
    assert xs[len(xs) // 2] == pytest.approx(700, rel=0.05)  # the 50 % point
    assert sum(xs) / len(xs) == pytest.approx(hdp.mean(), rel=0.15)
    assert web.mean() == pytest.approx(1.71e6, rel=0.01)  # web search: mostly bytes in big flows
    for name in ("websearch", "hadoop"):
        head = (Path("emu/experiments/sizes") / f"{name}.cdf").read_text()
        assert "High-Precision-Congestion-Control" in head  # the source is named


@pytest.mark.parametrize("text, match", [
    ("10 50\n5 100\n", "must not decrease"),
    ("10 50\n20 90\n", "100 percent"),
    ("10\n", "expected"),
    ("a b\n1 100\n", "not numbers"),
    ("1 100\n", "two points"),
])
def test_bad_size_distribution_says_where(text: str, match: str) -> None:
    with pytest.raises(SizeDistError, match=match):
        parse_size_dist(text, "x.cdf")


def test_start_times_reach_the_agents_on_the_wire_clock() -> None:
    cfg = RunConfig(topo="clos4", virtual=True, dilation=1000, start_delay_s=0.1,
                    workload=WorkloadParams("background", background_load=0.3,
                                            size_scale=0.01))
    plan = plan_run(cfg)
    specs = {f.id: f for f in plan.workload.flows}
    flows = [f for a in plan.agents.values() for f in a.flows]
    assert flows
    for f in flows:  # start_us is clock time: 0.1 s, then modelled ns x 1000
        assert f.start_us == pytest.approx(0.1e6 + specs[f.id].start_ns * 1000 / 1e3)


def flow(size: int, fct_s: float | None, src: str = "h1", dst: str = "h3") -> FlowResult:
    return FlowResult("f", src, dst, size, "", True, True, True, 0.0, 1.0, fct_s, None, None)


def test_slowdown_is_fct_over_the_empty_fabric_ideal_in_modelled_time() -> None:
    ideal = IdealFct(FABRIC, 1024)
    # h1 -> h3: leaf1 - spine - leaf2, 4 links of 1 us each way at 100 Gb/s; 977 packets
    # of 1024 + 82 bytes leave back to back (the first + 16 of RETH, the last 576 + 4 of
    # ImmDt + 82): the first crosses 3 hops, then all go through the last, an 86-byte
    # ACK comes back
    one_mb = ideal("h1", "h3", 1_000_000)
    pkts = 4 * 1122 + 975 * 1106 + 662
    assert one_mb == pytest.approx(8e-6 + (pkts + 86 * 4) * 8 / 100e9, rel=1e-12)
    d = Dilation(1000)
    out = with_slowdown([flow(1_000_000, 2 * one_mb * 1000), flow(500, None)], FABRIC, d, 1024)
    assert out[0].slowdown == pytest.approx(2.0)
    assert out[0].fct_nominal_s == pytest.approx(2 * one_mb)
    assert out[1].slowdown is None
    (b,) = slowdown_buckets(out)
    assert (b.bucket, b.flows, b.p50) == ("1MB-10MB", 1, pytest.approx(2.0))


def test_the_ideal_takes_the_fastest_equal_cost_path() -> None:
    """asym4: one of leaf1's four uplinks is 50 Gb/s and 1.5 us. The ideal was the
    slowest path's, so a flow a load balancer kept off that uplink showed a slowdown
    of 0.89 (`emu run asym4 --lb te --workload alltoall --size 1`), and one on it
    looked ideal. The best the empty fabric allows is the fastest path."""
    asym = load_topology("asym4")
    ideal = IdealFct(asym, 1024)
    # 4 links of 1 us and 100 Gb/s each way: a 106-byte frame out (1 byte padded to 4,
    # RETH 16, ImmDt 4, 82 of headers and wire overhead), an 86-byte ACK back
    fast_rtt = 8e-6 + 4 * (4 + 20 + 82) * 8 / 100e9 + 4 * 86 * 8 / 100e9
    assert ideal("h1", "h3", 1) == pytest.approx(fast_rtt)
    # a lone 1-byte flow that crossed the slow uplink (1.5 us and 50 Gb/s out, back the
    # same way) is slower than ideal
    slow_rtt = 9e-6
    (f,) = with_slowdown([flow(1, slow_rtt)], asym, Dilation(1), 1024)
    assert f.slowdown is not None and f.slowdown > 1.05


def test_a_lone_flow_runs_at_slowdown_about_one() -> None:
    from emu.experiments.virtual import run_virtual

    for size, delay in ((600, True), (200_000, True), (1500, False), (200_000, False)):
        cfg = RunConfig(topo="clos4", virtual=True, progress=False, start_delay_s=0,
                        link_delay=delay,
                        workload=WorkloadParams("incast", message_bytes=size,
                                                incast_senders=1, incast_target="h3"))
        s = run_virtual(plan_run(cfg), write=False)
        (f,) = s.flows
        # exactly the ideal (its frames as carried: headers, RETH, ImmDt, padding)
        assert f.slowdown == pytest.approx(1.0, abs=1e-9), (size, delay, f.slowdown)
        assert s.fct_slowdown[0].flows == 1


def test_a_lone_short_flow_without_link_delay_is_not_faster_than_ideal() -> None:
    """The ideal was size x 8 / rate + a base RTT that serialises one packet at every
    hop, the first included: one packet counted twice. Where serialisation is all there
    is (no link delay) a 1500-byte flow's slowdown came out 0.77 (asym4, same leaf)."""
    from emu.experiments.virtual import run_virtual

    cfg = RunConfig(topo="asym4", virtual=True, progress=False, start_delay_s=0,
                    link_delay=False,
                    workload=WorkloadParams("incast", message_bytes=1500,
                                            incast_senders=1, incast_target="h2"))
    (f,) = run_virtual(plan_run(cfg), write=False).flows
    assert f.slowdown == pytest.approx(1.0, abs=1e-9), f.slowdown


def test_slowdown_reaches_flows_jsonl_and_summary_json(tmp_path: Path) -> None:
    import json

    from emu.experiments.virtual import run_virtual

    cfg = RunConfig(topo="clos4", virtual=True, progress=False, start_delay_s=0,
                    results_root=tmp_path,
                    workload=WorkloadParams("background", background_load=0.3,
                                            size_dist="hadoop", background_us=20))
    s = run_virtual(plan_run(cfg), console=_quiet_console())
    run_dir = Path(str(s.run["results_dir"]))
    rows = [json.loads(x) for x in (run_dir / "flows.jsonl").read_text().splitlines()]
    assert rows and all(r["slowdown"] > 0 and r["ideal_fct_s"] > 0 for r in rows)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert sum(b["flows"] for b in summary["fct_slowdown"]) == len(rows)
    assert "FCT slowdown by flow size" in (run_dir / "summary.txt").read_text()


def _quiet_console() -> object:
    import io

    from rich.console import Console

    return Console(file=io.StringIO())


@pytest.mark.parametrize("kind", ["dp", "tp", "pp", "mix"])
def test_training_workloads_run_to_completion(kind: str) -> None:
    """Their dependencies pace them without deadlock: every flow delivered, verified,
    every collective timed."""
    from emu.experiments.virtual import run_virtual

    cfg = RunConfig(topo="clos4", virtual=True, progress=False, start_delay_s=0,
                    workload=WorkloadParams(kind, message_bytes=64 * 1024,  # type: ignore[arg-type]
                                            microbatches=2))
    plan = plan_run(cfg)
    s = run_virtual(plan, write=False)
    assert s.ok and len(s.flows) == len(plan.workload.flows)
    assert all(c.completed and c.busbw_nominal_Bps for c in s.collectives)
    assert len(s.collectives) == len(plan.workload.collectives)


@pytest.mark.parametrize(("kw", "match"), [
    # An infinite window drew arrivals forever (the plan hung); nan passed `<= 0`.
    ({"background_us": float("inf")}, "positive and finite"),
    ({"background_us": float("nan")}, "positive and finite"),
    ({"size_scale": float("nan")}, "positive and finite"),
    # A finite but huge window drew millions of flows before anything ran.
    ({"background_us": 1e9}, "would start about .* flows; at most"),
    ({"size_scale": 1e4, "background_us": 1e7}, "under 2 GiB"),
])
def test_background_that_cannot_be_planned_is_refused_at_once(
        kw: dict[str, float], match: str) -> None:
    from emu.experiments.workloads import WorkloadError

    with pytest.raises(WorkloadError, match=match):
        build("background", background_load=0.4, **kw)
