"""RoCEv2 invariant CRC (ICRC) over IPv4 frames.

The ICRC is a CRC-32 over: 8 bytes of 0xFF (the masked pseudo-LRH), the IP header with
TOS, TTL and header checksum masked to all ones, the UDP header with its checksum
masked, the BTH with its FECN/BECN/resv6 byte masked, and everything after the BTH up
to the ICRC. Masking the fields a switch may rewrite (ECN remark, TTL decrement,
checksum update) lets the CRC survive routing. It goes on the wire least-significant
byte first, which is what scapy.contrib.roce's BTH produces.
"""

from __future__ import annotations

from zlib import crc32

ETH_HLEN = 14
UDP_HLEN = 8
BTH_LEN = 12
ICRC_LEN = 4

PREFIX_CRC = crc32(b"\xff" * 8)


def masked_headers(frame: bytes | bytearray | memoryview, ihl: int) -> bytearray:
    """IP + UDP + BTH bytes of `frame` with the variant fields set to ones."""
    h = bytearray(frame[ETH_HLEN:ETH_HLEN + ihl + UDP_HLEN + BTH_LEN])
    h[1] = 0xFF  # TOS (DSCP + ECN)
    h[8] = 0xFF  # TTL
    h[10] = 0xFF  # IPv4 header checksum
    h[11] = 0xFF
    h[ihl + 6] = 0xFF  # UDP checksum
    h[ihl + 7] = 0xFF
    h[ihl + UDP_HLEN + 4] = 0xFF  # BTH FECN, BECN, resv6
    return h


def compute(frame: bytes | bytearray | memoryview, ihl: int = 20, end: int | None = None) -> int:
    """ICRC value of an IPv4 RoCEv2 frame whose ICRC occupies frame[end-4:end]."""
    if end is None:
        end = len(frame)
    view = memoryview(frame)
    crc = crc32(masked_headers(view, ihl), PREFIX_CRC)
    return crc32(view[ETH_HLEN + ihl + UDP_HLEN + BTH_LEN:end - ICRC_LEN], crc)


def to_bytes(icrc: int) -> bytes:
    return icrc.to_bytes(4, "little")


def verify(frame: bytes | bytearray | memoryview, ihl: int = 20, end: int | None = None) -> bool:
    if end is None:
        end = len(frame)
    return bytes(frame[end - ICRC_LEN:end]) == to_bytes(compute(frame, ihl, end))
