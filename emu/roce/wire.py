"""RoCEv2 wire format for the data path: per-QP frame templates and a struct parser.

Frames are Ethernet / IPv4 (no options) / UDP (dport 4791, checksum 0) / BTH /
[RETH | ImmDt | AETH [+ SACK]] / payload / pad / ICRC. Building patches a pre-built
header (lengths, IPv4 id and checksum, opcode, PSN) and a masked copy of it used for
the ICRC, so a frame costs a few struct.pack_into calls and one zlib.crc32 over the
payload. `tests/roce/test_wire.py` checks the bytes against the Scapy layers.

Selective-ACK extension (our design, used only by selective-repeat QPs): an ACK
(opcode 0x11) whose UDP payload is longer than BTH + AETH carries, after the AETH,
  u8 resv | u24 base_psn | u16 bitmap_len (bytes) | u16 resv | bitmap | pad
where pad is 0-3 zero bytes to a 4-byte multiple (the BTH pad count says how many),
base_psn is the receiver's expected PSN and bit i (LSB first in each byte) marks PSN
base_psn + i as held in the receiver's reorder buffer. The AETH is then a NAK
"PSN sequence error" with BTH.PSN = base_psn, so a classic go-back-N requester that
ignores the extension still recovers correctly.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from struct import pack_into, unpack_from
from typing import Literal, get_args
from zlib import crc32

from emu.core.wire import (
    DSCP_CNP,
    DSCP_ROCE_DATA,
    ETH_P_ARP,
    ETH_P_IPV4,
    ETH_P_IPV6,
    OP_ACK,
    OP_CNP,
    OP_SEND_ONLY,
    ROCEV2_UDP_PORT,
)
from emu.roce.icrc import PREFIX_CRC

PSN_MASK = 0xFFFFFF
PSN_HALF = 1 << 23
# The class a QP's ACK/NAKs ride: "qp", its own (data) class, as RC NICs send them, or
# "cnp", the CNPs' (strict-priority feedback) class.
AckClass = Literal["qp", "cnp"]
ACK_CLASSES: tuple[str, ...] = get_args(AckClass)

# BTH opcodes (RC transport = 0x00 + operation).
OP_SEND_FIRST = 0x00
OP_SEND_MIDDLE = 0x01
OP_SEND_LAST = 0x02
OP_SEND_LAST_IMM = 0x03
OP_SEND_ONLY_IMM = 0x05
OP_WRITE_FIRST = 0x06
OP_WRITE_MIDDLE = 0x07
OP_WRITE_LAST = 0x08
OP_WRITE_LAST_IMM = 0x09
OP_WRITE_ONLY = 0x0A
OP_WRITE_ONLY_IMM = 0x0B

# Per-opcode properties, indexed by opcode (0..0x1f).
_FIRST = {OP_SEND_FIRST, OP_WRITE_FIRST}
_MIDDLE = {OP_SEND_MIDDLE, OP_WRITE_MIDDLE}
_LAST = {OP_SEND_LAST, OP_SEND_LAST_IMM, OP_WRITE_LAST, OP_WRITE_LAST_IMM}
_ONLY = {OP_SEND_ONLY, OP_SEND_ONLY_IMM, OP_WRITE_ONLY, OP_WRITE_ONLY_IMM}
DATA_OPCODES = frozenset(_FIRST | _MIDDLE | _LAST | _ONLY)
WRITE_OPCODES = frozenset(range(OP_WRITE_FIRST, OP_WRITE_ONLY_IMM + 1))
HAS_RETH = frozenset({OP_WRITE_FIRST, OP_WRITE_ONLY, OP_WRITE_ONLY_IMM})
HAS_IMM = frozenset({OP_SEND_LAST_IMM, OP_SEND_ONLY_IMM, OP_WRITE_LAST_IMM, OP_WRITE_ONLY_IMM})
STARTS_MSG = frozenset(_FIRST | _ONLY)
ENDS_MSG = frozenset(_LAST | _ONLY)
# Header sizes, one definition for the packets built here and for everything that
# estimates their wire time (ideal FCT, frame times, windows, the DCQCN timer floor).
HEADER_BYTES = 54  # Ethernet 14 + IPv4 20 + UDP 8 + BTH 12
ICRC_BYTES = 4
RETH_BYTES = 16  # WRITE first/only: va, rkey, DMA length
IMMDT_BYTES = 4  # ... with immediate, on the message's last/only packet
AETH_BYTES = 4
# A data frame's bytes beyond its payload, RETH/ImmDt and pad (58); an ACK frame (62).
DATA_HEADER_BYTES = HEADER_BYTES + ICRC_BYTES
ACK_BYTES = HEADER_BYTES + AETH_BYTES + ICRC_BYTES
# Extension header bytes before the payload, per opcode.
EXT_LEN = {op: (RETH_BYTES if op in HAS_RETH else 0) + (IMMDT_BYTES if op in HAS_IMM else 0)
           for op in DATA_OPCODES}

# AETH syndromes: ACK with "no credit information" (end-to-end credits unused), and the
# NAK codes we generate or understand.
SYN_ACK = 0x1F
SYN_NAK_PSN_SEQ_ERR = 0x60
SYN_NAK_INVALID_REQ = 0x61

ECN_NOT_ECT = 0
ECN_ECT0 = 2
ECN_CE = 3

_HDR_LEN = HEADER_BYTES
_ICRC_OFF = 14  # the ICRC covers bytes from the IP header on
_PAD = (b"", b"\0", b"\0\0", b"\0\0\0")
_pack_icrc = struct.Struct("<I").pack
# Precompiled packers of the per-frame fields (faster than format-string pack_into).
_pk_ip = struct.Struct("!HHHBBH").pack_into  # IPv4 total length, id, flags, TTL, proto, csum
_pk_l4 = struct.Struct("!HHBBHII").pack_into  # UDP length + checksum, BTH
_pk_len_id = struct.Struct("!HH").pack_into
_pack_reth = struct.Struct("!QII").pack
_pack_imm = struct.Struct("!I").pack


IB_MTUS = (256, 512, 1024, 2048, 4096)  # the path MTUs InfiniBand defines


def max_ip_bytes(path_mtu: int) -> int:
    """The largest IPv4 packet a QP with this path MTU sends (a full WRITE ONLY with
    immediate: RETH, ImmDt, padding, ICRC): what the interface MTU must hold."""
    return _HDR_LEN - 14 + max(EXT_LEN.values()) + path_mtu + (-path_mtu) % 4 + ICRC_BYTES


def mac_bytes(mac: str) -> bytes:
    parts = mac.split(":")
    if len(parts) != 6:
        raise ValueError(f"bad MAC address {mac!r}")
    return bytes(int(p, 16) for p in parts)


def ip_bytes(ip: str) -> bytes:
    return ipaddress.IPv4Address(ip).packed


def psn_add(psn: int, n: int) -> int:
    return (psn + n) & PSN_MASK


def psn_diff(a: int, b: int) -> int:
    """Signed distance a - b in 24-bit PSN space, in [-2^23, 2^23)."""
    d = (a - b) & PSN_MASK
    return d - (1 << 24) if d >= PSN_HALF else d


@dataclass(frozen=True)
class Path:
    """Addressing of one direction of a QP: the headers every frame of it carries."""

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    udp_sport: int
    dst_qpn: int
    dscp: int = DSCP_ROCE_DATA
    ctrl_dscp: int = DSCP_CNP  # CNPs (and ACKs with ack_class "cnp"): the class operators prioritise
    ttl: int = 64
    pkey: int = 0xFFFF
    # ACK/NAK class: "qp" = the QP's own DSCP, not ECT (what RC NICs do); "cnp" = ctrl_dscp
    # like CNPs (the strict-priority feedback class).
    ack_class: str = "qp"

    def __post_init__(self) -> None:
        if self.ack_class not in ACK_CLASSES:
            raise ValueError(f"ack_class must be one of {', '.join(ACK_CLASSES)}, "
                             f"got {self.ack_class!r}")


class _Header:
    """One pre-built header (for one TOS value) and its ICRC-masked twin."""

    __slots__ = ("hdr", "masked", "csum_base", "bth_w0", "bth_mw0")

    def __init__(self, p: Path, tos: int) -> None:
        h = bytearray(_HDR_LEN)
        h[0:6] = mac_bytes(p.dst_mac)
        h[6:12] = mac_bytes(p.src_mac)
        pack_into("!H", h, 12, ETH_P_IPV4)
        pack_into("!BBHHHBBH4s4s", h, 14, 0x45, tos, 0, 0, 0x4000, p.ttl, 17, 0,
                  ip_bytes(p.src_ip), ip_bytes(p.dst_ip))
        pack_into("!HHHH", h, 34, p.udp_sport, ROCEV2_UDP_PORT, 0, 0)
        pack_into("!BBHII", h, 42, 0, 0, p.pkey, p.dst_qpn & PSN_MASK, 0)
        self.hdr = h
        # Sum of the constant 16-bit words of the IPv4 header (length, id, checksum = 0).
        s = 0
        for i in range(14, 34, 2):
            s += (h[i] << 8) | h[i + 1]
        self.csum_base = s
        m = bytearray(h[_ICRC_OFF:])
        m[1] = 0xFF
        m[8] = 0xFF
        m[10] = m[11] = 0xFF
        m[26] = m[27] = 0xFF
        self.masked = m
        self.bth_w0 = p.dst_qpn & PSN_MASK
        self.bth_mw0 = 0xFF000000 | (p.dst_qpn & PSN_MASK)


class QpWire:
    """Frame builder for one QP towards its peer (data, ACK/NAK and CNP frames)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ip_id = 0
        self._ttl = path.ttl
        self._data = _Header(path, ((path.dscp & 0x3F) << 2) | ECN_ECT0)
        self._ctrl = _Header(path, ((path.ctrl_dscp & 0x3F) << 2) | ECN_NOT_ECT)
        self._ack = self._ctrl if path.ack_class == "cnp" else \
            _Header(path, ((path.dscp & 0x3F) << 2) | ECN_NOT_ECT)
        self._pkey = path.pkey

    def _build(self, hd: _Header, opcode: int, b43: int, psn_word: int, b46: int,
               ext: bytes, payload: bytes | memoryview, pad: int) -> bytes:
        l4 = 24 + len(ext) + len(payload) + pad  # UDP 8 + BTH 12 + ICRC 4
        tot = l4 + 20
        self.ip_id = ipid = (self.ip_id + 1) & 0xFFFF
        s = hd.csum_base + tot + ipid
        s = (s & 0xFFFF) + (s >> 16)
        s = (s & 0xFFFF) + (s >> 16)
        h = hd.hdr
        m = hd.masked
        _pk_ip(h, 16, tot, ipid, 0x4000, self._ttl, 17, ~s & 0xFFFF)
        _pk_l4(h, 38, l4, 0, opcode, b43, self._pkey, (b46 << 24) | hd.bth_w0, psn_word)
        _pk_len_id(m, 2, tot, ipid)
        _pk_l4(m, 24, l4, 0xFFFF, opcode, b43, self._pkey, hd.bth_mw0, psn_word)
        crc = crc32(m, PREFIX_CRC)
        if ext:
            crc = crc32(ext, crc)
        crc = crc32(payload, crc)
        if pad:
            padb = _PAD[pad]
            return b"".join((h, ext, payload, padb, _pack_icrc(crc32(padb, crc))))
        return b"".join((h, ext, payload, _pack_icrc(crc)))

    def data(self, opcode: int, psn: int, payload: bytes | memoryview, *, ackreq: bool = False,
             reth: tuple[int, int, int] | None = None, imm: int | None = None) -> bytes:
        """A request packet; reth = (va, rkey, dma_len) for WRITE first/only."""
        pad = -len(payload) & 3
        ext = b""
        if reth is not None:
            ext = _pack_reth(*reth)
        if imm is not None:
            ext += _pack_imm(imm & 0xFFFFFFFF)
        psn_word = (psn & PSN_MASK) | (0x80000000 if ackreq else 0)
        return self._build(self._data, opcode, pad << 4, psn_word, 0, ext, payload, pad)

    def ack(self, psn: int, syndrome: int, msn: int, sack: bytes = b"") -> bytes:
        """An ACK/NAK: BTH.PSN = last PSN acknowledged (ACK) or expected PSN (NAK). A SACK
        extension is padded to 4 bytes like any payload (BTH pad count)."""
        aeth = ((syndrome & 0xFF) << 24) | (msn & PSN_MASK)
        pad = -len(sack) & 3
        return self._build(self._ack, OP_ACK, pad << 4, psn & PSN_MASK, 0, _pack_imm(aeth),
                           sack, pad)

    def cnp(self) -> bytes:
        """A RoCEv2 CNP: opcode 0x81, BECN set, 16 zero bytes, to the sender's QP."""
        return self._build(self._ctrl, OP_CNP, 0, 0, 0x40, b"", bytes(16), 0)


