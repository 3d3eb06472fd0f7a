"""The pipeline the server addresses: its P4Info index, config and control plane,
plus the hidden members/groups behind one-shot action sets."""

from __future__ import annotations

from collections import Counter
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.p4.tables import TableEntry

from .dataplane import ControlPlane
from .errors import invalid
from .translate import P4InfoIndex

__all__ = ["ONESHOT_BASE", "OneShot", "Pipeline"]

ONESHOT_BASE = 1 << 31  # member/group ids of one-shot action sets


class OneShot:
    """The hidden members/group behind one table entry's one-shot action set."""

    __slots__ = ("profile", "group_id", "member_ids", "action_set")

    def __init__(self, profile: Any, group_id: int | None, member_ids: list[int],
                 action_set: p4runtime_pb2.ActionProfileActionSet) -> None:
        self.profile = profile
        self.group_id = group_id
        self.member_ids = member_ids
        self.action_set = action_set

    def release(self) -> None:
        if self.group_id is not None:
            self.profile.delete_group(self.group_id)
        for mid in self.member_ids:
            self.profile.delete_member(mid)


class Pipeline:
    """A committed (or VERIFY_AND_SAVEd) pipeline as the server sees it."""

    def __init__(self, index: P4InfoIndex, config: p4runtime_pb2.ForwardingPipelineConfig,
                 control: ControlPlane) -> None:
        self.index = index
        self.config = config
        self.control = control
        self.oneshots: dict[TableEntry, OneShot] = {}
        # per engine profile, the hidden members and groups of its one-shot sets (every
        # set has a member: a profile holds one-shot sets while it has hidden members)
        self.hidden_members: Counter[Any] = Counter()
        self.hidden_groups: Counter[Any] = Counter()
        self.next_oneshot_id = ONESHOT_BASE
        self.timeout_tables = [ti for ti in index.tables.values()
                               if ti.proto.idle_timeout_behavior
                               == p4info_pb2.Table.NOTIFY_CONTROL]

    def keep_oneshot(self, entry: TableEntry, shot: OneShot) -> None:
        self.oneshots[entry] = shot
        self.hidden_members[shot.profile] += len(shot.member_ids)
        self.hidden_groups[shot.profile] += shot.group_id is not None

    def drop_oneshot(self, entry: TableEntry) -> None:
        """Release the one-shot set behind `entry`, if it has one."""
        shot = self.oneshots.pop(entry, None)
        if shot is None:
            return
        self.hidden_members[shot.profile] -= len(shot.member_ids)
        self.hidden_groups[shot.profile] -= shot.group_id is not None
        shot.release()

    def require_style(self, profile: Any, one_shot: bool, where: str) -> None:
        """Spec, Action Selector Programming: the tables of one action profile are
        programmed with one-shot action sets or with members and groups, never both
        (INVALID_ARGUMENT); an empty profile takes either."""
        if one_shot:
            clash = (profile.member_count > self.hidden_members[profile]
                     or profile.group_count > self.hidden_groups[profile])
        else:
            clash = self.hidden_members[profile] > 0
        if clash:
            have, want = (("members or groups", "a one-shot action set") if one_shot
                          else ("one-shot action sets", "members and groups"))
            raise invalid(f"{where}: its action profile holds {have}; {want} cannot be "
                          "mixed with them (spec, Action Selector Programming)")
