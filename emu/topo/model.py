"""The typed topology model: Fabric, Switch, Host, Link, Port, Endpoint.

Everything here is frozen and fully resolved (ports numbered, addresses assigned);
build a Fabric with `emu.topo.load_topology` or `emu.topo.build_fabric`, not by hand.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from emu.core.units import Dilation

from .units import format_delay, format_rate

# All of it is `emu.topo`'s interface, which re-exports this list.
__all__ = [
    "HOST_PORT",
    "MAX_INTF_NAME",
    "Adjacent",
    "Defaults",
    "Endpoint",
    "Fabric",
    "Host",
    "Link",
    "LinkPfc",
    "Port",
    "Role",
    "Switch",
    "SwitchPath",
    "intf_name",
]

HOST_PORT = 0
"""A host has one interface, numbered 0 like Mininet's `h1-eth0`."""

MAX_INTF_NAME = 15
"""Linux IFNAMSIZ - 1: longer interface names are rejected by the kernel."""


class Role(str, enum.Enum):
    LEAF = "leaf"
    SPINE = "spine"
    CORE = "core"

    @property
    def layer(self) -> int:
        """Height in the fabric (hosts are 0): used for up/down paths and drawing."""
        return {Role.LEAF: 1, Role.SPINE: 2, Role.CORE: 3}[self]

    def __str__(self) -> str:
        return self.value


def intf_name(node: str, port: int) -> str:
    """Mininet-style interface name, e.g. `leaf1-eth3`."""
    return f"{node}-eth{port}"


@dataclass(frozen=True)
class Endpoint:
    """One end of a link: a node and its port number."""

    node: str
    port: int

    @property
    def intf(self) -> str:
        return intf_name(self.node, self.port)

    def __str__(self) -> str:
        return f"{self.node}:{self.port}"


@dataclass(frozen=True)
class LinkPfc:
    """PFC thresholds for the switch ports on a link (its ingress buffer accounting):
    XOFF, XON and headroom in bytes; None leaves the run's setting (headroom None:
    computed from the link, emu.core.pfc.headroom_bytes). Bytes are not dilated."""

    xoff_bytes: int | None = None
    xon_bytes: int | None = None
    headroom_bytes: int | None = None

    def over(self, base: LinkPfc | None) -> LinkPfc:
        """These keys, the unset ones taken from `base` (a link's over the defaults')."""
        if base is None:
            return self
        return LinkPfc(*(mine if mine is not None else theirs for mine, theirs in
                         ((self.xoff_bytes, base.xoff_bytes), (self.xon_bytes, base.xon_bytes),
                          (self.headroom_bytes, base.headroom_bytes))))

    def to_dict(self) -> dict[str, Any]:
        return {"xoff_bytes": self.xoff_bytes, "xon_bytes": self.xon_bytes,
                "headroom_bytes": self.headroom_bytes}


@dataclass(frozen=True)
class Link:
    """A full-duplex point-to-point link; both directions have the same rate/delay/queue."""

    index: int
    a: Endpoint
    b: Endpoint
    rate_bps: int
    delay_ns: int
    depth_pkts: int
    pfc: LinkPfc | None = None  # the topology's `pfc:` for this link (defaults merged)

    def end(self, node: str) -> Endpoint:
        """The endpoint of this link on `node`."""
        if self.a.node == node:
            return self.a
        if self.b.node == node:
            return self.b
        raise KeyError(f"link {self} does not touch {node!r}")

    def peer(self, node: str) -> Endpoint:
        """The endpoint opposite to `node`."""
        return self.b if self.end(node) is self.a else self.a

    def __str__(self) -> str:
        return f"{self.a} <-> {self.b}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": {"node": self.a.node, "port": self.a.port, "intf": self.a.intf},
            "b": {"node": self.b.node, "port": self.b.port, "intf": self.b.intf},
            "rate_bps": self.rate_bps,
            "delay_ns": self.delay_ns,
            "depth_pkts": self.depth_pkts,
            **({"pfc": self.pfc.to_dict()} if self.pfc is not None else {}),
        }


