"""Wire format: template-built frames are byte-identical to Scapy's, ICRC invariance."""

from __future__ import annotations

import dataclasses
import shutil
import struct
import subprocess

import pytest
from scapy.contrib.roce import AETH, BTH, cnp
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from emu.core.wire import DSCP_CNP, DSCP_ROCE_DATA, ROCEV2_UDP_PORT
from emu.roce import icrc, wire
from emu.roce.layers import RETH, ImmDt, SACKExt
from tests.roce.helpers import IP_A, IP_B, MAC_A, MAC_B, QPN_B, path_ab


def scapy_l3(tos: int, ip_id: int, sport: int = 49500):
    return (Ether(src=MAC_A, dst=MAC_B)
            / IP(src=IP_A, dst=IP_B, tos=tos, id=ip_id, flags="DF", ttl=64)
            / UDP(sport=sport, dport=ROCEV2_UDP_PORT, chksum=0))


DATA_TOS = (DSCP_ROCE_DATA << 2) | 2
CTRL_TOS = DSCP_CNP << 2

CASES = [
    (wire.OP_SEND_FIRST, 1024, False, None, None),
    (wire.OP_SEND_MIDDLE, 1024, False, None, None),
    (wire.OP_SEND_LAST, 333, True, None, None),
    (wire.OP_SEND_LAST_IMM, 1, True, None, 0xDEADBEEF),
    (wire.OP_SEND_ONLY, 0, True, None, None),
    (wire.OP_SEND_ONLY_IMM, 42, True, None, 7),
    (wire.OP_WRITE_FIRST, 4096, False, (0x1122334455667788, 0xABCD, 10000), None),
    (wire.OP_WRITE_MIDDLE, 256, False, None, None),
    (wire.OP_WRITE_LAST, 1023, True, None, None),
    (wire.OP_WRITE_LAST_IMM, 1022, True, None, 99),
    (wire.OP_WRITE_ONLY, 1021, True, (0x1000, 5, 1021), None),
    (wire.OP_WRITE_ONLY_IMM, 17, True, (0x2000, 6, 17), 0x01020304),
]


@pytest.mark.parametrize("opcode,plen,ackreq,reth,imm", CASES)
@pytest.mark.parametrize("psn", [0, 0x123456, 0xFFFFFF])
def test_data_frames_match_scapy(opcode, plen, ackreq, reth, imm, psn):
    w = wire.QpWire(path_ab())
    payload = bytes((i * 7 + plen) & 0xFF for i in range(plen))
    ours = w.data(opcode, psn, payload, ackreq=ackreq, reth=reth, imm=imm)
    pad = -plen & 3
    pkt = scapy_l3(DATA_TOS, 1) / BTH(opcode=opcode, psn=psn, dqpn=QPN_B, ackreq=int(ackreq),
                                      padcount=pad)
    if reth is not None:
        pkt = pkt / RETH(va=reth[0], rkey=reth[1], dmalen=reth[2])
    if imm is not None:
        pkt = pkt / ImmDt(imm=imm)
    pkt = pkt / Raw(payload + b"\0" * pad)
    assert ours == bytes(pkt)
    # and Scapy dissects ours into the same layers
    d = Ether(ours)
    assert d[BTH].opcode == opcode and d[BTH].psn == psn and d[BTH].padcount == pad
    if reth is not None:
        assert d[RETH].va == reth[0] and d[RETH].dmalen == reth[2]
    if imm is not None:
        assert d[ImmDt].imm == imm


ACK_TOS = DSCP_ROCE_DATA << 2  # the QP's own class, not ECT


