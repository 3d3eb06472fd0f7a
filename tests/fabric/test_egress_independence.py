"""Sprayed packets on uplinks of different rates: no head-of-line blocking across ports.

leaf1 sprays a line-rate burst over four uplinks, one of them slower. Every packet must
wait only for its own link: the one behind a packet on the slow uplink leaves leaf1 and
reaches its spine as if the slow uplink did not exist, so it overtakes when the slow
uplink costs it more than one frame time, and ties with it at exactly half rate.
"""

from __future__ import annotations

import pytest

from emu.control import LbSettings
from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.sim.fabric import SimFabric
from emu.topo import loads_topology

from .helpers import received

# bytes; with the wire overhead (preamble, FCS, gap) 1050 on the wire: 84 ns at 100 Gb/s,
# 168 ns at 50, 210 ns at 40 (whole ns)
FRAME = 1050 - WIRE_OVERHEAD_BYTES
DELAY = 1000  # ns on every link
N = 12

TOPO = """
name: asym
defaults: {rate: 100Gbps, delay: 1us, queue_depth_pkts: 512, mtu: 9000}
switches:
  - {name: leaf1, role: leaf}
  - {name: leaf2, role: leaf}
  - {name: spine1, role: spine}
  - {name: spine2, role: spine}
  - {name: spine3, role: spine}
  - {name: spine4, role: spine}
hosts: [{name: h1}, {name: h3}]
links:
  - {a: h1, b: leaf1}
  - {a: h3, b: leaf2}
  - {a: leaf1, b: spine1}
  - {a: leaf1, b: spine2}
  - {a: leaf1, b: spine3}
  - {a: leaf1, b: spine4, rate: SLOW}
  - {a: leaf2, b: spine1}
  - {a: leaf2, b: spine2}
  - {a: leaf2, b: spine3}
  - {a: leaf2, b: spine4}
"""


def ser_ns(rate_bps: int) -> int:
    return (FRAME + WIRE_OVERHEAD_BYTES) * 8 * 1_000_000_000 // rate_bps


Burst = tuple[SimFabric, int, int, dict[int, tuple[int, int]], dict[int, int]]


def burst(slow: str) -> Burst:
    """Send N back-to-back frames h1 -> h3; returns the sim, leaf1's slow port and its
    rate, psn -> (leaf1 departure ns, port) and psn -> spine departure ns."""
    sim = SimFabric(loads_topology(TOPO.replace("SLOW", slow), "<asym>"),
                    lb=LbSettings(mode="spray"))
    up = next(p for p in sim.fabric.switch("leaf1").ports if p.peer.node == "spine4")
    slow_port, slow_bps = up.number, up.rate_bps
    leaf1: dict[int, tuple[int, int]] = {}
    spine: dict[int, int] = {}

    def psn(data: bytes) -> int:
        return int.from_bytes(data[51:54], "big")  # BTH after Ethernet+IPv4+UDP

    sim.switches["leaf1"].on_output(
        lambda pkt: leaf1.setdefault(psn(pkt.data), (sim.clock.now_ns(), pkt.port)))
    for s in ("spine1", "spine2", "spine3", "spine4"):
        sim.switches[s].on_output(lambda pkt: spine.setdefault(psn(pkt.data), sim.clock.now_ns()))
    for i in range(N):  # the host link serialises them: one every 84 ns
        assert sim.hosts["h1"].send_udp("h3", sport=50000, psn=i, size=FRAME)
    sim.run_until_idle()
    return sim, slow_port, slow_bps, leaf1, spine


@pytest.mark.parametrize("slow", ["40Gbps", "50Gbps"])
def test_each_packet_waits_only_for_its_own_uplink(slow: str) -> None:
    sim, slow_port, slow_bps, leaf1, spine = burst(slow)
    fast, slow_ns = ser_ns(100_000_000_000), ser_ns(slow_bps)
    assert slow_ns > fast
    ports = [leaf1[i][1] for i in range(N)]
    assert len(set(ports)) == 4 and slow_port in ports  # sprayed over all four uplinks
    # leaf1 forwards at line rate whatever port the previous packet took...
    first = leaf1[0][0]
    assert [leaf1[i][0] for i in range(N)] == [first + i * fast for i in range(N)]
    # ...and each packet reaches its spine after its own link's serialisation and delay.
    for i in range(N):
        own = slow_ns if ports[i] == slow_port else fast
        assert spine[i] == leaf1[i][0] + own + DELAY, i
    assert len(received(sim, "h3")) == N


def test_a_packet_slower_by_more_than_a_frame_time_is_overtaken() -> None:
    sim, slow_port, _, leaf1, spine = burst("40Gbps")
    order = [p.psn for p in received(sim, "h3")]
    on_slow = [i for i in range(N - 1) if leaf1[i][1] == slow_port]
    assert on_slow
    for i in on_slow:  # 210 ns on the slow uplink vs 84: the next one arrives first
        assert order.index(i + 1) < order.index(i)


def test_at_exactly_half_rate_the_slow_packet_ties_with_the_next_one() -> None:
    # 168 ns on the slow uplink is one 84 ns frame time late, and the next packet
    # left leaf1 exactly one frame time later: both reach leaf2 in the same ns, and
    # the earlier-scheduled arrival (the slow packet) is served first, so no reordering.
    sim, slow_port, _, leaf1, spine = burst("50Gbps")
    on_slow = [i for i in range(N - 1) if leaf1[i][1] == slow_port]
    assert on_slow
    for i in on_slow:
        assert spine[i] == spine[i + 1]
    assert [p.psn for p in received(sim, "h3")] == list(range(N))
