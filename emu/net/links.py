"""Links: veth pairs named by the model, host-side rate limiting by htb, switch-side
interface setup.

Only the host end of a host link is shaped by the kernel (htb: the one rate limiter
this kernel has; no netem). Switch egress rate, queue depth and link delay are the
switch target's traffic manager's job (PortQueueConfig), so they are not set here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mininet.link import Intf, Link

from emu.topo import Fabric, Host
from emu.topo import Link as TopoLink

from .errors import NetError
from .sh import run_script, script

ETH_HEADER = 14


class QuietIntf(Intf):
    """A Mininet Intf that configures nothing on creation: addresses, MTU and link
    state are set in one batch per node afterwards (Mininet's per-interface ifconfig
    calls cost a shell round trip each)."""

    def config(self, **_params: object) -> dict[str, object]:  # type: ignore[override]
        return {}


@dataclass(frozen=True)
class End:
    """One end of a link as created: node, port, interface name and MAC."""

    node: str
    port: int
    intf: str
    mac: str
    is_host: bool


def link_ends(fabric: Fabric, link: TopoLink) -> tuple[End, End]:
    """Both ends, the host end first: Mininet creates the pair inside node1's namespace,
    so a host's interface is born in a namespace where IPv6 is already off."""
    ends = []
    for ep in (link.a, link.b):
        node = fabric.node(ep.node)
        if isinstance(node, Host):
            ends.append(End(ep.node, ep.port, ep.intf, node.mac.lower(), True))
        else:
            port = node.port(ep.port)
            ends.append(End(ep.node, ep.port, port.intf, port.mac.lower(), False))
    a, b = ends
    return (b, a) if b.is_host and not a.is_host else (a, b)


def add_link(net: object, fabric: Fabric, link: TopoLink) -> Link:
    """Create the veth pair of `link` in Mininet `net` (names and MACs from the model)."""
    a, b = link_ends(fabric, link)
    try:
        return net.addLink(  # type: ignore[attr-defined]
            a.node, b.node, port1=a.port, port2=b.port, intfName1=a.intf, intfName2=b.intf,
            addr1=a.mac, addr2=b.mac, intf=QuietIntf)
    except Exception as exc:  # Mininet raises bare Exception with the ip(8) output
        raise NetError(f"link {link}: {exc}".strip()) from exc


def htb_commands(intf: str, rate_bps: int | None, mtu: int) -> list[list[str]]:
    """Root htb qdisc with one class at `rate_bps` that takes all traffic (TCLink's htb
    path, in exact bit/s). Burst: at least two full frames, or 1 ms at the rate."""
    if not rate_bps:
        return []
    frame = mtu + ETH_HEADER
    burst = max(2 * frame, rate_bps // 8 // 1000)
    return [
        ["tc", "qdisc", "replace", "dev", intf, "root", "handle", "1:", "htb", "default", "1"],
        ["tc", "class", "replace", "dev", intf, "parent", "1:", "classid", "1:1", "htb",
         "rate", f"{rate_bps}bit", "ceil", f"{rate_bps}bit", "burst", str(burst),
         "cburst", str(burst), "quantum", str(frame)],
    ]


def offload_commands(intf: str) -> list[list[str]]:
    """Checksums computed in software: a frame a switch reads with AF_PACKET from a veth
    otherwise carries a partial checksum (see docs/ecosystem notes)."""
    return [["ethtool", "-K", intf, "tx", "off", "rx", "off"]]


def disable_ipv6(intf: str) -> None:
    """Per-interface switch in the root namespace (the namespace-wide default there is
    the machine's, not ours to change). Must happen before the link goes up, or the
    kernel sends router solicitations into the switches."""
    path = f"/proc/sys/net/ipv6/conf/{intf}/disable_ipv6"
    if os.path.exists(path):
        with open(path, "w") as f:
            f.write("1\n")


def configure_switch_intfs(intfs: list[tuple[str, int]]) -> None:
    """(name, mtu) of switch interfaces in the root namespace: IPv6 off, MTU, offloads
    off, up, in one batch."""
    cmds: list[list[str]] = []
    for name, mtu in intfs:
        disable_ipv6(name)
        cmds.append(["ip", "link", "set", "dev", name, "mtu", str(mtu)])
        cmds.extend(offload_commands(name))
        cmds.append(["ip", "link", "set", "dev", name, "up"])
    if cmds:
        run_script(script(cmds), "switch interfaces")
