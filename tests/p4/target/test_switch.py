"""The v1model switch through the Python API: queueing, counters, registers, errors,
compile artefacts, and robustness against malformed packets."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emu.core.clock import VirtualClock
from emu.p4.api import P4Switch
from emu.p4.frontend import P4Error
from emu.p4.tables import Exact, Lpm
from emu.p4.target.program import CompiledProgram, compile_file, compile_source
from emu.p4.v1model.hashes import csum16

from ..programs import v1model_program

PROGRAMS = Path(__file__).resolve().parents[1] / "stf_programs"


def udp_frame(src: int, dst: int, sport: int = 1000, dport: int = 4791, ecn: int = 1,
              size: int = 200) -> bytes:
    payload = bytes(size - 42)
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, ecn, 28 + len(payload), 1, 0, 64, 17, 0,
                               src, dst))
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    return bytes.fromhex("020000000001020000000002") + b"\x08\x00" + bytes(ip) + udp + payload


@pytest.fixture(scope="module")
def ecmp_program() -> CompiledProgram:
    return compile_file(str(PROGRAMS / "ecmp_ecn.p4"))


def ecmp_switch(program: CompiledProgram) -> P4Switch:
    sw = P4Switch(program, VirtualClock())
    sw.table_add("ipv4_lpm", [Lpm(0x0A800000, 9)], "set_ecmp", [0, 1])
    sw.table_add("MyIngress.ecmp_nhop", [Exact(0)], "MyIngress.set_nhop", [0x0200000000A0, 3])
    return sw


def test_rate_limited_port_queues_and_marks_ecn(ecmp_program: CompiledProgram) -> None:
    """With a rate limit, enq_qdepth grows from real enqueues: ECN marks appear past the
    threshold (10 packets) and the 64-packet queue tail-drops the rest."""
    sw = ecmp_switch(ecmp_program)
    sw.set_queue_rate(3, rate_pps=1000)
    for i in range(100):
        sw.inject(0, udp_frame(0x0A000001, 0x0A800001, sport=i))
    sw.run_until_idle()
    out = sw.outputs()
    assert len(out) == 64
    ecn = [p.data[15] & 3 for p in out]
    assert ecn[:10] == [1] * 10          # enq_qdepth 0..9: below the threshold
    assert ecn[10:] == [3] * 54          # CE marked
    assert sw.drops.get(3, "tail_drop") == 36
    # Serialisation at 1000 pps: the last packet leaves 63 ms after the first.
    assert out[-1].time_ns - out[0].time_ns == 63_000_000


def test_unlimited_port_never_queues(ecmp_program: CompiledProgram) -> None:
    sw = ecmp_switch(ecmp_program)
    for i in range(20):
        sw.inject(0, udp_frame(0x0A000001, 0x0A800001, sport=i))
        sw.run_until_idle()
    assert [p.data[15] & 3 for p in sw.outputs()] == [1] * 20


def test_output_is_correct_ipv4(ecmp_program: CompiledProgram) -> None:
    sw = ecmp_switch(ecmp_program)
    sw.inject(0, udp_frame(0x0A000001, 0x0A800001))
    sw.run_until_idle()
    (p,) = sw.outputs()
    assert p.port == 3 and p.instance_type == 0
    ip = p.data[14:34]
    assert ip[8] == 63 and csum16(ip) == 0  # ttl decremented, checksum valid
    assert p.data[:6] == bytes.fromhex("0200000000A0")


def test_tables_registers_counters_by_name() -> None:
    sw = P4Switch.from_file(str(PROGRAMS / "tables.p4"))
    assert "I.lpm" in sw.tables and "I.by_tag" in sw.tables
    e = sw.table_add("lpm", [Lpm(0x0A000000, 8)], "route", [1, 1])
    frame = bytes.fromhex("0A010203 0001 00 00 00 00 0000 00000000 0000".replace(" ", ""))
    for _ in range(3):
        sw.inject(0, frame)
    sw.run_until_idle()
    assert [p.data[9] for p in sw.outputs()] == [1, 2, 3]      # register across packets
    assert sw.register_read("seen", 0) == 3
    sw.register_write("I.seen", 0, 10)
    assert e.counter.packets == 3 and e.counter.bytes == 3 * len(frame)  # direct counter
    assert sw.counter_read("lpm_hits", e.handle) == (3, 3 * len(frame))
    sw.inject(0, frame)
    sw.run_until_idle()
    assert sw.outputs()[-1].data[9] == 11


def test_compiled_program_round_trip(ecmp_program: CompiledProgram) -> None:
    again = CompiledProgram.from_bytes(ecmp_program.to_bytes())
    assert again.source == ecmp_program.source
    assert [t["name"] for t in again.tables] == ["MyIngress.ipv4_lpm", "MyIngress.ecmp_nhop"]
    assert again.actions["MyIngress.set_nhop"] == [["dmac", 48], ["port", 9]]
    sw = ecmp_switch(again)
    sw.inject(0, udp_frame(0x0A000001, 0x0A800001))
    sw.run_until_idle()
    assert len(sw.outputs()) == 1
    with pytest.raises(ValueError):
        CompiledProgram.from_bytes(b'{"format": "other"}')


def test_unsupported_construct_names_position() -> None:
    src = v1model_program("""
    Checksum16() ck;
    apply { hdr.h.a = (bit<8>)ck.get({hdr.h.a}); }
