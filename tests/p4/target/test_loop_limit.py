"""A loop that does not end (a parser state loop, a `for` loop) must not hang the
switch: the parser stops with error.ParserTimeout, a control drops the packet as a
pipeline error, and loops that end, however long, run to their end."""

from __future__ import annotations

import logging

import pytest

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

from ..programs import v1model_program

# `loop` adds 1 - b to hdr.h.a until it wraps to 0: with b = 0 every value ends (255
# rounds at most); with b = 1 `a` never changes, so a nonzero `a` never ends.
PARSER_LOOP = v1model_program(
    """    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.ParserTimeout) { hdr.h.b = 0xEE; }
        else if (sm.parser_error == error.NoError) { hdr.h.b = 0x00; }
        else { hdr.h.b = 0xFF; }
    }""",
    parse="pk.extract(hdr.h); transition loop; } state loop { "
          "hdr.h.a = hdr.h.a + 1 - hdr.h.b; "
          "transition select(hdr.h.a) { 0: accept; default: loop; } } state unused {")


def _run(sw: P4Switch, data: bytes) -> list[bytes]:
    sw.inject(0, data)
    sw.run_until_idle()
    return [o.data for o in sw.outputs(clear=True)]


def test_a_parser_loop_that_does_not_end_is_a_parser_timeout() -> None:
    sw = P4Switch(compile_source(PARSER_LOOP, "ploop.p4"))
    assert _run(sw, bytes([0, 0])) == [bytes([0, 0])]  # accepted at once
    assert _run(sw, bytes([1, 0])) == [bytes([0, 0])]  # 255 rounds, then wraps to 0
    assert _run(sw, bytes([1, 1])) == [bytes([1, 0xEE])]  # never ends: ParserTimeout
    assert _run(sw, bytes([7, 0])) == [bytes([0, 0])]  # the next packet is parsed as before


FOR_LOOP = v1model_program("""
    apply {
        sm.egress_spec = 1;
        bit<16> n = 0;
        for (bit<8> i = 1; i <= hdr.h.a; i = i + 1) {
            for (bit<8> j = 0; j < 255; j = j + 1) { n = n + 1; }
            if (i == 255) { break; }
        }
        hdr.h.b = n[15:8];
    }""")


def test_a_for_loop_that_does_not_end_drops_the_packet_and_the_switch_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    sw = P4Switch(compile_source(FOR_LOOP, "floop.p4"))
    # 255 x 255 iterations end (65,280 in the inner loop, 65,535 in all): all run
    assert _run(sw, bytes([255, 0])) == [bytes([255, (255 * 255) >> 8])]
    loop = FOR_LOOP.replace("if (i == 255) { break; }", "")  # i <= 255 is always true
    sw = P4Switch(compile_source(loop, "floop.p4"))
    with caplog.at_level(logging.ERROR):
        assert _run(sw, bytes([255, 0])) == []
        assert _run(sw, bytes([3, 0])) == [bytes([3, (3 * 255) >> 8])]
    assert sw.drops.get(0, "pipeline_error") == 1
    (msg,) = [r.getMessage() for r in caplog.records if "pipeline error" in r.getMessage()]
    assert "LoopLimit" in msg and "loop iterations" in msg and "floop.p4:" in msg
