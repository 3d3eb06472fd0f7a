"""Meters, direct meters, parser value sets and clone field lists through the whole
pipeline (the STF programs meters / value_sets / clone_fields cover the STF side)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.core.clock import VirtualClock
from emu.p4.api import P4Switch
from emu.p4.tables import Exact
from emu.p4.target.program import CompiledProgram, compile_file, compile_source
from emu.p4.v1model.stateful import GREEN, RED, YELLOW, MeterRates

from ..programs import v1model_program

PROGRAMS = Path(__file__).resolve().parents[1] / "stf_programs"
US = 1_000


@pytest.fixture(scope="module")
def meters() -> CompiledProgram:
    return compile_file(str(PROGRAMS / "meters.p4"))


def _color(sw: P4Switch, frame: bytes) -> int:
    sw.inject(0, frame)
    sw.run_until_idle()
    return sw.outputs(clear=True)[-1].data[2]


def test_packet_meter_refills_with_time(meters: CompiledProgram) -> None:
    """trTCM token buckets refill at CIR / PIR from the switch's clock (RFC 2698)."""
    clock = VirtualClock()
    sw = P4Switch(meters, clock)
    # CIR 1 packet/ms, CBS 1; PIR 2 packets/ms, PBS 1 (BMv2 CLI units: per microsecond).
    sw.meter_set_rates("by_packets", 3, [(0.001, 1), (0.002, 1)])
    pkt = bytes([1, 3, 0xFF])
    assert _color(sw, pkt) == GREEN  # both buckets start full
    assert _color(sw, pkt) == RED    # PIR empty
    clock.advance(500 * US)          # PIR earns 1 token, CIR half of one (not yet usable)
    assert _color(sw, pkt) == YELLOW
    clock.advance(500 * US)          # t = 1 ms: one more token in each
    assert _color(sw, pkt) == GREEN
    clock.advance(200 * US)          # PIR has 0.4 of a token
    assert _color(sw, pkt) == RED
    # Other cells are independent and unconfigured.
    assert _color(sw, bytes([1, 0, 0xFF])) == GREEN


def test_byte_meter_charges_the_frame_length(meters: CompiledProgram) -> None:
    clock = VirtualClock()
    sw = P4Switch(meters, clock)
    # 1000 bytes/ms both rates, bursts of 100 (CIR) and 300 (PIR) bytes.
    sw.meter_set_rates("by_bytes", 1, [(1.0, 100), (1.0, 300)])
    big = bytes([2, 1, 0xFF]) + bytes(97)  # 100 bytes
    assert [_color(sw, big) for _ in range(4)] == [GREEN, YELLOW, YELLOW, RED]
    clock.advance(100 * US)  # +100 tokens in each bucket
    assert _color(sw, big) == GREEN


def test_direct_meter_configured_like_p4runtime(meters: CompiledProgram) -> None:
    """P4Runtime's DirectMeterEntry sets the entry's config (rates per second); the color
    reaches metadata through direct_meter.read in the table's action."""
    clock = VirtualClock()
    sw = P4Switch(meters, clock)
    e = sw.table_add("flows", [Exact(7)], "metered")
    e.meter_config = MeterRates.per_second(1000, 1, 1000, 2)
    pkt = bytes([3, 7, 0xFF])
    assert [_color(sw, pkt) for _ in range(3)] == [GREEN, YELLOW, RED]
    clock.advance(2000 * US)  # 2 tokens each, capped at the bursts
    assert [_color(sw, pkt) for _ in range(2)] == [GREEN, YELLOW]
    assert _color(sw, bytes([3, 8, 0xFF])) == 0x77  # miss: read() target untouched


_DIRECT_READS = v1model_program("""
    direct_meter<bit<8>>(MeterType.packets) dm;
    action first() { m.c = 9; hdr.h.b = m.c; dm.read(m.c); }
    action second() { dm.read(%s); }
    table t { key = { hdr.h.a: exact; } actions = { first; second; } meters = dm; }
    apply { sm.egress_spec = 1; m.c = 0x77; t.apply(); hdr.h.c = m.c; }""",
    headers="header h_t { bit<8> a; bit<8> b; bit<8> c; }", meta="bit<8> c;")


