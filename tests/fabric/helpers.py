"""Shared helpers for the fabric tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

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


def member_taken(sim: SimFabric, send: Callable[[], object], run_ns: int | None = None,
                 switch: str = "leaf1", dst_leaf: str = "leaf2") -> int:
    """The one member of `switch`'s group towards `dst_leaf` that what `send` sends leaves
    by, `run_ns` of virtual time later (None: once the fabric is idle)."""
    before = member_packets(sim, switch, dst_leaf)
    send()
    if run_ns is None:
        sim.run_until_idle()
    else:
        sim.run_for(run_ns)
    (port,) = diff(member_packets(sim, switch, dst_leaf), before)
    return port
