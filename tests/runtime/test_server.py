"""The P4Runtime server over real gRPC (unix socket), driven by our thin client.

Every error class the spec names is checked with its code; batch writes are
checked for per-update p4.v1.Error details.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emu.runtime.client import (
    P4RuntimeClient,
    WriteError,
    clone_session_entity,
    multicast_group_entity,
)
from emu.runtime.devconfig import make_null_config
from emu.runtime.translate import encode_uint

from .conftest import CP_P4, DEVICE_ID, ECMP_P4, Rig, compiled_config, error_codes, wait_for

U = p4runtime_pb2.Update
SFPC = p4runtime_pb2.SetForwardingPipelineConfigRequest
GFPC = p4runtime_pb2.GetForwardingPipelineConfigRequest
OK, INVALID, NOT_FOUND, EXISTS, PERM, FAILED, RANGE, UNIMPL = 0, 3, 5, 6, 7, 9, 11, 12



def cp_client(rig: Rig, p4info: p4info_pb2.P4Info, config: bytes | None = None
              ) -> P4RuntimeClient:
    c = rig.client()
    assert c.is_primary
    c.set_pipeline(p4info, config or make_null_config())
    return c


def _compiled_config(path: Path) -> bytes:
    return compiled_config(path)


@pytest.fixture(params=["null", "compiled"])
def cpc(request: pytest.FixtureRequest, rig: Rig, cp_p4info: p4info_pb2.P4Info
        ) -> P4RuntimeClient:
    """A primary client on cp.p4: control plane only, or the compiled program."""
    cfg = make_null_config() if request.param == "null" else _compiled_config(CP_P4)
    return cp_client(rig, cp_p4info, cfg)


@pytest.fixture
def ecmp_cfg() -> bytes:
    """ecmp_ecn.p4 compiled from source."""
    return _compiled_config(ECMP_P4)


# ---------------------------------------------------------------- basics


def test_capabilities_and_empty_pipeline(rig: Rig) -> None:
    c = rig.client()
    resp = c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
    assert resp.p4runtime_api_version.startswith("1.")
    cfg = c.get_pipeline()
    assert not cfg.HasField("p4info") and cfg.p4_device_config == b""
    with pytest.raises(WriteError) as ei:
        c.write([p4runtime_pb2.Update(type=U.INSERT)])
    assert ei.value.code is grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as ri:
        c.read([p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())])
    assert ri.value.code() is grpc.StatusCode.FAILED_PRECONDITION


def test_wrong_device_id(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc
    req = p4runtime_pb2.WriteRequest(device_id=DEVICE_ID + 1)
    req.election_id.low = 1
    with pytest.raises(grpc.RpcError) as ei:
        c.stub.Write(req, timeout=5)
    assert ei.value.code() is grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as ei:
        c.stub.Read(p4runtime_pb2.ReadRequest(device_id=DEVICE_ID + 1), timeout=5).next()
    assert ei.value.code() is grpc.StatusCode.NOT_FOUND


# ---------------------------------------------------------------- arbitration


def test_arbitration_primary_changes_are_announced(rig: Rig,
                                                   cp_p4info: p4info_pb2.P4Info) -> None:
    a = rig.client((0, 1))
    assert a.is_primary
    b = rig.client((0, 2))
    assert b.is_primary
    # a hears that it lost the primary role
    wait_for(lambda: not a.is_primary, what="a demoted")
    upd = a.arbitrations.get(timeout=2)
    while upd.status.code == code_pb2.OK:
        upd = a.arbitrations.get(timeout=2)
    assert upd.status.code == code_pb2.ALREADY_EXISTS
    assert (upd.election_id.high, upd.election_id.low) == (0, 2)
    # only the primary may write or set the pipeline
    with pytest.raises(grpc.RpcError) as ei:
        a.set_pipeline(cp_p4info, make_null_config())
    assert ei.value.code() is grpc.StatusCode.PERMISSION_DENIED
    b.set_pipeline(cp_p4info, make_null_config())
    with pytest.raises(WriteError) as we:
        a.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    assert we.value.code is grpc.StatusCode.PERMISSION_DENIED
    # reads need no arbitration
    assert a.read([p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())]) == []
    # the primary goes away: the backup is told there is no primary
    b.close()
    rig.clients.remove(b)
    wait_for(lambda: any(True for _ in [0]) and a.arbitrations.qsize() > 0, what="notice")
    last = None
    while a.arbitrations.qsize():
        last = a.arbitrations.get_nowait()
    assert last is not None and last.status.code == code_pb2.NOT_FOUND
    # a lower id cannot take over from the departed primary; a higher one can
    assert not a.is_primary
    c = rig.client((0, 3))
    assert c.is_primary


def test_duplicate_election_id_is_rejected(rig: Rig) -> None:
    rig.client((0, 5))
    dup = P4RuntimeClient(rig.address, DEVICE_ID, (0, 5), arbitrate=False)
    rig.clients.append(dup)
    dup.open_stream()
    wait_for(lambda: dup.stream_status is not None, what="stream closed")
    assert dup.stream_status is grpc.StatusCode.INVALID_ARGUMENT


def test_arbitration_wrong_device(rig: Rig) -> None:
    c = P4RuntimeClient(rig.address, DEVICE_ID + 3, (0, 1), arbitrate=False)
    rig.clients.append(c)
    c.open_stream()
    wait_for(lambda: c.stream_status is not None, what="stream closed")
    assert c.stream_status is grpc.StatusCode.NOT_FOUND


# ---------------------------------------------------------------- pipeline config


def test_pipeline_config_actions(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = rig.client()
    bad = b'{"format": "nope-v9"}'
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp_p4info, bad, action=SFPC.VERIFY)
    assert ei.value.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                               grpc.StatusCode.UNIMPLEMENTED)
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp_p4info, b"\x00garbage", action=SFPC.VERIFY)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp_p4info, b'{"header_types": []}', action=SFPC.VERIFY)
    assert "BMv2" in (ei.value.details() or "")
    c.set_pipeline(cp_p4info, make_null_config(), action=SFPC.VERIFY)
    assert not c.get_pipeline().HasField("p4info")  # VERIFY commits nothing
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp_p4info, b"", action=SFPC.COMMIT)
    assert ei.value.code() is grpc.StatusCode.NOT_FOUND  # nothing saved
    c.set_pipeline(cp_p4info, make_null_config(), action=SFPC.VERIFY_AND_SAVE, cookie=11)
    assert not c.get_pipeline().HasField("p4info")
    c.set_pipeline(p4info_pb2.P4Info(), b"", action=SFPC.COMMIT)
    cfg = c.get_pipeline()
    assert cfg.p4info == cp_p4info and cfg.cookie.cookie == 11
    # response types
    only = c.get_pipeline(GFPC.COOKIE_ONLY)
    assert only.cookie.cookie == 11 and not only.HasField("p4info") and not only.p4_device_config
    pc = c.get_pipeline(GFPC.P4INFO_AND_COOKIE)
    assert pc.HasField("p4info") and not pc.p4_device_config
    dc = c.get_pipeline(GFPC.DEVICE_CONFIG_AND_COOKIE)
    assert dc.p4_device_config == make_null_config() and not dc.HasField("p4info")
    # RECONCILE_AND_COMMIT with the same program keeps the state
    c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 5}, "MyIngress.forward",
                   {"port": 1})
    c.set_pipeline(cp_p4info, make_null_config(), action=SFPC.RECONCILE_AND_COMMIT, cookie=12)
    assert len(c.read([c.table_entry("MyIngress.fwd")])) == 1
    assert c.get_pipeline(GFPC.COOKIE_ONLY).cookie.cookie == 12
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp_p4info, _compiled_config(ECMP_P4),
                       action=SFPC.RECONCILE_AND_COMMIT)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # a config that cannot work
    assert len(c.read([c.table_entry("MyIngress.fwd")])) == 1
    # VERIFY_AND_COMMIT resets the state
    c.set_pipeline(cp_p4info, make_null_config())
    assert c.read([c.table_entry("MyIngress.fwd")]) == []
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp_p4info, make_null_config(), action=SFPC.UNSPECIFIED)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("fmt", ["emu-python-v1", "nope-v9"])
def test_unsupported_device_config_formats_are_rejected(
        rig: Rig, ecmp_p4info: p4info_pb2.P4Info, fmt: str) -> None:
    """emu-python-v1 (a Python data path named by module:function, once a test hook of
    the product) is an unknown format like any other: INVALID_ARGUMENT, naming the
    format and the ones this target takes, and nothing is committed."""
    import json

    c = rig.client()
    cfg = json.dumps({"format": fmt,
                      "factory": "tests.switch.reference_pipeline:ecmp_ecn"}).encode()
    for action in (SFPC.VERIFY, SFPC.VERIFY_AND_COMMIT):
        with pytest.raises(grpc.RpcError) as ei:
            c.set_pipeline(ecmp_p4info, cfg, action=action)
        assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        details = ei.value.details() or ""
        assert f"format {fmt!r} is not supported" in details, details
        assert "p4-source" in details and "emu-compiled-v1" in details, details
    assert not c.get_pipeline().HasField("p4info")


def test_the_runtime_spells_the_compiler_artefact_format_as_the_compiler_does() -> None:
    """The runtime names the artefact format itself (it loads the compiler lazily, so it
    can say when a build has none): a contract with the compiler's own constant."""
    from emu.p4.target.program import FORMAT
    from emu.runtime import devconfig

    assert devconfig._ARTEFACT == FORMAT


