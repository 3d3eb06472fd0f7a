"""Routes and next-hop groups for every switch: shortest up-down (valley-free) paths.

Pure computation over the topology model, with a set of failed links taken out:
a leaf sends its own hosts' /32s to their ports, and every other leaf's /24 to the
group of ports that start a shortest up-down path towards that leaf; spines and cores
do the same for every leaf. A switch with no path to a leaf gets no route for it
(packets to it are dropped there, and its neighbours route around it).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from emu.topo import Fabric, Link, SwitchPath
from emu.topo.limits import too_wide
from emu.topo.paths import equal_cost_paths, first_hop_ports, widest_group

from .errors import ControlError, UnknownLinkError, UnknownSwitchError
from .params import MAX_GROUPS, MAX_MEMBERS


@dataclass(frozen=True)
class Route:
    """One ipv4_lpm entry: to a host port (`port`) or to a next-hop group (`group`)."""

    prefix: ipaddress.IPv4Network
    port: int | None = None
    group: tuple[int, ...] | None = None  # member ports, in member-index order


@dataclass
class SwitchRoutes:
    """Everything routing installs on one switch."""

    switch: str
    routes: list[Route] = field(default_factory=list)
    neighbors: dict[int, tuple[str, str]] = field(default_factory=dict)  # port -> (smac, dmac)
    by_leaf: dict[str, tuple[int, ...]] = field(default_factory=dict)  # dst leaf -> members

    @property
    def groups(self) -> list[tuple[int, ...]]:
        """Distinct member-port tuples, in first-use order."""
        seen: dict[tuple[int, ...], None] = {}
        for r in self.routes:
            if r.group is not None:
                seen.setdefault(r.group, None)
        return list(seen)


def working_fabric(fabric: Fabric, failed: Iterable[int] = ()) -> Fabric:
    """The fabric without the links whose indexes are in `failed` (for path search)."""
    dead = set(failed)
    if not dead:
        return fabric
    return replace(fabric, links=tuple(lk for lk in fabric.links if lk.index not in dead))


def find_link(fabric: Fabric, a: str, b: str | None = None, *, port: int | None = None) -> Link:
    """The link between nodes a and b, or on a's port; clear errors when ambiguous."""
    if a not in fabric:
        raise UnknownLinkError(f"no node named {a!r}")
    if port is not None:
        for lk in fabric.links:
            if (lk.a.node, lk.a.port) == (a, port) or (lk.b.node, lk.b.port) == (a, port):
                if b is None or lk.peer(a).node == b:
                    return lk
        raise UnknownLinkError(f"no link on {a}:{port}" + (f" to {b}" if b else ""))
    if b is None:
        raise UnknownLinkError("name both ends of the link, or a node and its port")
    links = fabric.link_between(a, b)
    if not links:
        raise UnknownLinkError(f"no link between {a} and {b}")
    if len(links) > 1:
        ports = ", ".join(str(lk.end(a).port) for lk in links)
        raise UnknownLinkError(
            f"{len(links)} parallel links join {a} and {b}: name the port on {a} ({ports})")
    return links[0]


def switch_routes(fabric: Fabric, switch: str, failed: Iterable[int] = (),
                  hops: dict[str, dict[str, list[int]]] | None = None) -> SwitchRoutes:
    """Routes, groups and MAC rewrites of one switch, avoiding the failed links.
    `hops`: first_hop_ports of the working fabric per leaf, when already computed."""
    if switch not in fabric or switch not in {s.name for s in fabric.switches}:
        raise UnknownSwitchError(switch, [s.name for s in fabric.switches])
    dead = set(failed)
    live = working_fabric(fabric, dead)
    sw = fabric.switch(switch)
    out = SwitchRoutes(switch)
    for p in sw.ports:
        if p.link in dead:
            continue
        if p.to_host:
            dmac = fabric.host(p.peer.node).mac
        else:
            dmac = fabric.switch(p.peer.node).mac
        out.neighbors[p.number] = (sw.mac, dmac)
    for leaf in fabric.leaves:
        if leaf.name == switch:
            for h in fabric.hosts_on(switch):
                if h.link not in dead:
                    out.routes.append(Route(ipaddress.IPv4Network(f"{h.ip}/32"),
                                            port=h.switch_port))
            continue
        by_switch = first_hop_ports(live, leaf.name) if hops is None else hops[leaf.name]
        ports = tuple(by_switch.get(switch, ()))
        if not ports:
            continue
        if len(ports) > MAX_MEMBERS:
            raise ControlError(
                f"{switch} has {len(ports)} next hops towards {leaf.name}; fabric.p4 "
                f"groups hold at most {MAX_MEMBERS} members")
        out.routes.append(Route(fabric.subnet_of(leaf.name), group=ports))
        out.by_leaf[leaf.name] = ports
    return out


def check_group_sizes(fabric: Fabric) -> None:
    """A ControlError naming the widest next-hop group if one holds more members than
    fabric.p4's groups do: checked when a run is planned, before anything starts (the
    controller would otherwise stop at that switch, with the fabric up)."""
    worst = widest_group(fabric)
    if worst is not None and worst.members > MAX_MEMBERS:
        raise ControlError(too_wide(worst))


def all_routes(fabric: Fabric, failed: Iterable[int] = ()) -> dict[str, SwitchRoutes]:
    dead = set(failed)
    live = working_fabric(fabric, dead)
    hops = {leaf.name: first_hop_ports(live, leaf.name) for leaf in fabric.leaves}
    return {s.name: switch_routes(fabric, s.name, dead, hops) for s in fabric.switches}


def live_paths(fabric: Fabric, src_leaf: str, dst_leaf: str,
               failed: Iterable[int] = ()) -> list[SwitchPath]:
    """Equal-cost up-down paths between two leaves over the working links."""
    return equal_cost_paths(working_fabric(fabric, failed), src_leaf, dst_leaf)


class GroupIds:
    """Stable next-hop group ids on one switch: a member tuple keeps its id while used,
    so reprogramming after a failure inserts new groups before routes move to them."""

    def __init__(self) -> None:
        self._ids: dict[tuple[int, ...], int] = {}

    def assign(self, groups: Iterable[tuple[int, ...]]) -> dict[tuple[int, ...], int]:
        wanted = list(dict.fromkeys(groups))
        keep = {g: i for g, i in self._ids.items() if g in wanted}
        # New groups avoid ids just given up too: routes still point at those until
        # they are rewritten, so reusing one would misroute them in between.
        busy = set(keep.values()) | set(self._ids.values())
        fresh = [i for i in range(1, MAX_GROUPS) if i not in busy]
        fresh += [i for i in range(1, MAX_GROUPS) if i in busy and i not in keep.values()]
        for g in wanted:
            if g not in keep:
                if not fresh:
                    raise ControlError(f"more than {MAX_GROUPS - 1} next-hop groups")
                keep[g] = fresh.pop(0)
        self._ids = keep
        return dict(keep)
