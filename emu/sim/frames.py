"""Ethernet/IPv4/UDP(/BTH) frames for virtual-time tests: built and checked with struct.

Fast (no Scapy) because fabric tests push thousands of frames; the layouts follow
RFC 791/768 and the RoCEv2 BTH (12 bytes after UDP port 4791).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from emu.core.wire import ETH_P_IPV4, IP_PROTO_UDP, OP_SEND_ONLY, ROCEV2_UDP_PORT

ETH_HLEN = 14
IPV4_HLEN = 20
UDP_HLEN = 8
BTH_HLEN = 12

_ETH = struct.Struct("!6s6sH")
_IP = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
_BTH = struct.Struct("!BBHII")


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def mac_str(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def ip_bytes(ip: str | int) -> bytes:
    if isinstance(ip, int):
        return ip.to_bytes(4, "big")
    return bytes(int(x) for x in str(ip).split("."))


def internet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_header(src: str | int, dst: str | int, proto: int, payload_len: int, *, ttl: int = 64,
                dscp: int = 0, ecn: int = 0, ident: int = 0) -> bytes:
    tos = ((dscp & 0x3F) << 2) | (ecn & 3)
    hdr = _IP.pack(0x45, tos, IPV4_HLEN + payload_len, ident, 0x4000, ttl, proto, 0,
                   ip_bytes(src), ip_bytes(dst))
    ck = internet_checksum(hdr)
    return hdr[:10] + ck.to_bytes(2, "big") + hdr[12:]


def udp_frame(src_mac: str, dst_mac: str, src_ip: str | int, dst_ip: str | int, sport: int,
              dport: int = ROCEV2_UDP_PORT, *, size: int = 128, ttl: int = 64, dscp: int = 0,
              ecn: int = 0, opcode: int = OP_SEND_ONLY, psn: int = 0, dqpn: int = 1) -> bytes:
    """A UDP frame of `size` bytes; to port 4791 it carries a BTH (opcode, psn, dqpn)."""
    bth = _BTH.pack(opcode, 0, 0xFFFF, dqpn & 0xFFFFFF, psn & 0xFFFFFF) if dport == ROCEV2_UDP_PORT \
        else b""
    payload_len = max(0, size - ETH_HLEN - IPV4_HLEN - UDP_HLEN - len(bth))
    udp_len = UDP_HLEN + len(bth) + payload_len
    return (_ETH.pack(mac_bytes(dst_mac), mac_bytes(src_mac), ETH_P_IPV4)
            + ipv4_header(src_ip, dst_ip, IP_PROTO_UDP, udp_len, ttl=ttl, dscp=dscp, ecn=ecn)
            + _UDP.pack(sport, dport, udp_len, 0) + bth + bytes(payload_len))


@dataclass(frozen=True)
class Parsed:
    dst_mac: str
    src_mac: str
    ethertype: int
    ttl: int
    dscp: int
    ecn: int
    proto: int
    src_ip: str
    dst_ip: str
    total_len: int
    checksum_ok: bool
    sport: int | None
    dport: int | None
    psn: int | None


def parse(frame: bytes) -> Parsed:
    """Decode Ethernet/IPv4/UDP(/BTH); raises ValueError on anything else or a short frame."""
    if len(frame) < ETH_HLEN + IPV4_HLEN:
        raise ValueError(f"frame too short ({len(frame)} bytes)")
    dst, src, etype = _ETH.unpack_from(frame, 0)
    if etype != ETH_P_IPV4:
        raise ValueError(f"not IPv4 (ethertype {etype:#06x})")
    vihl, tos, tot, _id, _frag, ttl, proto, _ck, s, d = _IP.unpack_from(frame, ETH_HLEN)
    if vihl != 0x45:
        raise ValueError(f"unexpected IPv4 version/IHL byte {vihl:#04x}")
    ck_ok = internet_checksum(frame[ETH_HLEN:ETH_HLEN + IPV4_HLEN]) == 0
    sport = dport = psn = None
    off = ETH_HLEN + IPV4_HLEN
    if proto == IP_PROTO_UDP and len(frame) >= off + UDP_HLEN:
        sport, dport, _ulen, _uck = _UDP.unpack_from(frame, off)
        if dport == ROCEV2_UDP_PORT and len(frame) >= off + UDP_HLEN + BTH_HLEN:
            psn = _BTH.unpack_from(frame, off + UDP_HLEN)[4] & 0xFFFFFF
    return Parsed(mac_str(dst), mac_str(src), etype, ttl, tos >> 2, tos & 3, proto,
                  ".".join(map(str, s)), ".".join(map(str, d)), tot, ck_ok, sport, dport, psn)