""")
    with pytest.raises(P4Error) as ei:
        compile_source(src, "unsupported.p4")
    assert "unsupported.p4:12:" in str(ei.value)


@pytest.fixture(scope="module")
def parser_program() -> CompiledProgram:
    return compile_file(str(PROGRAMS / "parser_paths.p4"))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_random_bytes_never_crash(parser_program: CompiledProgram, data: bytes) -> None:
    """Malformed or truncated packets never raise; a parser error keeps the packet (unless
    the first header itself is cut short, in which case everything is payload)."""
    sw = P4Switch(parser_program, VirtualClock())
    sw.inject(0, data)
    sw.run_until_idle()
    out = sw.outputs()
    assert len(out) == 1
    if len(data) < 2:
        assert out[0].data == data


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes_through_ipv4_program(ecmp_program: CompiledProgram, data: bytes) -> None:
    sw = ecmp_switch(ecmp_program)
    sw.inject(0, data)
    sw.run_until_idle()
    for p in sw.outputs():
        assert p.port == 3


def test_assert_failure_drops_packet() -> None:
    src = v1model_program("    apply { sm.egress_spec = 1; assert(hdr.h.a != 0); }")
    sw = P4Switch(compile_source(src, "assert.p4"))
    sw.inject(0, b"\x01\x07")
    sw.inject(0, b"\x00\x07")
    sw.run_until_idle()
    assert [p.data for p in sw.outputs()] == [b"\x01\x07"]
    assert sw.sw.assert_failures == 1


def test_digest_and_timestamps() -> None:
    src = v1model_program("""
    apply {
        sm.egress_spec = 2;
        digest<learn_t>(1, { hdr.h.a, sm.ingress_port });
        hdr.h.ts = sm.ingress_global_timestamp;
    }""", headers="header h_t { bit<8> a; bit<48> ts; }",
                          decls="struct learn_t { bit<8> a; bit<9> port; }")
    clock = VirtualClock()
    sw = P4Switch(compile_source(src, "digest.p4"), clock)
    clock.advance(5_000_000)  # 5 ms
    sw.inject(7, bytes(7))
    sw.run_until_idle()
    (d,) = sw.digests
    assert d.name == "learn_t" and d.receiver == 1 and d.values == (0, 7)
    assert int.from_bytes(sw.outputs()[0].data[1:7], "big") == 5000  # microseconds


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**16 - 1), st.integers(2, 255),
       st.integers(0, 3), st.integers(0, 2**16 - 1))
def test_inline_checksum_matches_reference(ecmp_program: CompiledProgram, src: int, ident: int,
                                           ttl: int, ecn: int, sport: int) -> None:
    """The generated checksum update (folded field sums) equals RFC 1071 over the bytes."""
    sw = ecmp_switch(ecmp_program)
    frame = bytearray(udp_frame(src, 0x0A800001, sport=sport, ecn=ecn))
    frame[18:20] = ident.to_bytes(2, "big")
    frame[22] = ttl
    sw.inject(0, bytes(frame))
    sw.run_until_idle()
    for p in sw.outputs():
        assert csum16(p.data[14:34]) == 0


SELECTOR = v1model_program("""
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) sel;
    action fwd(bit<9> port) { sm.egress_spec = port; hdr.h.res = (bit<8>)port; }
    table t {
        key = { hdr.h.key: exact; hdr.h.flow: selector; }
        actions = { fwd; NoAction; }
        implementation = sel;
    }
    apply { t.apply(); }""", headers="header h_t { bit<8> key; bit<16> flow; bit<8> res; }")


def test_action_selector_spreads_flows_by_hash() -> None:
    from emu.p4.tables import ActionCall
    from emu.p4.target import runtime

    sw = P4Switch(compile_source(SELECTOR, "selector.p4"))
    prof = sw.sw.action_profiles["I.sel"]
    prof.insert_member(1, ActionCall("I.fwd", (1,)))
    prof.insert_member(2, ActionCall("I.fwd", (2,)))
    prof.insert_group(10, [1, 2])
    sw.table_add_member("I.t", [Exact(7)], group_id=10)
    for flow in range(16):
        sw.inject(0, bytes([7]) + flow.to_bytes(2, "big") + b"\x00")
    sw.run_until_idle()
    got = {int.from_bytes(p.data[1:3], "big"): p.port for p in sw.outputs()}
    assert len(got) == 16
    for flow, port in got.items():
        # BMv2 rule: member (hash of the selector fields) % group size, in member order.
        assert port == 1 + runtime.crc16(flow.to_bytes(2, "big")) % 2
    assert set(got.values()) == {1, 2}


VALIDITY = v1model_program("""
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) sel;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.key: exact; hdr.h.flow: selector; hdr.l4.sport: selector; }
        actions = { fwd; }
        implementation = sel;
    }
    apply {
        t.apply();
        hash(hdr.h.f, HashAlgorithm.crc16, 16w0, {hdr.h.flow, hdr.l4.sport}, 32w65536);
        hash(hdr.h.w, HashAlgorithm.crc16, 16w0, {hdr.h.flow, hdr.l4}, 32w65536);
    }""", headers="header h_t { bit<8> key; bit<16> flow; bit<16> f; bit<16> w; } "
                  "header l4_t { bit<16> sport; }",
    fields="h_t h; l4_t l4;",
    parse="pk.extract(hdr.h); transition select(hdr.h.key) { 1: l4; default: accept; } } "
          "state l4 { pk.extract(hdr.l4);")


def test_invalid_headers_in_hash_lists_as_bmv2_hashes_them() -> None:
    """Found by mutation fuzzing against BMv2: a selector over the fields of an invalid
    header hashed them as zeros, where BMv2 leaves them out (its calculation names them);
    hash() left them out, where BMv2 hashes them (p4c copies each field into a
    temporary first), though a whole invalid header it leaves out."""
    from emu.p4.tables import ActionCall
    from emu.p4.target import runtime

    sw = P4Switch(compile_source(VALIDITY, "validity.p4"))
    prof = sw.sw.action_profiles["I.sel"]
    for port in range(1, 4):
        prof.insert_member(port, ActionCall("I.fwd", (port,)))
    prof.insert_group(10, [1, 2, 3])
    for key in (0, 1):
        sw.table_add_member("I.t", [Exact(key)], group_id=10)
    frames = {(key, flow): bytes([key]) + flow.to_bytes(2, "big") + bytes(4)
              + (b"\x12\x34" if key == 1 else b"")
              for key in (0, 1) for flow in range(0, 65536, 4099)}
    for frame in frames.values():
        sw.inject(0, frame)
    sw.run_until_idle()
    got = {(p.data[0], int.from_bytes(p.data[1:3], "big")): p for p in sw.outputs()}
    assert len(got) == len(frames)
    for (key, flow), out in got.items():
        valid = b"\x12\x34" if key == 1 else b""  # l4 parsed only for key 1
        flow_b = flow.to_bytes(2, "big")
        assert out.port == 1 + runtime.crc16(flow_b + valid) % 3
        assert out.data[3:5] == runtime.crc16(flow_b + (valid or bytes(2))).to_bytes(2, "big")
        assert out.data[5:7] == runtime.crc16(flow_b + valid).to_bytes(2, "big")


def test_packet_in_hook_on_cpu_port() -> None:
    src = SELECTOR.replace("apply { t.apply(); }", "apply { sm.egress_spec = 64; }")
    sw = P4Switch(compile_source(src, "cpu.p4"), cpu_port=64)
    seen: list[bytes] = []
    sw.on_packet_in(seen.append)
    sw.inject(3, b"\x01\x00\x02\x00")
    sw.run_until_idle()
    assert seen == [b"\x01\x00\x02\x00"]


def test_port_outputs_take_their_ports_frames_before_frame_handlers(
        ecmp_program: CompiledProgram) -> None:
    """A port's own output (an in-memory link's send) gets every frame leaving that port,
    on the fast path and the general one (output handlers attached), then the frame
    handlers see it too; other ports' frames do not reach it."""
    sw = P4Switch(ecmp_program, VirtualClock(), capture=False)  # no output handler yet
    sw.table_add("ipv4_lpm", [Lpm(0x0A800000, 9)], "set_ecmp", [0, 1])
    sw.table_add("MyIngress.ecmp_nhop", [Exact(0)], "MyIngress.set_nhop", [0x0200000000A0, 3])
    seen: list[tuple[str, int, bytes]] = []
    sw.sw.port_outputs[3] = lambda f: seen.append(("out3", 3, f))
    sw.sw.port_outputs[4] = lambda f: seen.append(("out4", 4, f))
    sw.sw.frame_handlers.append(lambda p, f: seen.append(("handler", p, f)))
    sw.inject(0, udp_frame(0x0A000001, 0x0A800001, sport=1))
    sw.run_until_idle()
    sw.on_output(lambda pkt: seen.append(("output", pkt.port, pkt.data)))
    sw.inject(0, udp_frame(0x0A000001, 0x0A800001, sport=2))
    sw.run_until_idle()
    assert [(who, port) for who, port, _ in seen] == [
        ("out3", 3), ("handler", 3), ("out3", 3), ("handler", 3), ("output", 3)]
    assert seen[0][2] == seen[1][2] and seen[2][2] == seen[3][2] == seen[4][2]
    assert seen[0][2] != seen[2][2]  # the two packets, each once per consumer
