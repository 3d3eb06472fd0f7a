"""The P4Runtime server against hostile or unusual clients (issue #16): idle streams
that would starve unary RPCs, huge values, huge failing batches, spec error codes
for is_const writes, extern indices and the VERIFY_AND_SAVE / COMMIT sequence."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
import pytest
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emu.runtime.client import P4RuntimeClient, WriteError
from emu.runtime.devconfig import make_null_config
from emu.runtime.errors import STATUS_DETAILS_KEY
from emu.runtime.server import MAX_STREAMS

from .conftest import DEVICE_ID, ECMP_P4, Rig, compiled_config, error_codes, primary, wait_for

U = p4runtime_pb2.Update
SFPC = p4runtime_pb2.SetForwardingPipelineConfigRequest
OK, INVALID, NOT_FOUND, OUT_OF_RANGE = 0, 3, 5, 11




def test_idle_streams_cannot_starve_unary_rpcs(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = primary(rig, cp_p4info)  # its stream is one of the MAX_STREAMS
    release = threading.Event()

    def idle() -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        release.wait(30)  # a client that opens a stream and says nothing
        return
        yield  # pragma: no cover

    ch = grpc.insecure_channel(rig.address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
    calls = [stub.StreamChannel(idle()) for _ in range(MAX_STREAMS - 1)]
    try:
        # gRPC starts the calls in the background: under load the `extra` one below could
        # otherwise reach the server before the last of these and take its slot.
        wait_for(lambda: rig.server._streams >= MAX_STREAMS, what="every stream slot taken")
        # the unary RPCs are served while every stream slot is taken ...
        caps = c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
        assert caps.p4runtime_api_version
        c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
        assert len(c.read([c.table_entry("MyIngress.fwd")])) == 1
        # ... and one stream more is refused, not left hanging
        extra = stub.StreamChannel(idle(), timeout=10)
        with pytest.raises(grpc.RpcError) as ei:
            next(extra)
        assert ei.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert str(MAX_STREAMS) in (ei.value.details() or "")
        assert rig.server.stats["streams_refused"] >= 1
    finally:
        release.set()
        for call in calls:
            call.cancel()
        ch.close()


def test_huge_too_wide_value_is_out_of_range_with_a_short_message(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = primary(rig, cp_p4info)
    ent = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 5}, "MyIngress.forward",
                        {"port": 2})
    ent.table_entry.match[0].exact.value = b"\x01" * (17 << 20)  # 17 MB into bit<48>
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, ent)
    assert ei.value.code is grpc.StatusCode.UNKNOWN  # a batch failure, details attached
    assert error_codes(ei.value) == [OUT_OF_RANGE]
    assert len(ei.value.errors[0][1]) < 300
    # leading zero bytes are legal at any length
    ent.table_entry.match[0].exact.value = bytes(100_000) + b"\x05"
    c.write_one(U.INSERT, ent)
    assert len(c.read([c.table_entry("MyIngress.fwd")])) == 1


def _details(e: grpc.RpcError) -> status_pb2.Status:
    for k, v in e.trailing_metadata() or ():  # type: ignore[attr-defined]
        if k == STATUS_DETAILS_KEY:
            return status_pb2.Status.FromString(v)
    raise AssertionError("no status details")


def test_error_details_of_big_batches_fit_the_default_grpc_limits(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = primary(rig, cp_p4info)

    def missing(n: int) -> list[p4runtime_pb2.Update]:
        return [U(type=U.DELETE, entity=c.table_entry("MyIngress.fwd",
                                                      {"hdr.ethernet.dstAddr": i + 1}))
                for i in range(n)]

    # a few hundred failures: one error per update, codes intact
    with pytest.raises(WriteError) as ei:
        c.write(missing(300))
    assert ei.value.code is grpc.StatusCode.UNKNOWN
    assert error_codes(ei.value) == [NOT_FOUND] * 300
    # thousands: the client still gets UNKNOWN and the first updates' errors, and the
    # status says how many failed (not RESOURCE_EXHAUSTED for too much metadata)
    req = p4runtime_pb2.WriteRequest(device_id=DEVICE_ID)
    req.election_id.low = 1
    req.updates.extend(missing(5000))
    with pytest.raises(grpc.RpcError) as ri:
        c.stub.Write(req, timeout=30)
    assert ri.value.code() is grpc.StatusCode.UNKNOWN
    st = _details(ri.value)
    assert 100 < len(st.details) <= 5000
    err = p4runtime_pb2.Error()
    assert st.details[0].Unpack(err) and err.canonical_code == NOT_FOUND
    assert "5000 of 5000 updates failed" in st.message


def test_is_const_cannot_be_written(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = primary(rig, cp_p4info)
    ent = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 5}, "MyIngress.drop")
    ent.table_entry.is_const = True
    for typ in (U.INSERT, U.MODIFY, U.DELETE):
        with pytest.raises(WriteError) as ei:
            c.write_one(typ, ent)
        assert error_codes(ei.value) == [INVALID], typ
    assert c.read([c.table_entry("MyIngress.fwd")]) == []


def test_extern_index_beyond_the_size_is_out_of_range(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = primary(rig, cp_p4info)
    ents = []
    cnt = p4runtime_pb2.Entity()
    cnt.counter_entry.counter_id = cp_p4info.counters[0].preamble.id
    cnt.counter_entry.data.packet_count = 1
    ents.append((cnt, cnt.counter_entry, cp_p4info.counters[0].size))
    reg = p4runtime_pb2.Entity()
    reg.register_entry.register_id = cp_p4info.registers[0].preamble.id
    reg.register_entry.data.bitstring = b"\x01"
    ents.append((reg, reg.register_entry, cp_p4info.registers[0].size))
    met = p4runtime_pb2.Entity()
    met.meter_entry.meter_id = cp_p4info.meters[0].preamble.id
    ents.append((met, met.meter_entry, cp_p4info.meters[0].size))
    for ent, sub, size in ents:
        sub.index.index = size
        with pytest.raises(WriteError) as ei:
            c.write_one(U.MODIFY, ent)
        assert error_codes(ei.value) == [OUT_OF_RANGE], ent
        with pytest.raises(grpc.RpcError) as ri:
            c.read([ent])
        assert ri.value.code() is grpc.StatusCode.OUT_OF_RANGE
        sub.index.index = -1
        with pytest.raises(WriteError) as ei:
            c.write_one(U.MODIFY, ent)
        assert error_codes(ei.value) == [INVALID], ent


def test_commit_errors_and_writes_between_save_and_commit(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, ecmp_p4info: p4info_pb2.P4Info) -> None:
    c = rig.client()
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(p4info_pb2.P4Info(), b"", action=SFPC.COMMIT)
    assert ei.value.code() is grpc.StatusCode.NOT_FOUND  # nothing saved
    # the running pipeline (ecmp_ecn.p4) forwards with its entries
    c.set_pipeline(ecmp_p4info, compiled_config(ECMP_P4))
    c.insert_member("MyIngress.ecmp_selector", 1, "MyIngress.set_nhop",
                    {"dmac": 0x020000000002, "port": 2})
    c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000200, 24)}, member_id=1)
    from tests.switch.conftest import ipv4_udp

    def forwarded() -> list[int]:
        rig.outputs.clear()
        rig.device.call(lambda: rig.device.inject(1, ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2)))
        rig.device.call(lambda: rig.clock.advance(10_000_000))
        return [p for p, _ in rig.outputs]

    assert forwarded() == [2]
    # save cp.p4, then write its state: the old pipeline keeps forwarding meanwhile
    c.set_pipeline(cp_p4info, make_null_config(), action=SFPC.VERIFY_AND_SAVE, cookie=3)
    c.p4info = cp_p4info
    c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 7}, "MyIngress.drop")
    assert forwarded() == [2]
    assert len(c.read([c.table_entry("MyIngress.fwd")])) == 1
    # a COMMIT carrying a config is malformed (and commits nothing)
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=DEVICE_ID,
                                                           action=SFPC.COMMIT)
    req.election_id.low = 1
    req.config.p4info.CopyFrom(cp_p4info)
    req.config.p4_device_config = make_null_config()
    with pytest.raises(grpc.RpcError) as ei:
        c.stub.SetForwardingPipelineConfig(req, timeout=10)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert forwarded() == [2]
    assert c.get_pipeline().p4info == ecmp_p4info
    # COMMIT: the saved program with the writes made since the save, and only those
    req.ClearField("config")
    c.stub.SetForwardingPipelineConfig(req, timeout=10)
    cfg = c.get_pipeline()
    assert cfg.p4info == cp_p4info and cfg.cookie.cookie == 3
    got = c.read([c.table_entry("MyIngress.fwd")])
    assert [e.table_entry.match[0].exact.value for e in got] == [b"\x07"]
    assert forwarded() == []  # the null pipeline drops everything


@pytest.mark.parametrize("atomicity", [p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
                                       p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                                       p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC])
def test_large_batches_interleave_with_forwarding_unless_dataplane_atomic(
        cp_p4info: p4info_pb2.P4Info, atomicity: int) -> None:
    """The switch loop runs on its own thread, as in the daemon; a probe on that loop
    (standing for packets) samples the table between its turns while a batch is
    written. Chunked batches show intermediate states to it; DATAPLANE_ATOMIC never."""
    import os
    import uuid

    from emu.runtime.atomicity import CHUNK
    from emu.runtime.device import LocalDevice
    from emu.runtime.server import P4RuntimeServer
    from emu.switch.clock import PreciseClock

    info = p4info_pb2.P4Info()
    info.CopyFrom(cp_p4info)
    fwd = next(t for t in info.tables if t.preamble.name == "MyIngress.fwd")
    fwd.size = 4096
    clock = PreciseClock(spin_ns=0)
    device = LocalDevice(DEVICE_ID, clock, cpu_port=255)
    server = P4RuntimeServer(device)
    path = f"/tmp/emu-p4rt-{uuid.uuid4().hex[:8]}.sock"
    server.start(f"unix:{path}")
    seen: set[int] = set()
    stop = threading.Event()

    def probe() -> None:
        cp = device.control()
        if cp is not None:
            seen.add(len(cp.tables["MyIngress.fwd"]))
        if not stop.is_set():
            clock.call_later(20_000, probe)

    def loop() -> None:
        device.loop_thread = threading.get_ident()
        clock.call_soon(probe)
        clock.run()

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    c = P4RuntimeClient(f"unix:{path}", DEVICE_ID, (0, 1))
    try:
        c.set_pipeline(info, make_null_config())
        n = 4 * CHUNK
        ups = [U(type=U.INSERT, entity=c.table_entry(
            "MyIngress.fwd", {"hdr.ethernet.dstAddr": i + 1}, "MyIngress.drop"))
            for i in range(n)]
        c.write(ups, atomicity=atomicity)
        assert len(c.read([c.table_entry("MyIngress.fwd")])) == n
        partial = {k for k in seen if 0 < k < n}
        if atomicity == p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC:
            assert not partial, sorted(partial)
        else:
            assert partial, "no forwarding turn between the chunks of a large batch"
            assert partial <= {CHUNK, 2 * CHUNK, 3 * CHUNK}
        # a failing all-or-none batch leaves nothing behind, whatever the chunks saw
        if atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
            more = [U(type=U.INSERT, entity=c.table_entry(
                "MyIngress.fwd", {"hdr.ethernet.dstAddr": n + i + 1}, "MyIngress.drop"))
                for i in range(2 * CHUNK)] + [ups[0]]  # the last one already exists
            with pytest.raises(WriteError):
                c.write(more, atomicity=atomicity)
            assert len(c.read([c.table_entry("MyIngress.fwd")])) == n
    finally:
        stop.set()
        c.close()
        server.stop(0)
        clock.call_soon_threadsafe(clock.stop)
        th.join(5)
        clock.close()
        if os.path.exists(path):
            os.unlink(path)


def test_bytes_that_are_not_protobuf_are_refused_in_one_line(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, caplog: pytest.LogCaptureFixture) -> None:
    """gRPC logged a traceback for each request that did not parse (a fuzzer, a client
    on the wrong port), as if the switch had crashed. Now: INTERNAL, as gRPC and BMv2
    answer, with what was wrong; one log line; counted; the server serves on."""
    garbage = b"\xff\xff\xff\x0f\x01"
    ch = grpc.insecure_channel(rig.address)
    try:
        for method, kind in [("Write", "WriteRequest"), ("Read", "ReadRequest"),
                             ("SetForwardingPipelineConfig", "SetForwardingPipelineConfigRequest"),
                             ("GetForwardingPipelineConfig", "GetForwardingPipelineConfigRequest"),
                             ("Capabilities", "CapabilitiesRequest"),
                             ("StreamChannel", "StreamMessageRequest")]:
            path = f"/p4.v1.P4Runtime/{method}"
            with pytest.raises(grpc.RpcError) as ei:
                if method == "StreamChannel":
                    list(ch.stream_stream(path)(iter([garbage]), timeout=10))
                elif method == "Read":
                    list(ch.unary_stream(path)(garbage, timeout=10))
                else:
                    ch.unary_unary(path)(garbage, timeout=10)
            assert ei.value.code() is grpc.StatusCode.INTERNAL
            assert ei.value.details() == (f"{method}: the request is not a valid p4.v1.{kind} "
                                          "(Wire format was corrupt)")
    finally:
        ch.close()
    assert rig.server.stats["malformed_requests"] == 6
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert len([r for r in caplog.records if "not a valid" in r.getMessage()]) == 6
    c = primary(rig, cp_p4info)  # served as before
    c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 1}, "MyIngress.drop")
    assert len(c.read([c.table_entry("MyIngress.fwd")])) == 1


def test_a_malformed_message_ends_only_its_own_stream(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    c = primary(rig, cp_p4info)
    arbitration = p4runtime_pb2.StreamMessageRequest()
    arbitration.arbitration.device_id = DEVICE_ID
    arbitration.arbitration.election_id.low = 0  # a backup: no primary change
    ch = grpc.insecure_channel(rig.address)
    try:
        call = ch.stream_stream("/p4.v1.P4Runtime/StreamChannel")(
            iter([arbitration.SerializeToString(), b"\x0a\xff"]), timeout=10)
        with pytest.raises(grpc.RpcError) as ei:
            list(call)
        assert ei.value.code() is grpc.StatusCode.INTERNAL
    finally:
        ch.close()
    c.insert_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 2}, "MyIngress.drop")  # still primary
    assert rig.server.stats["malformed_requests"] == 1
