"""Flowlet switching and packet spraying on clos4."""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from emu.control import LbSettings
from emu.sim.fabric import SimFabric
from emu.topo import load_topology

from .helpers import diff, member_packets, member_taken, received

US = 1000


def test_flowlet_keeps_the_path_inside_the_timeout_and_moves_after_idle_gaps():
    sim = SimFabric(load_topology("clos4"), lb=LbSettings(mode="flowlet", flowlet_timeout_us=500))
    h1 = sim.hosts["h1"]
    # 100 packets 100 us apart: never idle for 500 us, so never a new member
    before = member_packets(sim, "leaf1", "leaf2")
    for psn in range(100):
        h1.send_udp("h3", sport=50000, psn=psn)
        sim.run_for(100 * US)
    used = diff(member_packets(sim, "leaf1", "leaf2"), before)
    assert list(used.values()) == [100]
    # 120 flowlets of 3 packets, separated by 2 ms of silence
    chosen: list[int] = []
    for burst in range(120):
        before = member_packets(sim, "leaf1", "leaf2")
        for k in range(3):
            h1.send_udp("h3", sport=50000, psn=1000 + burst * 3 + k)
            sim.run_for(60 * US)
        sim.run_for(200 * US)  # the last one reaches leaf1 (serialisation + delay)
        used = diff(member_packets(sim, "leaf1", "leaf2"), before)
        assert len(used) == 1 and sum(used.values()) == 3  # one member per flowlet
        chosen.append(next(iter(used)))
        sim.run_for(1800 * US)
    sim.run_until_idle()
    counts = Counter(chosen)
    assert set(counts) == set(sim.controller.routes("leaf1").by_leaf["leaf2"])
    # a flowlet gap is longer than any path-delay difference: no reordering
    psns = [p.psn for p in received(sim, "h3")]
    assert psns == sorted(psns) and len(psns) == 100 + 360


def test_a_new_flowlets_member_does_not_depend_on_the_switch_clock():
    """LetFlow draws a new flowlet's member at random: the same flowlets, sent after
    different idle times since the switches started, take the same members. Hashing the
    ingress timestamp made the pick depend on when a run started, not on its traffic."""
    def members(idle_us: int) -> list[int]:
        sim = SimFabric(load_topology("clos4"),
                        lb=LbSettings(mode="flowlet", flowlet_timeout_us=500))
        sim.run_for(idle_us * US)
        h1 = sim.hosts["h1"]
        # a new flowlet each time: 2 ms of silence between packets, timeout 500 us
        return [member_taken(sim, lambda sport=sport: h1.send_udp("h3", sport=sport),
                             2000 * US) for sport in range(50000, 50024)]

    first = members(0)
    assert len(set(first)) > 1
    assert members(12_345) == first == members(777_001)


def test_spray_rotates_consecutive_packets_over_all_members():
    sim = SimFabric(load_topology("clos4"), lb=LbSettings(mode="spray"))
    members = sim.controller.routes("leaf1").by_leaf["leaf2"]
    h1 = sim.hosts["h1"]
    seq = [member_taken(sim, lambda psn=psn: h1.send_udp("h3", sport=50000, psn=psn), 100 * US)
           for psn in range(12)]
    assert set(seq[:4]) == set(members)
    assert Counter(seq) == {m: 3 for m in members}
    sim.run_until_idle()
    assert len(received(sim, "h3")) == 12


# Flows from leaf1 to leaf2 (one group of 4 uplinks): (source, destination, UDP sport).
FLOWS = [("h1", "h3", 50000), ("h2", "h4", 50000), ("h1", "h4", 50001), ("h2", "h3", 50001)]


@pytest.mark.parametrize("n_flows", [2, 4])
def test_spray_rotates_every_interleaved_flow_over_every_member(n_flows):
    """Flows whose packets arrive in turn: with one rotation counter per group, 2 flows
    took 2 of the 4 uplinks each (h1 {3, 5}, h2 {4, 6}) and 4 flows one each. Each flow
    has its own rotation now, so 10 rounds give every flow every uplink 10 times."""
    sim = SimFabric(load_topology("clos4"), lb=LbSettings(mode="spray"))
    members = sim.controller.routes("leaf1").by_leaf["leaf2"]
    assert len(members) == 4
    flows = FLOWS[:n_flows]
    used: dict[tuple[str, str, int], Counter[int]] = {f: Counter() for f in flows}
    rounds = 10 * len(members)
    for psn in range(rounds):
        for f in flows:
            src, dst, sport = f
            send = functools.partial(sim.hosts[src].send_udp, dst, sport=sport, psn=psn)
            used[f][member_taken(sim, send)] += 1
    for f in flows:
        assert used[f] == {m: 10 for m in members}, (f, dict(used[f]))
    sim.run_until_idle()
    assert len(received(sim, "h3")) + len(received(sim, "h4")) == rounds * n_flows


def test_flowlet_keeps_its_port_when_another_member_of_its_group_fails():
    """A flowlet remembered the index of its member, so when a link failed and its group
    lost a member, the live flowlets behind the removed one moved to another port mid-
    flowlet (reordering them and colliding them). It remembers the port now: flowlets
    on surviving links stay, those on the failed link pick again."""
    sim = SimFabric(load_topology("clos4"), lb=LbSettings(mode="flowlet", flowlet_timeout_us=500))
    members = list(sim.controller.routes("leaf1").by_leaf["leaf2"])
    flows = [(src, dst, 50000 + k) for k in range(12) for src, dst in (("h1", "h3"), ("h2", "h4"))]

    def send_round(psn: int) -> dict[tuple[str, str, int], int]:
        taken = {}
        for src, dst, sport in flows:
            send = functools.partial(sim.hosts[src].send_udp, dst, sport=sport, psn=psn)
            taken[(src, dst, sport)] = member_taken(sim, send, 5 * US)
        return taken

    first = send_round(0)
    assert send_round(1) == first  # inside the timeout: the same port
    failed = members[0]  # the first member: every other one's index shifts down
    assert failed in first.values() and set(first.values()) - {failed}
    sim.link_down("leaf1", port=failed)
    assert failed not in sim.controller.routes("leaf1").by_leaf["leaf2"]
    after = send_round(2)
    for flow, port in first.items():
        if port != failed:
            assert after[flow] == port, flow
        else:
            assert after[flow] != failed, flow
    assert send_round(3) == after
