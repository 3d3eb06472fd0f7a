"""RECONCILE_AND_COMMIT to a different program over the real server.

cp.p4 -> cp_v2.p4 (an added table and action, fwd under another id, acl's match
fields in another order) keeps every kind of state, re-addressed by name;
cp.p4 -> cp_bad.p4 (fwd's key exact -> ternary) cannot keep fwd's entries and is
INVALID_ARGUMENT with the old pipeline untouched. Both as control plane only
(emu-null-v1) and compiled (packets still forwarded by the carried entries).
"""

from __future__ import annotations

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.runtime.client import P4RuntimeClient
from emu.runtime.devconfig import make_null_config

from .conftest import CP_BAD_P4, CP_P4, CP_V2_P4, Rig, compiled_config, p4info_of

U = p4runtime_pb2.Update
SFPC = p4runtime_pb2.SetForwardingPipelineConfigRequest
GFPC = p4runtime_pb2.GetForwardingPipelineConfigRequest
DST = 0x0A0B0C0D0E0F
SRC = 0x020000000009


@pytest.fixture(params=["null", "compiled"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _cfg(kind: str, path: object) -> bytes:
    return make_null_config() if kind == "null" else compiled_config(path)  # type: ignore[arg-type]


def _id(items: object, name: str) -> int:
    return next(x.preamble.id for x in items if x.preamble.name == name)  # type: ignore[attr-defined]


def _everything(c: P4RuntimeClient) -> list[bytes]:
    """Every entity a wildcard read returns, serialized (deterministic order)."""
    te = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())
    te.table_entry.counter_data.SetInParent()
    te.table_entry.meter_config.SetInParent()
    pre = p4runtime_pb2.PacketReplicationEngineEntry
    queries = [te,
               p4runtime_pb2.Entity(action_profile_member=p4runtime_pb2.ActionProfileMember()),
               p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry()),
               p4runtime_pb2.Entity(meter_entry=p4runtime_pb2.MeterEntry()),
               p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry()),
               p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry()),
               p4runtime_pb2.Entity(packet_replication_engine_entry=pre(
                   multicast_group_entry=p4runtime_pb2.MulticastGroupEntry())),
               p4runtime_pb2.Entity(packet_replication_engine_entry=pre(
                   clone_session_entry=p4runtime_pb2.CloneSessionEntry()))]
    out = [e.SerializeToString(deterministic=True) for e in c.read(queries)]
    for t in c._info().tables:
        d = p4runtime_pb2.Entity()
        d.table_entry.table_id = t.preamble.id
        d.table_entry.is_default_action = True
        out += [e.SerializeToString(deterministic=True) for e in c.read([d])]
    return out


