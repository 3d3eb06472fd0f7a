"""Multicast groups and clone sessions."""

from __future__ import annotations

import pytest

from emu.p4.v1model.replication import (
    CloneSession,
    DuplicateError,
    PacketReplicationEngine,
    Replica,
    ReplicationError,
    UnknownEntryError,
)


def test_cli_model_handles_and_order() -> None:
    pre = PacketReplicationEngine()
    assert pre.mc_mgrp_create(1) == 1
    h0 = pre.mc_node_create(10, [3, 1, 2, 3])  # duplicates collapse, ports sorted
    h1 = pre.mc_node_create(20, [0])
    h2 = pre.mc_node_create(5, [7, 6])
    assert (h0, h1, h2) == (0, 1, 2)
    pre.mc_node_associate(1, h2)
    pre.mc_node_associate(1, h0)
    # Nodes in association order, ports ascending within a node, each with the node's rid.
    assert pre.replicate(1) == (
        Replica(6, 5), Replica(7, 5), Replica(1, 10), Replica(2, 10), Replica(3, 10),
    )
    pre.mc_node_dissociate(1, h2)
    assert pre.replicate(1) == (Replica(1, 10), Replica(2, 10), Replica(3, 10))
    pre.mc_node_update(h0, [9])
    assert pre.replicate(1) == (Replica(9, 10),)


def test_cli_handle_reuse_and_destroy() -> None:
    pre = PacketReplicationEngine()
    pre.mc_mgrp_create(2)
    for _ in range(3):
        pre.mc_node_create(0, [1])
    pre.mc_node_associate(2, 1)
    pre.mc_node_destroy(1)  # allowed while associated; removed from the group
    assert pre.replicate(2) == ()
    assert pre.mc_node_create(0, [4]) == 1  # lowest free handle is reused
    pre.mc_node_associate(2, 1)
    pre.mc_mgrp_destroy(2)
    assert pre.replicate(2) == ()
    pre.mc_mgrp_create(2)
    pre.mc_node_associate(2, 1)  # destroying the group freed the node
    assert pre.replicate(2) == (Replica(4, 0),)


def test_cli_errors() -> None:
    pre = PacketReplicationEngine()
    pre.mc_mgrp_create(1)
    h = pre.mc_node_create(0, [1])
    with pytest.raises(DuplicateError):
        pre.mc_mgrp_create(1)
    with pytest.raises(UnknownEntryError):
        pre.mc_node_associate(99, h)
    with pytest.raises(UnknownEntryError):
        pre.mc_node_associate(1, 42)
    pre.mc_node_associate(1, h)
    with pytest.raises(DuplicateError):
        pre.mc_node_associate(1, h)
    pre.mc_mgrp_create(3)
    with pytest.raises(ReplicationError):
        pre.mc_node_dissociate(3, h)
    with pytest.raises(UnknownEntryError):
        pre.mc_mgrp_destroy(77)
    with pytest.raises(ReplicationError):
        pre.mc_mgrp_create(70000)


def test_p4runtime_model() -> None:
    pre = PacketReplicationEngine()
    pre.insert_multicast_group(5, [Replica(3, 1), (4, 2), Replica(1, 2), (2, 1)])
    # One node per instance (as PI builds them), ports ascending within each.
    assert pre.replicate(5) == (Replica(2, 1), Replica(3, 1), Replica(1, 2), Replica(4, 2))
    assert pre.multicast_group(5) == (Replica(3, 1), Replica(4, 2), Replica(1, 2), Replica(2, 1))
    pre.modify_multicast_group(5, [(8, 0)])
    assert pre.replicate(5) == (Replica(8, 0),)
    with pytest.raises(DuplicateError):
        pre.insert_multicast_group(5, [])
    with pytest.raises(DuplicateError):
        pre.insert_multicast_group(6, [(1, 0), (1, 0)])
    with pytest.raises(ReplicationError):
        pre.insert_multicast_group(0, [(1, 0)])
    pre.mc_mgrp_create(7)
    with pytest.raises(DuplicateError):  # one id space for both models
        pre.insert_multicast_group(7, [(1, 0)])
    with pytest.raises(UnknownEntryError):
        pre.modify_multicast_group(7, [])  # a CLI group is not a P4Runtime entry
    pre.delete_multicast_group(5)
    assert pre.replicate(5) == ()
    with pytest.raises(UnknownEntryError):
        pre.delete_multicast_group(5)
    with pytest.raises(UnknownEntryError):
        pre.multicast_group(5)
    assert set(pre.multicast_groups()) == {7}


def test_clone_sessions() -> None:
    pre = PacketReplicationEngine()
    assert pre.clone_session(1) is None
    pre.mirroring_add(1, 4)
    assert pre.clone_session(1) == CloneSession(1, (Replica(4, 0),), 0, 0)
    pre.mirroring_add(1, 5)  # the CLI replaces
    assert pre.clone_session(1).replicas == (Replica(5, 0),)  # type: ignore[union-attr]
    pre.insert_clone_session(2, [(1, 1), (2, 1)], class_of_service=3, packet_length_bytes=64)
    s = pre.clone_session(2)
    assert s is not None and s.packet_length_bytes == 64 and s.class_of_service == 3
    assert [r.egress_port for r in s.replicas] == [1, 2]
    with pytest.raises(DuplicateError):
        pre.insert_clone_session(2, [(1, 1)])
    pre.modify_clone_session(2, [(9, 0)])
    assert pre.clone_session(2).replicas == (Replica(9, 0),)  # type: ignore[union-attr]
    with pytest.raises(UnknownEntryError):
        pre.modify_clone_session(3, [])
    pre.delete_clone_session(2)
    pre.mirroring_delete(1)
    assert pre.clone_sessions() == {}
    with pytest.raises(UnknownEntryError):
        pre.delete_clone_session(2)


def test_reset() -> None:
    pre = PacketReplicationEngine()
    pre.mc_mgrp_create(1)
    pre.mc_node_associate(1, pre.mc_node_create(0, [1]))
    pre.mirroring_add(3, 3)
    pre.reset()
    assert pre.replicate(1) == () and pre.clone_session(3) is None
    assert pre.mc_node_create(0, []) == 0
