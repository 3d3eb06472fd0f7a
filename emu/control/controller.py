"""The fabric controller: programs every switch of a topology through SwitchHandles.

    ctl = FabricController(fabric, handles)        # handles: switch name -> SwitchHandle
    ctl.program()                                  # routes, groups, MACs, LB, ECN, QoS
    ctl.set_lb(LbMode.FLOWLET, flowlet_timeout_us=200)  # any time, also under traffic
    ctl.place_te([Flow("h1", "h5", sport=49152, demand_bps=8e6), ...])
    ctl.link_down("leaf1", "spine2")               # recompute and reprogram
    ctl.port_counters("leaf1")

Writes are diffs against what the controller last installed: new groups and MAC
entries first, then routes, then TE pins, and only then deletions, so a route never
points at a group that is not there yet (make before break).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from emu.topo import Fabric, Link

from . import program as P
from .errors import ControlError, NoPathError, ParamError, UnknownSwitchError
from .params import MAX_MEMBERS, TE_FLOW_SLOTS, EcnSettings, LbMode, LbSettings, QosSettings
from .routes import GroupIds, SwitchRoutes, all_routes, find_link
from .southbound import MatchKey, SwitchHandle, TableEntry
from .te import Flow, Placement, place_flows, te_pins

log = logging.getLogger(__name__)

# Write order: what others refer to goes first.
_TABLE_ORDER = [P.ECMP_GROUP, P.PORT_NEIGHBOR, P.IPV4_LPM, P.TE_FLOW, P.ECN_CONFIG,
                P.TRAFFIC_CLASS]


@dataclass(frozen=True)
class PortCounters:
    rx_pkts: int
    rx_bytes: int
    tx_pkts: int
    tx_bytes: int
    ecn_marks: int
    drops: int


@dataclass(frozen=True)
class GroupCounters:
    group_id: int
    members: tuple[int, ...]  # egress ports, in member-index order
    packets: tuple[int, ...]  # per member


class FabricController:
    def __init__(self, fabric: Fabric, switches: Mapping[str, SwitchHandle], *,
                 lb: LbSettings | None = None, ecn: EcnSettings | None = None,
                 qos: QosSettings | None = None) -> None:
        self.fabric = fabric
        names = [s.name for s in fabric.switches]
        missing = [n for n in names if n not in switches]
        if missing:
            raise ParamError(f"no switch handle for {', '.join(missing)}")
        unknown = [n for n in switches if n not in names]
        if unknown:
            raise UnknownSwitchError(unknown[0], names)
        self.handles = dict(switches)
        base_lb = lb or LbSettings()
        self._lb = {n: base_lb for n in names}
        self._ecn: dict[str, dict[int, EcnSettings]] = {}
        self.qos = qos or QosSettings()
        self.failed: set[int] = set()
        self.te_flows: list[Flow] = []
        self.te_placements: list[Placement] = []
        self._installed: dict[str, dict[tuple[str, MatchKey], TableEntry]] = {n: {} for n in names}
        self._group_ids = {n: GroupIds() for n in names}
        self._routes: dict[str, SwitchRoutes] = {}
        self._gids: dict[str, dict[tuple[int, ...], int]] = {}
        default_ecn = ecn if ecn is not None else EcnSettings()
        for sw in fabric.switches:
            self._ecn[sw.name] = {p.number: default_ecn for p in sw.ports}
            for p in sw.ports:
                default_ecn.validate_for(p.depth_pkts, f"{sw.name}:{p.number}")

    # --- lookups ----------------------------------------------------------------------------

    def _check_switch(self, name: str) -> str:
        if name not in self.handles:
            raise UnknownSwitchError(name, list(self.handles))
        return name

    def _select(self, switches: str | Iterable[str] | None) -> list[str]:
        if switches is None:
            return list(self.handles)
        if isinstance(switches, str):
            switches = [switches]
        return [self._check_switch(s) for s in switches]

    def lb(self, switch: str) -> LbSettings:
        return self._lb[self._check_switch(switch)]

    def ecn(self, switch: str, port: int) -> EcnSettings:
        sw = self._check_switch(switch)
        if port not in self._ecn[sw]:
            raise ParamError(f"{switch} has no port {port}")
        return self._ecn[sw][port]

    def routes(self, switch: str) -> SwitchRoutes:
        name = self._check_switch(switch)
        if not self._routes:
            self._routes = all_routes(self.fabric, self.failed)
        return self._routes[name]

    def group_ids(self, switch: str) -> dict[tuple[int, ...], int]:
        return dict(self._gids.get(self._check_switch(switch), {}))

    def installed(self, switch: str) -> list[TableEntry]:
        return list(self._installed[self._check_switch(switch)].values())

    # --- programming ------------------------------------------------------------------------

    def program(self) -> None:
        """Program every switch from scratch (or re-sync it to the controller's state)."""
        for name in self.handles:
            self._write_lb(name)
        self._reroute()

    def _write_lb(self, name: str) -> None:
        table, action, params = P.lb_default(self._lb[name], self.fabric.switch(name).device_id)
        self.handles[name].set_default(table, action, params)

    def _reroute(self) -> None:
        """Recompute routes and TE for the working links; write the differences."""
        self._routes = all_routes(self.fabric, self.failed)
        self._gids = {n: self._group_ids[n].assign(r.groups) for n, r in self._routes.items()}
        pins = self._te_pins()
        for name in self.handles:
            wanted = P.routing_entries(self._routes[name], self._gids[name])
            wanted += P.te_entries(pins.get(name, {}))
            wanted += P.ecn_entries(self.fabric, name, self._ecn[name])
            wanted += P.qos_entries(self.qos)
            self._sync(name, wanted)

    def _te_pins(self) -> dict[str, dict[Any, int]]:
        self.te_placements = []
        if not self.te_flows:
            return {}
        placeable = []
        for f in self.te_flows:
            try:
                place_flows(self.fabric, [f], self.failed)
                placeable.append(f)
            except NoPathError as exc:
                log.warning("TE flow left to the group hash: %s", exc)
        self.te_placements = place_flows(self.fabric, placeable, self.failed)
        pins = te_pins(self.fabric, self.te_placements, self._routes)
        if all(len(p) <= TE_FLOW_SLOTS for p in pins.values()):
            return pins
        # Only a failure gets here (place_te refuses too many pins before any write): the
        # flows that moved may crowd one switch past its te_flow table, and the failure
        # cannot be refused. The last placed (smallest demands) go back to the group
        # hash, as flows without a path do, instead of a write failing half way.
        kept: list[Placement] = []
        held: Counter[str] = Counter()
        for p in self.te_placements:
            switches = {sw for sw, _port in p.hops}
            if all(held[sw] < TE_FLOW_SLOTS for sw in switches):
                kept.append(p)
                held.update(switches)
        log.warning("TE: %d flows left to the group hash: a switch's te_flow table holds %d "
                    "pins", len(self.te_placements) - len(kept), TE_FLOW_SLOTS)
        self.te_placements = kept
        return te_pins(self.fabric, kept, self._routes)

    def _sync(self, name: str, wanted: Sequence[TableEntry]) -> None:
        handle = self.handles[name]
        have = self._installed[name]
        want = {e.key: e for e in wanted}
        order = {t: i for i, t in enumerate(_TABLE_ORDER)}
        for entry in sorted(wanted, key=lambda e: order.get(e.table, len(order))):
            old = have.get(entry.key)
            if old is None:
                handle.insert_entry(entry)
            elif not old.same_action(entry):
                handle.modify_entry(entry)
            else:
                continue
            have[entry.key] = entry
        stale = [k for k in have if k not in want]
        for key in sorted(stale, key=lambda k: -order.get(k[0], len(order))):
            handle.delete_entry(key[0], have[key].match)
            del have[key]

    # --- run-time changes -------------------------------------------------------------------

    def set_lb(self, mode: str | LbMode | None = None, switches: str | Iterable[str] | None = None,
               **params: Any) -> None:
        """Change LB mode and/or parameters (seed, flowlet_timeout_us, qdepth_max_age_us)
        on some switches (default: all); takes effect from the next packet."""
        targets = self._select(switches)
        allowed = {"seed", "flowlet_timeout_us", "qdepth_max_age_us"}
        bad = sorted(set(params) - allowed)
        if bad:
            raise ParamError(f"unknown LB parameter {bad[0]!r} (parameters: {sorted(allowed)})")
        new = {}
        for name in targets:
            changes = dict(params)
            if mode is not None:
                changes["mode"] = LbMode.parse(mode)
            new[name] = replace(self._lb[name], **changes)  # validates before any write
        for name, settings in new.items():
            self._lb[name] = settings
            self._write_lb(name)

    def set_ecn(self, settings: EcnSettings, switches: str | Iterable[str] | None = None,
                ports: Iterable[int] | None = None) -> None:
        """RED parameters for some ports (default: every port of the switches)."""
        targets = self._select(switches)
        plan: dict[str, list[int]] = {}
        for name in targets:
            sw = self.fabric.switch(name)
            nums = [p.number for p in sw.ports] if ports is None else list(ports)
            for n in nums:
                if n not in self._ecn[name]:
                    raise ParamError(f"{name} has no port {n}")
                settings.validate_for(sw.port(n).depth_pkts, f"{name}:{n}")
            plan[name] = nums
        for name, nums in plan.items():
            for n in nums:
                self._ecn[name][n] = settings
            if self._routes:  # else program() writes them
                self._sync(name, self._wanted(name))

    def set_qos(self, qos: QosSettings) -> None:
        self.qos = qos
        if self._routes:  # else program() writes it
            for name in self.handles:
                self._sync(name, self._wanted(name))

    def _wanted(self, name: str) -> list[TableEntry]:
        wanted = P.routing_entries(self._routes[name], self._gids[name])
        pins = te_pins(self.fabric, self.te_placements, self._routes).get(name, {})
        wanted += P.te_entries(pins)
        wanted += P.ecn_entries(self.fabric, name, self._ecn[name])
        wanted += P.qos_entries(self.qos)
        return wanted

    def place_te(self, flows: Sequence[Flow]) -> list[Placement]:
        """Compute TE paths for `flows` (replacing earlier ones) and install the pins.
        Pins act on switches in `te` mode; NoPathError if a flow has no path."""
        placements = place_flows(self.fabric, flows, self.failed)  # raises before any write
        if self._routes:
            _check_te_capacity(te_pins(self.fabric, placements, self._routes))
        self.te_flows = list(flows)
        if self._routes:
            self._reroute()
        return placements

    def clear_te(self) -> None:
        self.te_flows = []
        self._reroute()

    def link_down(self, a: str, b: str | None = None, *, port: int | None = None) -> Link:
        """Tell the controller a link failed: routes, groups and TE avoid it from now on."""
        link = find_link(self.fabric, a, b, port=port)
        if link.index not in self.failed:
            self.failed.add(link.index)
            if self._routes:
                self._reroute()
        return link

    def link_up(self, a: str, b: str | None = None, *, port: int | None = None) -> Link:
        link = find_link(self.fabric, a, b, port=port)
        if link.index in self.failed:
            self.failed.discard(link.index)
            if self._routes:
                self._reroute()
        return link

    # --- metrics ----------------------------------------------------------------------------

    def port_counters(self, switch: str) -> dict[int, PortCounters]:
        h = self.handles[self._check_switch(switch)]
        ports = [p.number for p in self.fabric.switch(switch).ports]
        # Four reads per switch (one per counter array), not four per port.
        rx = h.read_counters(P.PORT_RX, ports)
        tx = h.read_counters(P.PORT_TX, ports)
        marks = h.read_counters(P.PORT_ECN_MARKS, ports)
        drops = h.read_counters(P.PORT_DROPS, ports)
        return {n: PortCounters(rx[n][0], rx[n][1], tx[n][0], tx[n][1], marks[n][0], drops[n][0])
                for n in ports}

    def group_counters(self, switch: str) -> list[GroupCounters]:
        h = self.handles[self._check_switch(switch)]
        out = []
        for members, gid in sorted(self._gids.get(switch, {}).items(), key=lambda kv: kv[1]):
            idx = [P.member_counter_index(gid, i) for i in range(len(members))]
            cells = h.read_counters(P.MEMBER_PACKETS, idx)
            out.append(GroupCounters(gid, members, tuple(cells[i][0] for i in idx)))
        return out

    def queue_readings(self, switch: str, priority: int = 0) -> dict[int, tuple[int, int]]:
        """Port -> (last deq_qdepth of its `priority` queue seen by egress, its time in
        us): the adaptive inputs of packets of that priority."""
        h = self.handles[self._check_switch(switch)]
        idx = {p.number: P.qdepth_index(p.number, priority)
               for p in self.fabric.switch(switch).ports}
        depth = h.read_registers(P.PORT_QDEPTH, list(idx.values()))
        when = h.read_registers(P.PORT_QDEPTH_TIME, list(idx.values()))
        return {n: (depth[i], when[i]) for n, i in idx.items()}


assert MAX_MEMBERS == 16  # member counter index layout (group_id << 4) in fabric.p4


def _check_te_capacity(pins: Mapping[str, Mapping[Any, int]]) -> None:
    """ControlError, before any write, if a switch would hold more pins than fabric.p4's
    te_flow table (a write would fail half way, some switches pinned, others not)."""
    name, most = max(((sw, len(p)) for sw, p in pins.items()), key=lambda x: (x[1], x[0]),
                     default=("", 0))
    if most > TE_FLOW_SLOTS:
        raise ControlError(
            f"TE would pin {most} flows on {name}, and fabric.p4's te_flow table holds "
            f"{TE_FLOW_SLOTS}: fewer flows (hosts, workload) or another load balancing mode")
