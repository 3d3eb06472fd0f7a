"""Action profiles and action selectors (P4Runtime ActionProfileMember / Group).

Rules and error kinds follow the P4Runtime spec, section "ActionProfileMember &
ActionProfileGroup":
- member/group ids are non-zero; members and groups have separate id scopes;
- INSERT of an existing id: ALREADY_EXISTS; MODIFY/DELETE of a missing id: NOT_FOUND;
- a group may only name existing members (NOT_FOUND), without duplicates, with
  weight > 0 (INVALID_ARGUMENT);
- deleting a member still in a group, or a member/group referenced by a table
  entry: FAILED_PRECONDITION;
- max_size: if the profile's max_group_size > 0, 0 < max_size <= max_group_size
  (INVALID_ARGUMENT otherwise); MODIFY may not change max_size (INVALID_ARGUMENT);
  a group whose size (sum of weights, or number of members, per
  selector_size_semantics) exceeds max_size: RESOURCE_EXHAUSTED;
- a group whose weights add up to more than MAX_GROUP_WEIGHT: RESOURCE_EXHAUSTED
  (the selection below holds one list item per unit of weight);
- too many members for the profile's `size`: RESOURCE_EXHAUSTED.

Selection. BMv2's ActionProfile picks member number `hash % n` from the group's
members in member-handle order (action_profile.cpp, GroupMgr::get_from_hash)
and has no weights of its own. Our rule, for WCMP: expand the group into a list
where each member appears `weight` times in a row, in the order the members
were given in the group, leave out members whose watch port is down, and pick
`expanded[hash % len(expanded)]`. With all weights 1 and members given in
creation order this is BMv2's rule. An empty (or all-down) group selects None;
the caller then runs the empty-group action.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from .keys import ActionCall, ActionSpec, action_specs, validate_action

# The most a group's weights may add up to: selection expands a group into that many
# items (a weight of 2**31 - 1 would take gigabytes).
MAX_GROUP_WEIGHT = 1 << 16


class SizeSemantics(str, enum.Enum):
    """P4Info selector_size_semantics."""

    SUM_OF_WEIGHTS = "sum_of_weights"
    SUM_OF_MEMBERS = "sum_of_members"


@dataclass(slots=True, eq=False)
class ActionProfileMember:
    """A member: an action with its parameters. Mutated in place on MODIFY so that
    groups holding it see the change."""

    member_id: int
    action: ActionCall


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member reference inside a group."""

    member_id: int
    weight: int = 1
    watch_port: int | None = None


@dataclass(slots=True, eq=False)
class ActionProfileGroup:
    group_id: int
    members: tuple[GroupMember, ...]
    max_size: int = 0
    # The weighted member list that `select` indexes; rebuilt on change.
    expanded: tuple[ActionProfileMember, ...] = ()


GroupMemberInput = GroupMember | tuple[int, int] | int


_Item = TypeVar("_Item", "ActionProfileMember", "ActionProfileGroup")


