"""Shared helpers for the fabric tests."""

from __future__ import annotations

from collections import Counter

from emu.sim.fabric import SimFabric
from emu.sim.frames import Parsed, parse


def rx_total(sim: SimFabric, switch: str) -> int:
    return sum(c.rx_pkts for c in sim.controller.port_counters(switch).values())


def member_packets(sim: SimFabric, switch: str, dst_leaf: str) -> dict[int, int]:
    """Egress port -> packets sent by the group towards dst_leaf."""
    members = sim.controller.routes(switch).by_leaf[dst_leaf]
    for g in sim.controller.group_counters(switch):
        if g.members == members:
            return dict(zip(g.members, g.packets, strict=True))
    raise AssertionError(f"{switch} has no group for {dst_leaf}")


def received(sim: SimFabric, host: str, clear: bool = True) -> list[Parsed]:
    h = sim.hosts[host]
    out = [parse(f) for _, f in h.received]
    if clear:
        h.received.clear()
    return out


def diff(after: dict[int, int], before: dict[int, int]) -> Counter[int]:
    return Counter({k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)})
