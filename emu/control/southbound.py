"""The controller's view of one switch: a few by-name operations, nothing else.

`SwitchHandle` is what the controller programs. Implementations stay thin:
`MemorySwitchHandle` (records state; unit tests and dry runs), `emu.control.inprocess`
(an in-process `emu.p4` switch by name) and `emu.control.p4rt` (any target speaking
P4Runtime, names mapped to ids through the P4Info).

Names are P4Info names (`FabricIngress.routing.ipv4_lpm`, match fields by their P4
expression such as `hdr.ipv4.dstAddr`); values are plain ints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from emu.p4.tables import Lpm, OptionalMatch, Range, Ternary

from .errors import SouthboundError

# Lpm, Ternary, Range and OptionalMatch are the table engine's own match records: one
# definition of each match kind from the controller down to the in-process switch.
MatchValue = int | Lpm | Ternary | Range | OptionalMatch  # an int is an exact match
MatchKey = tuple[tuple[str, MatchValue], ...]


@dataclass(frozen=True)
class TableEntry:
    """A match entry. In a table behind an action profile it names a member or a group
    (`member_id` / `group_id`) instead of an action."""

    table: str
    match: Mapping[str, MatchValue]
    action: str
    params: Mapping[str, int] = field(default_factory=dict)
    priority: int | None = None
    member_id: int | None = None
    group_id: int | None = None

    @property
    def key(self) -> tuple[str, MatchKey]:
        """Identity of the entry in its table (what a modify/delete names)."""
        return self.table, tuple(sorted(self.match.items()))

    def same_action(self, other: TableEntry) -> bool:
        return self.action == other.action and dict(self.params) == dict(other.params)


@dataclass(frozen=True)
class ProfileMember:
    """A member of an action profile (P4Runtime ActionProfileMember): an action call."""

    profile: str
    member_id: int
    action: str
    params: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ProfileGroup:
    """A group of an action selector (P4Runtime ActionProfileGroup), every member of
    weight 1; `max_size` 0 leaves it to the switch."""

    profile: str
    group_id: int
    members: tuple[int, ...]
    max_size: int = 0


@dataclass(frozen=True)
class MulticastGroup:
    """A multicast group of the packet replication engine (P4Runtime
    MulticastGroupEntry): its copies as (egress port, instance), in order."""

    group_id: int
    replicas: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CloneSession:
    """A clone session (P4Runtime CloneSessionEntry); `packet_length_bytes` 0 keeps
    the clones whole."""

    session_id: int
    replicas: tuple[tuple[int, int], ...]
    class_of_service: int = 0
    packet_length_bytes: int = 0


@runtime_checkable
class SwitchHandle(Protocol):
    """One switch, programmed by name."""

    name: str

    def insert_entry(self, entry: TableEntry) -> None: ...

    def modify_entry(self, entry: TableEntry) -> None: ...

    def delete_entry(self, table: str, match: Mapping[str, MatchValue]) -> None: ...

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None: ...

    def insert_member(self, member: ProfileMember) -> None: ...

    def insert_group(self, group: ProfileGroup) -> None: ...

    def insert_multicast_group(self, group: MulticastGroup) -> None: ...

    def insert_clone_session(self, session: CloneSession) -> None: ...

    def read_counter(self, counter: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of one counter cell."""
        ...

    def read_counters(self, counter: str, indices: Sequence[int]) -> dict[int, tuple[int, int]]:
        """(packets, bytes) of several cells of one counter, in one round trip."""
        ...

    def read_register(self, register: str, index: int) -> int: ...

    def read_registers(self, register: str, indices: Sequence[int]) -> dict[int, int]:
        """Several cells of one register, in one round trip."""
        ...

    def write_register(self, register: str, index: int, value: int) -> None: ...


class MemorySwitchHandle:
    """A switch that only remembers what it was told: for tests and dry runs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: dict[tuple[str, MatchKey], TableEntry] = {}
        self.defaults: dict[str, tuple[str, dict[str, int]]] = {}
        self.counters: dict[tuple[str, int], tuple[int, int]] = {}
        self.registers: dict[tuple[str, int], int] = {}
        self.members: dict[tuple[str, int], ProfileMember] = {}
        self.groups: dict[tuple[str, int], ProfileGroup] = {}
        self.multicast_groups: dict[int, MulticastGroup] = {}
        self.clone_sessions: dict[int, CloneSession] = {}
        self.log: list[tuple[str, str]] = []  # (operation, table or profile) in order

    def insert_entry(self, entry: TableEntry) -> None:
        if entry.key in self.entries:
            raise SouthboundError(f"{self.name}: {entry.table}: entry exists: {dict(entry.match)}")
        self.entries[entry.key] = entry
        self.log.append(("insert", entry.table))

    def modify_entry(self, entry: TableEntry) -> None:
        if entry.key not in self.entries:
            raise SouthboundError(f"{self.name}: {entry.table}: no entry {dict(entry.match)}")
        self.entries[entry.key] = entry
        self.log.append(("modify", entry.table))

    def delete_entry(self, table: str, match: Mapping[str, MatchValue]) -> None:
        key = (table, tuple(sorted(match.items())))
        if self.entries.pop(key, None) is None:
            raise SouthboundError(f"{self.name}: {table}: no entry {dict(match)}")
        self.log.append(("delete", table))

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None:
        self.defaults[table] = (action, dict(params))
        self.log.append(("default", table))

    def insert_member(self, member: ProfileMember) -> None:
        key = (member.profile, member.member_id)
        if key in self.members:
            raise SouthboundError(f"{self.name}: {member.profile}: member {member.member_id} "
                                  f"exists")
        self.members[key] = member
        self.log.append(("member", member.profile))

    def insert_group(self, group: ProfileGroup) -> None:
        key = (group.profile, group.group_id)
        missing = [m for m in group.members if (group.profile, m) not in self.members]
        if key in self.groups or missing:
            raise SouthboundError(f"{self.name}: {group.profile}: group {group.group_id} "
                                  f"exists or names no member {missing}")
        self.groups[key] = group
        self.log.append(("group", group.profile))

    def insert_multicast_group(self, group: MulticastGroup) -> None:
        if group.group_id in self.multicast_groups:
            raise SouthboundError(f"{self.name}: multicast group {group.group_id} exists")
        self.multicast_groups[group.group_id] = group
        self.log.append(("multicast", str(group.group_id)))

    def insert_clone_session(self, session: CloneSession) -> None:
        if session.session_id in self.clone_sessions:
            raise SouthboundError(f"{self.name}: clone session {session.session_id} exists")
        self.clone_sessions[session.session_id] = session
        self.log.append(("clone", str(session.session_id)))

    def read_counter(self, counter: str, index: int) -> tuple[int, int]:
        return self.counters.get((counter, index), (0, 0))

    def read_counters(self, counter: str, indices: Sequence[int]) -> dict[int, tuple[int, int]]:
        return {i: self.read_counter(counter, i) for i in indices}

    def read_register(self, register: str, index: int) -> int:
        return self.registers.get((register, index), 0)

    def read_registers(self, register: str, indices: Sequence[int]) -> dict[int, int]:
        return {i: self.read_register(register, i) for i in indices}

    def write_register(self, register: str, index: int, value: int) -> None:
        self.registers[(register, index)] = value

    def table(self, table: str) -> list[TableEntry]:
        return [e for (t, _), e in self.entries.items() if t == table]