def _program_state(c: P4RuntimeClient, info: p4info_pb2.P4Info) -> None:
    """One of every kind of state on cp.p4."""
    fwd = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": DST}, "MyIngress.forward",
                        {"port": 6})
    fwd.table_entry.counter_data.packet_count = 3
    fwd.table_entry.counter_data.byte_count = 300
    fwd.table_entry.meter_config.cir, fwd.table_entry.meter_config.cburst = 1000, 10
    fwd.table_entry.meter_config.pir, fwd.table_entry.meter_config.pburst = 2000, 20
    c.write_one(U.INSERT, fwd)
    c.write_one(U.MODIFY, c.table_entry("MyIngress.fwd", action="MyIngress.forward",
                                        params={"port": 9}, default=True))
    c.insert_entry("MyIngress.acl", {"hdr.ethernet.etherType": (0x88B5, 0xFFFF),
                                     "standard_metadata.ingress_port": (1, 4),
                                     "hdr.ethernet.srcAddr": SRC},
                   "MyIngress.set_port", {"port": 7}, priority=10)
    c.insert_member("MyIngress.prof", 1, "MyIngress.set_port", {"port": 3})
    c.insert_entry("MyIngress.indirect", {"hdr.ethernet.srcAddr": 1}, member_id=1)
    cnt = p4runtime_pb2.Entity()
    cnt.counter_entry.counter_id = _id(info.counters, "MyIngress.pkt_counter")
    cnt.counter_entry.index.index = 5
    cnt.counter_entry.data.packet_count = 7
    c.write_one(U.MODIFY, cnt)
    met = p4runtime_pb2.Entity()
    met.meter_entry.meter_id = _id(info.meters, "MyIngress.port_meter")
    met.meter_entry.index.index = 2
    met.meter_entry.config.cir, met.meter_entry.config.pir = 100, 200
    met.meter_entry.config.cburst, met.meter_entry.config.pburst = 5, 6
    c.write_one(U.MODIFY, met)
    reg = p4runtime_pb2.Entity()
    reg.register_entry.register_id = _id(info.registers, "MyIngress.reg16")
    reg.register_entry.index.index = 3
    reg.register_entry.data.bitstring = b"\x12\x34"
    c.write_one(U.MODIFY, reg)
    mc = p4runtime_pb2.Entity()
    g = mc.packet_replication_engine_entry.multicast_group_entry
    g.multicast_group_id = 1
    g.replicas.add(egress_port=1, instance=0)
    g.replicas.add(egress_port=2, instance=0)
    c.write_one(U.INSERT, mc)
    cs = p4runtime_pb2.Entity()
    cs.packet_replication_engine_entry.clone_session_entry.session_id = 5
    cs.packet_replication_engine_entry.clone_session_entry.replicas.add(egress_port=3)
    c.write_one(U.INSERT, cs)
    c.write_one(U.INSERT, c.digest_entry("learn_t", max_list_size=4,
                                         max_timeout_ns=10**9, ack_timeout_ns=10**9))


