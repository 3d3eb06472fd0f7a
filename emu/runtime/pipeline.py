"""The pipeline the server addresses: its P4Info index, config and control plane,
plus the hidden members/groups behind one-shot action sets."""

from __future__ import annotations

from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.p4.tables import TableEntry

from .dataplane import ControlPlane
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
        self.next_oneshot_id = ONESHOT_BASE
        self.timeout_tables = [ti for ti in index.tables.values()
                               if ti.proto.idle_timeout_behavior
                               == p4info_pb2.Table.NOTIFY_CONTROL]
