"""TE: pinned flows follow their computed paths; ECMP collisions are placed apart."""

from __future__ import annotations

from emu.control import Flow
from emu.sim.fabric import SimFabric
from emu.topo import load_topology

from .helpers import diff, member_packets, received, rx_total

US = 1000


def _ecmp_port(sim: SimFabric, sport: int) -> int:
    before = member_packets(sim, "leaf1", "leaf2")
    sim.hosts["h1"].send_udp("h3", sport=sport)
    sim.run_for(500 * US)
    (port,) = diff(member_packets(sim, "leaf1", "leaf2"), before)
    return port


def test_te_places_colliding_flows_on_disjoint_paths_and_pins_override_the_hash():
    sim = SimFabric(load_topology("clos4"))
    # four flows that ECMP puts on the same uplink
    by_port: dict[int, list[int]] = {}
    sport = 49152
    while True:
        by_port.setdefault(_ecmp_port(sim, sport), []).append(sport)
        collided = next((s for s in by_port.values() if len(s) == 4), None)
        if collided:
            break
        sport += 1
    sim.run_until_idle()
    sim.hosts["h3"].received.clear()
    ecmp_port = next(p for p, s in by_port.items() if s is collided)

    flows = [Flow("h1", "h3", sport=s, demand_bps=4e6) for s in collided]
    sim.controller.set_lb("te")
    placed = sim.controller.place_te(flows)
    spines = [p.path.switches[1] for p in placed]
    assert len(set(spines)) == 4  # disjoint paths

    for p in placed:
        spine_before = rx_total(sim, p.path.switches[1])
        before = member_packets(sim, "leaf1", "leaf2")
        for _ in range(5):
            sim.hosts["h1"].send_udp("h3", sport=p.flow.sport)
            sim.run_for(200 * US)
        (port,) = diff(member_packets(sim, "leaf1", "leaf2"), before)
        assert port == p.hops[0][1]  # the pinned path, whatever the hash says
        assert rx_total(sim, p.path.switches[1]) - spine_before == 5
    assert sum(1 for p in placed if p.hops[0][1] != ecmp_port) == 3

    # an unpinned flow still uses the hash
    assert _ecmp_port(sim, collided[0] + 10_000) in sim.controller.routes("leaf1").by_leaf["leaf2"]
    sim.run_until_idle()
    assert len(received(sim, "h3")) == 21