def test_p4info_that_does_not_fit_the_program_is_rejected(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = rig.client()
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp_p4info, _compiled_config(ECMP_P4))
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    broken = p4info_pb2.P4Info()
    broken.CopyFrom(cp_p4info)
    broken.tables[1].preamble.id = broken.tables[0].preamble.id
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(broken, make_null_config())
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT


# ---------------------------------------------------------------- tables


def test_table_entry_lifecycle_and_errors(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc
    mac = 0x0A0B0C0D0E0F
    c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": mac}, "MyIngress.forward",
                   {"port": 3})
    got = c.read([c.table_entry("MyIngress.fwd")])
    assert len(got) == 1
    te = got[0].table_entry
    assert te.match[0].exact.value == mac.to_bytes(6, "big")
    assert te.action.action.params[0].value == b"\x03"  # canonical: shortest
    # duplicate -> ALREADY_EXISTS, missing -> NOT_FOUND
    with pytest.raises(WriteError) as ei:
        c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": mac}, "MyIngress.drop")
    assert ei.value.code is grpc.StatusCode.UNKNOWN and error_codes(ei.value) == [EXISTS]
    with pytest.raises(WriteError) as ei:
        c.write_one(U.DELETE, c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}))
    assert error_codes(ei.value) == [NOT_FOUND]
    # MODIFY
    c.write_one(U.MODIFY, c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": mac},
                                        "MyIngress.forward", {"port": 9}))
    te = c.read([c.table_entry("MyIngress.fwd")])[0].table_entry
    assert te.action.action.params[0].value == b"\x09"
    # DELETE
    c.write_one(U.DELETE, c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": mac}))
    assert c.read([c.table_entry("MyIngress.fwd")]) == []


def test_batch_reports_each_update(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc
    ok = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    dup = ok
    missing = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 2})
    wide = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1 << 48}, "MyIngress.drop")
    ok2 = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 3}, "MyIngress.drop")
    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.INSERT, entity=ok), U(type=U.INSERT, entity=dup),
                 U(type=U.DELETE, entity=missing), U(type=U.INSERT, entity=wide),
                 U(type=U.INSERT, entity=ok2)])
    assert ei.value.code is grpc.StatusCode.UNKNOWN
    assert error_codes(ei.value) == [OK, EXISTS, NOT_FOUND, RANGE, OK]
    assert len(c.read([c.table_entry("MyIngress.fwd")])) == 2  # CONTINUE_ON_ERROR
    # ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC: test_atomicity.py


