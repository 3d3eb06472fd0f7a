import ipaddress
from collections import Counter

import pytest

from emu.topo import Fabric, Role, addressing, clos_fabric, fattree_fabric, load_topology
from emu.topo.model import MAX_INTF_NAME


def _fabrics() -> list[Fabric]:
    return [
        load_topology("clos4"),
        load_topology("fattree4"),
        load_topology("leafspine2"),
        fattree_fabric(8),
        clos_fabric(16, 4, 8, uplinks_per_spine=2),
        fattree_fabric(24),  # leaf numbers past one octet
    ]


@pytest.mark.parametrize("fabric", _fabrics(), ids=lambda f: f.name)
def test_addresses_unique(fabric: Fabric) -> None:
    def no_dupes(values: list[object]) -> None:
        dup = [v for v, n in Counter(values).items() if n > 1]
        assert not dup, dup

    no_dupes([h.ip for h in fabric.hosts])
    host_macs = [h.mac for h in fabric.hosts]
    switch_macs = [s.mac for s in fabric.switches]
    port_macs = [p.mac for s in fabric.switches for p in s.ports]
    no_dupes(host_macs + switch_macs + port_macs)
    no_dupes([s.device_id for s in fabric.switches])
    assert sorted(s.device_id for s in fabric.switches) == list(range(1, len(fabric.switches) + 1))
    intfs = [ep.intf for link in fabric.links for ep in (link.a, link.b)]
    no_dupes(intfs)
    assert all(len(i) <= MAX_INTF_NAME for i in intfs)
    no_dupes([s.subnet for s in fabric.leaves])


@pytest.mark.parametrize("fabric", _fabrics(), ids=lambda f: f.name)
def test_addresses_well_formed(fabric: Fabric) -> None:
    for mac in [h.mac for h in fabric.hosts] + [s.mac for s in fabric.switches]:
        first = int(mac.split(":")[0], 16)
        assert first & 0b10 and not first & 0b01, mac  # locally administered, unicast
    for h in fabric.hosts:
        assert h.ip in fabric.subnet_of(h.switch)
        assert h.ip != h.gateway and h.gateway in h.subnet
    # device ids: leaves, then spines, then cores
    roles = [s.role for s in sorted(fabric.switches, key=lambda s: s.device_id)]
    assert roles == sorted(roles, key=lambda r: r.layer)


def test_plan_is_documented_form() -> None:
    f = load_topology("clos4")
    assert [str(h.ip) for h in f.hosts_on("leaf3")] == ["10.0.3.1", "10.0.3.2"]
    assert f.host("h6").mac == "02:00:00:00:03:02"
    assert str(f.switch("leaf3").gateway) == "10.0.3.254"
    assert f.switch("spine1").mac == "02:00:01:00:00:05"
    assert f.switch("spine1").port(3).mac == "02:01:00:05:00:03"
    assert f.switch("leaf1").role is Role.LEAF
    assert addressing.leaf_subnet(7) == ipaddress.IPv4Network("10.0.7.0/24")


def test_addressing_is_deterministic() -> None:
    assert load_topology("fattree4").to_dict() == load_topology("fattree4").to_dict()


def test_leaf_numbers_past_one_octet_take_two() -> None:
    """Leaves were 10.0.i.0/24, so at most 254: a k = 24 fat tree (288 edge switches)
    could not be built."""
    assert addressing.leaf_subnet(255) == ipaddress.IPv4Network("10.0.255.0/24")
    assert addressing.leaf_subnet(256) == ipaddress.IPv4Network("10.1.0.0/24")
    assert addressing.leaf_subnet(300) == ipaddress.IPv4Network("10.1.44.0/24")
    assert addressing.host_mac(300, 5) == "02:00:00:01:2c:05"
    assert addressing.host_mac(3, 2) == "02:00:00:00:03:02"  # as before below 256
    ft = fattree_fabric(24)
    assert len(ft.leaves) == 288 and len(ft.hosts) == 3456
    last = max(ft.leaves, key=lambda s: s.device_id)
    assert str(last.subnet) == "10.1.32.0/24" and str(last.gateway) == "10.1.32.254"


def test_plan_limits() -> None:
    with pytest.raises(ValueError):
        addressing.leaf_subnet(0x10000)
    with pytest.raises(ValueError):
        addressing.host_ip(1, 254)
    with pytest.raises(ValueError):
        addressing.switch_mac(0)
