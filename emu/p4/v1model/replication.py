"""The packet replication engine (PRE): multicast groups and clone sessions.

Two ways to configure multicast, sharing one group-id space:

- BMv2 CLI (src/bm_sim/simple_pre.cpp): `mc_mgrp_create <mgid>`, `mc_node_create <rid>
  <ports...>` returning node handles 0, 1, 2, ... (the lowest free handle, so a destroyed
  node's handle is reused), `mc_node_associate <mgid> <handle>`. Replication walks the
  group's nodes in association order and, within a node, its ports in ascending order (a
  node's ports are a bitmap, so duplicates collapse). Each copy carries the node's rid.
- P4Runtime MulticastGroupEntry: simple_switch_grpc (p4lang/PI proto/frontend/src/
  pre_mc_mgr.cpp) turns the replicas into one node per instance (rid) holding a sorted set
  of ports, so copies come grouped by instance with ports ascending. PI keeps the nodes in
  an unordered_map, so the order between instances is unspecified there (and the P4Runtime
  spec promises none); here instances come in order of first appearance. A duplicate
  (egress_port, instance) is INVALID_ARGUMENT; group id 0 is not a valid group.

A packet sent to an unknown group yields no copies (BMv2 logs a warning and replicates
nothing); configuration errors raise ReplicationError subclasses.

Clone sessions (P4Runtime CloneSessionEntry, or BMv2's `mirroring_add <session> <port>`):
replicas, class_of_service and packet_length_bytes (0 = no truncation). A clone to a
session that is not configured is dropped by BMv2; `clone_session()` returns None then.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partialmethod

__all__ = [
    "CloneSession",
    "DuplicateError",
    "PacketReplicationEngine",
    "Replica",
    "ReplicationError",
    "UnknownEntryError",
]


class ReplicationError(Exception):
    """A PRE configuration request that cannot be applied."""


class UnknownEntryError(ReplicationError):
    """The group, node or session does not exist."""


class DuplicateError(ReplicationError):
    """The group, session or replica already exists."""


@dataclass(frozen=True, slots=True)
class Replica:
    """One copy: the egress port and its instance (BMv2 rid; egress sees egress_rid)."""

    egress_port: int
    instance: int = 0


@dataclass(frozen=True, slots=True)
class CloneSession:
    """A clone session as P4Runtime configures it."""

    session_id: int
    replicas: tuple[Replica, ...]
    class_of_service: int = 0
    packet_length_bytes: int = 0  # truncate clones to this many bytes; 0 keeps them whole


@dataclass(slots=True)
class _Node:
    rid: int
    ports: tuple[int, ...]
    group: int | None = None  # the group it is associated with


ReplicaLike = Replica | tuple[int, int]


def _replicas(items: Iterable[ReplicaLike]) -> tuple[Replica, ...]:
    out = tuple(r if isinstance(r, Replica) else Replica(r[0], r[1]) for r in items)
    if len(set(out)) != len(out):
        raise DuplicateError("duplicate replica (egress_port, instance)")
    return out


class PacketReplicationEngine:
    """Multicast groups and clone sessions of one switch."""

    def __init__(self) -> None:
        self._nodes: dict[int, _Node] = {}
        self._cli_groups: dict[int, list[int]] = {}  # mgid -> node handles in order
        self._p4rt_groups: dict[int, tuple[Replica, ...]] = {}
        self._flat: dict[int, tuple[Replica, ...]] = {}  # per-packet cache, mgid -> copies
        self._sessions: dict[int, CloneSession] = {}

    # --- per packet ----------------------------------------------------------------------

    def replicate(self, mgid: int) -> tuple[Replica, ...]:
        """The copies for multicast group `mgid`, in replication order; () if unknown."""
        return self._flat.get(mgid, ())

    def clone_session(self, session_id: int) -> CloneSession | None:
        """The clone session, or None when it is not configured (the clone is dropped)."""
        return self._sessions.get(session_id)

    # --- BMv2 CLI model ------------------------------------------------------------------

    def mc_mgrp_create(self, mgid: int) -> int:
        """Create an empty group; returns its handle, which is the mgid (as in BMv2)."""
        self._check_free_group(mgid)
        self._cli_groups[mgid] = []
        self._flat[mgid] = ()
        return mgid

    def mc_mgrp_destroy(self, mgid: int) -> None:
        handles = self._cli_groups.pop(mgid, None)
        if handles is None:
            raise UnknownEntryError(f"multicast group {mgid} was not created by mc_mgrp_create")
        for h in handles:
            self._nodes[h].group = None
        del self._flat[mgid]

    def mc_node_create(self, rid: int, ports: Iterable[int]) -> int:
        """Create an L1 node; returns the lowest free handle (0, 1, 2, ... when none freed)."""
        plist = sorted(set(ports))
        if any(p < 0 for p in plist):
            raise ReplicationError("ports must not be negative")
        handle = 0
        while handle in self._nodes:
            handle += 1
        self._nodes[handle] = _Node(rid, tuple(plist))
        return handle

    def mc_node_update(self, handle: int, ports: Iterable[int]) -> None:
        node = self._node(handle)
        node.ports = tuple(sorted(set(ports)))
        if node.group is not None:
            self._refresh_cli(node.group)

    def mc_node_destroy(self, handle: int) -> None:
        node = self._node(handle)
        if node.group is not None:  # BMv2 lets a node be destroyed while associated
            self._cli_groups[node.group].remove(handle)
            self._refresh_cli(node.group)
        del self._nodes[handle]

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        node = self._node(handle)
        handles = self._cli_groups.get(mgid)
        if handles is None:
            raise UnknownEntryError(f"multicast group {mgid} does not exist")
        if node.group is not None:
            raise DuplicateError(f"node {handle} is already associated with group {node.group}")
        handles.append(handle)
        node.group = mgid
        self._refresh_cli(mgid)

    def mc_node_dissociate(self, mgid: int, handle: int) -> None:
        node = self._node(handle)
        if mgid not in self._cli_groups:
            raise UnknownEntryError(f"multicast group {mgid} does not exist")
        if node.group != mgid:
            raise ReplicationError(f"node {handle} is not associated with group {mgid}")
        self._cli_groups[mgid].remove(handle)
        node.group = None
        self._refresh_cli(mgid)

    def _node(self, handle: int) -> _Node:
        node = self._nodes.get(handle)
        if node is None:
            raise UnknownEntryError(f"no multicast node with handle {handle}")
        return node

    def _refresh_cli(self, mgid: int) -> None:
        self._flat[mgid] = tuple(
            Replica(port, node.rid)
            for node in (self._nodes[h] for h in self._cli_groups[mgid])
            for port in node.ports
        )

    def _check_free_group(self, mgid: int) -> None:
        if mgid in self._flat:
            # BMv2's PRE silently keeps the old group; failing loudly catches config bugs.
            raise DuplicateError(f"multicast group {mgid} already exists")
        if not 0 <= mgid <= 0xFFFF:  # mcast_grp is 16 bits in v1model
            raise ReplicationError(f"multicast group id {mgid} out of range")

    # --- P4Runtime model -------------------------------------------------------------------

    def insert_multicast_group(self, mgid: int, replicas: Sequence[ReplicaLike]) -> None:
        if mgid == 0:
            raise ReplicationError("multicast group id 0 is not a group")
        self._check_free_group(mgid)
        self._set_p4rt_group(mgid, replicas)

    def modify_multicast_group(self, mgid: int, replicas: Sequence[ReplicaLike]) -> None:
        if mgid not in self._p4rt_groups:
            raise UnknownEntryError(f"multicast group {mgid} does not exist")
        self._set_p4rt_group(mgid, replicas)

    def _set_p4rt_group(self, mgid: int, replicas: Sequence[ReplicaLike]) -> None:
        reps = _replicas(replicas)
        by_instance: dict[int, set[int]] = {}
        for r in reps:
            by_instance.setdefault(r.instance, set()).add(r.egress_port)
        self._p4rt_groups[mgid] = reps  # as written, for reads
        self._flat[mgid] = tuple(
            Replica(port, rid) for rid, ports in by_instance.items() for port in sorted(ports)
        )

    def delete_multicast_group(self, mgid: int) -> None:
        if self._p4rt_groups.pop(mgid, None) is None:
            raise UnknownEntryError(f"multicast group {mgid} does not exist")
        del self._flat[mgid]

    def multicast_group(self, mgid: int) -> tuple[Replica, ...]:
        """A P4Runtime group's replicas as written (for P4Runtime reads)."""
        reps = self._p4rt_groups.get(mgid)
        if reps is None:
            raise UnknownEntryError(f"multicast group {mgid} does not exist")
        return reps

    def multicast_groups(self) -> dict[int, tuple[Replica, ...]]:
        """Every group (both models) with its copies in replication order."""
        return dict(self._flat)

    # --- clone sessions --------------------------------------------------------------------

    def _write_clone_session(
        self,
        modify: bool,
        session_id: int,
        replicas: Sequence[ReplicaLike],
        *,
        class_of_service: int = 0,
        packet_length_bytes: int = 0,
    ) -> None:
        """P4Runtime INSERT (the session must be new) or MODIFY (it must exist)."""
        exists = session_id in self._sessions
        if exists and not modify:
            raise DuplicateError(f"clone session {session_id} already exists")
        if modify and not exists:
            raise UnknownEntryError(f"clone session {session_id} does not exist")
        self._put_session(session_id, replicas, class_of_service, packet_length_bytes)

    insert_clone_session = partialmethod(_write_clone_session, False)
    modify_clone_session = partialmethod(_write_clone_session, True)

    def delete_clone_session(self, session_id: int) -> None:
        if self._sessions.pop(session_id, None) is None:
            raise UnknownEntryError(f"clone session {session_id} does not exist")

    def mirroring_add(self, session_id: int, egress_port: int) -> None:
        """BMv2 CLI `mirroring_add`: the session sends one copy to `egress_port`.

        Like the CLI, this replaces an existing session.
        """
        self._put_session(session_id, [Replica(egress_port, 0)], 0, 0)

    def mirroring_delete(self, session_id: int) -> None:
        self.delete_clone_session(session_id)

    def clone_sessions(self) -> dict[int, CloneSession]:
        return dict(self._sessions)

    def _put_session(self, session_id: int, replicas: Sequence[ReplicaLike],
                     cos: int, length: int) -> None:
        if session_id < 0:
            raise ReplicationError("session ids are not negative")
        if length < 0:
            raise ReplicationError("packet_length_bytes must not be negative")
        self._sessions[session_id] = CloneSession(session_id, _replicas(replicas), cos, length)

    # --- all ---------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every group, node and session (BMv2 reset_state)."""
        for table in (self._nodes, self._cli_groups, self._p4rt_groups, self._flat,
                      self._sessions):
            table.clear()