@dataclass(frozen=True)
class Port:
    """A switch port; its egress queue is served at `rate_bps` and holds `depth_pkts`."""

    number: int
    intf: str
    mac: str
    peer: Endpoint
    link: int
    rate_bps: int
    depth_pkts: int
    to_host: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "intf": self.intf,
            "mac": self.mac,
            "peer": str(self.peer),
            "link": self.link,
            "rate_bps": self.rate_bps,
            "depth_pkts": self.depth_pkts,
            "to_host": self.to_host,
        }


@dataclass(frozen=True)
class Switch:
    """A P4 switch. `mac` is the router MAC written as source on routed packets;
    `subnet`/`gateway` are set on leaves only (the hosts' /24 and their default gateway)."""

    name: str
    role: Role
    device_id: int
    mac: str
    ports: tuple[Port, ...]
    subnet: ipaddress.IPv4Network | None = None
    gateway: ipaddress.IPv4Address | None = None

    @cached_property
    def _ports_by_number(self) -> dict[int, Port]:
        return {p.number: p for p in self.ports}

    def port(self, number: int) -> Port:
        try:  # one lookup: a leaf of a large fabric has hundreds of ports
            return self._ports_by_number[number]
        except KeyError:
            raise KeyError(f"{self.name} has no port {number}") from None

    @property
    def host_ports(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.to_host)

    @property
    def fabric_ports(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if not p.to_host)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role.value,
            "device_id": self.device_id,
            "mac": self.mac,
            "subnet": str(self.subnet) if self.subnet else None,
            "gateway": str(self.gateway) if self.gateway else None,
            "ports": [p.to_dict() for p in self.ports],
        }


@dataclass(frozen=True)
class Host:
    """A host with one interface (`<name>-eth0`) attached to a leaf port."""

    name: str
    ip: ipaddress.IPv4Address
    mac: str
    switch: str
    switch_port: int
    mtu: int
    subnet: ipaddress.IPv4Network
    gateway: ipaddress.IPv4Address
    gateway_mac: str
    link: int

    @property
    def port(self) -> int:
        return HOST_PORT

    @property
    def intf(self) -> str:
        return intf_name(self.name, HOST_PORT)

    @property
    def ip_with_prefix(self) -> str:
        """e.g. '10.0.1.1/24', the form `ip addr add` takes."""
        return f"{self.ip}/{self.subnet.prefixlen}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ip": str(self.ip),
            "prefix": str(self.subnet),
            "mac": self.mac,
            "intf": self.intf,
            "switch": self.switch,
            "switch_port": self.switch_port,
            "gateway": str(self.gateway),
            "gateway_mac": self.gateway_mac,
            "mtu": self.mtu,
        }


@dataclass(frozen=True)
class Defaults:
    """Values for links/hosts that do not set their own.

    Like everything in a topology they describe the modelled network (a 100 Gbps link
    with 1 us of propagation delay); a run slows it down by one dilation onto the wire
    (`Fabric.on_wire`, docs/topology.md).
    """

    rate_bps: int = 100_000_000_000
    delay_ns: int = 1_000
    depth_pkts: int = 64
    mtu: int = 1500
    pfc: LinkPfc | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate_bps": self.rate_bps,
            "delay_ns": self.delay_ns,
            "depth_pkts": self.depth_pkts,
            "mtu": self.mtu,
            **({"pfc": self.pfc.to_dict()} if self.pfc is not None else {}),
        }


@dataclass(frozen=True)
class Adjacent:
    """One entry of the graph view: leaving `node` on `port` reaches `peer:peer_port`."""

    port: int
    peer: str
    peer_port: int
    link: Link



