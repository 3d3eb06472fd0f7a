from collections import Counter
from itertools import combinations

import pytest

from emu.topo import Role, TopologyError, clos_fabric, fattree_fabric, load_topology
from emu.topo.paths import equal_cost_paths, next_hop_ports


def test_clos4_shipped() -> None:
    f = load_topology("clos4")
    assert (len(f.leaves), len(f.spines), len(f.cores)) == (4, 4, 0)
    assert len(f.hosts) == 8
    assert len(f.links) == 8 + 16
    for a, b in combinations([s.name for s in f.leaves], 2):
        paths = equal_cost_paths(f, a, b)
        assert len(paths) == 4
        assert {p.switches[1] for p in paths} == {"spine1", "spine2", "spine3", "spine4"}
        assert all(len(p) == 2 for p in paths)


def test_clos_port_layout_hosts_first() -> None:
    f = clos_fabric(3, 2, hosts_per_leaf=2, uplinks_per_spine=2)
    leaf2 = f.switch("leaf2")
    assert [p.number for p in leaf2.host_ports] == [1, 2]
    # spine s, parallel uplink u -> port H + (s-1)*U + u
    assert {p.number: (p.peer.node, p.peer.port) for p in leaf2.fabric_ports} == {
        3: ("spine1", 3),
        4: ("spine1", 4),
        5: ("spine2", 3),
        6: ("spine2", 4),
    }
    assert len(f.link_between("leaf1", "spine2")) == 2
    # per spine: 2 parallel links up x 2 parallel links down; 2 spines
    assert len(equal_cost_paths(f, "leaf1", "leaf3")) == 8
    assert next_hop_ports(f, "leaf1", "leaf3") == [3, 4, 5, 6]
    assert next_hop_ports(f, "spine1", "leaf3") == [5, 6]


def test_clos_oversubscription() -> None:
    f = clos_fabric(2, 2, 4, host_rate_bps=20_000_000, oversubscription=2)
    # 4 x 20 down, 2 uplinks -> each 20 Mbit/s for 2:1
    assert f.oversubscription("leaf1") == pytest.approx(2.0)
    assert {link.rate_bps for link in f.links if link.a.node.startswith("leaf")} == {20_000_000}
    g = clos_fabric(2, 2, 2, host_rate_bps=10_000_000, uplink_rate_bps=40_000_000)
    assert g.oversubscription("leaf1") == pytest.approx(0.25)
    with pytest.raises(TopologyError, match="not both"):
        clos_fabric(2, 2, 2, uplink_rate_bps=1000, oversubscription=2)


@pytest.mark.parametrize(("k", "switches", "hosts", "links"), [(4, 20, 16, 48), (8, 80, 128, 384)])
def test_fattree_counts(k: int, switches: int, hosts: int, links: int) -> None:
    f = fattree_fabric(k)
    half = k // 2
    assert len(f.switches) == switches == 5 * k * k // 4
    assert len(f.hosts) == hosts == k**3 // 4
    assert len(f.links) == links == 3 * k**3 // 4
    assert Counter(s.role for s in f.switches) == {
        Role.LEAF: k * half,
        Role.SPINE: k * half,
        Role.CORE: half * half,
    }
    # every switch uses exactly k ports, numbered 1..k
    for sw in f.switches:
        assert sorted(p.number for p in sw.ports) == list(
            range(1, k + 1 if sw.role is not Role.CORE else k + 1)
        )
    for leaf in f.leaves:
        assert len(f.hosts_on(leaf.name)) == half


@pytest.mark.parametrize("k", [4, 8])
def test_fattree_path_counts(k: int) -> None:
    f = fattree_fabric(k)
    half = k // 2
    same_pod = equal_cost_paths(f, "p1e1", "p1e2")
    assert len(same_pod) == half
    assert all(len(p) == 2 for p in same_pod)
    other_pod = equal_cost_paths(f, "p1e1", f"p{k}e{half}")
    assert len(other_pod) == half * half
    assert all(len(p) == 4 for p in other_pod)
    assert len({p.switches for p in other_pod}) == half * half  # all through distinct cores
    assert all(p.switches[2].startswith("c") for p in other_pod)
    assert next_hop_ports(f, "p1e1", "p2e1") == list(range(half + 1, k + 1))


def test_fattree_shipped_matches_generator() -> None:
    f = load_topology("fattree4")
    assert f.summary() == "20 switches, 16 hosts, 48 links"
    assert f.generator is not None and f.generator["k"] == 4


@pytest.mark.parametrize("k", [3, 5, 0, -2])
def test_fattree_rejects_bad_k(k: int) -> None:
    with pytest.raises(TopologyError, match="k must be"):
        fattree_fabric(k)


def test_clos_rejects_bad_counts() -> None:
    with pytest.raises(TopologyError, match="leaves must be"):
        clos_fabric(0, 2, 1)
    with pytest.raises(TopologyError, match="uplinks_per_spine"):
        clos_fabric(2, 2, 1, uplinks_per_spine=0)


def test_generators_refuse_unknown_options() -> None:
    # The shared options are a TypedDict behind **opts; a misspelt one must still fail
    # as a plain keyword signature would, not be ignored.
    with pytest.raises(TypeError, match="host_rate"):
        clos_fabric(2, 2, 1, host_rate=10)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="uplink_bps"):
        fattree_fabric(4, uplink_bps=10)  # type: ignore[call-arg]
    f = fattree_fabric(4, host_rate_bps=10_000_000, name="ft")
    assert f.name == "ft"
    assert {link.rate_bps for link in f.links} == {10_000_000}
