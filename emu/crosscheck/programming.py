"""The entries both sides get: fabric.p4's from the fabric controller, or a runtime
file's in the p4lang tutorials' format (runtime_file.py), or an STF file's set-up
(stf_setup.py)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from emu.control import (
    CloneSession,
    MulticastGroup,
    ProfileGroup,
    ProfileMember,
    TableEntry,
)
from emu.control.errors import SouthboundError
from emu.control.params import LbMode

# ---------------------------------------------------------------------- entries


@dataclass(frozen=True)
class DefaultAction:
    """A table's default action, as a write."""

    table: str
    action: str
    params: Mapping[str, int] = field(default_factory=dict)


# One write of a switch's programming, made by `make`.
Write = TableEntry | DefaultAction | ProfileMember | ProfileGroup | MulticastGroup | CloneSession


def make(handle: Any, w: Write) -> None:
    """Make one write through a southbound handle."""
    if isinstance(w, DefaultAction):
        handle.set_default(w.table, w.action, w.params)
    elif isinstance(w, ProfileMember):
        handle.insert_member(w)
    elif isinstance(w, ProfileGroup):
        handle.insert_group(w)
    elif isinstance(w, MulticastGroup):
        handle.insert_multicast_group(w)
    elif isinstance(w, CloneSession):
        handle.insert_clone_session(w)
    else:
        handle.insert_entry(w)


@dataclass
class Programming:
    """What to install: either a controller-computed fabric switch or runtime entries."""

    ports: list[int]
    switch_name: str
    device_id: int
    hosts: list[tuple[str, str, int | None]]
    fabric: Any = None
    lb: str = "ecmp"
    entries: list[TableEntry] = field(default_factory=list)
    defaults: list[DefaultAction] = field(default_factory=list)
    replication: list[MulticastGroup | CloneSession] = field(default_factory=list)
    ecn_always: bool = False  # fabric: mark every ECT packet (kmin = kmax = 0)
    failed_links: list[tuple[str, str]] = field(default_factory=list)  # fabric: A, B
    # Writes a switch may refuse (random entries), in order: side B's refusals are left
    # out on side A too, as a note; side A refusing one side B took is a difference.
    trial: list[Write] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the set-up left out, for the report

    @classmethod
    def entries_only(cls, ports: list[int]) -> Programming:
        """A switch `s1` (device 1) with these ports and no entries yet (runtime files, tests)."""
        return cls(ports=ports, switch_name="s1", device_id=1, hosts=[])

    def apply(self, handle: Any) -> None:
        if self.fabric is not None:
            from emu.control import FabricController, LbSettings, MemorySwitchHandle
            from emu.control.program import ECN_CONFIG, SET_RED

            handles = {s.name: (handle if s.name == self.switch_name
                                else MemorySwitchHandle(s.name)) for s in self.fabric.switches}
            ctl = FabricController(self.fabric, handles, lb=LbSettings(mode=LbMode(self.lb)))
            ctl.program()
            for a, b in self.failed_links:
                ctl.link_down(a, b)
            if self.ecn_always:
                # kmin == kmax, below the controller's checks (kmin < kmax): ecn.p4 then
                # marks every ECT packet, also on the empty queues one at a time leaves.
                for p in self.ports:
                    handle.modify_entry(TableEntry(
                        ECN_CONFIG, {"standard_metadata.egress_port": p}, SET_RED,
                        {"kmin": 0, "kmax": 0, "slope": 0, "at_dequeue": 1}))
            return
        writes: list[Write] = [*self.replication, *self.defaults, *self.entries]
        for w in writes:
            make(handle, w)

    def apply_trial(self, handle: Any, skip: Collection[int] = ()) -> dict[int, str]:
        """Make the trial writes but those numbered in `skip`; the refused ones by
        number, with the switch's reason."""
        refused = {}
        for i, w in enumerate(self.trial):
            if i in skip:
                continue
            try:
                make(handle, w)
            except SouthboundError as exc:
                refused[i] = str(exc)
        return refused

    def trial_write(self, i: int) -> str:
        """Trial write number `i` in words."""
        w = self.trial[i]
        if isinstance(w, DefaultAction):
            return f"default action of {w.table}: {w.action}{dict(w.params)}"
        if isinstance(w, ProfileMember):
            return f"member {w.member_id} of {w.profile}: {w.action}{dict(w.params)}"
        if isinstance(w, ProfileGroup):
            return f"group {w.group_id} of {w.profile}: members {list(w.members)}"
        if isinstance(w, MulticastGroup):
            return f"multicast group {w.group_id}: replicas {list(w.replicas)}"
        if isinstance(w, CloneSession):
            return f"clone session {w.session_id}: replicas {list(w.replicas)}"
        target = (f"member {w.member_id}" if w.member_id is not None else
                  f"group {w.group_id}" if w.group_id is not None else
                  f"{w.action}{dict(w.params)}")
        return f"entry of {w.table}: {dict(w.match)} -> {target}"


def group_ports(setup: Programming) -> set[int]:
    """The switch's ports towards other switches: the members of its next-hop groups."""
    if setup.fabric is None:
        return set()
    switches = {s.name for s in setup.fabric.switches}
    out = set()
    for link in setup.fabric.links:
        for mine, peer in ((link.a, link.b), (link.b, link.a)):
            if mine.node == setup.switch_name and peer.node in switches:
                out.add(mine.port)
    return out


def fabric_programming(topo: str, switch: str | None, lb: str, *, ecn_always: bool = False,
                       failed_links: Sequence[tuple[str, str]] = ()) -> Programming:
    from emu.topo import load_topology

    fabric = load_topology(topo)
    names = [s.name for s in fabric.switches]
    if switch and switch not in names:
        raise ValueError(f"no switch {switch!r} in {topo} ({', '.join(names)})")
    sw = fabric.switch(switch) if switch else next(
        (s for s in fabric.switches if s.subnet is not None), fabric.switches[0])
    hosts = [(str(h.ip), h.mac, h.switch_port if h.switch == sw.name else None)
             for h in fabric.hosts]
    for a, b in failed_links:
        if not any({a, b} == {link.a.node, link.b.node} for link in fabric.links):
            raise ValueError(f"no link {a}:{b} in {topo}")
    return Programming(ports=[p.number for p in sw.ports], switch_name=sw.name,
                       device_id=sw.device_id, hosts=hosts, fabric=fabric, lb=lb,
                       ecn_always=ecn_always, failed_links=list(failed_links))
