"""Fabric controller: routes and next-hop groups, LB modes, ECN, TE; programs switches.

Pure computation (`routes`, `te`, `params`, `program`) is separate from the switch
interface (`southbound`: SwitchHandle and its implementations) and the `controller`.

Imports: emu.switch, emu.runtime and the layers below them. Layer 6 of the package
layers that pyproject.toml's import-linter contracts enforce; nothing above it.
"""

from .controller import FabricController, GroupCounters, PortCounters
from .errors import (
    ControlError,
    NoPathError,
    ParamError,
    SouthboundError,
    UnknownHostError,
    UnknownLinkError,
    UnknownSwitchError,
)
from .params import MAX_MEMBERS, EcnSettings, LbMode, LbSettings, QosSettings
from .routes import Route, SwitchRoutes, all_routes, check_group_sizes, switch_routes
from .southbound import (
    CloneSession,
    Lpm,
    MemorySwitchHandle,
    MulticastGroup,
    ProfileGroup,
    ProfileMember,
    SwitchHandle,
    TableEntry,
    Ternary,
)
from .te import Flow, Placement, place_flows

__all__ = [
    "MAX_MEMBERS",
    "CloneSession",
    "ControlError",
    "EcnSettings",
    "FabricController",
    "Flow",
    "GroupCounters",
    "LbMode",
    "LbSettings",
    "Lpm",
    "MemorySwitchHandle",
    "MulticastGroup",
    "ProfileGroup",
    "ProfileMember",
    "NoPathError",
    "ParamError",
    "Placement",
    "PortCounters",
    "QosSettings",
    "Route",
    "SouthboundError",
    "SwitchHandle",
    "SwitchRoutes",
    "TableEntry",
    "Ternary",
    "UnknownHostError",
    "UnknownLinkError",
    "UnknownSwitchError",
    "all_routes",
    "check_group_sizes",
    "place_flows",
    "switch_routes",
]
