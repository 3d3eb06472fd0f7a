"""Scapy layers that scapy.contrib.roce lacks: RETH, ImmDt and our SACK extension.

Only used for golden bytes, pcaps and tests; the data path uses `wire` templates.
"""

from __future__ import annotations

from scapy.contrib.roce import AETH, BTH
from scapy.fields import BitField, IntField, ShortField, XIntField, XLongField, XStrLenField
from scapy.packet import Packet, bind_layers

from emu.roce import wire


class RETH(Packet):
    """RDMA Extended Transport Header: target virtual address, R_Key, DMA length."""

    name = "RETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("dmalen", 0),
    ]


class ImmDt(Packet):
    """Immediate data (4 bytes) of *_WITH_IMMEDIATE opcodes."""

    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


class SACKExt(Packet):
    """Our selective-ACK extension, appended after AETH (see `wire` for the format).

    base_psn is the first missing PSN (the receiver's expected PSN); bit i of the
    bitmap (LSB-first within each byte) says PSN base_psn + i has been received.
    """

    name = "SACKExt"
    fields_desc = [
        BitField("resv", 0, 8),
        BitField("base_psn", 0, 24),
        ShortField("bitmap_len", None),
        ShortField("resv2", 0),
        XStrLenField("bitmap", b"", length_from=lambda p: p.bitmap_len),
    ]

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if self.bitmap_len is None:
            n = len(self.bitmap)
            p = p[:4] + n.to_bytes(2, "big") + p[6:]
        return p + pay


for _op in (wire.OP_WRITE_FIRST, wire.OP_WRITE_ONLY):
    bind_layers(BTH, RETH, opcode=_op)
bind_layers(BTH, RETH, opcode=wire.OP_WRITE_ONLY_IMM)
for _op in (wire.OP_SEND_LAST_IMM, wire.OP_SEND_ONLY_IMM, wire.OP_WRITE_LAST_IMM):
    bind_layers(BTH, ImmDt, opcode=_op)


def _reth_guess(self: RETH, payload: bytes) -> type[Packet]:
    """RETH is followed by ImmDt only under RDMA_WRITE_ONLY_WITH_IMMEDIATE."""
    under = self.underlayer
    if isinstance(under, BTH) and under.opcode == wire.OP_WRITE_ONLY_IMM:
        return ImmDt
    return Packet.guess_payload_class(self, payload)


RETH.guess_payload_class = _reth_guess  # type: ignore[method-assign,assignment]

__all__ = ["AETH", "BTH", "ImmDt", "RETH", "SACKExt"]