def test_reconcile_keeps_state_across_programs(rig: Rig, kind: str) -> None:
    cp, v2, bad = p4info_of(CP_P4), p4info_of(CP_V2_P4), p4info_of(CP_BAD_P4)
    c = rig.client()
    c.set_pipeline(cp, _cfg(kind, CP_P4), cookie=1)
    _program_state(c, cp)
    before = _everything(c)
    dp_before = rig.device.dataplane

    # cp_bad: fwd's exact entries cannot become ternary ones -> INVALID_ARGUMENT, no change
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(bad, _cfg(kind, CP_BAD_P4), action=SFPC.RECONCILE_AND_COMMIT, cookie=9)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "MyIngress.fwd" in (ei.value.details() or "")
    c.p4info = cp
    assert rig.device.dataplane is dp_before
    got = c.get_pipeline()
    assert got.p4info == cp and got.cookie.cookie == 1
    assert _everything(c) == before

    # cp_v2: everything is carried, re-addressed by name
    c.set_pipeline(v2, _cfg(kind, CP_V2_P4), action=SFPC.RECONCILE_AND_COMMIT, cookie=2)
    assert c.get_pipeline(GFPC.COOKIE_ONLY).cookie.cookie == 2
    fwd_id = _id(v2.tables, "MyIngress.fwd")
    assert fwd_id == 0x0200ABCD != _id(cp.tables, "MyIngress.fwd")
    q = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": DST})
    q.table_entry.counter_data.SetInParent()
    q.table_entry.meter_config.SetInParent()
    (e,) = c.read([q])
    te = e.table_entry
    assert te.table_id == fwd_id and te.action.action.params[0].value == b"\x06"
    assert (te.counter_data.packet_count, te.counter_data.byte_count) == (3, 300)
    assert (te.meter_config.cir, te.meter_config.pburst) == (1000, 20)
    (d,) = c.read([c.table_entry("MyIngress.fwd", default=True)])
    assert d.table_entry.action.action.params[0].value == b"\x09"
    acl = c.read([c.table_entry("MyIngress.acl")])
    assert len(acl) == 1
    fields = {f.id: f.name for f in next(t for t in v2.tables
                                         if t.preamble.name == "MyIngress.acl").match_fields}
    m = {fields[fm.field_id]: fm for fm in acl[0].table_entry.match}
    assert m["hdr.ethernet.srcAddr"].optional.value == SRC.to_bytes(6, "big")
    assert m["hdr.ethernet.etherType"].ternary.value == b"\x88\xb5"
    assert acl[0].table_entry.priority == 10
    ind = {int.from_bytes(x.table_entry.match[0].exact.value, "big"): x.table_entry.action
           for x in c.read([c.table_entry("MyIngress.indirect")])}
    assert ind == {1: ind[1]} and ind[1].action_profile_member_id == 1
    assert len(c.read([p4runtime_pb2.Entity(
        action_profile_member=p4runtime_pb2.ActionProfileMember())])) == 1
    cnt = p4runtime_pb2.Entity()
    cnt.counter_entry.counter_id = _id(v2.counters, "MyIngress.pkt_counter")
    cnt.counter_entry.index.index = 5
    assert c.read([cnt])[0].counter_entry.data.packet_count == 7
    met = p4runtime_pb2.Entity()
    met.meter_entry.meter_id = _id(v2.meters, "MyIngress.port_meter")
    met.meter_entry.index.index = 2
    assert c.read([met])[0].meter_entry.config.pir == 200
    reg = p4runtime_pb2.Entity()
    reg.register_entry.register_id = _id(v2.registers, "MyIngress.reg16")
    reg.register_entry.index.index = 3
    assert c.read([reg])[0].register_entry.data.bitstring == b"\x12\x34"
    pre = c.read([p4runtime_pb2.Entity(
        packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
            multicast_group_entry=p4runtime_pb2.MulticastGroupEntry()))])
    assert [r.egress_port for r in
            pre[0].packet_replication_engine_entry.multicast_group_entry.replicas] == [1, 2]
    (dig,) = c.read([p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry())])
    assert dig.digest_entry.config.max_list_size == 4
    # the added table is there, empty and writable
    assert c.read([c.table_entry("MyIngress.color")]) == []
    c.insert_entry("MyIngress.color", {"standard_metadata.ingress_port": 2},
                   "MyIngress.set_color", {"color": 1})

    if kind == "compiled":  # the carried entry still forwards, its counter still counts
        frame = DST.to_bytes(6, "big") + (0x020000000001).to_bytes(6, "big") + b"\x88\xb5" \
            + bytes(50)
        rig.outputs.clear()
        rig.device.call(lambda: rig.device.inject(2, frame))
        rig.clock.run_until_idle()
        assert rig.outputs == [(6, frame)]
        (e,) = c.read([q])
        assert e.table_entry.counter_data.packet_count == 4

    # back to cp: the color table has an entry cp cannot hold
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp, _cfg(kind, CP_P4), action=SFPC.RECONCILE_AND_COMMIT)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "MyIngress.color" in (ei.value.details() or "")
    c.p4info = v2
    c.write_one(U.DELETE, c.table_entry("MyIngress.color",
                                        {"standard_metadata.ingress_port": 2}))
    c.set_pipeline(cp, _cfg(kind, CP_P4), action=SFPC.RECONCILE_AND_COMMIT, cookie=3)
    after = _everything(c)
    if kind == "null":  # no packets went through: the state is exactly what it was
        assert after == before


def test_reconcile_rejects_a_configured_digest_the_new_program_lacks(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = rig.client()
    c.set_pipeline(cp_p4info, make_null_config())
    c.write_one(U.INSERT, c.digest_entry("learn_t"))
    no_digest = p4info_pb2.P4Info()
    no_digest.CopyFrom(cp_p4info)
    del no_digest.digests[:]
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(no_digest, make_null_config(), action=SFPC.RECONCILE_AND_COMMIT)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "learn_t" in (ei.value.details() or "")
    c.write_one(U.DELETE, c.digest_entry("learn_t"))
    c.set_pipeline(no_digest, make_null_config(), action=SFPC.RECONCILE_AND_COMMIT)
    assert c.get_pipeline().p4info == no_digest
