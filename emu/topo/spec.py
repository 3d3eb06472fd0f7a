"""The declared topology before resolution: what a YAML file or a generator states.

Each item keeps the Mark it came from so that resolution (`validate.build_fabric`) can
report problems against the user's file. Ports may be left out (None) and are assigned
during resolution.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import Mark
from .model import Defaults, LinkPfc, Role


@dataclass
class SwitchSpec:
    name: str
    role: Role
    mark: Mark


@dataclass
class HostSpec:
    name: str
    mark: Mark
    mtu: int | None = None


@dataclass
class EndpointSpec:
    node: str
    port: int | None
    mark: Mark


@dataclass
class LinkSpec:
    a: EndpointSpec
    b: EndpointSpec
    mark: Mark
    rate_bps: int | None = None
    delay_ns: int | None = None
    depth_pkts: int | None = None
    pfc: LinkPfc | None = None


@dataclass
class FabricSpec:
    name: str
    mark: Mark
    defaults: Defaults = field(default_factory=Defaults)
    switches: list[SwitchSpec] = field(default_factory=list)
    hosts: list[HostSpec] = field(default_factory=list)
    links: list[LinkSpec] = field(default_factory=list)
    generator: dict[str, Any] | None = None
    # Set when the file had errors and entries were left out: resolution still checks
    # what is left, but must not report the consequences of what is missing (a link to a
    # switch whose role was misspelt is not "dangling"). `unresolved` holds the names of
    # nodes that were declared, or attached by a link, in an entry that was left out.
    partial: bool = False
    unresolved: set[str] = field(default_factory=set)
