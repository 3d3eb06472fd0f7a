"""Agent configurations: valid for the agent, and both ends of each QP agree."""

from __future__ import annotations

import json
import math

import pytest

from emu.core.units import Dilation
from emu.experiments.agent_configs import (
    AgentSettings,
    agent_configs,
    base_rtt_s,
    path_queue_delay_s,
    udp_sport,
    window_pkts_for,
)
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.workloads import WORKLOAD_KINDS, WorkloadParams, build_workload
from emu.roce.config import AgentConfig
from emu.topo import load_topology

# clos4 on the wire at 20 Mb/s (100 Gb/s modelled / 5000): 5 ms per link.
FABRIC = load_topology("clos4").on_wire(Dilation(5000))
LEAF = {h.name: h.switch for h in FABRIC.hosts}


@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
@pytest.mark.parametrize("recovery", ["gbn", "sr"])
def test_configs_load_and_qps_pair_up(kind: str, recovery: str) -> None:
    bg = 0.3 if kind == "background" else 0.0  # background flows only: needs a load
    w = build_workload(WorkloadParams(kind, message_bytes=4096, iterations=2,  # type: ignore[arg-type]
                                      background_load=bg, size_scale=0.01), LEAF,
                       {h: 100e9 for h in LEAF})
    cfgs = agent_configs(FABRIC, w, AgentSettings(recovery=recovery))  # type: ignore[arg-type]
    # What the agent process reads: the JSON `emu run` writes, loaded by its own loader
    # (which raises on any schema problem), gives back the same configuration.
    loaded = {h: AgentConfig.from_dict(json.loads(json.dumps(c.to_dict())))
              for h, c in cfgs.items()}
    assert loaded == cfgs
    qps = {(h, q.qpn): q for h, c in loaded.items() for q in c.qps}
    for (h, _qpn), q in qps.items():
        back = qps[(q.peer, q.peer_qpn)]  # the peer's end answers this one
        assert back.peer == h and back.peer_qpn == q.qpn
        assert q.peer_ip == str(FABRIC.host(q.peer).ip)
        assert q.peer_mac == FABRIC.host(q.peer).mac
        assert q.recovery == recovery
    sent = {f.id for c in loaded.values() for f in c.flows}
    expected = {fid for c in loaded.values() for fid in c.expect}
    assert sent == expected == {f.id for f in w.flows}
    for h, c in loaded.items():
        for f in c.flows:
            spec = next(x for x in w.flows if x.id == f.id)
            assert spec.src == h and qps[(h, f.qpn)].peer == spec.dst


def test_rates_dilation_cc_and_rto() -> None:
    w = build_workload(WorkloadParams("incast", message_bytes=1000), LEAF)
    s = AgentSettings(cc="none", dilation=500, rto_wire_ms=50, start_delay_us=2000)
    cfgs = agent_configs(FABRIC, w, s)
    c = cfgs["h1"]
    link = FABRIC.links[FABRIC.host("h1").link]
    assert c.nic.line_rate_bps == pytest.approx(link.rate_bps * 500)
    assert c.nic.time_dilation == 500
    assert c.dcqcn.enabled is False
    # The RTO covers the path's round trip and full queues (both ways: one queue per
    # port), with margin.
    peer = c.qps[0].peer
    worst = path_queue_delay_s(FABRIC, "h1", peer, s.mtu_bytes, priority_queues=1)
    worst += base_rtt_s(FABRIC, "h1", peer, s.mtu_bytes)
    assert c.qps[0].rto_ns * 500 == pytest.approx(max(50e6, 2 * worst * 1e9), rel=1e-5)
    assert c.nic.min_rto_ns == 50_000_000
    assert all(f.start_us == 2000 for f in c.flows if not f.after)
    assert agent_configs(FABRIC, w, AgentSettings(cc="dcqcn"))["h1"].dcqcn.enabled


