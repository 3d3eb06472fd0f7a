"""Reliable-connected queue pairs: the requester (send queue) and responder halves
(emu.roce.requester, emu.roce.responder) composed with the QP's frame builder, pacing,
DCQCN and PLB state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from emu.core.clock import Clock
from emu.roce import wire
from emu.roce.dcqcn import NotificationPoint, ReactionPoint
from emu.roce.metrics import DropCounter
from emu.roce.pacing import Pacer
from emu.roce.payload import LazyPayload
from emu.roce.plb import Plb
from emu.roce.requester import Requester
from emu.roce.responder import Responder
from emu.roce.verbs import SEND, WRITE, Message, QpParams, WorkRequest

__all__ = ["SEND", "WRITE", "Message", "QpHost", "QpParams", "QueuePair", "WorkRequest"]


class QpHost(Protocol):
    """What a QP needs of the NIC it lives on (emu.roce.nic.Nic): its clock, its drop
    counters, the control-frame path and the scheduler's wake-up."""

    clock: Clock
    drops: DropCounter

    def send_ctrl(self, frame: bytes) -> None: ...

    def kick(self, qp: QueuePair) -> None: ...


class QueuePair:
    """An RC QP: both halves, its frame builder, pacing, DCQCN and PLB state."""

    def __init__(self, nic: QpHost, p: QpParams, *, rp: ReactionPoint | None,
                 np: NotificationPoint | None,
                 pacer: Pacer, plb: Plb) -> None:
        self.nic = nic
        self.qpn = p.qpn
        self.params = p
        self.wire = wire.QpWire(p.path)
        self.rp = rp
        self.pacer = pacer
        self.plb = plb
        self.queued = False  # in the NIC's active list
        self.requester = Requester(self, p, nic.clock)
        self.responder = Responder(self, p, nic.clock, np)
        self.cnps_rcvd = 0
        self.sport_history: list[tuple[int, int]] = [(nic.clock.now_ns(), p.path.udp_sport)]

    @property
    def udp_sport(self) -> int:
        return self.wire.path.udp_sport

    def post_send(self, data: bytes | bytearray | memoryview | LazyPayload, op: str = SEND, *,
                  imm: int | None = None, va: int = 0, rkey: int = 0,
                  on_complete: Callable[[WorkRequest], None] | None = None) -> WorkRequest:
        wr = self.requester.post(data, op, imm=imm, va=va, rkey=rkey, on_complete=on_complete)
        self.nic.kick(self)
        return wr

    def kick(self) -> None:
        """Ask the NIC's scheduler for a transmit turn."""
        self.nic.kick(self)

    def on_cnp(self) -> None:
        self.cnps_rcvd += 1
        self.requester.stats.cnps_rcvd += 1
        wr = self.requester.sending_wr()
        if wr is not None:
            wr.cnps_rcvd += 1
        self.plb.on_cnp(self.nic.clock.now_ns())
        if self.rp is not None:
            self.rp.on_cnp()

    def repath(self) -> None:
        """Move to a new UDP source port (new ECMP hash); PSN state is unchanged."""
        from dataclasses import replace

        old = self.wire
        new_port = self.plb.new_port(old.path.udp_sport)
        w = wire.QpWire(replace(old.path, udp_sport=new_port))
        w.ip_id = old.ip_id
        self.wire = w
        self.requester.stats.repaths += 1
        wr = self.requester.sending_wr()
        if wr is not None:
            wr.repaths += 1
        self.sport_history.append((self.nic.clock.now_ns(), new_port))
