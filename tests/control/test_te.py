"""Greedy TE placement: largest demand first, onto the least-loaded path."""

from __future__ import annotations

import pytest

from emu.control import Flow, NoPathError, ParamError, UnknownHostError, place_flows
from emu.control.routes import all_routes, find_link
from emu.control.te import link_loads, te_pins
from emu.topo import load_topology


@pytest.fixture(scope="module")
def clos4():
    return load_topology("clos4")


def _spine(p):
    return p.path.switches[1]


def test_equal_flows_between_two_leaves_get_disjoint_spines(clos4):
    flows = [Flow("h1", "h3", sport=50000 + i, demand_bps=5e6) for i in range(4)]
    placed = place_flows(clos4, flows)
    assert sorted(_spine(p) for p in placed) == ["spine1", "spine2", "spine3", "spine4"]
    assert max(link_loads(placed).values()) == 5e6


def test_largest_flow_first_and_small_ones_fill_around_it(clos4):
    flows = [Flow("h1", "h3", sport=1, demand_bps=1e6), Flow("h1", "h3", sport=2, demand_bps=9e6),
             Flow("h2", "h4", sport=3, demand_bps=1e6), Flow("h2", "h3", sport=4, demand_bps=1e6),
             Flow("h2", "h3", sport=5, demand_bps=1e6)]
    placed = place_flows(clos4, flows)
    big = placed[1]
    assert all(_spine(p) != _spine(big) for i, p in enumerate(placed) if i != 1)
    assert placed[0].flow is flows[0]  # results in input order


def test_a_path_through_a_failed_link_is_never_chosen(clos4):
    dead = find_link(clos4, "leaf1", "spine2").index
    flows = [Flow("h1", "h3", sport=i, demand_bps=1.0) for i in range(6)]
    placed = place_flows(clos4, flows, {dead})
    assert all(_spine(p) != "spine2" for p in placed)


def test_pins_are_member_indexes_of_the_switch_groups(clos4):
    routes = all_routes(clos4)
    flows = [Flow("h1", "h3", sport=i) for i in range(4)]
    placed = place_flows(clos4, flows)
    pins = te_pins(clos4, placed, routes)
    members = routes["leaf1"].by_leaf["leaf2"]
    for p in placed:
        _, port = p.hops[0]
        assert members[pins["leaf1"][p.key]] == port
        assert pins[_spine(p)][p.key] == 0  # the spine has one way down


def test_flow_errors(clos4):
    with pytest.raises(UnknownHostError, match="unknown host 'h99'"):
        place_flows(clos4, [Flow("h99", "h1", sport=1)])
    with pytest.raises(ParamError, match="sport"):
        Flow("h1", "h2", sport=70000)
    dead = {find_link(clos4, "leaf2", f"spine{i}").index for i in range(1, 5)}
    with pytest.raises(NoPathError, match="no path from leaf1 to leaf2"):
        place_flows(clos4, [Flow("h1", "h3", sport=1)], dead)
    # hosts given by IP work too
    h3 = clos4.host("h3")
    (p,) = place_flows(clos4, [Flow("h1", str(h3.ip), sport=1)])
    assert p.key.dst_ip == int(h3.ip)


def test_loads_are_weighed_by_link_rate():
    """asym4: leaf1's uplink to spine4 runs at 50 Gb/s. Counted in bps, 8 flows of
    40 Gb/s went 2 per spine, 80 Gb/s (160%) on the slow uplink; by utilisation the
    slowest link is loaded at most 120%."""
    asym = load_topology("asym4")
    flows = [Flow(src, dst, sport=50000 + i, demand_bps=40e9)
             for i in range(4) for src, dst in (("h1", "h3"), ("h2", "h4"))]
    loads = link_loads(place_flows(asym, flows))
    rate = {(lk.index, lk.a.node): lk.rate_bps for lk in asym.links}
    rate.update({(lk.index, lk.b.node): lk.rate_bps for lk in asym.links})
    worst = max(bps / rate[key] for key, bps in loads.items())
    assert worst == pytest.approx(1.2)
