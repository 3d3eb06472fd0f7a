"""Every host pair is reachable, and what arrives is well formed."""

from __future__ import annotations

import pytest

from emu.sim.fabric import SimFabric
from emu.sim.frames import udp_frame
from emu.topo import load_topology
from emu.topo.paths import equal_cost_paths

from .helpers import received


@pytest.mark.parametrize("topo", ["clos4", "fattree4"])
def test_all_pairs_reachable_and_well_formed(topo):
    fabric = load_topology(topo)
    sim = SimFabric(fabric)
    sent: dict[str, set[tuple[str, int]]] = {h.name: set() for h in fabric.hosts}
    for i, src in enumerate(fabric.hosts):
        for j, dst in enumerate(fabric.hosts):
            if src is dst:
                continue
            sport = 49152 + i * 64 + j
            sim.hosts[src.name].send_udp(dst.name, sport=sport, ttl=64, ecn=2)
            sent[dst.name].add((str(src.ip), sport))
    sim.run_until_idle()
    for dst in fabric.hosts:
        leaf = fabric.switch(dst.switch)
        got = received(sim, dst.name)
        assert {(p.src_ip, p.sport) for p in got} == sent[dst.name]
        assert len(got) == len(sent[dst.name])  # no duplicates
        for p in got:
            src_leaf = fabric.leaf_of_ip(p.src_ip).name
            hops = len(equal_cost_paths(fabric, src_leaf, leaf.name)[0].switches)
            assert p.ttl == 64 - hops
            assert p.checksum_ok
            assert p.dst_mac == dst.mac and p.src_mac == leaf.mac
            assert p.dst_ip == str(dst.ip)
            assert p.ecn == 2  # no queues here: never marked


def test_ttl_expiry_bad_checksum_and_unknown_destination_are_dropped_and_counted():
    fabric = load_topology("clos4")
    sim = SimFabric(fabric)
    h1 = sim.hosts["h1"]
    h1.send_udp("h3", sport=1, ttl=1)           # would leave leaf1 with TTL 0
    h1.send_udp("h3", sport=2, ttl=2)           # dies at the spine
    bad = bytearray(h1.udp_to("h3", sport=3))
    bad[24] ^= 0xFF                              # corrupt the IPv4 header checksum
    h1.send(bytes(bad))
    h1.send(udp_frame(fabric.host("h1").mac, fabric.host("h1").gateway_mac, "10.0.1.1",
                      "10.9.9.9", 4))           # no route
    h1.send_udp("h3", sport=5, ttl=3)           # leaf1 -> 2, spine -> 1, leaf2 drops
    sim.run_until_idle()
    assert received(sim, "h3") == []
    leaf1 = sim.controller.port_counters("leaf1")
    assert leaf1[1].drops == 3  # ttl 1, bad checksum, no route
    assert sum(c.drops for c in sim.controller.port_counters("leaf2").values()) == 1
    spine_drops = sum(c.drops for s in ("spine1", "spine2", "spine3", "spine4")
                      for c in sim.controller.port_counters(s).values())
    assert spine_drops == 1
    h1.send_udp("h3", sport=6, ttl=4)
    sim.run_until_idle()
    (p,) = received(sim, "h3")
    assert p.ttl == 1 and p.checksum_ok


def test_leaves_numbered_past_one_octet_route():
    """Leaf 256 on has a subnet of 10.1.x.0/24 (leaves were at most 254, in 10.0.x, so
    a k = 24 fat tree could not be built): frames cross between the two ranges."""
    from emu.topo import fattree_fabric

    fabric = fattree_fabric(24)
    sim = SimFabric(fabric)
    last = len(fabric.hosts)
    pairs = [("h1", f"h{last}"), (f"h{last}", "h1"), ("h3060", "h3061"), ("h3061", "h3073"),
             (f"h{last - 1}", "h2")]
    for n, (src, dst) in enumerate(pairs):
        sim.hosts[src].send_udp(dst, sport=49152 + n)
    sim.run_until_idle()
    for n, (src, dst) in enumerate(pairs):
        got = [p for p in received(sim, dst, clear=False) if p.sport == 49152 + n]
        assert [(p.src_ip, p.dst_ip) for p in got] == \
            [(str(fabric.host(src).ip), str(fabric.host(dst).ip))]
    assert (str(fabric.host(f"h{last}").ip), str(fabric.host("h3061").ip)) == \
        ("10.1.32.12", "10.1.0.1")