def sack_ext(base_psn: int, bitmap: bytes) -> bytes:
    return struct.pack("!IHH", base_psn & PSN_MASK, len(bitmap), 0) + bitmap


def parse_sack(buf: bytes | memoryview, off: int, end: int) -> tuple[int, bytes] | None:
    """(base_psn, bitmap) of a SACK extension in buf[off:end], or None if malformed."""
    if end - off < 8:
        return None
    base, n, _ = unpack_from("!IHH", buf, off)
    if off + 8 + n > end:
        return None
    return base & PSN_MASK, bytes(buf[off + 8:off + 8 + n])


# Drop reasons of the receive path (counted per reason by the NIC).
R_SHORT = "short_frame"
R_NOT_IPV4 = "not_ipv4"
R_ARP = "arp"
R_IPV6 = "ipv6"
R_MALFORMED = "malformed"
R_NOT_UDP = "not_udp"
R_NOT_ROCE = "not_roce_port"
R_BAD_ICRC = "bad_icrc"
R_BAD_VERSION = "bad_bth_version"
R_FRAGMENT = "ip_fragment"

_MIN_FRAME = 14 + 20 + 8 + 12 + 4
_unpack_bth = struct.Struct("!BBHII").unpack_from
_unpack_ip = struct.Struct("!BBHHHBBH").unpack_from


