"""Traffic engineering: place flows with known demands on equal-cost paths, greedily.

Largest demand first, each flow goes onto the path whose most loaded link (after
adding the flow) is least loaded; ties go to the path with the least total load,
then to the first path. Loads are per link direction and relative to the link's rate
(offered bps / rate): counted in bps, a 50 Gb/s uplink took as many flows as its
100 Gb/s siblings (asym4: 160% offered against 120% when placed by utilisation). The
result pins every flow's 5-tuple, on each switch of its path, to the group member that
leads along the path.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from emu.core.wire import IP_PROTO_UDP, ROCEV2_UDP_PORT
from emu.topo import Fabric, Host, SwitchPath

from .errors import NoPathError, ParamError, UnknownHostError
from .routes import SwitchRoutes, live_paths


@dataclass(frozen=True)
class Flow:
    """A flow by 5-tuple, with hosts named (or given by IP) and its demand."""

    src: str
    dst: str
    sport: int
    dport: int = ROCEV2_UDP_PORT
    proto: int = IP_PROTO_UDP
    demand_bps: float = 1.0

    def __post_init__(self) -> None:
        for name in ("sport", "dport"):
            v = getattr(self, name)
            if not 0 <= v <= 0xFFFF:
                raise ParamError(f"flow {name} must be 0..65535, got {v}")
        if not 0 <= self.proto <= 0xFF:
            raise ParamError(f"flow proto must be 0..255, got {self.proto}")
        if not self.demand_bps >= 0:
            raise ParamError(f"flow demand must be >= 0, got {self.demand_bps}")


@dataclass(frozen=True)
class FlowKey:
    """The te_flow table key: IPv4 addresses as ints."""

    src_ip: int
    dst_ip: int
    proto: int
    sport: int
    dport: int


@dataclass(frozen=True)
class Placement:
    flow: Flow
    key: FlowKey
    path: SwitchPath
    hops: tuple[tuple[str, int], ...]  # (switch, egress port), the source leaf first


def resolve_host(fabric: Fabric, name_or_ip: str) -> Host:
    try:
        node = fabric.node(name_or_ip)
        if isinstance(node, Host):
            return node
    except KeyError:
        pass
    try:
        ip = ipaddress.IPv4Address(name_or_ip)
    except ValueError:
        raise UnknownHostError(name_or_ip) from None
    for h in fabric.hosts:
        if h.ip == ip:
            return h
    raise UnknownHostError(name_or_ip)


def place_flows(fabric: Fabric, flows: Sequence[Flow],
                failed: Iterable[int] = ()) -> list[Placement]:
    """Greedy placement; returns one Placement per flow, in the input order."""
    dead = set(failed)
    load: dict[tuple[int, str], float] = {}  # (link index, from node) -> bps
    order = sorted(range(len(flows)), key=lambda i: -flows[i].demand_bps)
    placed: dict[int, Placement] = {}
    paths_cache: dict[tuple[str, str], list[SwitchPath]] = {}
    for i in order:
        flow = flows[i]
        src, dst = resolve_host(fabric, flow.src), resolve_host(fabric, flow.dst)
        if src.link in dead or dst.link in dead:
            raise NoPathError(f"flow {src.name} -> {dst.name}: a host link is down")
        pair = (src.switch, dst.switch)
        if pair not in paths_cache:
            paths_cache[pair] = live_paths(fabric, src.switch, dst.switch, dead)
        candidates = paths_cache[pair]
        if not candidates:
            raise NoPathError(
                f"flow {src.name} -> {dst.name} (port {flow.sport}): no path from "
                f"{src.switch} to {dst.switch} over the working links")

        def cost(p: SwitchPath, flow: Flow = flow) -> tuple[float, float]:
            loads = [(load.get((lk.index, sw), 0.0) + flow.demand_bps) / lk.rate_bps
                     for sw, lk in zip(p.switches, p.links, strict=False)]
            return (max(loads, default=0.0), sum(loads))

        best = min(range(len(candidates)), key=lambda j: (cost(candidates[j]), j))
        path = candidates[best]
        for sw, lk in zip(path.switches, path.links, strict=False):
            load[(lk.index, sw)] = load.get((lk.index, sw), 0.0) + flow.demand_bps
        key = FlowKey(int(src.ip), int(dst.ip), flow.proto, flow.sport, flow.dport)
        placed[i] = Placement(flow, key, path, tuple(path.hops))
    return [placed[i] for i in range(len(flows))]


def link_loads(placements: Iterable[Placement]) -> dict[tuple[int, str], float]:
    """Offered load per (link index, sending node) of a placement (for reports/tests)."""
    load: dict[tuple[int, str], float] = {}
    for p in placements:
        for sw, lk in zip(p.path.switches, p.path.links, strict=False):
            load[(lk.index, sw)] = load.get((lk.index, sw), 0.0) + p.flow.demand_bps
    return load


def te_pins(fabric: Fabric, placements: Iterable[Placement],
            routes: Mapping[str, SwitchRoutes]) -> dict[str, dict[FlowKey, int]]:
    """Per switch: flow key -> member index of the port the path leaves by."""
    pins: dict[str, dict[FlowKey, int]] = {}
    for p in placements:
        dst_leaf = fabric.leaf_of_ip(ipaddress.IPv4Address(p.key.dst_ip)).name
        for sw, port in p.hops:
            members = routes[sw].by_leaf.get(dst_leaf, ())
            if port not in members:
                raise NoPathError(
                    f"TE path of {p.flow.src} -> {p.flow.dst} leaves {sw} by port {port}, "
                    f"which is not a next hop towards {dst_leaf}")
            pins.setdefault(sw, {})[p.key] = members.index(port)
    return pins