@pytest.mark.parametrize(("ack_class", "ack_tos"), [("qp", ACK_TOS), ("cnp", CTRL_TOS)])
def test_ack_nak_sack_cnp_match_scapy(ack_class, ack_tos):
    """ACK/NAK in the QP's class by default (or the CNP class); CNPs always at ctrl_dscp."""
    from dataclasses import replace

    w = wire.QpWire(replace(path_ab(), ack_class=ack_class))
    ack = w.ack(0xFFFFFF, wire.SYN_ACK, 5)
    assert ack == bytes(scapy_l3(ack_tos, 1) / BTH(opcode=0x11, psn=0xFFFFFF, dqpn=QPN_B)
                        / AETH(syndrome=0x1F, msn=5))
    bitmap = bytes([0b10110, 0xFF, 1, 0])
    sack = w.ack(10, wire.SYN_NAK_PSN_SEQ_ERR, 6, wire.sack_ext(10, bitmap))
    assert sack == bytes(scapy_l3(ack_tos, 2) / BTH(opcode=0x11, psn=10, dqpn=QPN_B)
                         / AETH(syndrome=0x60, msn=6) / SACKExt(base_psn=10, bitmap=bitmap))
    c = w.cnp()
    assert c == bytes(scapy_l3(CTRL_TOS, 3) / cnp(QPN_B))
    assert len(c) == 14 + 20 + 8 + 12 + 16 + 4
    # ip id increments per frame and the IPv4 checksum stays valid
    for f in (ack, sack, c):
        assert IP(bytes(Ether(f)[IP])).chksum == Ether(f)[IP].chksum


@pytest.mark.parametrize("nbytes", [1, 2, 3, 4, 5])
def test_sack_extension_is_padded_to_4_bytes(nbytes):
    """A 1- or 3-byte bitmap made a 29- or 31-byte UDP payload with pad count 0."""
    w = wire.QpWire(path_ab())
    bitmap = bytes(range(1, nbytes + 1))
    f = w.ack(0xFFFFFE, wire.SYN_NAK_PSN_SEQ_ERR, 6, wire.sack_ext(0xFFFFFE, bitmap))
    udp_len = int.from_bytes(f[38:40], "big")
    pad = -nbytes & 3
    assert udp_len % 4 == 0 and udp_len == 8 + 12 + 4 + 8 + nbytes + pad + 4
    p = wire.parse(f)
    assert isinstance(p, wire.Parsed) and (p.b43 >> 4) & 3 == pad
    assert f[p.end - pad:p.end] == bytes(pad)
    d = Ether(f)
    assert d[BTH].padcount == pad
    ext = bytes(d[AETH].payload)  # Scapy keeps the ICRC in BTH
    assert ext[8 + nbytes:] == bytes(pad) and SACKExt(ext[:8 + nbytes]).bitmap == bitmap
    assert wire.parse_sack(f, p.off + 4, p.end - pad) == (0xFFFFFE, bitmap)
    assert wire.parse_sack(f, p.off + 4, p.end - pad - 1) is None  # truncated


def test_bad_ack_class_is_a_clear_error():
    from dataclasses import replace

    with pytest.raises(ValueError, match="ack_class must be one of qp, cnp"):
        replace(path_ab(), ack_class="high")


def _route_and_mark(frame: bytes) -> bytes:
    """What a switch does: set CE, decrement TTL, recompute the IPv4 header checksum."""
    b = bytearray(frame)
    b[15] |= 3
    b[22] -= 1
    b[24:26] = b"\0\0"
    s = sum(struct.unpack("!10H", bytes(b[14:34])))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    b[24:26] = struct.pack("!H", ~s & 0xFFFF)
    b[46] |= 0x80  # FECN, also masked
    return bytes(b)


def test_icrc_survives_ce_mark_and_routing():
    w = wire.QpWire(path_ab())
    f = w.data(wire.OP_SEND_ONLY, 77, b"x" * 1000, ackreq=True)
    assert icrc.verify(f)
    r = _route_and_mark(f)
    assert r != f and r[15] & 3 == 3 and r[22] == 63
    assert icrc.verify(r)
    p = wire.parse(r)
    assert isinstance(p, wire.Parsed) and p.ecn == 3 and p.psn == 77
    # the checksum really is valid, per Scapy
    ip = IP(bytes(Ether(r)[IP]))
    fresh = ip.copy()
    del fresh.chksum
    assert IP(bytes(fresh)).chksum == ip.chksum
    # a change to any covered byte breaks it
    bad = bytearray(r)
    bad[60] ^= 1
    assert wire.parse(bytes(bad)) == wire.R_BAD_ICRC
    bad = bytearray(r)
    bad[18] ^= 1  # IP id is covered
    assert wire.parse(bytes(bad)) == wire.R_BAD_ICRC