@dataclass(slots=True, eq=False)
class Parsed:
    """Fields of a received RoCEv2 frame the QPs need; offsets index the frame."""

    opcode: int
    b43: int
    dqpn: int
    psn: int
    ackreq: bool
    ecn: int
    becn: bool
    off: int  # first byte after the BTH
    end: int  # first byte of the ICRC
    src_ip: bytes
    udp_sport: int


_unpack_fast = struct.Struct("!HBBHHHBBH4s4sHHHHBBHII").unpack_from  # Ethertype .. BTH


def parse(frame: bytes) -> Parsed | str:
    """Validate and decode a frame; returns Parsed or a drop reason (never raises)."""
    n = len(frame)
    if n >= _MIN_FRAME and frame[14] == 0x45:
        # Fast path: IPv4 without options, everything up to the BTH in one unpack.
        (et, _v, tos, tot, _id, frag, _ttl, proto, _ck, src, _dst, sport, dport, ulen, _uck,
         opcode, b43, _pkey, w1, w2) = _unpack_fast(frame, 12)
        if et == ETH_P_IPV4:
            end = 14 + tot
            if proto != 17:
                return R_NOT_UDP
            if frag & 0x3FFF:
                return R_FRAGMENT
            if tot < 44 or end > n:
                return R_MALFORMED
            if dport != ROCEV2_UDP_PORT:
                return R_NOT_ROCE
            if ulen != tot - 20:
                return R_MALFORMED
            if b43 & 0x0F:
                return R_BAD_VERSION
            iend = end - 4
            m = bytearray(frame[14:54])
            m[1] = m[8] = m[10] = m[11] = m[26] = m[27] = m[32] = 0xFF
            if _pack_icrc(crc32(memoryview(frame)[54:iend], crc32(m, PREFIX_CRC))) != frame[iend:end]:
                return R_BAD_ICRC
            return Parsed(opcode, b43, w1 & PSN_MASK, w2 & PSN_MASK, w2 >= 0x80000000, tos & 3,
                          bool(w1 & 0x40000000), 54, iend, src, sport)
    return _parse_general(frame)


