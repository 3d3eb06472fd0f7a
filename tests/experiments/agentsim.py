"""Real host agents in virtual time, joined by a minimal IP-forwarding star, to produce
genuine agent result lines for the metrics/summary tests without switches or root.

The star forwards by destination IP onto a MemLink per host (that link's rate and
queue depth give a real bottleneck and tail drops at incast); it does no ECN marking.
"""

from __future__ import annotations

from typing import Any

from emu.core import MemLink, VirtualClock
from emu.roce.agent import Agent
from emu.roce.config import AgentConfig
from emu.topo import Fabric


def run_agents(fabric: Fabric, configs: dict[str, AgentConfig], *, rate_bps: int,
               depth_pkts: int = 64, max_ns: int = 60_000_000_000) -> dict[str, list[dict[str, Any]]]:
    clock = VirtualClock()
    ip_to_host = {str(h.ip): h.name for h in fabric.hosts}
    down: dict[str, MemLink] = {}
    agents: dict[str, Agent] = {}
    for name, data in configs.items():
        up = MemLink(clock, rate_bps=rate_bps, delay_ns=20_000, names=(f"{name}-eth0", "up"))
        down[name] = MemLink(clock, rate_bps=rate_bps, delay_ns=20_000,
                             queue_depth_pkts=depth_pkts, names=("down", f"{name}-eth0"))

        def forward(frame: bytes) -> None:
            dst = ip_to_host.get(".".join(str(b) for b in frame[30:34]))
            if dst in down:
                down[dst].a.send(frame)

        up.b.set_receiver(forward)
        agent = Agent(data, clock, up.a)
        # The agent's NIC receives from the host end of its down link as well.
        down[name].b.set_receiver(up.a._deliver)
        agents[name] = agent
    for a in agents.values():
        a.start()
    step = 10_000_000
    while clock.now_ns() < max_ns and not all(a.done() for a in agents.values()):
        clock.advance(step)
    clock.advance(50_000_000)  # let the last ACKs land
    return {name: a.results() for name, a in agents.items()}
