"""ECMP: per-flow hashing with per-switch seeds; equal seeds polarize a fat-tree."""

from __future__ import annotations

import random

from emu.control import LbSettings
from emu.sim.fabric import SimFabric
from emu.topo import load_topology

from .helpers import diff, member_packets, received, rx_total


def test_one_flow_always_takes_one_path():
    sim = SimFabric(load_topology("clos4"))
    before = member_packets(sim, "leaf1", "leaf2")
    for psn in range(20):
        sim.hosts["h1"].send_udp("h3", sport=51234, psn=psn)
        sim.run_for(200_000)
    sim.run_until_idle()
    used = diff(member_packets(sim, "leaf1", "leaf2"), before)
    assert list(used.values()) == [20]
    assert [p.psn for p in received(sim, "h3")] == list(range(20))


def test_1000_flows_spread_evenly_over_4_uplinks():
    fabric = load_topology("clos4")
    sim = SimFabric(fabric)
    rng = random.Random(4791)
    dsts = [h.name for h in fabric.hosts if h.switch != "leaf1"]
    # every remote leaf is behind the same 4 uplinks: one group
    assert len(sim.controller.group_counters("leaf1")) == 1
    before = member_packets(sim, "leaf1", "leaf2")
    for _ in range(1000):
        sim.hosts[rng.choice(["h1", "h2"])].send_udp(rng.choice(dsts),
                                                       sport=rng.randrange(49152, 65536))
    sim.run_until_idle()
    per_port = diff(member_packets(sim, "leaf1", "leaf2"), before)
    assert sum(per_port.values()) == 1000
    assert len(per_port) == 4
    for port, n in per_port.items():
        assert 200 <= n <= 300, (port, per_port)


def _cores_reached(seed: int | None) -> dict[str, int]:
    fabric = load_topology("fattree4")
    sim = SimFabric(fabric, lb=LbSettings(seed=seed))
    rng = random.Random(17)
    dsts = [h.name for h in fabric.hosts if not h.switch.startswith("p1")]
    for _ in range(1000):
        sim.hosts[rng.choice(["h1", "h2"])].send_udp(rng.choice(dsts),
                                                       sport=rng.randrange(49152, 65536))
    sim.run_until_idle()
    assert sum(len(h.received) for h in sim.hosts.values()) == 1000
    return {c.name: rx_total(sim, c.name) for c in fabric.cores}


def test_equal_seeds_polarize_and_per_switch_seeds_do_not():
    same = _cores_reached(seed=7)
    assert sum(same.values()) == 1000
    assert sum(1 for n in same.values() if n > 0) == 2, same
    own = _cores_reached(seed=None)
    assert sum(own.values()) == 1000
    for core, n in own.items():
        assert 200 <= n <= 300, (core, own)
