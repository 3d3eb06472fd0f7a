"""P4Runtime roles over the real server: a primary per (device, role), role configs
(stratum.P4RoleConfig, roles.py), PERMISSION_DENIED / NOT_FOUND per the spec."""

from __future__ import annotations

import json
import queue
import subprocess
import sys

import grpc
import pytest
from google.protobuf import any_pb2, empty_pb2
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.runtime.client import P4RuntimeClient, WriteError
from emu.runtime.devconfig import make_null_config
from emu.runtime.roles import make_role_config

from .conftest import CP_P4, DEVICE_ID, ECMP_P4, HERE, Rig, compiled_config, error_codes, wait_for

U = p4runtime_pb2.Update
OK, INVALID, NOT_FOUND, PERM = 0, 3, 5, 7


def _id(items: object, name: str) -> int:
    return next(x.preamble.id for x in items if x.preamble.name == name)  # type: ignore[attr-defined]



def _closed_with(c: P4RuntimeClient) -> grpc.StatusCode:
    wait_for(lambda: c.stream_status is not None, what="stream closed")
    assert c.stream_status is not None
    return c.stream_status


def test_each_role_has_its_own_primary(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    a = rig.client((0, 1))  # default role
    b = rig.client((0, 1), role="r1")  # the same election id in another role is fine
    c = rig.client((0, 0), role="r1")
    assert a.is_primary and b.is_primary and not c.is_primary
    upd = c.last_arbitration
    assert upd is not None and upd.role.name == "r1" and upd.status.code == code_pb2.ALREADY_EXISTS
    assert (upd.election_id.high, upd.election_id.low) == (0, 1)
    a.set_pipeline(cp_p4info, make_null_config())
    # no role config: full pipeline access for the named role's primary
    b.p4info = cp_p4info
    c.p4info = cp_p4info
    b.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    with pytest.raises(WriteError) as ei:
        c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 2}, "MyIngress.drop")
    assert ei.value.code is grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as ri:
        c.set_pipeline(cp_p4info, make_null_config())
    assert ri.value.code() is grpc.StatusCode.PERMISSION_DENIED
    # a role no stream ever named: NOT_FOUND (spec, "Write RPC" checks, in order)
    ghost = P4RuntimeClient(rig.address, DEVICE_ID, (0, 1), role="ghost", arbitrate=False)
    rig.clients.append(ghost)
    ghost.p4info = cp_p4info
    with pytest.raises(WriteError) as ei:
        ghost.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 3}, "MyIngress.drop")
    assert ei.value.code is grpc.StatusCode.NOT_FOUND
    # the role's primary leaves: its backup hears NOT_FOUND, the default role is unaffected
    b.close()
    rig.clients.remove(b)
    wait_for(lambda: not c.arbitrations.empty(), what="notice")
    assert c.arbitrations.get(timeout=1).status.code == code_pb2.NOT_FOUND
    assert a.is_primary
    a.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 4}, "MyIngress.drop")
    assert len(a.read([a.table_entry("MyIngress.fwd")])) == 2


