"""Resolve a FabricSpec into a Fabric, checking its structure.

Checks (all collected, then reported together): node names, duplicate names, links to
unknown nodes, self-links, host-to-host links, hosts attached to zero or several
switches or to a non-leaf, port numbers out of range or used twice, interface names
longer than 15 characters, address-plan limits, and a disconnected fabric.

Ports left unnumbered are assigned the lowest free numbers: host-facing ones first,
then the others, each in link order.
"""

from __future__ import annotations

import difflib
import re
from collections import deque

from emu.core.wire import CPU_PORT, MAX_PORT

from . import addressing
from .errors import Collector, Diagnostic, Mark, TopologyError
from .model import (
    HOST_PORT,
    MAX_INTF_NAME,
    Defaults,
    Endpoint,
    Fabric,
    Host,
    Link,
    LinkPfc,
    Port,
    Role,
    Switch,
    intf_name,
)
from .spec import EndpointSpec, FabricSpec, HostSpec, LinkSpec, SwitchSpec

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
"""No '-' or ':' in names: they separate `node-ethN` and `node:port`."""


def _suggest(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _where(mark: Mark) -> str:
    return f"line {mark.line}" if mark.line else mark.file


def build_fabric(spec: FabricSpec) -> Fabric:
    """Check `spec` and return the resolved Fabric; raises TopologyError listing every problem."""
    errs = Collector()
    fabric = _resolve(spec, errs)
    errs.raise_if_any()
    if fabric is None:
        raise TopologyError.at(spec.mark, "the topology has entries with errors")
    return fabric


def check_spec(spec: FabricSpec) -> list[Diagnostic]:
    """Every problem resolution finds in `spec`, also in a partial one (whose other
    errors the caller reports); no Fabric is built from a partial spec."""
    errs = Collector()
    try:
        _resolve(spec, errs)
    except TopologyError as exc:
        return list(exc.diagnostics)
    return errs.diagnostics


def _resolve(spec: FabricSpec, errs: Collector) -> Fabric | None:
    nodes = _check_nodes(spec, errs)
    host_links, good = _check_links(spec, nodes, errs)
    _check_hosts(spec, nodes, host_links, errs)
    assigned = _assign_ports(spec, good, host_links, errs)
    _check_names_and_limits(spec, good, assigned, errs)
    if spec.partial:
        # Entries left out may be what connects the fabric or addresses its hosts.
        return None
    errs.raise_if_any()
    _check_connected(spec, errs, [spec.links[i] for i in good])
    errs.raise_if_any()
    return _assemble(spec, good, assigned, errs)


def _check_nodes(spec: FabricSpec, errs: Collector) -> dict[str, SwitchSpec | HostSpec]:
    """Node names: well formed and unique."""
    nodes: dict[str, SwitchSpec | HostSpec] = {}
    for node in _all_nodes(spec):
        if not NAME_RE.match(node.name):
            errs.error(
                node.mark,
                f"bad node name '{node.name}': use letters, digits and '_', starting with a letter",
            )
        if node.name in nodes:
            errs.error(
                node.mark,
                f"duplicate node name '{node.name}' (first defined at {_where(nodes[node.name].mark)})",
            )
            continue
        nodes[node.name] = node
    if not spec.switches and not spec.partial:
        errs.error(spec.mark, "fabric has no switches")
    return nodes


def _check_links(spec: FabricSpec, nodes: dict[str, SwitchSpec | HostSpec], errs: Collector
                 ) -> tuple[dict[str, list[int]], list[int]]:
    """Endpoint checks; returns each host's links and the links usable by later stages."""
    host_links: dict[str, list[int]] = {h.name: [] for h in spec.hosts}
    good: list[int] = []
    for idx, link in enumerate(spec.links):
        ok = True
        for ep in (link.a, link.b):
            # Count attachments even on broken links, so one typo gives one error.
            if isinstance(nodes.get(ep.node), HostSpec):
                host_links[ep.node].append(idx)
            if ep.node not in nodes:
                ok = False
                if ep.node in spec.unresolved:
                    continue  # declared in an entry already reported as wrong
                errs.error(
                    ep.mark,
                    f"link endpoint '{ep.node}' is not a declared switch or host{_suggest(ep.node, [*nodes, *spec.unresolved])}",
                )
        if not ok:
            continue
        if link.a.node == link.b.node:
            errs.error(link.mark, f"link connects '{link.a.node}' to itself")
            continue
        a_host, b_host = (
            isinstance(nodes[link.a.node], HostSpec),
            isinstance(nodes[link.b.node], HostSpec),
        )
        if a_host and b_host:
            errs.error(
                link.mark,
                f"link joins two hosts ('{link.a.node}', '{link.b.node}'); hosts attach to switches",
            )
            continue
        for ep, is_host in ((link.a, a_host), (link.b, b_host)):
            if is_host:
                if ep.port not in (None, HOST_PORT):
                    errs.error(
                        ep.mark,
                        f"host port must be {HOST_PORT} (a host has one interface '{intf_name(ep.node, HOST_PORT)}'), got {ep.port}",
                    )
                    ok = False
            elif ep.port is not None and not 1 <= ep.port <= MAX_PORT:
                errs.error(ep.mark, f"switch port {ep.port} out of range 1..{MAX_PORT}")
                ok = False
            elif ep.port == CPU_PORT:
                errs.error(ep.mark, f"switch port {CPU_PORT} is the switches' CPU port "
                                    "(to the controller); use another")
                ok = False
        if ok:
            good.append(idx)
    return host_links, good


def _check_hosts(spec: FabricSpec, nodes: dict[str, SwitchSpec | HostSpec],
                 host_links: dict[str, list[int]], errs: Collector) -> None:
    """Each host on exactly one link, to a leaf, with a sane MTU."""
    for host in spec.hosts:
        attached = host_links[host.name]
        if not attached:
            if host.name not in spec.unresolved:
                errs.error(host.mark, f"host '{host.name}' is not attached to any switch")
        elif len(attached) > 1:
            second = spec.links[attached[1]]
            errs.error(
                second.mark,
                f"host '{host.name}' is attached to more than one switch (first link at {_where(spec.links[attached[0]].mark)})",
            )
        else:
            link = spec.links[attached[0]]
            sw = link.b if link.a.node == host.name else link.a
            role = getattr(nodes.get(sw.node), "role", None)
            if role is not None and role is not Role.LEAF:
                errs.error(
                    link.mark,
                    f"host '{host.name}' attaches to '{sw.node}' whose role is {role.value}; hosts attach to leaves",
                )
        if host.mtu is not None and not 576 <= host.mtu <= 9216:
            errs.error(host.mark, f"mtu {host.mtu} out of range 576..9216")


def _assign_ports(spec: FabricSpec, good: list[int], host_links: dict[str, list[int]],
                  errs: Collector) -> dict[int, tuple[int, int]]:
    """Link index -> (a port, b port): explicit numbers first (detecting reuse), then the
    rest filled in, host-facing links first."""
    used: dict[str, dict[int, EndpointSpec]] = {s.name: {} for s in spec.switches}
    for idx in good:
        link = spec.links[idx]
        for ep in (link.a, link.b):
            if ep.node in used and ep.port is not None:
                if ep.port in used[ep.node]:
                    first = used[ep.node][ep.port]
                    errs.error(
                        ep.mark,
                        f"port {ep.node}:{ep.port} is used twice (first at {_where(first.mark)})",
                    )
                else:
                    used[ep.node][ep.port] = ep
    assigned: dict[int, tuple[int, int]] = {}
    pending: list[tuple[int, int, str, bool]] = []  # (host-facing-last, order, node, is_a)
    for order, idx in enumerate(good):
        link = spec.links[idx]
        host_facing = link.a.node in host_links or link.b.node in host_links
        for ep, is_a in ((link.a, True), (link.b, False)):
            if ep.node in used and ep.port is None:
                pending.append((0 if host_facing else 1, order, ep.node, is_a))
    ports_for: dict[int, list[int | None]] = {
        idx: [spec.links[idx].a.port, spec.links[idx].b.port] for idx in good
    }
    for _, order, sw_name, is_a in sorted(pending):
        idx = good[order]
        free = 1
        while free in used[sw_name] or free == CPU_PORT:
            free += 1
        ep = spec.links[idx].a if is_a else spec.links[idx].b
        if free > MAX_PORT:
            errs.error(ep.mark, f"'{sw_name}' has no free port left (max {MAX_PORT})")
            continue
        used[sw_name][free] = ep
        ports_for[idx][0 if is_a else 1] = free
    for idx in good:
        a_port, b_port = ports_for[idx]
        assigned[idx] = (
            a_port if a_port is not None else HOST_PORT,
            b_port if b_port is not None else HOST_PORT,
        )
    return assigned


def _check_names_and_limits(spec: FabricSpec, good: list[int],
                            assigned: dict[int, tuple[int, int]], errs: Collector) -> None:
    """Interface names Linux accepts; no more leaves and switches than addresses."""
    for idx in good:
        link = spec.links[idx]
        for ep, port in zip((link.a, link.b), assigned[idx], strict=True):
            name = intf_name(ep.node, port)
            if len(name) > MAX_INTF_NAME:
                errs.error(
                    ep.mark,
                    f"interface name '{name}' is {len(name)} characters; Linux allows at most {MAX_INTF_NAME} (shorten node '{ep.node}')",
                )

    leaves = [s for s in spec.switches if s.role is Role.LEAF]
    if len(leaves) > addressing.MAX_LEAVES:
        errs.error(
            spec.mark, f"{len(leaves)} leaves exceed the addressing plan's {addressing.MAX_LEAVES}"
        )
    if len(spec.switches) > addressing.MAX_DEVICE_ID:
        errs.error(
            spec.mark, f"{len(spec.switches)} switches exceed {addressing.MAX_DEVICE_ID} device ids"
        )


def _all_nodes(spec: FabricSpec) -> list[SwitchSpec | HostSpec]:
    return [*spec.switches, *spec.hosts]


def _check_connected(spec: FabricSpec, errs: Collector, links: list[LinkSpec]) -> None:
    names = [n.name for n in _all_nodes(spec)]
    if not names:
        return
    adj: dict[str, set[str]] = {n: set() for n in names}
    for link in links:
        adj[link.a.node].add(link.b.node)
        adj[link.b.node].add(link.a.node)
    start = spec.switches[0].name if spec.switches else names[0]
    seen = {start}
    queue = deque([start])
    while queue:
        for nxt in adj[queue.popleft()]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    for node in _all_nodes(spec):
        if node.name not in seen:
            errs.error(
                node.mark, f"fabric is disconnected: '{node.name}' cannot be reached from '{start}'"
            )


def _link_pfc(ls: LinkSpec, d: Defaults, errs: Collector) -> LinkPfc | None:
    """The link's `pfc:` keys over the defaults'; the merged pair must stay ordered."""
    pfc = ls.pfc.over(d.pfc) if ls.pfc is not None else d.pfc
    if pfc is not None and pfc.xon_bytes is not None and pfc.xoff_bytes is not None \
            and pfc.xon_bytes > pfc.xoff_bytes:
        errs.error(ls.mark, f"pfc: xon ({pfc.xon_bytes} bytes) must not exceed xoff "
                            f"({pfc.xoff_bytes} bytes) (this link's keys over the defaults')")
    return pfc


def _assemble(
    spec: FabricSpec, good: list[int], assigned: dict[int, tuple[int, int]], errs: Collector
) -> Fabric:
    links = _links(spec, good, assigned, errs)
    # Device ids: leaves, spines, cores, each in declaration order (stable across runs).
    ordered = sorted(spec.switches, key=lambda s: s.role.layer)
    device_ids = {s.name: i for i, s in enumerate(ordered, start=1)}
    leaf_index = {
        s.name: i for i, s in enumerate((s for s in ordered if s.role is Role.LEAF), start=1)
    }
    switches = _switches(spec, links, ordered, device_ids, leaf_index)
    hosts = _hosts(spec, links, switches, leaf_index, errs)
    return Fabric(
        name=spec.name,
        switches=tuple(switches.values()),
        hosts=tuple(hosts),
        links=tuple(links),
        defaults=spec.defaults,
        source=spec.mark.file,
        generator=spec.generator,
    )


def _links(spec: FabricSpec, good: list[int], assigned: dict[int, tuple[int, int]],
           errs: Collector) -> list[Link]:
    d = spec.defaults
    links: list[Link] = []
    for n, idx in enumerate(good):
        ls = spec.links[idx]
        a_port, b_port = assigned[idx]
        links.append(
            Link(
                index=n,
                a=Endpoint(ls.a.node, a_port),
                b=Endpoint(ls.b.node, b_port),
                rate_bps=ls.rate_bps if ls.rate_bps is not None else d.rate_bps,
                delay_ns=ls.delay_ns if ls.delay_ns is not None else d.delay_ns,
                depth_pkts=ls.depth_pkts if ls.depth_pkts is not None else d.depth_pkts,
                pfc=_link_pfc(ls, d, errs),
            )
        )
    return links


def _switches(spec: FabricSpec, links: list[Link], ordered: list[SwitchSpec],
              device_ids: dict[str, int], leaf_index: dict[str, int]) -> dict[str, Switch]:
    host_names = {h.name for h in spec.hosts}
    switch_ports: dict[str, list[Port]] = {s.name: [] for s in spec.switches}
    for link in links:
        for ep, peer in ((link.a, link.b), (link.b, link.a)):
            if ep.node in switch_ports:
                did = device_ids[ep.node]
                switch_ports[ep.node].append(
                    Port(
                        number=ep.port,
                        intf=ep.intf,
                        mac=addressing.port_mac(did, ep.port),
                        peer=peer,
                        link=link.index,
                        rate_bps=link.rate_bps,
                        depth_pkts=link.depth_pkts,
                        to_host=peer.node in host_names,
                    )
                )

    switches: dict[str, Switch] = {}
    for s in ordered:
        li = leaf_index.get(s.name)
        switches[s.name] = Switch(
            name=s.name,
            role=s.role,
            device_id=device_ids[s.name],
            mac=addressing.switch_mac(device_ids[s.name]),
            ports=tuple(sorted(switch_ports[s.name], key=lambda p: p.number)),
            subnet=addressing.leaf_subnet(li) if li else None,
            gateway=addressing.leaf_gateway(li) if li else None,
        )
    return switches


def _hosts(spec: FabricSpec, links: list[Link], switches: dict[str, Switch],
           leaf_index: dict[str, int], errs: Collector) -> list[Host]:
    """Hosts addressed by their leaf and their place in its port order."""
    host_names = {h.name for h in spec.hosts}
    host_link = {}
    for link in links:
        for ep, peer in ((link.a, link.b), (link.b, link.a)):
            if ep.node in host_names:
                host_link[ep.node] = (peer, link)
    # Host j on a leaf = j-th host in that leaf's port order, so addresses follow cabling.
    by_leaf: dict[str, list[str]] = {}
    for name, (peer, _) in sorted(host_link.items(), key=lambda kv: kv[1][0].port):
        by_leaf.setdefault(peer.node, []).append(name)
    hosts: list[Host] = []
    spec_by_name = {h.name: h for h in spec.hosts}
    for leaf_name, names in by_leaf.items():
        if len(names) > addressing.MAX_HOSTS_PER_LEAF:
            errs.error(
                spec_by_name[names[0]].mark,
                f"leaf '{leaf_name}' has {len(names)} hosts; the addressing plan allows {addressing.MAX_HOSTS_PER_LEAF}",
            )
    errs.raise_if_any()
    for h in spec.hosts:
        peer, link = host_link[h.name]
        li = leaf_index[peer.node]
        j = by_leaf[peer.node].index(h.name) + 1
        leaf = switches[peer.node]
        assert leaf.subnet is not None and leaf.gateway is not None
        hosts.append(
            Host(
                name=h.name,
                ip=addressing.host_ip(li, j),
                mac=addressing.host_mac(li, j),
                switch=peer.node,
                switch_port=peer.port,
                mtu=h.mtu if h.mtu is not None else spec.defaults.mtu,
                subnet=leaf.subnet,
                gateway=leaf.gateway,
                gateway_mac=leaf.mac,
                link=link.index,
            )
        )
    return hosts
