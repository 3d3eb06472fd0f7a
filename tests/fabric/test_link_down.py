"""After the controller is told a link failed, traffic routes around it."""

from __future__ import annotations

import pytest

from emu.sim.fabric import SimFabric
from emu.topo import load_topology

from .helpers import received


def _all_pairs(sim: SimFabric) -> None:
    fabric = sim.fabric
    expected = {}
    for i, src in enumerate(fabric.hosts):
        for j, dst in enumerate(fabric.hosts):
            if src is not dst:
                for k in range(3):  # several flows per pair: several hashes
                    sport = 49152 + (i * 64 + j) * 4 + k
                    sim.hosts[src.name].send_udp(dst.name, sport=sport)
                    expected.setdefault(dst.name, set()).add((str(src.ip), sport))
    sim.run_until_idle()
    for dst in fabric.hosts:
        got = received(sim, dst.name)
        assert {(p.src_ip, p.sport) for p in got} == expected[dst.name], dst.name
        assert all(p.checksum_ok for p in got)


@pytest.mark.parametrize("topo, a, b", [("clos4", "leaf1", "spine2"),
                                         ("fattree4", "p1a1", "p1e2"),
                                         ("fattree4", "p2a2", "c4")])
def test_every_pair_reachable_and_nothing_sent_on_the_dead_link(topo, a, b):
    sim = SimFabric(load_topology(topo))
    link = sim.link_down(a, b)
    ends = [sim.port(link.a.node, link.a.port), sim.port(link.b.node, link.b.port)]
    before = [(p.stats.tx_frames, p.stats.tx_drops) for p in ends]
    _all_pairs(sim)
    assert [(p.stats.tx_frames, p.stats.tx_drops) for p in ends] == before
    for end in (link.a, link.b):
        assert sim.controller.port_counters(end.node)[end.port].tx_pkts == 0
    # and back up: the link carries traffic again
    sim.link_up(a, b)
    _all_pairs(sim)
    assert sum(p.stats.tx_frames for p in ends) > 0