def test_byte_string_encodings(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc
    ent = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 5}, "MyIngress.forward",
                        {"port": 2})
    # non-canonical (leading zeros) is accepted ...
    ent.table_entry.match[0].exact.value = b"\x00\x00\x00\x00\x00\x00\x00\x05"
    ent.table_entry.action.action.params[0].value = b"\x00\x02"
    c.write_one(U.INSERT, ent)
    te = c.read([c.table_entry("MyIngress.fwd")])[0].table_entry
    # ... and read back canonical
    assert te.match[0].exact.value == b"\x05"
    assert te.action.action.params[0].value == b"\x02"
    # wider than the bitwidth, even with leading zeros stripped: OUT_OF_RANGE
    ent.table_entry.match[0].exact.value = b"\x01" + b"\x00" * 6
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, ent)
    assert error_codes(ei.value) == [RANGE]
    ent.table_entry.match[0].exact.value = b"\x06"
    ent.table_entry.action.action.params[0].value = b"\x02\x00"  # 512 > 9 bits
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, ent)
    assert error_codes(ei.value) == [RANGE]
    # an empty string too: "the server always rejects the string ... OUT_OF_RANGE"
    ent.table_entry.action.action.params[0].value = b""
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, ent)
    assert error_codes(ei.value) == [RANGE]
    ent.table_entry.action.action.params[0].value = b"\x02"
    ent.table_entry.match[0].exact.value = b""
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, ent)
    assert error_codes(ei.value) == [RANGE]


