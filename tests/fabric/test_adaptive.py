"""Adaptive LB on queues built by real traffic: host links at 100 Mbit/s feed 20 Mbit/s
uplinks, so one flow hashed onto one uplink builds that uplink's egress queue."""

from __future__ import annotations

from collections import Counter

from emu.control import LbSettings
from emu.control.params import QosSettings
from emu.sim.fabric import SimFabric
from emu.topo import clos_fabric

from .helpers import diff, member_packets, received

US = 1000
MS = 1_000_000


def _congested_sim(qos: QosSettings | None = None,
                   lb: LbSettings | None = None) -> tuple[SimFabric, int]:
    """Leaf1 in ECMP; h1 sends 50 x 1000 B of one flow: its uplink's queue builds.
    Returns the sim (at ~4.2 ms, queue still deep) and the congested uplink port."""
    fabric = clos_fabric(leaves=2, spines=4, hosts_per_leaf=2, host_rate_bps=100_000_000,
                         uplink_rate_bps=20_000_000)
    sim = SimFabric(fabric, lb=lb or LbSettings(), qos=qos)
    before = member_packets(sim, "leaf1", "leaf2")
    for psn in range(50):
        sim.hosts["h1"].send_udp("h3", sport=50000, size=1000, psn=psn)
    sim.run_for(4200 * US)  # all 50 reached leaf1 (80 us apart); ~10 left on the wire
    (hot,) = diff(member_packets(sim, "leaf1", "leaf2"), before)
    depth, _ = sim.controller.queue_readings("leaf1")[hot]
    assert depth >= 30  # egress saw a deep queue: built by enqueues, not set by hand
    return sim, hot


def _probe(sim: SimFabric, n: int, sport0: int) -> Counter[int]:
    """n small packets of n different flows from h2, 200 us apart: uplink per packet."""
    used: Counter[int] = Counter()
    for i in range(n):
        before = member_packets(sim, "leaf1", "leaf2")
        sim.hosts["h2"].send_udp("h4", sport=sport0 + i)
        sim.run_for(200 * US)
        used.update(diff(member_packets(sim, "leaf1", "leaf2"), before))
    return used


def test_adaptive_avoids_a_deep_queue_and_returns_when_it_drains():
    sim, hot = _congested_sim()
    members = set(sim.controller.routes("leaf1").by_leaf["leaf2"])
    # ECMP would put some of these flows on the hot uplink...
    sim.controller.set_lb("adaptive", switches="leaf1")  # switched under traffic
    used = _probe(sim, 20, 40000)
    assert sum(used.values()) == 20
    assert hot not in used  # ...adaptive sends every new packet elsewhere
    assert sim.controller.queue_readings("leaf1")[hot][0] > 10
    # the queue drains (50 x 400 us), its reading goes stale; the uplink is used again
    sim.run_for(25 * MS)
    used = _probe(sim, 40, 41000)
    assert set(used) == members
    assert used[hot] >= 4
    sim.run_until_idle()
    assert len(received(sim, "h3")) == 50
    assert len(received(sim, "h4")) == 60


def test_a_stalled_port_stays_avoided_while_its_queue_stays_deep():
    """A queue that stops sending (a PFC pause, a starved priority) keeps its last
    reading, and it is deep: by default the port stays avoided however long the stall
    lasts. Readings used to age to empty after qdepth_max_age_us (default 1 ms here, 2 us
    modelled in runs), which sent new flows into a paused port."""
    sim, hot = _congested_sim()
    sim.controller.set_lb("adaptive", switches="leaf1")
    sim.switches["leaf1"].set_queue_rate(hot, rate_pps=1)  # stall: no dequeue, no update
    sim.run_for(10 * MS)
    used = _probe(sim, 20, 44000)
    assert sum(used.values()) == 20 and hot not in used
    assert sim.controller.queue_readings("leaf1")[hot][0] > 10


def test_a_stale_reading_ages_out_when_asked():
    """qdepth_max_age_us, when given: a reading older than that counts as empty."""
    sim, hot = _congested_sim()
    sim.controller.set_lb("adaptive", switches="leaf1", qdepth_max_age_us=3000)
    sim.switches["leaf1"].set_queue_rate(hot, rate_pps=1)  # stall: no dequeue, no update
    sim.run_for(1 * MS)  # the packet in service finishes; the next waits a second
    used = _probe(sim, 8, 42000)  # 1.6 ms: the reading is younger than 3 ms
    assert hot not in used
    sim.run_for(3 * MS)
    used = _probe(sim, 40, 43000)
    assert used[hot] >= 4


def test_a_high_priority_packet_leaving_a_deep_port_does_not_hide_its_data_queue():
    """deq_qdepth counts the departing packet's own priority queue (as BMv2 since
    1.15.1): a CNP leaving the hot uplink from the empty high-priority queue wrote 0 over
    the port's one reading, and adaptive sent the next data flows into the deep queue.
    The readings are per port and priority; a packet compares its own class's."""
    sim, hot = _congested_sim(QosSettings.roce(2))
    # Probe flows whose ECMP member is the hot uplink: among equal readings, adaptive
    # breaks the tie towards the ECMP member.
    probes = []
    for sport in range(45000, 45100):
        before = member_packets(sim, "leaf1", "leaf2")
        sim.hosts["h2"].send_udp("h4", sport=sport, size=64)
        sim.run_for(20 * US)
        if hot in diff(member_packets(sim, "leaf1", "leaf2"), before):
            probes.append(sport)
    assert len(probes) >= 5
    sim.controller.set_lb("adaptive", switches="leaf1")
    used: Counter[int] = Counter()
    for i, sport in enumerate(probes[:5]):
        # A CNP (DSCP 48, the high queue) of h1's flow: its own class's queues are all
        # empty, so adaptive sends it to its ECMP member, the hot uplink. Wait until it
        # has left (behind the data packet in service), then probe at once, before the
        # next data departure: the CNP's reading must not stand for the data queue.
        sim.hosts["h1"].send_udp("h3", sport=50000, dscp=48, size=64, psn=100 + i)
        t0 = sim.controller.queue_readings("leaf1", priority=1)[hot][1]
        for _ in range(1000):
            sim.run_for(1 * US)
            if sim.controller.queue_readings("leaf1", priority=1)[hot][1] != t0:
                break
        else:
            raise AssertionError("the CNP did not leave over the hot uplink")
        before = member_packets(sim, "leaf1", "leaf2")
        sim.hosts["h2"].send_udp("h4", sport=sport, size=64)
        sim.run_for(20 * US)
        used.update(diff(member_packets(sim, "leaf1", "leaf2"), before))
        sim.run_for(400 * US)
    assert sum(used.values()) == 5 and hot not in used
    assert sim.controller.queue_readings("leaf1", priority=1)[hot][0] == 0
    assert sim.controller.queue_readings("leaf1", priority=0)[hot][0] > 5
