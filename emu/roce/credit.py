"""The host NIC's MAC in credit mode (emu.core.credit): transmits a lossless priority's
frames only within the credit its leaf granted, and advertises its own receive buffer.

`HostCreditMac` is a FramePort wrapped around the host's link port, like
emu.roce.pfc.HostMac (PFC); give it to the Nic (or Agent) instead of the raw port.

Transmit: a frame's priority is its DSCP mapped as on the switches (frame_priority). A
frame of a lossless priority that does not fit the leaf's limit waits in the MAC, in
order, with everything after it of that priority; other priorities go on. Held frames
leave one at a time at the link rate when credit comes. A held queue is bounded
(`hold_frames`): when full, `send` refuses the frame (the Nic retries it later).

Receive: updates (EtherType 0x88B5) are consumed here, PAUSE frames counted and dropped.
Without `rx_buffer_bytes` frames are handled at once, so the credit granted is the most
the protocol allows (2048 blocks ahead). With it, frames wait in a receive buffer drained
at `rx_drain_bps`, and the limit advertised per lossless priority is its free space.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from emu.core.clock import Clock
from emu.core.credit import HALF, CreditPort, CreditSettings, blocks, check_buffer
from emu.core.pfc import NUM_PRIORITIES
from emu.core.port import FramePort

from .pfc import HostMacBase, HostMacParams, frame_priority

__all__ = ["HostCreditMac", "HostCreditParams"]


@dataclass(frozen=True)
class HostCreditParams(HostMacParams):
    """Settings of a host MAC in credit mode."""

    credit: CreditSettings = field(default_factory=CreditSettings)

    def __post_init__(self) -> None:
        if self.rate_bps <= 0:
            raise ValueError("rate_bps must be positive")
        super().__post_init__()
        if self.rx_buffer_bytes is not None:  # the host's own largest frame must fit
            check_buffer(self.rx_buffer_bytes, self.mtu, "rx_buffer_bytes")


def host_credit_params(d: Mapping[str, object], mac: str, rate_bps: float
                       ) -> HostCreditParams:
    """HostCreditParams from the agent's --pfc JSON in credit mode (mode "credit",
    lossless priorities, DSCP -> priority map); ValueError when bad."""
    try:
        lossless = frozenset(int(p) for p in d.get("lossless", [3]))  # type: ignore[attr-defined]
        dscp = {int(k): int(v) for k, v in d.get("dscp_priority", {}).items()}  # type: ignore[attr-defined]
    except (TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"bad host credit settings: {exc}") from None
    return HostCreditParams(mac=mac, rate_bps=rate_bps, dscp_priority=dscp, lossless=lossless)


class HostCreditMac(HostMacBase):
    params: HostCreditParams

    def __init__(self, clock: Clock, lower: FramePort, params: HostCreditParams) -> None:
        super().__init__(clock, lower)
        self.params = params
        self.lossless = [p in params.lossless for p in range(NUM_PRIORITIES)]
        # Without a buffer, a budget that never limits: 2048 blocks ahead, the cap.
        buf = params.rx_buffer_bytes if params.rx_buffer_bytes is not None else \
            (HALF + 1) * 64 * 2
        self.credit = CreditPort(clock, lower.send, params.mac, params.credit,
                                 params.lossless, params.rate_bps,
                                 on_credit=self._on_credit, buffer_bytes=buf)
        self.pause_rx = 0
        self.rx_overrun = 0
        lower.set_receiver(self._rx)
        self.credit.announce()

    # -- transmit ------------------------------------------------------------------------
    def send(self, frame: bytes) -> bool:
        prio = frame_priority(frame, self.params.dscp_priority)
        if not self.lossless[prio]:
            return self._put(frame)
        hold = self.hold[prio]
        if hold or not self.credit.can_send(prio, len(frame)):
            return self._hold(hold, frame)
        self.credit.sent(prio, len(frame))
        return self._put(frame)

    def _on_credit(self, _prio: int) -> None:
        if self._flush_at is None:  # a pending turn checks the new credit itself
            self._flush()

    def _flush(self) -> None:
        # One held frame at a time at the link rate, highest priority first, each
        # checked against the credit when it starts (as the MAC would).
        if self._busy():
            return
        cr = self.credit
        for p in range(NUM_PRIORITIES - 1, -1, -1):
            hold = self.hold[p]
            if hold and cr.can_send(p, len(hold[0])):
                frame = hold.popleft()
                cr.sent(p, len(frame))
                self._put_held(frame)
                return
        # Everything held waits for credit: the next update calls _flush again.

    # -- receive -------------------------------------------------------------------------
    def _rx(self, frame: bytes) -> None:
        etype = frame[12:14]
        if etype == b"\x88\xb5":
            self.credit.on_frame(frame)
            return
        if etype == b"\x88\x08":
            self.pause_rx += 1  # no PFC in credit mode
            return
        prm = self.params
        prio = frame_priority(frame, prm.dscp_priority)
        if not self.lossless[prio]:
            self._deliver(frame)
            return
        n = len(frame)
        if not self.credit.received(prio, n):
            self.rx_overrun += 1
            return
        if prm.rx_buffer_bytes is None:
            self.credit.freed(prio, n)
            self._deliver(frame)
            return
        self._buffer(frame, prio, blocks(n))

    def _freed(self, prio: int, n: int) -> None:
        self.rx_total -= blocks(n)
        self.credit.freed(prio, n)

    def counters(self) -> dict[str, object]:
        return {**self.credit.counters(), "pause_rx": self.pause_rx,
                "held_frames": self.held_frames, "hold_refused": self.hold_refused,
                "rx_overrun": self.rx_overrun, "rx_max_blocks": self.rx_max}