def test_invalid_requests(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc

    def code_of(ent: p4runtime_pb2.Entity, typ: int = U.INSERT) -> int:
        with pytest.raises(WriteError) as ei:
            c.write_one(typ, ent)
        return error_codes(ei.value)[0]

    unknown = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    unknown.table_entry.table_id = 0x02FFFFFF
    assert code_of(unknown) == NOT_FOUND
    missing_exact = c.table_entry("MyIngress.fwd", {}, "MyIngress.drop")
    assert code_of(missing_exact) == INVALID
    bad_field = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    bad_field.table_entry.match[0].field_id = 9
    assert code_of(bad_field) == INVALID
    wrong_kind = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    wrong_kind.table_entry.match[0].lpm.value = b"\x01"
    wrong_kind.table_entry.match[0].lpm.prefix_len = 8
    assert code_of(wrong_kind) == INVALID
    wrong_action = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1},
                                 "MyIngress.set_port", {"port": 1})
    assert code_of(wrong_action) == INVALID
    no_action = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1})
    assert code_of(no_action) == INVALID
    # priorities: needed for ternary/range/optional tables, forbidden elsewhere
    prio_on_exact = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1},
                                  "MyIngress.drop", priority=5)
    assert code_of(prio_on_exact) == INVALID
    no_prio = c.table_entry("MyIngress.acl", {"hdr.ethernet.etherType": (0x800, 0xFFFF)},
                            "MyIngress.drop")
    assert code_of(no_prio) == INVALID
    # ternary value outside its mask, range low > high
    t_bad = c.table_entry("MyIngress.acl", {"hdr.ethernet.etherType": (0x801, 0xFF00)},
                          "MyIngress.drop", priority=1)
    assert code_of(t_bad) == INVALID
    r_bad = c.table_entry("MyIngress.acl", {"standard_metadata.ingress_port": (5, 2)},
                          "MyIngress.drop", priority=1)
    assert code_of(r_bad) == INVALID
    # @defaultonly action in an entry: PERMISSION_DENIED (spec)
    # default entry: only MODIFY, no match
    d = c.table_entry("MyIngress.fwd", action="MyIngress.drop", default=True)
    assert code_of(d, U.INSERT) == INVALID
    assert code_of(d, U.DELETE) == INVALID
    # update type unspecified
    assert code_of(c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1},
                                 "MyIngress.drop"), U.UNSPECIFIED) == INVALID
    # empty entity
    assert code_of(p4runtime_pb2.Entity()) == INVALID
    # one-shot action sets: a profile without selector takes exactly one action
    oneshot = c.table_entry("MyIngress.indirect", {"hdr.ethernet.srcAddr": 1})
    drop_id = next(x.preamble.id for x in cp_p4info.actions
                   if x.preamble.name == "MyIngress.drop")
    for _ in range(2):
        a = oneshot.table_entry.action.action_profile_action_set.action_profile_actions.add()
        a.action.action_id = drop_id
        a.weight = 1
    assert code_of(oneshot) == INVALID
    # member/group ids from 2**31 up are the server's (one-shot sets)
    reserved = p4runtime_pb2.Entity()
    reserved.action_profile_member.action_profile_id = cp_p4info.action_profiles[0].preamble.id
    reserved.action_profile_member.member_id = 1 << 31
    reserved.action_profile_member.action.action_id = drop_id
    assert code_of(reserved) == INVALID
    # a read of a wildcard table with match fields makes no sense
    bad_read = p4runtime_pb2.Entity()
    bad_read.table_entry.match.add(field_id=1).exact.value = b"\x01"
    with pytest.raises(grpc.RpcError) as ri:
        c.read([bad_read])
    assert ri.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def test_priorities_wildcard_reads_and_defaults(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc
    for prio in (10, 20):
        c.insert_entry("MyIngress.acl", {"hdr.ethernet.etherType": (0x800, 0xFFFF),
                                         "standard_metadata.ingress_port": (1, 4)},
                       "MyIngress.set_port", {"port": prio}, priority=prio)
    c.insert_entry("MyIngress.acl", {"hdr.ethernet.srcAddr": 7}, "MyIngress.drop", priority=3)
    c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    everything = c.read([p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())])
    assert len(everything) == 4
    acl = c.read([c.table_entry("MyIngress.acl")])
    assert sorted(e.table_entry.priority for e in acl) == [3, 10, 20]
    only20 = c.read([c.table_entry("MyIngress.acl", priority=20)])
    assert [e.table_entry.priority for e in only20] == [20]
    # don't-care fields are omitted on read
    opt = next(e.table_entry for e in acl if e.table_entry.priority == 3)
    assert [m.field_id for m in opt.match] == [3]
    # default entry: read with is_default_action, MODIFY, reset
    d = c.read([c.table_entry("MyIngress.fwd", default=True)])
    assert len(d) == 1 and d[0].table_entry.is_default_action
    drop_id = next(a.preamble.id for a in cp_p4info.actions if a.preamble.name == "MyIngress.drop")
    assert d[0].table_entry.action.action.action_id == drop_id
    c.write_one(U.MODIFY, c.table_entry("MyIngress.fwd", action="MyIngress.forward",
                                        params={"port": 4}, default=True))
    d = c.read([c.table_entry("MyIngress.fwd", default=True)])
    assert d[0].table_entry.action.action.params[0].value == b"\x04"
    c.write_one(U.MODIFY, c.table_entry("MyIngress.fwd", default=True))
    d = c.read([c.table_entry("MyIngress.fwd", default=True)])
    assert d[0].table_entry.action.action.action_id == drop_id


def test_direct_counter_and_meter(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc
    ent = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    ent.table_entry.counter_data.packet_count = 5
    ent.table_entry.counter_data.byte_count = 500
    ent.table_entry.meter_config.cir = 1000
    ent.table_entry.meter_config.cburst = 10
    ent.table_entry.meter_config.pir = 2000
    ent.table_entry.meter_config.pburst = 20
    c.write_one(U.INSERT, ent)
    q = c.table_entry("MyIngress.fwd")
    q.table_entry.counter_data.SetInParent()
    q.table_entry.meter_config.SetInParent()
    te = c.read([q])[0].table_entry
    assert (te.counter_data.packet_count, te.counter_data.byte_count) == (5, 500)
    assert (te.meter_config.cir, te.meter_config.pburst) == (1000, 20)
    dc = p4runtime_pb2.Entity()
    dc.direct_counter_entry.table_entry.CopyFrom(
        c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}).table_entry)
    dc.direct_counter_entry.data.packet_count = 9
    c.write_one(U.MODIFY, dc)
    got = c.read([dc])[0].direct_counter_entry
    assert got.data.packet_count == 9
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, dc)
    assert error_codes(ei.value) == [INVALID]
    dm = p4runtime_pb2.Entity()
    dm.direct_meter_entry.table_entry.CopyFrom(dc.direct_counter_entry.table_entry)
    dm.direct_meter_entry.config.cir = 50
    dm.direct_meter_entry.config.pir = 10  # cir > pir
    with pytest.raises(WriteError) as ei:
        c.write_one(U.MODIFY, dm)
    assert error_codes(ei.value) == [INVALID]
    # counter data on a table without a direct counter
    bad = c.table_entry("MyIngress.acl", {"hdr.ethernet.srcAddr": 1}, "MyIngress.drop",
                        priority=1)
    bad.table_entry.counter_data.packet_count = 1
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, bad)
    assert error_codes(ei.value) == [INVALID]