def test_icrc_module_matches_scapy_bth():
    pkt = scapy_l3(DATA_TOS, 9) / BTH(opcode=4, psn=3, dqpn=5, ackreq=1) / Raw(b"abcd" * 50)
    raw = bytes(pkt)
    assert icrc.to_bytes(icrc.compute(raw)) == raw[-4:]


def test_parse_fields():
    w = wire.QpWire(path_ab())
    f = w.data(wire.OP_SEND_LAST, 0xABCDEF, b"hello", ackreq=True)
    p = wire.parse(f)
    assert isinstance(p, wire.Parsed)
    assert (p.opcode, p.dqpn, p.psn, p.ackreq, p.ecn) == (wire.OP_SEND_LAST, QPN_B, 0xABCDEF,
                                                          True, 2)
    pad = (p.b43 >> 4) & 3
    assert f[p.off:p.end - pad] == b"hello"


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_tshark_decodes_our_bth_aeth_reth(tmp_path):
    w = wire.QpWire(path_ab())
    frames = [
        w.data(wire.OP_WRITE_FIRST, 0xFFFFFE, b"a" * 1024, reth=(0x1000, 0x77, 2048)),
        w.data(wire.OP_WRITE_LAST, 0xFFFFFF, b"b" * 1024, ackreq=True),
        w.ack(0xFFFFFF, wire.SYN_ACK, 1),
        w.ack(3, wire.SYN_NAK_PSN_SEQ_ERR, 1),
    ]
    pcap = tmp_path / "roce.pcap"
    wrpcap(str(pcap), [Ether(f) for f in frames])
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-e", "infiniband.bth.opcode",
         "-e", "infiniband.bth.psn", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.a",
         "-e", "infiniband.reth.r_key", "-e", "infiniband.reth.dmalen",
         "-e", "infiniband.aeth.syndrome", "-e", "infiniband.aeth.msn"],
        capture_output=True, text=True, timeout=60, check=True).stdout
    rows = [line.split("\t") for line in out.strip().splitlines()]
    assert len(rows) == 4
    assert [int(r[0], 0) for r in rows] == [6, 8, 0x11, 0x11]
    assert [int(r[1], 0) for r in rows] == [0xFFFFFE, 0xFFFFFF, 0xFFFFFF, 3]
    assert all(int(r[2], 0) == QPN_B for r in rows)
    assert int(rows[1][3], 0) == 1
    assert int(rows[0][4], 0) == 0x77 and int(rows[0][5], 0) == 2048
    assert int(rows[2][6], 0) == 0x1F and int(rows[3][6], 0) == 0x60
    assert int(rows[2][7], 0) == 1


def test_parse_general_path_ip_options_and_agreement():
    """Frames with IPv4 options take the general parser; it agrees with the fast one."""
    from scapy.layers.inet import IPOption_NOP

    pkt = (Ether(src=MAC_A, dst=MAC_B)
           / IP(src=IP_A, dst=IP_B, tos=DATA_TOS, options=[IPOption_NOP()] * 4)
           / UDP(sport=49500, dport=4791, chksum=0)
           / BTH(opcode=wire.OP_SEND_ONLY, psn=9, dqpn=QPN_B, ackreq=1) / Raw(b"opts"))
    raw = bytes(pkt)
    p = wire.parse(raw)
    assert isinstance(p, wire.Parsed) and p.off == 14 + 24 + 8 + 12 and raw[p.off:p.end] == b"opts"
    f = wire.QpWire(path_ab()).data(wire.OP_SEND_ONLY, 9, b"opts", ackreq=True)
    fast, general = wire.parse(f), wire._parse_general(f)
    assert isinstance(fast, wire.Parsed) and isinstance(general, wire.Parsed)
    names = [f.name for f in dataclasses.fields(wire.Parsed)]
    assert {k: getattr(fast, k) for k in names} == {k: getattr(general, k) for k in names}
