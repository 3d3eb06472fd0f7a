"""Groups of 16 members (a leaf under 16 spines): fabric.p4 held 8, so a 16-spine Clos,
a common AI-fabric leaf, could not be routed at all. Every mode reaches every member."""

from __future__ import annotations

from collections import Counter

import pytest

from emu.control import LbSettings
from emu.control.params import MAX_MEMBERS
from emu.sim.fabric import SimFabric
from emu.topo import clos_fabric

from .helpers import diff, member_packets, member_taken, received

US = 1000


def wide(mode: str) -> SimFabric:
    return SimFabric(clos_fabric(leaves=2, spines=16, hosts_per_leaf=1), lb=LbSettings(mode=mode))


def test_spray_rotates_over_all_16_members_in_order() -> None:
    sim = wide("spray")
    members = sim.controller.routes("leaf1").by_leaf["leaf2"]
    assert len(members) == MAX_MEMBERS == 16
    h1 = sim.hosts["h1"]
    seq = [member_taken(sim, lambda psn=psn: h1.send_udp("h2", sport=50000, psn=psn), 50 * US)
           for psn in range(48)]
    assert seq[:16] == seq[16:32] == seq[32:]  # one rotation every 16 packets
    assert sorted(seq[:16]) == sorted(members)
    sim.run_until_idle()
    assert len(received(sim, "h2")) == 48


@pytest.mark.parametrize("mode", ["ecmp", "adaptive"])
def test_hashed_flows_land_on_every_one_of_16_members(mode: str) -> None:
    """400 flows (source ports) of one packet each; with empty queues adaptive picks the
    ecmp member. Each packet leaves by the port of the member its index names."""
    sim = wide(mode)
    members = sim.controller.routes("leaf1").by_leaf["leaf2"]
    before = member_packets(sim, "leaf1", "leaf2")
    for sport in range(400):
        sim.hosts["h1"].send_udp("h2", sport=40000 + sport, psn=sport)
        sim.run_for(20 * US)
    used = diff(member_packets(sim, "leaf1", "leaf2"), before)
    assert set(used) == set(members) and sum(used.values()) == 400
    assert min(used.values()) >= 10  # about 25 each
    sim.run_until_idle()
    assert Counter(p.psn for p in received(sim, "h2")) == Counter(range(400))


def test_adaptive_avoids_a_deep_queue_beyond_the_eighth_member() -> None:
    """The queue readings of members 8-15 take part in the choice: as in test_adaptive,
    100 Mbit/s hosts feed 20 Mbit/s uplinks, so one flow builds its uplink's queue."""
    fabric = clos_fabric(leaves=2, spines=16, hosts_per_leaf=2, host_rate_bps=100_000_000,
                         uplink_rate_bps=20_000_000)
    sim = SimFabric(fabric, lb=LbSettings(qdepth_max_age_us=1000))
    members = sim.controller.routes("leaf1").by_leaf["leaf2"]
    h1 = sim.hosts["h1"]
    for sport in range(40000, 41000):  # an ECMP flow on a member past the eighth
        hot = member_taken(sim, lambda sport=sport: h1.send_udp("h3", sport=sport, size=64))
        if members.index(hot) >= 8:
            break
    else:
        raise AssertionError("no flow hashed past the eighth member")
    for psn in range(50):
        h1.send_udp("h3", sport=sport, size=1000, psn=psn)
    sim.run_for(4200 * US)
    assert sim.controller.queue_readings("leaf1")[hot][0] >= 30
    sim.controller.set_lb("adaptive", switches="leaf1")
    used: Counter[int] = Counter()
    for i in range(40):  # small packets of 40 flows from h2, 200 us apart
        before = member_packets(sim, "leaf1", "leaf2")
        sim.hosts["h2"].send_udp("h4", sport=30000 + i)
        sim.run_for(200 * US)
        used.update(diff(member_packets(sim, "leaf1", "leaf2"), before))
    assert sum(used.values()) == 40 and hot not in used
    assert any(members.index(p) >= 8 for p in used)
    sim.run_until_idle()