def test_direct_resources_wildcard_reads(rig: Rig, cp_p4info: p4info_pb2.P4Info,
                                         cpc: P4RuntimeClient) -> None:
    """A direct counter or meter read with only a table id (or none) returns one entity per
    entry; each names its entry by key alone (no action, no idle timeout)."""
    c = cpc
    for mac, cir in ((1, 1000), (2, 0)):
        ent = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": mac}, "MyIngress.drop")
        ent.table_entry.idle_timeout_ns = 10**12
        if cir:
            ent.table_entry.meter_config.cir = ent.table_entry.meter_config.pir = cir
            ent.table_entry.meter_config.cburst = ent.table_entry.meter_config.pburst = 10
        c.write_one(U.INSERT, ent)
    fwd = c.table_entry("MyIngress.fwd").table_entry
    for which in ("direct_counter_entry", "direct_meter_entry"):
        for table_id in (fwd.table_id, 0):
            q = p4runtime_pb2.Entity()
            getattr(q, which).table_entry.table_id = table_id
            got = [getattr(e, which) for e in c.read([q])]
            keys = sorted(d.table_entry.match[0].exact.value for d in got)
            assert keys == [b"\x01", b"\x02"], (which, table_id)
            for d in got:
                assert d.table_entry.table_id == fwd.table_id
                assert not d.table_entry.HasField("action")
                assert d.table_entry.idle_timeout_ns == 0
            if which == "direct_meter_entry":
                rates = {d.table_entry.match[0].exact.value: d.config.cir for d in got}
                assert rates == {b"\x01": 1000, b"\x02": 0}
    q = p4runtime_pb2.Entity()
    q.direct_meter_entry.table_entry.table_id = c.table_entry("MyIngress.acl").table_entry.table_id
    with pytest.raises(grpc.RpcError) as ei:
        c.read([q])
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# ---------------------------------------------------------------- profiles


def test_action_profile_members_and_groups(rig: Rig, ecmp_p4info: p4info_pb2.P4Info,
                                           ecmp_cfg: bytes) -> None:
    c = rig.client()
    c.set_pipeline(ecmp_p4info, ecmp_cfg)
    prof = "MyIngress.ecmp_selector"
    for mid, port in ((1, 2), (2, 3)):
        c.insert_member(prof, mid, "MyIngress.set_nhop", {"dmac": 0x020000000000 + mid,
                                                          "port": port})
    c.insert_group(prof, 10, [(1, 1), (2, 3)])
    c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000, 8)}, group_id=10)
    groups = c.read([p4runtime_pb2.Entity(action_profile_group=p4runtime_pb2.ActionProfileGroup())])
    assert len(groups) == 1
    g = groups[0].action_profile_group
    assert [(m.member_id, m.weight) for m in g.members] == [(1, 1), (2, 3)]
    members = c.read([p4runtime_pb2.Entity(
        action_profile_member=p4runtime_pb2.ActionProfileMember())])
    assert sorted(m.action_profile_member.member_id for m in members) == [1, 2]
    te = c.read([c.table_entry("MyIngress.ipv4_lpm")])[0].table_entry
    assert te.action.action_profile_group_id == 10
    # errors: in-use member / group, missing member, duplicate, zero weight
    ap_id = g.action_profile_id

    def member(mid: int) -> p4runtime_pb2.Entity:
        e = p4runtime_pb2.Entity()
        e.action_profile_member.action_profile_id = ap_id
        e.action_profile_member.member_id = mid
        return e

    def group(gid: int, members: list[tuple[int, int]]) -> p4runtime_pb2.Entity:
        e = p4runtime_pb2.Entity()
        e.action_profile_group.action_profile_id = ap_id
        e.action_profile_group.group_id = gid
        for mid, w in members:
            e.action_profile_group.members.add(member_id=mid, weight=w)
        return e

    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.DELETE, entity=member(1)), U(type=U.DELETE, entity=group(10, [])),
                 U(type=U.INSERT, entity=group(11, [(7, 1)])),
                 U(type=U.INSERT, entity=group(10, [(1, 1)])),
                 U(type=U.INSERT, entity=group(12, [(1, 0)]))])
    assert error_codes(ei.value) == [FAILED, FAILED, NOT_FOUND, EXISTS, INVALID]
    # a direct action on an indirect table is rejected
    with pytest.raises(WriteError) as ei:
        c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0B000000, 8)},
                       "MyIngress.drop")
    assert error_codes(ei.value) == [INVALID]
    # modify the group's weights
    c.write_one(U.MODIFY, group(10, [(2, 1)]))
    g = c.read([group(10, [])])[0].action_profile_group
    assert [(m.member_id, m.weight) for m in g.members] == [(2, 1)]


# ---------------------------------------------------------------- externs, PRE


