"""Bad input is counted per reason and dropped; it never raises nor corrupts delivery."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from emu.roce import wire
from tests.roce.helpers import QPN_B, pair, path_ab


def _nic_b():
    clk, a, b, qa, qb, link = pair(rate_bps=None)
    got = []
    qb.responder.on_message = got.append
    return clk, b, qb, got


def test_drop_reasons_are_counted():
    clk, b, qb, got = _nic_b()
    w = wire.QpWire(path_ab())
    good = w.data(wire.OP_SEND_ONLY, 0, b"x" * 100, ackreq=True)
    arp = bytes(12) + b"\x08\x06" + bytes(28)
    ipv6 = bytes(12) + b"\x86\xdd" + bytes(60)
    lldp = bytes(12) + b"\x88\xcc" + bytes(40)
    bad_icrc = good[:-1] + bytes([good[-1] ^ 0xFF])
    other_qp = wire.QpWire(wire.Path(path_ab().src_mac, path_ab().dst_mac, "10.9.0.1",
                                     "10.9.0.2", 1, 0x999)).data(wire.OP_SEND_ONLY, 0, b"")
    tcp = bytearray(good)
    tcp[23] = 6
    not_roce = bytearray(good)
    not_roce[36:38] = struct.pack("!H", 4792)
    truncated = good[:-20]  # IP total length now exceeds the frame
    bad_ver = bytearray(good)
    bad_ver[14] = 0x65
    for f in (b"", b"\x00" * 13, arp, ipv6, lldp, good[:50], bad_icrc, other_qp, bytes(tcp),
              bytes(not_roce), truncated, bytes(bad_ver)):
        b.on_frame(f)
    d = b.drops
    assert d[wire.R_SHORT] == 3 and d[wire.R_ARP] == 1 and d[wire.R_IPV6] == 1
    assert d[wire.R_NOT_IPV4] == 1 and d[wire.R_BAD_ICRC] == 1 and d["unknown_qpn"] == 1
    assert d[wire.R_NOT_UDP] == 1 and d[wire.R_NOT_ROCE] == 1 and d[wire.R_MALFORMED] == 2
    assert got == []
    b.on_frame(good)
    b.on_frame(good)  # duplicate: counted, re-ACKed (ackreq), not delivered twice
    assert [m.data for m in got] == [b"x" * 100]
    assert qb.responder.stats.duplicates == 1
    assert qb.responder.stats.acks_sent == 2


def test_outside_window_and_far_psns_dropped():
    clk, a, b, qa, qb, _ = pair(rate_bps=None, recovery="sr",
                                qp_kw={"reorder_window_pkts": 8, "max_outstanding_pkts": 8,
                                       "deliver": "bytes"})
    w = wire.QpWire(path_ab())
    b.on_frame(w.data(wire.OP_SEND_ONLY, 8, b"far"))  # beyond the 8-packet buffer
    b.on_frame(w.data(wire.OP_SEND_ONLY, 0x800000, b"half"))  # 2^23 away: 'behind'
    rs = qb.responder.stats
    assert rs.outside_window == 1 and rs.duplicates == 1 and rs.msgs_delivered == 0


def test_unexpected_opcode_sequence_is_counted():
    clk, b, qb, got = _nic_b()
    w = wire.QpWire(path_ab())
    b.on_frame(w.data(wire.OP_SEND_MIDDLE, 0, b"m" * 1024))  # a middle with no first
    b.on_frame(w.data(wire.OP_SEND_ONLY, 1, b"ok"))
    assert qb.responder.stats.bad_opcode_sequence == 1
    assert [m.data for m in got] == [b"ok"]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 120), st.binary(min_size=1, max_size=4))
def test_fuzzed_frames_never_crash(junk, pos, patch):
    clk, b, qb, got = _nic_b()
    w = wire.QpWire(path_ab())
    b.on_frame(junk)
    f = bytearray(w.data(wire.OP_WRITE_ONLY_IMM, 0, b"z" * 64, reth=(1, 2, 64), imm=3))
    f[pos:pos + len(patch)] = patch
    b.on_frame(bytes(f))
    ack = bytearray(w.ack(0, wire.SYN_ACK, 0))
    ack[pos % len(ack)] ^= 0x55
    b.on_frame(bytes(ack))
    assert sum(b.drops.values()) + qb.responder.stats.data_pkts_rcvd + \
        qb.requester.stats.acks_rcvd + qb.requester.stats.naks_rcvd + \
        qb.requester.stats.stale_acks + qb.cnps_rcvd >= 2
    assert all(m.data == b"z" * 64 for m in got)
    assert QPN_B in b.qps
