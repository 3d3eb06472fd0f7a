"""The deterministic addressing plan.

- Leaf i (1-based, in device-id order) owns 10.H.L.0/24 with H.L the 16-bit i (H = i
  div 256, L = i mod 256: leaves 1..255 are 10.0.i.0/24, leaf 256 is 10.1.0.0/24); its
  j-th host (1-based, in port order) is 10.H.L.j and the leaf answers as gateway
  10.H.L.254. Hence at most 65,535 leaves (fewer than the device ids of their fabric)
  and 253 hosts per leaf.
- MACs are locally administered unicast (first octet 0x02):
  host      02:00:00:LH:LL:JJ   (LH:LL = leaf index, JJ = host index on that leaf)
  switch    02:00:01:00:DD:DD   (device id, 16 bits) - the router MAC, source of routed frames
  port      02:01:DD:DD:PP:PP   (device id, port number) - set on the switch-side interface
  The second octet keeps the three families apart, so they can never collide.
- Device ids start at 1: leaves, then spines, then cores, each in declaration order.
"""

from __future__ import annotations

import ipaddress

MAX_LEAVES = 0xFFFF
MAX_HOSTS_PER_LEAF = 253
GATEWAY_HOST_PART = 254
MAX_DEVICE_ID = 0xFFFF


def _mac(octets: list[int]) -> str:
    return ":".join(f"{o:02x}" for o in octets)


def leaf_subnet(leaf_index: int) -> ipaddress.IPv4Network:
    if not 1 <= leaf_index <= MAX_LEAVES:
        raise ValueError(f"leaf index {leaf_index} outside 1..{MAX_LEAVES}")
    return ipaddress.IPv4Network(f"10.{leaf_index >> 8}.{leaf_index & 0xFF}.0/24")


def leaf_gateway(leaf_index: int) -> ipaddress.IPv4Address:
    return leaf_subnet(leaf_index).network_address + GATEWAY_HOST_PART


def host_ip(leaf_index: int, host_index: int) -> ipaddress.IPv4Address:
    if not 1 <= host_index <= MAX_HOSTS_PER_LEAF:
        raise ValueError(f"host index {host_index} outside 1..{MAX_HOSTS_PER_LEAF}")
    return leaf_subnet(leaf_index).network_address + host_index


def host_mac(leaf_index: int, host_index: int) -> str:
    return _mac([0x02, 0, 0, leaf_index >> 8, leaf_index & 0xFF, host_index])


def switch_mac(device_id: int) -> str:
    if not 1 <= device_id <= MAX_DEVICE_ID:
        raise ValueError(f"device id {device_id} outside 1..{MAX_DEVICE_ID}")
    return _mac([0x02, 0, 0x01, 0, device_id >> 8, device_id & 0xFF])


def port_mac(device_id: int, port: int) -> str:
    return _mac([0x02, 0x01, device_id >> 8, device_id & 0xFF, port >> 8, port & 0xFF])
