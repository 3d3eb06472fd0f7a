"""Routes and groups computed from the topology model, with and without failures."""

from __future__ import annotations

import ipaddress

import pytest

from emu.control import ControlError, UnknownLinkError, UnknownSwitchError, switch_routes
from emu.control.routes import GroupIds, all_routes, find_link
from emu.topo import load_topology


@pytest.fixture(scope="module")
def clos4():
    return load_topology("clos4")


@pytest.fixture(scope="module")
def fattree4():
    return load_topology("fattree4")


def _group_for(routes, leaf_subnet):
    for r in routes.routes:
        if r.prefix == leaf_subnet:
            return r.group
    return None


def test_leaf_routes_hosts_to_ports_and_leaves_to_all_uplinks(clos4):
    r = switch_routes(clos4, "leaf1")
    hosts = {r2.prefix: r2.port for r2 in r.routes if r2.port is not None}
    assert hosts == {ipaddress.IPv4Network(f"{h.ip}/32"): h.switch_port
                     for h in clos4.hosts_on("leaf1")}
    uplinks = tuple(sorted(p.number for p in clos4.switch("leaf1").fabric_ports))
    for leaf in clos4.leaves[1:]:
        assert _group_for(r, clos4.subnet_of(leaf.name)) == uplinks
    # one distinct group: every remote leaf shares the same uplinks
    assert r.groups == [uplinks]


def test_spine_routes_each_leaf_down_its_link(clos4):
    r = switch_routes(clos4, "spine1")
    for leaf in clos4.leaves:
        (link,) = clos4.link_between("spine1", leaf.name)
        assert _group_for(r, clos4.subnet_of(leaf.name)) == (link.end("spine1").port,)


def test_fattree_groups_follow_up_down_paths(fattree4):
    routes = all_routes(fattree4)
    # an edge goes up over both aggregations, a core goes down one port per pod
    assert _group_for(routes["p1e1"], fattree4.subnet_of("p3e1")) == (3, 4)
    core_groups = {r.group for r in routes["c1"].routes}
    assert all(len(g) == 1 for g in core_groups if g)
    # an aggregation switch reaches its own pod's edges down, other pods up via 2 cores
    agg = routes["p1a1"]
    assert len(_group_for(agg, fattree4.subnet_of("p1e2"))) == 1
    assert len(_group_for(agg, fattree4.subnet_of("p2e1"))) == 2


def test_neighbors_rewrite_to_peer_macs(clos4):
    r = switch_routes(clos4, "leaf1")
    sw = clos4.switch("leaf1")
    for p in sw.ports:
        smac, dmac = r.neighbors[p.number]
        assert smac == sw.mac
        peer = clos4.node(p.peer.node)
        assert dmac == peer.mac


def test_failed_uplink_leaves_the_groups_and_spine_stops_routing_to_leaf(clos4):
    link = find_link(clos4, "leaf2", "spine1")
    routes = all_routes(clos4, {link.index})
    subnet2 = clos4.subnet_of("leaf2")
    # spine1 has no way down to leaf2 (valley-free: no going back up)
    assert _group_for(routes["spine1"], subnet2) is None
    port_to_spine1 = clos4.link_between("leaf1", "spine1")[0].end("leaf1").port
    g = _group_for(routes["leaf1"], subnet2)
    assert g is not None and port_to_spine1 not in g and len(g) == 3
    # other destinations keep all 4 uplinks
    assert len(_group_for(routes["leaf1"], clos4.subnet_of("leaf3"))) == 4
    assert link.end("leaf2").port not in routes["leaf2"].neighbors


def test_fattree_failure_is_avoided_two_hops_away(fattree4):
    link = find_link(fattree4, "p1a1", "p1e2")
    routes = all_routes(fattree4, {link.index})
    subnet = fattree4.subnet_of("p1e2")
    # cores above p1a1 lose the destination; edges in other pods avoid the aggs above them
    for core in ("c1", "c2"):
        assert _group_for(routes[core], subnet) is None
    g = _group_for(routes["p3e1"], subnet)
    assert g is not None and len(g) == 1
    (agg_port,) = g
    assert fattree4.switch("p3e1").port(agg_port).peer.node == "p3a2"


def test_unknown_switch_and_link_errors(clos4):
    with pytest.raises(UnknownSwitchError, match="unknown switch 'leaf9'"):
        switch_routes(clos4, "leaf9")
    with pytest.raises(UnknownLinkError, match="no link between leaf1 and leaf2"):
        find_link(clos4, "leaf1", "leaf2")
    with pytest.raises(UnknownLinkError, match="no node"):
        find_link(clos4, "nope", "leaf2")


def test_group_ids_are_stable_while_used():
    ids = GroupIds()
    first = ids.assign([(1, 2, 3), (4,)])
    second = ids.assign([(1, 3), (4,)])
    assert second[(4,)] == first[(4,)]
    assert second[(1, 3)] not in first.values()  # make before break
    assert len(set(second.values())) == 2
    assert min(first.values()) >= 1


def test_too_many_members_is_refused():
    from emu.topo import clos_fabric

    fabric = clos_fabric(leaves=2, spines=17, hosts_per_leaf=1)
    with pytest.raises(ControlError, match="at most 16 members"):
        switch_routes(fabric, fabric.leaves[0].name)
