"""Byte-string encodings, controller headers and the admin protocol's line handling."""

from __future__ import annotations

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.runtime.errors import P4RTError
from emu.runtime.stream import pack_header as _pack_header
from emu.runtime.translate import decode_uint, encode_uint


@given(st.integers(min_value=1, max_value=128).flatmap(
    lambda w: st.tuples(st.just(w), st.integers(min_value=0, max_value=(1 << w) - 1))),
    st.integers(min_value=0, max_value=4))
def test_uint_round_trip_and_leading_zeros(wv: tuple[int, int], pad: int) -> None:
    width, value = wv
    enc = encode_uint(value)
    # canonical: the shortest string, one byte for zero
    assert len(enc) == max(1, (value.bit_length() + 7) // 8)
    assert decode_uint(enc, width, "x") == value
    assert decode_uint(b"\x00" * pad + enc, width, "x") == value  # non-canonical accepted


@given(st.integers(min_value=1, max_value=64), st.integers(min_value=1, max_value=1 << 70))
def test_too_wide_is_out_of_range(width: int, extra: int) -> None:
    value = (1 << width) - 1 + extra
    with pytest.raises(P4RTError) as ei:
        decode_uint(encode_uint(value), width, "x")
    assert ei.value.code is grpc.StatusCode.OUT_OF_RANGE


def test_empty_bytes_are_out_of_range() -> None:
    # P4Runtime spec, Bytestrings: an empty string is always rejected, with OUT_OF_RANGE.
    with pytest.raises(P4RTError) as ei:
        decode_uint(b"", 8, "x")
    assert ei.value.code is grpc.StatusCode.OUT_OF_RANGE


@given(st.integers(min_value=0, max_value=511), st.integers(min_value=0, max_value=127))
def test_packet_out_header_packing(port: int, pad: int) -> None:
    info = p4info_pb2.ControllerPacketMetadata()
    info.metadata.add(id=1, name="egress_port", bitwidth=9)
    info.metadata.add(id=2, name="_pad", bitwidth=7)
    md = [p4runtime_pb2.PacketMetadata(metadata_id=1, value=encode_uint(port)),
          p4runtime_pb2.PacketMetadata(metadata_id=2, value=encode_uint(pad))]
    hdr = _pack_header(info, md)
    assert len(hdr) == 2
    assert int.from_bytes(hdr, "big") == (port << 7) | pad


def test_packet_out_header_pads_to_bytes_and_rejects_unknown_ids() -> None:
    info = p4info_pb2.ControllerPacketMetadata()
    info.metadata.add(id=1, name="egress_port", bitwidth=9)
    hdr = _pack_header(info, [p4runtime_pb2.PacketMetadata(metadata_id=1, value=b"\x01\xff")])
    assert hdr == bytes([0xFF, 0x80])
    with pytest.raises(P4RTError):
        _pack_header(info, [p4runtime_pb2.PacketMetadata(metadata_id=9, value=b"\x01")])


def test_admin_line_protocol_errors_are_replies() -> None:
    import json
    import os
    import uuid

    from emu.core.clock import RealClock
    from emu.runtime.admin import AdminServer

    clock = RealClock()
    path = f"/tmp/emu-admin-{uuid.uuid4().hex[:8]}.sock"
    srv = AdminServer(path, clock, {"echo": lambda req: req.get("x"),
                                    "boom": lambda req: 1 // 0})
    try:
        def ask(line: bytes) -> dict[str, object]:
            return json.loads(srv.handle_line(line))  # type: ignore[no-any-return]

        assert ask(b'{"id": 1, "cmd": "echo", "x": 5}') == {"id": 1, "ok": True, "result": 5}
        bad = ask(b"{not json")
        assert bad["ok"] is False and "JSONDecodeError" in str(bad["error"])
        unknown = ask(b'{"id": 2, "cmd": "nope"}')
        assert unknown == {"id": 2, "ok": False, "error": unknown["error"]}
        assert "known" in str(unknown["error"])
        assert ask(b'{"id": 3, "cmd": "boom"}')["ok"] is False
        assert ask(b"[1, 2]")["ok"] is False
    finally:
        srv.close()
        clock.close()
    assert not os.path.exists(path)