@dataclass(frozen=True)
class SwitchPath:
    """Switches visited (source leaf first) and the link taken between each pair."""

    switches: tuple[str, ...]
    links: tuple[Link, ...]

    @property
    def hops(self) -> list[tuple[str, int]]:
        """(switch, egress port) for every switch except the last."""
        return [
            (sw, link.end(sw).port) for sw, link in zip(self.switches, self.links, strict=False)
        ]

    def __len__(self) -> int:
        return len(self.links)

    def __str__(self) -> str:
        parts = [self.switches[0]]
        for (sw, port), nxt in zip(self.hops, self.switches[1:], strict=True):
            parts.append(f"-[{sw}:{port}]-> {nxt}")
        return " ".join(parts)


@dataclass(frozen=True)
class Fabric:
    name: str
    switches: tuple[Switch, ...]
    hosts: tuple[Host, ...]
    links: tuple[Link, ...]
    defaults: Defaults = field(default_factory=Defaults)
    source: str | None = None
    generator: dict[str, Any] | None = field(default=None, compare=False)

    # -- lookups ---------------------------------------------------------------

    @cached_property
    def _nodes(self) -> dict[str, Switch | Host]:
        nodes: dict[str, Switch | Host] = {s.name: s for s in self.switches}
        nodes.update({h.name: h for h in self.hosts})
        return nodes

    def node(self, name: str) -> Switch | Host:
        try:
            return self._nodes[name]
        except KeyError:
            raise KeyError(f"no node named {name!r} in fabric {self.name!r}") from None

    def switch(self, name: str) -> Switch:
        node = self.node(name)
        if not isinstance(node, Switch):
            raise KeyError(f"{name!r} is a host, not a switch")
        return node

    def host(self, name: str) -> Host:
        node = self.node(name)
        if not isinstance(node, Host):
            raise KeyError(f"{name!r} is a switch, not a host")
        return node

    @cached_property
    def _links_by_index(self) -> dict[int, Link]:
        return {lk.index: lk for lk in self.links}

    def link(self, index: int) -> Link:
        """The link numbered `index` (Link.index, Port.link, Host.link)."""
        return self._links_by_index[index]

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def by_role(self, role: Role | str) -> tuple[Switch, ...]:
        role = Role(role)
        return tuple(s for s in self.switches if s.role is role)

    @property
    def switch_mtu(self) -> int:
        """The MTU of every switch port: the largest host's (a jumbo host talks to every
        other, so any switch port may carry its frames), never below Ethernet's 1500."""
        return max([1500, *(h.mtu for h in self.hosts)])

    @property
    def leaves(self) -> tuple[Switch, ...]:
        return self.by_role(Role.LEAF)

    @property
    def spines(self) -> tuple[Switch, ...]:
        return self.by_role(Role.SPINE)

    @property
    def cores(self) -> tuple[Switch, ...]:
        return self.by_role(Role.CORE)

    def hosts_on(self, leaf: str) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if h.switch == leaf)

    def link_between(self, a: str, b: str) -> list[Link]:
        """All links joining a and b (several when there are parallel links)."""
        return [
            link
            for link in self.links
            if {link.a.node, link.b.node} == {a, b} and link.a.node != link.b.node
        ]

    def ports(self, switch: str) -> dict[int, Endpoint]:
        """Port number -> the endpoint at the other end of its link."""
        return {p.number: p.peer for p in self.switch(switch).ports}

    def subnet_of(self, leaf: str) -> ipaddress.IPv4Network:
        sw = self.switch(leaf)
        if sw.subnet is None:
            raise KeyError(f"{leaf!r} is a {sw.role.value}; only leaves have a subnet")
        return sw.subnet

    def oversubscription(self, switch: str) -> float:
        """Host-facing capacity / fabric-facing capacity of a switch (inf if no uplinks)."""
        sw = self.switch(switch)
        down = sum(p.rate_bps for p in sw.host_ports)
        up = sum(p.rate_bps for p in sw.fabric_ports)
        return down / up if up else float("inf")

    def leaf_of_ip(self, ip: str | ipaddress.IPv4Address) -> Switch:
        addr = ipaddress.IPv4Address(ip)
        for leaf in self.leaves:
            if leaf.subnet is not None and addr in leaf.subnet:
                return leaf
        raise KeyError(f"{addr} is in no leaf subnet")

    def iter_nodes(self) -> Iterator[Switch | Host]:
        yield from self.switches
        yield from self.hosts

    # -- graph and paths -----------------------------------------------------

    @cached_property
    def _adjacency(self) -> dict[str, tuple[Adjacent, ...]]:
        adj: dict[str, list[Adjacent]] = {n.name: [] for n in self.iter_nodes()}
        for link in self.links:
            adj[link.a.node].append(Adjacent(link.a.port, link.b.node, link.b.port, link))
            adj[link.b.node].append(Adjacent(link.b.port, link.a.node, link.a.port, link))
        return {n: tuple(sorted(v, key=lambda e: e.port)) for n, v in adj.items()}

    @cached_property
    def _switch_adjacency(self) -> dict[str, tuple[Adjacent, ...]]:
        names = {s.name for s in self.switches}
        return {s.name: tuple(e for e in self._adjacency[s.name] if e.peer in names)
                for s in self.switches}

    def adjacency(self, switches_only: bool = False) -> dict[str, tuple[Adjacent, ...]]:
        """Graph view for routing: node -> its ports and what each reaches."""
        return dict(self._switch_adjacency if switches_only else self._adjacency)

    @cached_property
    def derived(self) -> dict[Hashable, Any]:
        """A memo for views computed from this fabric (emu.topo.paths keeps its equal-cost
        paths here): a Fabric never changes, and a large one asks for the same leaf pair's
        paths once per host pair."""
        return {}

    @cached_property
    def _layers(self) -> dict[str, int]:
        layers = {s.name: s.role.layer for s in self.switches}
        layers.update({h.name: 0 for h in self.hosts})
        return layers

    def layers(self) -> Mapping[str, int]:
        """Every node's height: for loops that ask per step of a large fabric's paths."""
        return self._layers

    def layer(self, name: str) -> int:
        """Height of a node (hosts 0, leaves 1, ...); loops over many steps read
        `layers()` instead."""
        try:
            return self._layers[name]
        except KeyError:
            self.node(name)  # the error naming the fabric
            raise

    # -- modelled network -> wire ----------------------------------------------

    def on_wire(self, dilation: Dilation) -> Fabric:
        """This fabric as it runs on the wire: every rate / dilation, every delay x
        dilation (emu.core.units); depths and addresses unchanged. Wire rates are whole
        bits/s (at least 1) and delays whole nanoseconds."""
        if dilation.factor == 1:
            return self

        def rate(bps: int) -> int:
            return max(1, int(round(dilation.wire_rate_bps(bps))))

        links = tuple(replace(lk, rate_bps=rate(lk.rate_bps),
                              delay_ns=dilation.wire_ns(lk.delay_ns)) for lk in self.links)
        switches = tuple(replace(s, ports=tuple(replace(p, rate_bps=rate(p.rate_bps))
                                                for p in s.ports)) for s in self.switches)
        defaults = replace(self.defaults, rate_bps=rate(self.defaults.rate_bps),
                           delay_ns=dilation.wire_ns(self.defaults.delay_ns))
        return replace(self, switches=switches, links=links, defaults=defaults)

    @property
    def max_rate_bps(self) -> int:
        """The fastest link's rate (a run's wire rate names this link's)."""
        return max((lk.rate_bps for lk in self.links), default=self.defaults.rate_bps)

    # -- serialisation ---------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (for results folders)."""
        return {
            "name": self.name,
            "source": self.source,
            "generator": self.generator,
            "defaults": self.defaults.to_dict(),
            "switches": [s.to_dict() for s in self.switches],
            "hosts": [h.to_dict() for h in self.hosts],
            "links": [link.to_dict() for link in self.links],
        }

    def summary(self) -> str:
        return f"{len(self.switches)} switches, {len(self.hosts)} hosts, {len(self.links)} links"

    def describe_link(self, link: Link) -> str:
        return f"{link} {format_rate(link.rate_bps)} {format_delay(link.delay_ns)}"