class ActionProfile:
    """A P4 action_profile (with_selector=False) or action_selector (True)."""

    def __init__(self, name: str, *, profile_id: int = 0, size: int = 0,
                 with_selector: bool = False, max_group_size: int = 0,
                 size_semantics: SizeSemantics = SizeSemantics.SUM_OF_WEIGHTS,
                 max_member_weight: int = 0,
                 actions: Sequence[ActionSpec] | None = None) -> None:
        self.name = name
        self.profile_id = profile_id
        self.size = size  # max number of members; 0 = unlimited
        self.with_selector = with_selector
        self.max_group_size = max_group_size
        self.size_semantics = SizeSemantics(size_semantics)
        self.max_member_weight = max_member_weight
        self._specs = action_specs(actions)
        self._members: dict[int, ActionProfileMember] = {}
        self._groups: dict[int, ActionProfileGroup] = {}
        self._member_in_groups: dict[int, int] = {}  # member id -> number of groups
        self._member_refs: dict[int, int] = {}  # member id -> table entries using it
        self._group_refs: dict[int, int] = {}
        self._down_ports: set[int] = set()

    # Members and groups are two id scopes with the same rules (module docstring).

    def _new_id(self, items: dict[int, _Item], what: str, ident: int) -> None:
        if ident <= 0:
            raise InvalidArgument(f"{self.name}: {what} id must be non-zero")
        if ident in items:
            raise AlreadyExists(f"{self.name}: {what} {ident} exists")

    def _get(self, items: dict[int, _Item], what: str, ident: int) -> _Item:
        item = items.get(ident)
        if item is None:
            raise NotFound(f"{self.name}: no {what} {ident}")
        return item

    # -- members -----------------------------------------------------------

    def _check_action(self, action: ActionCall | None) -> ActionCall:
        if action is None:
            raise InvalidArgument(f"{self.name}: a member needs an action")
        return validate_action(self._specs, action, for_default=False, where=self.name)

    def insert_member(self, member_id: int, action: ActionCall) -> ActionProfileMember:
        action = self._check_action(action)  # a malformed member before a taken id
        self._new_id(self._members, "member", member_id)
        if self.size and len(self._members) >= self.size:
            raise ResourceExhausted(f"{self.name}: profile full ({self.size} members)")
        m = self._members[member_id] = ActionProfileMember(member_id, action)
        return m

    def modify_member(self, member_id: int, action: ActionCall) -> ActionProfileMember:
        m = self.get_member(member_id)
        m.action = self._check_action(action)
        return m

    def delete_member(self, member_id: int) -> None:
        self.get_member(member_id)
        if self._member_in_groups.get(member_id):
            raise FailedPrecondition(f"{self.name}: member {member_id} is in a group")
        if self._member_refs.get(member_id):
            raise FailedPrecondition(
                f"{self.name}: member {member_id} is used by a table entry")
        del self._members[member_id]

    def get_member(self, member_id: int) -> ActionProfileMember:
        return self._get(self._members, "member", member_id)

    @property
    def member_count(self) -> int:
        return len(self._members)

    @property
    def group_count(self) -> int:
        return len(self._groups)

    def members(self) -> Iterator[ActionProfileMember]:
        """All members in insertion order."""
        return iter(list(self._members.values()))

    # -- groups ------------------------------------------------------------

    def _normalise_members(self, members: Sequence[GroupMemberInput]) -> tuple[GroupMember, ...]:
        out: list[GroupMember] = []
        seen: set[int] = set()
        for m in members:
            if isinstance(m, int):
                gm = GroupMember(m)
            elif isinstance(m, tuple):
                gm = GroupMember(m[0], m[1])
            else:
                gm = m
            if gm.weight <= 0:
                raise InvalidArgument(f"{self.name}: member {gm.member_id} weight must be > 0")
            if self.max_member_weight and gm.weight > self.max_member_weight:
                raise InvalidArgument(
                    f"{self.name}: member {gm.member_id} weight {gm.weight} exceeds "
                    f"{self.max_member_weight}")
            if gm.member_id in seen:
                raise InvalidArgument(f"{self.name}: member {gm.member_id} listed twice")
            seen.add(gm.member_id)
            if gm.member_id not in self._members:
                raise NotFound(f"{self.name}: no member {gm.member_id}")
            out.append(gm)
        return tuple(out)

    def _group_size(self, members: Sequence[GroupMember]) -> int:
        if self.size_semantics is SizeSemantics.SUM_OF_MEMBERS:
            return len(members)
        return sum(m.weight for m in members)

    def _check_size(self, members: Sequence[GroupMember], max_size: int) -> None:
        limit = max_size or self.max_group_size
        if limit and self._group_size(members) > limit:
            raise ResourceExhausted(
                f"{self.name}: group size {self._group_size(members)} exceeds {limit}")
        weight = sum(m.weight for m in members)
        if weight > MAX_GROUP_WEIGHT:
            raise ResourceExhausted(f"{self.name}: the group's weights add up to {weight}, "
                                    f"more than the {MAX_GROUP_WEIGHT} this target supports")

    def _expand(self, g: ActionProfileGroup) -> None:
        down = self._down_ports
        out: list[ActionProfileMember] = []
        for gm in g.members:
            if gm.watch_port is not None and gm.watch_port in down:
                continue
            out.extend([self._members[gm.member_id]] * gm.weight)
        g.expanded = tuple(out)

    def _require_selector(self) -> None:
        if not self.with_selector:
            raise InvalidArgument(f"{self.name}: an action profile without selector has no groups")

    def insert_group(self, group_id: int, members: Sequence[GroupMemberInput] = (), *,
                     max_size: int = 0) -> ActionProfileGroup:
        self._require_selector()
        self._new_id(self._groups, "group", group_id)
        if max_size < 0:
            raise InvalidArgument(f"{self.name}: max_size must be >= 0")
        if self.max_group_size > 0 and not 0 < max_size <= self.max_group_size:
            raise InvalidArgument(
                f"{self.name}: max_size {max_size} must be in 1..{self.max_group_size}")
        gms = self._normalise_members(members)
        self._check_size(gms, max_size)
        g = ActionProfileGroup(group_id, gms, max_size)
        for gm in gms:
            self._member_in_groups[gm.member_id] = self._member_in_groups.get(gm.member_id, 0) + 1
        self._expand(g)
        self._groups[group_id] = g
        return g

    def modify_group(self, group_id: int, members: Sequence[GroupMemberInput], *,
                     max_size: int | None = None) -> ActionProfileGroup:
        """Replace the member set. `max_size`, if given, must equal the inserted one."""
        g = self.get_group(group_id)
        if max_size is not None and max_size != g.max_size:
            raise InvalidArgument(f"{self.name}: max_size of group {group_id} cannot change")
        gms = self._normalise_members(members)
        self._check_size(gms, g.max_size)
        for gm in g.members:
            self._member_in_groups[gm.member_id] -= 1
        for gm in gms:
            self._member_in_groups[gm.member_id] = self._member_in_groups.get(gm.member_id, 0) + 1
        g.members = gms
        self._expand(g)
        return g

    def delete_group(self, group_id: int) -> None:
        g = self.get_group(group_id)
        if self._group_refs.get(group_id):
            raise FailedPrecondition(f"{self.name}: group {group_id} is used by a table entry")
        for gm in g.members:
            self._member_in_groups[gm.member_id] -= 1
        del self._groups[group_id]

    def get_group(self, group_id: int) -> ActionProfileGroup:
        return self._get(self._groups, "group", group_id)

    def groups(self) -> Iterator[ActionProfileGroup]:
        """All groups in insertion order."""
        return iter(list(self._groups.values()))

    # -- watch ports -------------------------------------------------------

    def set_port_status(self, port: int, up: bool) -> None:
        """Watch-port liveness: members watching a down port are not selected."""
        changed = (port in self._down_ports) == up
        if not changed:
            return
        if up:
            self._down_ports.discard(port)
        else:
            self._down_ports.add(port)
        for g in self._groups.values():
            if any(gm.watch_port == port for gm in g.members):
                self._expand(g)

    # -- data plane --------------------------------------------------------

    def member_action(self, member_id: int) -> ActionCall:
        """Action of a member referenced by a table entry (hot path, no checks)."""
        return self._members[member_id].action

    def select(self, group_id: int, hash_value: int) -> ActionProfileMember | None:
        """The member a packet with selector hash `hash_value` uses, or None if empty."""
        expanded = self._groups[group_id].expanded
        if not expanded:
            return None
        return expanded[hash_value % len(expanded)]

    # -- references from table entries ---------------------------------------

    def ref_member(self, member_id: int) -> None:
        self.get_member(member_id)
        self._member_refs[member_id] = self._member_refs.get(member_id, 0) + 1

    def unref_member(self, member_id: int) -> None:
        self._member_refs[member_id] -= 1

    def ref_group(self, group_id: int) -> None:
        self._require_selector()
        self.get_group(group_id)
        self._group_refs[group_id] = self._group_refs.get(group_id, 0) + 1

    def unref_group(self, group_id: int) -> None:
        self._group_refs[group_id] -= 1

    def clear(self) -> None:
        """Drop all members and groups (pipeline reload); references must be gone."""
        self._members.clear()
        self._groups.clear()
        self._member_in_groups.clear()
        self._member_refs.clear()
        self._group_refs.clear()