@pytest.mark.parametrize("second, out", [
    # One destination: BMv2 writes the color there on every hit, before the action, and
    # read() itself does nothing (p4c-bm2-ss's result target): `first` leaves c = 9.
    ("m.c", [bytes([1, 9, 9]), bytes([2, 0, 0])]),
    # Two destinations (p4c-bm2-ss refuses them): each read writes where it stands.
    ("hdr.h.b", [bytes([1, 9, 0]), bytes([2, 0, 0x77])]),
])
def test_direct_meter_read_writes_where_bmv2_writes(second: str, out: list[bytes]) -> None:
    sw = P4Switch(compile_source(_DIRECT_READS % second, "dm.p4"))
    sw.table_add("t", [Exact(1)], "first")
    sw.table_add("t", [Exact(2)], "second")
    for a in (1, 2):
        sw.inject(0, bytes([a, 0, 0]))
    sw.inject(0, bytes([3, 0, 0]))  # a miss writes nothing
    sw.run_until_idle()
    assert [o.data for o in sw.outputs()] == [*out, bytes([3, 0, 0x77])]


def test_value_set_through_the_api() -> None:
    sw = P4Switch(compile_file(str(PROGRAMS / "value_sets.p4")), VirtualClock())
    frame = bytes.fromhex("99990A0B00")
    sw.inject(0, frame)
    sw.value_set_add("etypes", [0x9999])
    sw.inject(0, frame)
    sw.value_set_add("P.pairs", [0x0A, 0x0B])
    sw.inject(0, frame)
    sw.run_until_idle()
    assert [p.data[-1] for p in sw.outputs()] == [0, 1, 2]
    with pytest.raises(ValueError, match="full"):
        for v in range(10):
            sw.value_set_add("etypes", [v])


_PARSER_META = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> listed; bit<8> unlisted; bit<8> port; }
struct headers { h_t h; }
struct metadata { @field_list(1) bit<8> listed; bit<8> unlisted; }
parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        meta.listed = 0xA1;    // the parser writes both fields, for every parse
        meta.unlisted = 0xA2;
        transition accept;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        meta.listed = 0xB1;
        sm.egress_spec = 1;
        clone_preserving_field_list(CloneType.I2E, 5, 1);
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.listed = meta.listed;
        hdr.h.unlisted = meta.unlisted;
        hdr.h.port = (bit<8>)sm.ingress_port;
    }
}
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_i2e_clone_metadata_is_reset_after_the_reparse() -> None:
    """BMv2 simple_switch (ingress cloning): parse the copy, then copy_field_list_and_set_type
    resets every metadata field, standard_metadata included, and copies the field list. So
    the clone sees the original's end-of-ingress value of a listed field even if its own
    parse wrote it, 0 for an unlisted one, and ingress_port 0."""
    sw = P4Switch(compile_source(_PARSER_META), VirtualClock())
    sw.mirroring_add(5, 8)
    sw.inject(3, bytes(3))
    sw.run_until_idle()
    by_port = {p.port: p.data for p in sw.outputs()}
    assert by_port[1] == bytes([0xB1, 0xA2, 3])
    assert by_port[8] == bytes([0xB1, 0x00, 0])


_UNION_STACK_SET_INVALID = """
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
struct headers { u_t[2] us; }
struct metadata { }
parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.us.next.a); pk.extract(hdr.us.next.b); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { hdr.us[0].a.setInvalid(); sm.egress_spec = 1; }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { hdr.us[1].b.y = (bit<16>)sm.packet_length; }
}
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_union_stack_header_removed_in_ingress() -> None:
    """setInvalid on a union member makes the header length dynamic: egress sees the
    packet_length less that header's byte (4 received bytes, 3 after the removal)."""
    sw = P4Switch(compile_source(_UNION_STACK_SET_INVALID), VirtualClock())
    sw.inject(0, bytes([0x11, 0x22, 0x22, 0xEE]))
    sw.run_until_idle()
    assert [p.data for p in sw.outputs()] == [bytes([0x00, 0x03, 0xEE])]


def test_log_msg_keeps_utf8_text_and_decodes_escapes(caplog: pytest.LogCaptureFixture) -> None:
    """The format string as BMv2 prints it: escapes decoded, other characters whole
    (they were read as Latin-1 bytes once: 'é' came out as 'Ã©')."""
    import logging

    from ..programs import v1model_program

    sw = P4Switch(compile_source(v1model_program(
        'apply { log_msg("caf\u00e9 \u25d5\u203f\u25d5\\t{}", {hdr.h.a}); sm.egress_spec = 1; }'),
        "log.p4"))
    with caplog.at_level(logging.INFO, logger="emu.p4.log_msg"):
        sw.inject(0, bytes([7, 0]))
        sw.run_until_idle()
    assert [r.getMessage() for r in caplog.records if r.name == "emu.p4.log_msg"] == \
        ["caf\u00e9 \u25d5\u203f\u25d5\t7"]