def test_counters_meters_registers(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc
    cid = next(x.preamble.id for x in cp_p4info.counters)
    rid = next(x.preamble.id for x in cp_p4info.registers)
    mid = next(x.preamble.id for x in cp_p4info.meters)
    ent = p4runtime_pb2.Entity()
    ent.counter_entry.counter_id = cid
    ent.counter_entry.index.index = 3
    ent.counter_entry.data.packet_count = 42
    c.write_one(U.MODIFY, ent)
    assert c.read([ent])[0].counter_entry.data.packet_count == 42
    wild = p4runtime_pb2.Entity()
    wild.counter_entry.counter_id = cid
    assert len(c.read([wild])) == 64
    assert len(c.read([p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry())])) == 64
    ent.counter_entry.index.index = 64
    with pytest.raises(WriteError) as ei:
        c.write_one(U.MODIFY, ent)
    assert error_codes(ei.value) == [RANGE]
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, ent)
    assert error_codes(ei.value) == [INVALID]
    # registers: write then read back (PI cannot do either)
    reg = p4runtime_pb2.Entity()
    reg.register_entry.register_id = rid
    reg.register_entry.index.index = 2
    reg.register_entry.data.bitstring = b"\xbe\xef"
    c.write_one(U.MODIFY, reg)
    got = c.read([reg])[0].register_entry
    assert got.data.bitstring == b"\xbe\xef"
    allregs = p4runtime_pb2.Entity()
    allregs.register_entry.register_id = rid
    vals = [e.register_entry.data.bitstring for e in c.read([allregs])]
    assert len(vals) == 16 and vals[2] == b"\xbe\xef" and vals[0] == b"\x00"
    reg.register_entry.data.bitstring = b"\x01\x00\x00"  # 17 bits into bit<16>
    with pytest.raises(WriteError) as ei:
        c.write_one(U.MODIFY, reg)
    assert error_codes(ei.value) == [RANGE]
    unknown = p4runtime_pb2.Entity()
    unknown.register_entry.register_id = 0x16FFFFFF
    with pytest.raises(grpc.RpcError) as ri:
        c.read([unknown])
    assert ri.value.code() is grpc.StatusCode.NOT_FOUND
    # meters
    m = p4runtime_pb2.Entity()
    m.meter_entry.meter_id = mid
    m.meter_entry.index.index = 1
    m.meter_entry.config.cir, m.meter_entry.config.cburst = 100, 5
    m.meter_entry.config.pir, m.meter_entry.config.pburst = 200, 10
    c.write_one(U.MODIFY, m)
    got_m = c.read([m])[0].meter_entry
    assert (got_m.config.cir, got_m.config.pir, got_m.config.pburst) == (100, 200, 10)


def test_multicast_and_clone_sessions(rig: Rig, cp_p4info: p4info_pb2.P4Info, cpc: P4RuntimeClient) -> None:
    c = cpc

    mc = multicast_group_entity

    def cs(sid: int, reps: list[tuple[int, int]]) -> p4runtime_pb2.Entity:
        return clone_session_entity(sid, reps, packet_length_bytes=128)

    c.write_one(U.INSERT, mc(1, [(1, 0), (2, 0)]))
    new_style = mc(2, [])
    new_style.packet_replication_engine_entry.multicast_group_entry.replicas.add(
        port=b"\x03", instance=1)
    c.write_one(U.INSERT, new_style)
    c.write_one(U.INSERT, cs(5, [(4, 0)]))
    assert rig.device.control().pre.replicate(1)[1].egress_port == 2  # type: ignore[union-attr]
    got = c.read([mc(0, [])])
    assert sorted(e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id
                  for e in got) == [1, 2]
    s = c.read([cs(5, [])])[0].packet_replication_engine_entry.clone_session_entry
    assert s.packet_length_bytes == 128 and s.replicas[0].egress_port == 4
    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.INSERT, entity=mc(1, [(1, 0)])),
                 U(type=U.MODIFY, entity=mc(9, [(1, 0)])),
                 U(type=U.INSERT, entity=mc(3, [(1, 0), (1, 0)])),
                 U(type=U.INSERT, entity=mc(0, [(1, 0)])),
                 U(type=U.DELETE, entity=cs(6, []))])
    assert error_codes(ei.value) == [EXISTS, NOT_FOUND, EXISTS, INVALID, NOT_FOUND]
    c.write_one(U.MODIFY, mc(1, [(5, 0)]))
    got1 = c.read([mc(1, [])])[0].packet_replication_engine_entry.multicast_group_entry
    assert [r.egress_port for r in got1.replicas] == [5]
    c.write_one(U.DELETE, mc(1, []))
    with pytest.raises(grpc.RpcError) as ri:
        c.read([mc(1, [])])
    assert ri.value.code() is grpc.StatusCode.NOT_FOUND


# ---------------------------------------------------------------- packet I/O


