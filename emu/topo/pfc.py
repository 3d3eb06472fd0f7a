"""A switch's flow-control settings from the topology: the run's FlowControl with each
port's thresholds taken from its link's `pfc:` keys (defaults merged), and the link
each port has (for the headroom it needs, emu.core.pfc.headroom_bytes)."""

from __future__ import annotations

import dataclasses

from emu.core.pfc import FlowControl, PfcThresholds

from .model import Fabric

__all__ = ["port_links", "switch_flow_control"]


def switch_flow_control(fabric: Fabric, switch: str, base: FlowControl) -> FlowControl:
    """`base` with per-port thresholds from the topology. A link that sets xoff below
    the run's xon gets xon = xoff / 2 (it named only xoff; the pair must stay ordered)."""
    links = {lk.index: lk for lk in fabric.links}
    ports = dict(base.ports)
    for p in fabric.switch(switch).ports:
        lp = links[p.link].pfc
        if lp is None:
            continue
        t = base.for_port(p.number)
        xoff = lp.xoff_bytes if lp.xoff_bytes is not None else t.xoff_bytes
        xon = lp.xon_bytes if lp.xon_bytes is not None else t.xon_bytes
        if xon > xoff and lp.xon_bytes is None:
            xon = xoff // 2
        head = lp.headroom_bytes if lp.headroom_bytes is not None else t.headroom
        ports[p.number] = PfcThresholds(xoff, xon, head)
    return dataclasses.replace(base, ports=ports)


def port_links(fabric: Fabric, switch: str) -> dict[int, tuple[float, int, int]]:
    """Port -> (rate bps, one-way delay ns, MTU) of its link in `fabric`. The MTU is the
    larger of the link's two ends (a maximum frame may be on the wire either way): a
    switch port's is `Fabric.switch_mtu`, as EmuNet sets it, a host's its own."""
    links = {lk.index: lk for lk in fabric.links}
    hosts = {h.name: h.mtu for h in fabric.hosts}
    sw_mtu = fabric.switch_mtu
    return {p.number: (float(links[p.link].rate_bps), links[p.link].delay_ns,
                       max(sw_mtu, hosts.get(p.peer.node, 0)))
            for p in fabric.switch(switch).ports}
