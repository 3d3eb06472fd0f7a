"""NCCL-like channels: a collective split over several rings (all-to-all: parts), each
on queue pairs of its own, so ECMP hashes each channel's 5-tuple on its own."""

from __future__ import annotations

from collections import Counter

import pytest

from emu.experiments.agent_configs import AgentSettings, agent_configs
from emu.experiments.plan import host_rates
from emu.experiments.workloads import (
    CHANNEL_KINDS,
    MAX_CHANNELS,
    QP_BACKGROUND,
    QP_PP,
    QP_TP,
    Workload,
    WorkloadError,
    WorkloadParams,
    build_workload,
    channel_qp,
    flows_per_iteration,
)
from emu.topo import load_topology

FABRIC = load_topology("clos4")
LEAF = {h.name: h.switch for h in FABRIC.hosts}
RATES = host_rates(FABRIC)
MB = 1 << 20


def build(kind: str, **kw: object) -> Workload:
    return build_workload(WorkloadParams(kind, **kw), LEAF, RATES)  # type: ignore[arg-type]


def test_allreduce_is_one_ring_per_channel_on_its_own_queue_pairs() -> None:
    one, four = build("allreduce", message_bytes=MB), build("allreduce", message_bytes=MB,
                                                             channels=4)
    assert len(four.flows) == 4 * len(one.flows)
    assert {f.size_bytes for f in four.flows} == {MB // 4 // 8}
    assert four.total_bytes() == one.total_bytes()
    by_id = {f.id: f for f in four.flows}
    for f in four.flows:
        k = int(f.id.rsplit("-c", 1)[1])
        assert f.qp == channel_qp(0, k)
        # A channel's ring waits only on its own chunks.
        assert all(by_id[a].qp == f.qp for a in f.after)
    assert Counter(f.qp for f in four.flows) == {channel_qp(0, k): len(one.flows)
                                                 for k in range(4)}
    (c,) = four.collectives
    assert c.size_bytes == MB and set(c.flow_ids) == set(by_id)


def test_every_channel_dependency_is_local_to_the_sender() -> None:
    for kind in CHANNEL_KINDS:
        w = build(kind, message_bytes=4000, iterations=2, channels=3)
        by_id = {f.id: f for f in w.flows}
        assert len(by_id) == len(w.flows)
        for f in w.flows:
            for dep in f.after:
                assert f.src in (by_id[dep].src, by_id[dep].dst), (kind, f.id, dep)


def test_mix_channels_keep_each_communicator_apart() -> None:
    w = build("mix", message_bytes=8000, channels=2, background_load=0.2,
              size_dist="hadoop")
    qps = {kind: {f.qp for f in w.flows if f.id.startswith(kind)}
           for kind in ("dp", "tp", "pp", "bg")}
    assert qps == {"dp": {0, channel_qp(0, 1)}, "tp": {QP_TP, channel_qp(QP_TP, 1)},
                   "pp": {QP_PP, channel_qp(QP_PP, 1)}, "bg": {QP_BACKGROUND}}


def test_channel_queue_pairs_get_their_own_qpn_and_source_port() -> None:
    w = build("allreduce", message_bytes=MB, channels=MAX_CHANNELS)
    cfgs = agent_configs(FABRIC, w, AgentSettings())
    for name, cfg in cfgs.items():
        assert len(cfg.qps) == 2 * MAX_CHANNELS  # to its ring successor and predecessor
        assert len({q.qpn for q in cfg.qps}) == len(cfg.qps)
        assert all(q.qpn < 1 << 24 for q in cfg.qps)
        succ = [q for q in cfg.qps if q.peer == cfg.qps[0].peer]
        assert len({q.udp_sport for q in succ}) == MAX_CHANNELS
        for q in cfg.qps:  # the peer's QP of the same channel answers this one
            back = {p.qpn: p for p in cfgs[q.peer].qps}[q.peer_qpn]
            assert back.peer == name and back.peer_qpn == q.qpn


@pytest.mark.parametrize(("kw", "match"), [
    ({"kind": "permutation", "channels": 2}, "channels split collectives"),
    ({"kind": "incast", "channels": 2}, "channels split collectives"),
    ({"kind": "background", "channels": 2, "background_load": 0.2}, "channels split"),
    ({"kind": "allreduce", "channels": 0}, "channels must be 1..16"),
    ({"kind": "allreduce", "channels": MAX_CHANNELS + 1}, "channels must be 1..16"),
])
def test_channels_that_do_not_apply_are_refused(kw: dict[str, object], match: str) -> None:
    with pytest.raises(WorkloadError, match=match):
        build(**kw)  # type: ignore[arg-type]


def test_the_flow_limit_counts_every_channel() -> None:
    p = WorkloadParams("alltoall", channels=4)
    assert flows_per_iteration(p, list(LEAF), LEAF) == 4 * 8 * 7


def test_channels_reach_a_run_from_the_command_line_and_the_experiment_file(
        tmp_path: object) -> None:
    from pathlib import Path

    from emu.cli import build_parser
    from emu.experiments.commands import config_from_args
    from emu.experiments.experiment import loads_experiment

    args = build_parser().parse_args(["run", "clos4", "--virtual", "--channels", "4"])
    assert config_from_args(args).workload.channels == 4
    exp = loads_experiment("name: ch\nbase: {topology: clos4}\n"
                           "grid: {c: [{channels: 1}, {channels: 2}]}\n",
                           Path(str(tmp_path)) / "ch.yaml")
    assert [p.config.workload.channels for p in exp.points] == [1, 2]

