"""Topology model: YAML -> typed, validated Fabric; Clos / fat-tree generators.

Typical use::

    from emu.topo import load_topology
    fabric = load_topology("clos4")
    for sw in fabric.switches: ...          # Switch(name, role, device_id, mac, ports)
    for h in fabric.hosts: ...              # Host(name, ip, mac, switch, switch_port, ...)
    equal_cost_paths(fabric, "leaf1", "leaf2")  # emu.topo.paths: the ECMP path search

Imports: emu.core. Layer 2 of the package layers that pyproject.toml's import-linter
contracts enforce; nothing above it.
"""

from . import model
from .addressing import host_ip, host_mac, leaf_gateway, leaf_subnet, port_mac, switch_mac
from .errors import Diagnostic, Mark, TopologyError
from .generators import clos, clos_fabric, fattree, fattree_fabric
from .loader import available_topologies, load_topology, loads_topology, resolve_topology
from .model import *  # noqa: F403 - the model, as model.__all__ lists it
from .units import (
    UnitError,
    format_delay,
    format_rate,
    parse_delay,
    parse_message_size,
    parse_rate,
)
from .validate import build_fabric

__all__ = [
    "Diagnostic",
    "Mark",
    "TopologyError",
    "UnitError",
    "available_topologies",
    "build_fabric",
    "clos",
    "clos_fabric",
    "fattree",
    "fattree_fabric",
    "format_delay",
    "format_rate",
    "host_ip",
    "host_mac",
    "leaf_gateway",
    "leaf_subnet",
    "load_topology",
    "loads_topology",
    "parse_delay",
    "parse_message_size",
    "parse_rate",
    "port_mac",
    "resolve_topology",
    "switch_mac",
]
__all__ += model.__all__