@pytest.mark.parametrize("cc", ["none", "dcqcn"])
def test_cc_none_agents_run_no_notification_point(cc: str) -> None:
    """Issue #13.6: `cc none` agents still sent CNPs; now their NICs have no NP at all."""
    from emu.core import MemLink, VirtualClock
    from emu.roce.agent import Agent

    w = build_workload(WorkloadParams("incast", message_bytes=1000), LEAF)
    cfgs = agent_configs(FABRIC, w, AgentSettings(cc=cc))  # type: ignore[arg-type]
    clk = VirtualClock()
    for h, c in cfgs.items():
        agent = Agent(c, clk, MemLink(clk).a)
        assert all((qp.responder.np is None) == (cc == "none") and
                   (qp.rp is None) == (cc == "none") for qp in agent.nic.qps.values()), h
        assert agent.summary()["cc"] == cc


def test_a_run_chooses_the_ack_class() -> None:
    from emu.experiments.config import RunConfig, RunConfigError
    from emu.experiments.plan import plan_run

    for ack_class in ("qp", "cnp"):
        plan = plan_run(RunConfig(ack_class=ack_class))  # type: ignore[arg-type]
        assert {c.nic.ack_class for c in plan.agents.values()} == {ack_class}
    assert plan_run(RunConfig()).agents["h1"].nic.ack_class == "qp"
    with pytest.raises(RunConfigError, match="ack_class must be one of qp, cnp"):
        RunConfig(ack_class="top").validate()  # type: ignore[arg-type]


def test_path_queue_delay_counts_every_full_queue_on_the_path() -> None:
    frame_s = (1024 + 82) * 8 / 20e6  # clos4 at 20 Mb/s: 64-packet queues
    same_leaf = path_queue_delay_s(FABRIC, "h1", "h2", 1024, priority_queues=1)
    cross = path_queue_delay_s(FABRIC, "h1", "h3", 1024, priority_queues=1)
    assert same_leaf == pytest.approx(2 * 64 * frame_s)  # leaf -> host, each way
    assert cross == pytest.approx(2 * 3 * 64 * frame_s)  # leaf up, spine down, leaf down
    # With priority queues an ACK in the CNP class waits for at most one data frame per
    # hop; in the QP's own class (the default) it queues behind the data like one queue.
    assert path_queue_delay_s(FABRIC, "h1", "h3", 1024, priority_queues=2, ack_class="cnp") == \
        pytest.approx((3 * 64 + 3) * frame_s)
    assert path_queue_delay_s(FABRIC, "h1", "h3", 1024, priority_queues=2) == cross


def test_rto_never_below_the_queueing_the_path_can_hold() -> None:
    w = build_workload(WorkloadParams("permutation", message_bytes=4096), LEAF)
    for pq in (1, 2):
        for ack_class in ("qp", "cnp"):
            s = AgentSettings(priority_queues=pq, ack_class=ack_class)  # type: ignore[arg-type]
            for h, c in agent_configs(FABRIC, w, s).items():
                assert c.nic.ack_class == ack_class
                for q in c.qps:
                    rto_s = q.rto_ns * s.dilation / 1e9
                    assert rto_s >= path_queue_delay_s(FABRIC, h, q.peer, 1024, pq, ack_class)
                    assert rto_s >= s.rto_wire_ms / 1e3


def test_hosts_without_flows_get_no_agent() -> None:
    w = build_workload(WorkloadParams("incast", incast_senders=2, incast_target="h8"), LEAF)
    assert sorted(agent_configs(FABRIC, w, AgentSettings())) == ["h1", "h2", "h8"]


def test_source_ports_spread_and_stable() -> None:
    ports = {udp_sport(a, b) for a in LEAF for b in LEAF if a != b}
    assert len(ports) > 50 and all(49152 <= p < 65536 for p in ports)
    assert udp_sport("h1", "h2") == udp_sport("h1", "h2") != udp_sport("h2", "h1")


def test_base_rtt_and_window_follow_the_path() -> None:
    """Hand calculation on clos4 at 20 Mb/s (5 ms per link): h1 -> h3 crosses four links
    each way; out, one 1106-byte frame per link; back, one 86-byte ACK per link."""
    rtt = base_rtt_s(FABRIC, "h1", "h3", 1024)
    assert rtt == pytest.approx(8 * 5e-3 + 4 * 1106 * 8 / 20e6 + 4 * 86 * 8 / 20e6)
    # 2 x BDP in 1106-byte frames (~ 2 x 92): a lone QP is never window-limited.
    bdp = rtt * 20e6 / (1106 * 8)
    assert window_pkts_for(FABRIC, "h1", "h3", AgentSettings()) == math.ceil(2 * bdp)
    assert window_pkts_for(FABRIC, "h1", "h3", AgentSettings(window_pkts=8)) == 8