def test_packet_out_and_packet_in(rig: Rig, ecmp_p4info: p4info_pb2.P4Info,
                                  ecmp_cfg: bytes) -> None:
    c = rig.client()
    c.set_pipeline(ecmp_p4info, ecmp_cfg)
    frame = bytes(range(64))
    c.packet_out(frame, egress_port=2)
    wait_for(lambda: rig.clock.run_until_idle() is not None and rig.outputs, what="output")
    assert rig.outputs == [(2, frame)]
    # a route to the CPU: the frame comes back as PacketIn with its ingress port
    prof = "MyIngress.ecmp_selector"
    c.insert_member(prof, 1, "MyIngress.send_to_cpu")
    c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000001, 32)}, member_id=1)
    from emu.p4.v1model.hashes import csum16

    ip = bytearray.fromhex("45000014000100004011") + b"\x00\x00" + bytes([10, 0, 0, 9,
                                                                         10, 0, 0, 1])
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")  # valid: the program recomputes it
    pkt = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + bytes(ip)
    rig.device.call(lambda: rig.device.inject(3, pkt))
    rig.clock.run_until_idle()
    got = c.packet_in(timeout=3)
    assert got is not None
    assert got.payload == pkt
    assert c.packet_in_metadata(got) == {"ingress_port": 3, "_pad": 0}
    # a backup's PacketOut is refused on its stream
    b = rig.client((0, 0))
    assert not b.is_primary
    b.packet_out(frame, egress_port=2)
    err = b.stream_errors.get(timeout=3)
    assert err.canonical_code == PERM
    # bad metadata: too wide for bit<9>
    req = p4runtime_pb2.StreamMessageRequest()
    req.packet.payload = frame
    req.packet.metadata.add(metadata_id=1, value=b"\x02\x00")
    c._out.put(req)
    err = c.stream_errors.get(timeout=3)
    assert err.canonical_code == RANGE


# ---------------------------------------------------------------- robustness


def _check_fuzz_error(e: grpc.RpcError) -> None:
    # bytes that are not the message are INTERNAL, as gRPC itself answers them (the
    # server's emu.runtime.malformed says so); any other INTERNAL would be a server bug,
    # UNAVAILABLE a dead server.
    code = e.code()  # type: ignore[attr-defined]
    assert code is not grpc.StatusCode.UNAVAILABLE, e
    if code is grpc.StatusCode.INTERNAL:
        assert ": the request is not a valid p4.v1." in (e.details() or ""), e  # type: ignore[attr-defined]


def test_malformed_protobufs_do_not_hurt(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    import random

    c = cp_client(rig, cp_p4info)
    rnd = random.Random(1234)
    ch = grpc.insecure_channel(rig.address)
    try:
        methods = ["Write", "Read", "SetForwardingPipelineConfig",
                   "GetForwardingPipelineConfig", "Capabilities"]
        good = p4runtime_pb2.WriteRequest(device_id=DEVICE_ID)
        good.election_id.low = 1
        good.updates.add(type=U.INSERT).entity.CopyFrom(
            c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop"))
        seed = good.SerializeToString()
        for i in range(300):
            m = methods[i % len(methods)]
            if i % 3 == 0:
                data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 200)))
            else:  # mutate a valid message: flip bytes, truncate
                b = bytearray(seed)
                for _ in range(rnd.randint(1, 6)):
                    b[rnd.randrange(len(b))] = rnd.getrandbits(8)
                data = bytes(b[:rnd.randint(0, len(b))])
            path = f"/p4.v1.P4Runtime/{m}"
            if m == "Read":
                call = ch.unary_stream(path, request_serializer=None,
                                       response_deserializer=None)
                try:
                    list(call(data, timeout=5))
                except grpc.RpcError as e:
                    _check_fuzz_error(e)
            else:
                ucall = ch.unary_unary(path, request_serializer=None,
                                       response_deserializer=None)
                try:
                    ucall(data, timeout=5)
                except grpc.RpcError as e:
                    _check_fuzz_error(e)
    finally:
        ch.close()
    stub = p4runtime_pb2_grpc.P4RuntimeStub(c.channel)
    assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
    assert c.get_pipeline().p4info == cp_p4info


def test_p4info_files_are_current() -> None:
    """The checked-in P4Info files match what our generator makes of the programs."""
    from emu.p4.frontend import P4Error

    from .conftest import CP_BAD_P4, CP_V2_P4, generated_p4info, p4info_of

    for prog in (CP_P4, CP_V2_P4, CP_BAD_P4, ECMP_P4):
        try:
            fresh = generated_p4info(prog)
        except P4Error as exc:  # the front end is shared and may be mid-change
            pytest.skip(f"front end cannot load {prog.name} right now: {exc}")
        assert fresh == p4info_of(prog), f"regenerate {prog.name}'s .p4info.txtpb"


def test_compiled_program_forwards_and_sends_digests(rig: Rig,
                                                     cp_p4info: p4info_pb2.P4Info) -> None:
    """cp.p4 compiled: entries written over P4Runtime steer packets; digests stream."""
    c = cp_client(rig, cp_p4info, _compiled_config(CP_P4))
    dst = 0x0A0B0C0D0E0F
    c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": dst}, "MyIngress.forward",
                   {"port": 6})
    digest = p4runtime_pb2.Entity()
    digest.digest_entry.digest_id = next(d.preamble.id for d in cp_p4info.digests)
    c.write_one(U.INSERT, digest)  # digests stream once configured (0 timeout: at once)
    frame = dst.to_bytes(6, "big") + bytes.fromhex("020000000009") + b"\x88\xb5" + bytes(50)
    rig.device.call(lambda: rig.device.inject(2, frame))
    rig.clock.run_until_idle()
    assert rig.outputs == [(6, frame)]
    q = c.table_entry("MyIngress.fwd")
    q.table_entry.counter_data.SetInParent()
    te = c.read([q])[0].table_entry
    assert te.counter_data.packet_count == 1 and te.counter_data.byte_count == len(frame)
    reg = p4runtime_pb2.Entity()
    reg.register_entry.register_id = next(x.preamble.id for x in cp_p4info.registers)
    reg.register_entry.index.index = 0
    assert c.read([reg])[0].register_entry.data.bitstring == b"\x01"
    dl = c.digests.get(timeout=3)
    assert dl.digest_id == next(d.preamble.id for d in cp_p4info.digests)
    members = [m.bitstring for m in dl.data[0].struct.members]
    assert members == [b"\x02\x00\x00\x00\x00\x09", b"\x02"]