def _parse_general(frame: bytes) -> Parsed | str:
    """Any frame: non-IPv4 classification, IPv4 options, short frames."""
    n = len(frame)
    if n < 14:
        return R_SHORT
    et = (frame[12] << 8) | frame[13]
    if et != ETH_P_IPV4:
        if et == ETH_P_ARP:
            return R_ARP
        if et == ETH_P_IPV6:
            return R_IPV6
        return R_NOT_IPV4
    if n < _MIN_FRAME:
        return R_SHORT
    vihl, tos, tot, _id, frag, _ttl, proto, _ck = _unpack_ip(frame, 14)
    ihl = (vihl & 0x0F) << 2
    if vihl >> 4 != 4 or ihl < 20:
        return R_MALFORMED
    if proto != 17:
        return R_NOT_UDP
    if frag & 0x3FFF:
        return R_FRAGMENT
    end = 14 + tot
    u = 14 + ihl
    if tot < ihl + 24 or end > n:
        return R_MALFORMED
    sport, dport, ulen = unpack_from("!HHH", frame, u)
    if dport != ROCEV2_UDP_PORT:
        return R_NOT_ROCE
    if ulen != tot - ihl:
        return R_MALFORMED
    b = u + 8
    opcode, b43, _pkey, w1, w2 = _unpack_bth(frame, b)
    if b43 & 0x0F:
        return R_BAD_VERSION
    iend = end - 4
    # ICRC over the masked headers, then the rest in place (no copy of the payload).
    m = bytearray(frame[14:b + 12])
    m[1] = m[8] = m[10] = m[11] = 0xFF
    m[ihl + 6] = m[ihl + 7] = m[ihl + 12] = 0xFF
    crc = crc32(memoryview(frame)[b + 12:iend], crc32(m, PREFIX_CRC))
    if _pack_icrc(crc) != frame[iend:end]:
        return R_BAD_ICRC
    return Parsed(opcode, b43, w1 & PSN_MASK, w2 & PSN_MASK, bool(w2 & 0x80000000), tos & 3,
                  bool(w1 & 0x40000000), b + 12, iend, bytes(frame[26:30]), sport)