def test_agents_carry_their_host_links_wire_delay() -> None:
    """Mininet's switch daemons delay only their own egress: each agent adds its host
    link's delay to what it sends (NicConfig.host_link_delay_ns), so a path has every
    link's delay both ways, as in virtual time."""
    w = build_workload(WorkloadParams("permutation", message_bytes=4096), LEAF)
    for name, c in agent_configs(FABRIC, w, AgentSettings()).items():
        link = FABRIC.links[FABRIC.host(name).link]
        assert c.nic.host_link_delay_ns == link.delay_ns == 5_000_000  # 1 us x 5000


def test_a_path_mtu_the_hosts_mtu_cannot_carry_is_refused() -> None:
    """mtu_bytes 4096 on clos4 (host MTU 1500): 4160-byte IP packets, which no NIC sends
    on a 1500-byte link and a veth refuses (EMSGSIZE); a virtual run carried them and
    reported the figures. 1024 fits (1088 bytes); incast4's MTU 9000 takes 4096."""
    from emu.experiments.config import RunConfig, RunConfigError
    from emu.experiments.plan import plan_run
    from emu.roce.wire import IB_MTUS, max_ip_bytes

    assert [max_ip_bytes(m) for m in IB_MTUS] == [320, 576, 1088, 2112, 4160]
    with pytest.raises(RunConfigError) as err:
        plan_run(RunConfig(virtual=True, mtu_bytes=4096))
    assert str(err.value) == (
        "run configuration: mtu_bytes 4096 (the RoCE path MTU) makes IP packets of up to "
        "4160 bytes; host h1 of clos4 has MTU 1500 (mtu_bytes 1024 is the largest path MTU "
        "that fits it; or raise the topology's mtu)")
    assert plan_run(RunConfig(virtual=True, mtu_bytes=1024)).agents
    assert plan_run(RunConfig(topo="incast4", virtual=True, mtu_bytes=4096,
                              workload=WorkloadParams("incast", message_bytes=4096,
                                                      incast_senders=4))).agents
    for bad in (255, 4097, 40964096):  # the hosts' NIC takes 256..4096
        with pytest.raises(RunConfigError, match=f"must be 256..4096, got {bad}"):
            RunConfig(mtu_bytes=bad).validate()


def test_plb_without_dcqcn_is_refused() -> None:
    """With cc none no receiver sends CNPs, so PLB never saw a congested round: the run
    was ECMP plus re-paths at timeouts, labelled ecmp+plb."""
    from emu.experiments.config import RunConfig, RunConfigError

    with pytest.raises(RunConfigError, match="plb needs cc dcqcn"):
        RunConfig(topo="clos4", plb=True, cc="none").validate()
    RunConfig(topo="clos4", plb=True).validate()


def test_plb_with_te_is_refused() -> None:
    """A PLB re-path changes the UDP source port that te_flow matches exactly: the flow
    fell back to the ECMP hash in a run labelled te."""
    from emu.control import LbMode
    from emu.experiments.config import RunConfig, RunConfigError

    with pytest.raises(RunConfigError, match="plb and lb te exclude each other"):
        RunConfig(topo="clos4", plb=True, lb=LbMode.TE).validate()


def test_a_binding_rto_floor_is_a_warning() -> None:
    """Real time keeps each RTO at 100 ms of wire time or more (timers wake late): at
    D = 2000 that is 50 us modelled, above clos4's in-leaf paths' own RTO (31 us), so
    their lost packets wait longer than in the modelled network; the run says so. At
    the built-in 1 Mb/s (D = 100000) and in virtual time (no floor) it says nothing."""
    fast = plan_run(RunConfig(topo="clos4", rate_bps=50_000_000))
    (note,) = [n for n in fast.notes if n.startswith("RTO")]
    assert "50 us modelled" in note and "31 us" in note and "8 of 16 host pairs" in note
    assert not any(n.startswith("RTO") for n in
                   plan_run(RunConfig(topo="clos4", rate_bps=1_000_000)).notes)
    assert not any(n.startswith("RTO") for n in
                   plan_run(RunConfig(topo="clos4", virtual=True, dilation=100.0)).notes)