def test_one_shot_action_sets(rig: Rig, ecmp_p4info: p4info_pb2.P4Info, ecmp_cfg: bytes) -> None:
    """One-shot ECMP: hidden members + group; read back as written; freed with the entry."""
    c = rig.client()
    c.set_pipeline(ecmp_p4info, ecmp_cfg)
    nhop = next(a.preamble.id for a in ecmp_p4info.actions
                if a.preamble.name == "MyIngress.set_nhop")

    def entry(macs: list[int], weights: list[int]) -> p4runtime_pb2.Entity:
        ent = c.table_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000200, 24)})
        aset = ent.table_entry.action.action_profile_action_set
        for mac, w in zip(macs, weights, strict=True):
            a = aset.action_profile_actions.add(weight=w)
            a.action.action_id = nhop
            a.action.params.add(param_id=1, value=encode_uint(mac))
            a.action.params.add(param_id=2, value=b"\x02")
        return ent

    c.write_one(U.INSERT, entry([0x020000000002, 0x020000000012], [1, 3]))
    got = c.read([c.table_entry("MyIngress.ipv4_lpm")])[0].table_entry
    acts = got.action.action_profile_action_set.action_profile_actions
    assert [a.weight for a in acts] == [1, 3]
    assert [a.action.params[0].value[-1] for a in acts] == [0x02, 0x12]
    # hidden from member/group reads
    assert c.read([p4runtime_pb2.Entity(
        action_profile_member=p4runtime_pb2.ActionProfileMember())]) == []
    assert c.read([p4runtime_pb2.Entity(
        action_profile_group=p4runtime_pb2.ActionProfileGroup())]) == []
    # forwarding uses both next hops
    from emu.p4.v1model.hashes import csum16

    for sport in range(40):
        ip = bytearray.fromhex("45000020000100004011") + b"\x00\x00" + bytes(
            [10, 0, 1, 1, 10, 0, 2, 2])
        ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
        frame = (b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + bytes(ip)
                 + sport.to_bytes(2, "big") + b"\x12\xb7\x00\x0c\x00\x00" + bytes(4))
        rig.device.call(lambda f=frame: rig.device.inject(1, f))
    rig.clock.run_until_idle()
    assert {f[:6].hex() for _, f in rig.outputs} == {"020000000002", "020000000012"}
    prof = rig.device.control().action_profiles["MyIngress.ecmp_selector"]  # type: ignore[union-attr]
    assert len(list(prof.members())) == 2 and len(list(prof.groups())) == 1
    # MODIFY to a single next hop frees the old hidden objects
    c.write_one(U.MODIFY, entry([0x020000000022], [1]))
    assert len(list(prof.members())) == 1 and len(list(prof.groups())) == 1
    # a bad action in the set leaves nothing behind
    bad = entry([1 << 48], [1])
    with pytest.raises(WriteError) as ei:
        c.write_one(U.MODIFY, bad)
    assert error_codes(ei.value) == [RANGE]
    assert len(list(prof.members())) == 1
    c.write_one(U.DELETE, c.table_entry("MyIngress.ipv4_lpm",
                                        {"hdr.ipv4.dstAddr": (0x0A000200, 24)}))
    assert list(prof.members()) == [] and list(prof.groups()) == []


def test_idle_timeout_notifications(rig: Rig, cp_p4info: p4info_pb2.P4Info,
                                    cpc: P4RuntimeClient) -> None:
    import queue

    c = cpc
    idle = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    idle.table_entry.idle_timeout_ns = 1_000_000
    c.write_one(U.INSERT, idle)
    c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 2}, "MyIngress.drop")
    # a table without idle-timeout support refuses the field
    acl = c.table_entry("MyIngress.acl", {"hdr.ethernet.srcAddr": 1}, "MyIngress.drop",
                        priority=1)
    acl.table_entry.idle_timeout_ns = 1_000_000
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, acl)
    assert error_codes(ei.value) == [INVALID]
    assert c.idle_timeouts.empty()
    rig.clock.advance(2_000_000)
    note = c.idle_timeouts.get(timeout=3)
    assert len(note.table_entry) == 1
    te = note.table_entry[0]
    assert te.match[0].exact.value == b"\x01" and te.idle_timeout_ns == 1_000_000
    with pytest.raises(queue.Empty):  # once per idle period
        c.idle_timeouts.get(timeout=0.5)
    q = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1})
    q.table_entry.time_since_last_hit.SetInParent()
    got = c.read([q])[0].table_entry
    assert got.time_since_last_hit.elapsed_ns >= 2_000_000