def test_role_config_limits_writes(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    a = rig.client((0, 1))
    a.set_pipeline(cp_p4info, make_null_config())
    acl = _id(cp_p4info.tables, "MyIngress.acl")
    counter = _id(cp_p4info.counters, "MyIngress.pkt_counter")
    cfg = make_role_config(exclusive_p4_ids=[acl], shared_p4_ids=[counter])
    d = rig.client((0, 1), role="acl", role_config=cfg)
    assert d.is_primary
    assert d.last_arbitration is not None
    assert d.last_arbitration.role.config == cfg  # echoed in notifications
    d.p4info = cp_p4info
    cnt = p4runtime_pb2.Entity()
    cnt.counter_entry.counter_id = counter
    cnt.counter_entry.index.index = 1
    cnt.counter_entry.data.packet_count = 5
    mc = p4runtime_pb2.Entity()
    mc.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 1
    with pytest.raises(WriteError) as ei:
        d.write([U(type=U.INSERT, entity=d.table_entry(
                     "MyIngress.acl", {"hdr.ethernet.etherType": (0x800, 0xFFFF)},
                     "MyIngress.drop", priority=1)),
                 U(type=U.INSERT, entity=d.table_entry(
                     "MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")),
                 U(type=U.MODIFY, entity=cnt),
                 U(type=U.INSERT, entity=mc)])
    assert error_codes(ei.value) == [OK, PERM, OK, PERM]
    assert len(a.read([a.table_entry("MyIngress.acl")])) == 1
    with pytest.raises(grpc.RpcError) as ri:  # can_push_pipeline is false
        d.set_pipeline(cp_p4info, make_null_config())
    assert ri.value.code() is grpc.StatusCode.PERMISSION_DENIED
    # acl is exclusive to role "acl": even the default role may not write it
    with pytest.raises(WriteError) as ei:
        a.insert_entry("MyIngress.acl", {"hdr.ethernet.etherType": (0x806, 0xFFFF)},
                       "MyIngress.drop", priority=2)
    assert error_codes(ei.value) == [PERM]
    a.write_one(U.MODIFY, cnt)  # shared ids stay writable by others
    # a backup's config is not adopted: the primary's stays in force
    e = rig.client((0, 0), role="acl", role_config=make_role_config())
    assert not e.is_primary
    assert e.last_arbitration is not None and e.last_arbitration.role.config == cfg
    d.write_one(U.DELETE, d.table_entry("MyIngress.acl",
                                        {"hdr.ethernet.etherType": (0x800, 0xFFFF)},
                                        priority=1))
    # the primary updates its role's config: every stream of the role is told
    wider = make_role_config(exclusive_p4_ids=[acl],
                             shared_p4_ids=[counter, _id(cp_p4info.tables, "MyIngress.fwd")])
    req = p4runtime_pb2.StreamMessageRequest()
    req.arbitration.device_id = DEVICE_ID
    req.arbitration.role.name = "acl"
    req.arbitration.role.config.CopyFrom(wider)
    req.arbitration.election_id.low = 1
    d.send_stream(req)
    wait_for(lambda: e.last_arbitration is not None and e.last_arbitration.role.config == wider,
             what="the backup told of the new config")
    d.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    # another role claiming acl exclusively, or a config of another scheme: INVALID_ARGUMENT
    clash = rig.client((0, 1), role="acl2", arbitrate=False,
                       role_config=make_role_config(exclusive_p4_ids=[acl]))
    clash.open_stream()
    assert _closed_with(clash) is grpc.StatusCode.INVALID_ARGUMENT
    other = any_pb2.Any()
    other.Pack(empty_pb2.Empty())
    alien = rig.client((0, 1), role="x", arbitrate=False, role_config=other)
    alien.open_stream()
    assert _closed_with(alien) is grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("change", ["role", "device_id"])
def test_role_or_device_cannot_change_on_a_live_stream(rig: Rig, change: str) -> None:
    c = rig.client((0, 1), role="r1")
    assert c.is_primary
    req = p4runtime_pb2.StreamMessageRequest()
    req.arbitration.device_id = DEVICE_ID + (change == "device_id")
    req.arbitration.role.name = "r2" if change == "role" else "r1"
    req.arbitration.election_id.low = 1
    c.send_stream(req)
    assert _closed_with(c) is grpc.StatusCode.FAILED_PRECONDITION


def test_digests_go_to_the_roles_in_scope(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    a = rig.client((0, 1))
    a.set_pipeline(cp_p4info, compiled_config(CP_P4))
    digest = cp_p4info.digests[0].preamble.id
    learn = rig.client((0, 1), role="learn", role_config=make_role_config(
        shared_p4_ids=[digest]))
    other = rig.client((0, 1), role="other", role_config=make_role_config(
        shared_p4_ids=[_id(cp_p4info.tables, "MyIngress.fwd")]))
    learn.p4info = cp_p4info
    learn.write_one(U.INSERT, learn.digest_entry("learn_t"))  # in its scope
    frame = (1).to_bytes(6, "big") + (0x020000000009).to_bytes(6, "big") + b"\x88\xb5" + bytes(50)
    rig.device.call(lambda: rig.device.inject(2, frame))
    rig.clock.run_until_idle()
    for c in (a, learn):
        dl = c.digests.get(timeout=10)
        assert dl.digest_id == digest
    with pytest.raises(queue.Empty):
        other.digests.get(timeout=0.5)


def test_packet_in_follows_role_config(rig: Rig, ecmp_p4info: p4info_pb2.P4Info) -> None:
    from emu.p4.v1model.hashes import csum16

    a = rig.client((0, 1))
    a.set_pipeline(ecmp_p4info, compiled_config(ECMP_P4))
    pin = next(c for c in ecmp_p4info.controller_packet_metadata
               if c.preamble.name == "packet_in")
    port_md = next(m.id for m in pin.metadata if m.name == "ingress_port")
    port3 = rig.client((0, 1), role="port3", role_config=make_role_config(
        receives_packet_ins=True, packet_in_filter=(port_md, b"\x03")))
    deaf = rig.client((0, 1), role="deaf", role_config=make_role_config())
    a.insert_member("MyIngress.ecmp_selector", 1, "MyIngress.send_to_cpu")
    a.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000001, 32)}, member_id=1)
    ip = bytearray.fromhex("45000014000100004011") + b"\x00\x00" + bytes([10, 0, 0, 9,
                                                                         10, 0, 0, 1])
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    pkt = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + bytes(ip)
    for port in (4, 3):
        rig.device.call(lambda p=port: rig.device.inject(p, pkt))
        rig.clock.run_until_idle()
    got_a = [a.packet_in_metadata(a.packets.get(timeout=10))["ingress_port"] for _ in range(2)]
    assert got_a == [4, 3]
    port3.p4info = ecmp_p4info
    assert port3.packet_in_metadata(port3.packets.get(timeout=10))["ingress_port"] == 3
    with pytest.raises(queue.Empty):
        port3.packets.get(timeout=0.5)
    with pytest.raises(queue.Empty):
        deaf.packets.get(timeout=0.5)


def test_p4runtime_shell_with_a_role(tcp_rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """p4runtime-shell's role_name: a named role without a config writes and reads;
    its Write carries the role, so the default role's primary is not needed."""
    a = tcp_rig.client((0, 9))
    a.set_pipeline(cp_p4info, make_null_config())
    proc = subprocess.run([sys.executable, str(HERE / "shell_roles.py"), tcp_rig.address,
                           str(DEVICE_ID)], cwd=HERE.parents[1], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert out == [{"entries": 1}, {"backup_write": "PERMISSION_DENIED"}]
    got = a.read([a.table_entry("MyIngress.fwd")])
    assert len(got) == 1 and got[0].table_entry.action.action.params[0].value == b"\x05"
