"""The host NIC's MAC with priority flow control: honours PAUSE per priority, and can
pause its leaf when its own receive buffer fills (a "slow receiver").

`HostMac` is a FramePort wrapped around the host's link port; give it to the Nic (or
Agent) instead of the raw port. Off (no HostMac) nothing changes.

Transmit: a frame's priority is its DSCP mapped by the same table the switches use
(QosSettings.dscp_priority, fabric.p4's DSCP -> priority; unmapped DSCPs and non-IP
frames are priority 0). While a priority is paused, its frames wait in the MAC in order
(data and the ACK/NAKs of QPs in that class, since those carry the QP's DSCP); CNPs in
their own class go on. A held queue is bounded (`hold_frames`); when full, `send`
refuses the frame, which the Nic treats as a transmit stall and retries.

Receive: MAC-control frames (EtherType 0x8808) are consumed here; a PFC frame pauses only
the `lossless` priorities (PFC is enabled for those), an 802.3x PAUSE every one. With `rx_buffer_bytes`
set, other frames go through a receive buffer drained at `rx_drain_bps` (the host's
processing rate); per lossless priority, above `rx_xoff_bytes` the MAC sends PAUSE to
its leaf (re-sent at half the pause time), at or below `rx_xon_bytes` a resume. A
frame that does not fit in the buffer is dropped and counted (`rx_overflow`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from emu.core.clock import Clock, TimerHandle
from emu.core.pfc import DEFAULT_QUANTA, NUM_PRIORITIES, PauseState, pfc_frame, quanta_ns
from emu.core.port import FramePort, PortStats

__all__ = ["HostMac", "HostPfcParams", "frame_priority", "host_pfc_params"]


@dataclass(frozen=True)
class HostMacParams:
    """Settings both host MACs (PFC and credit) have. Rates are those of the wire this
    process drives."""

    mac: str
    rate_bps: float
    dscp_priority: Mapping[int, int]
    lossless: frozenset[int] = frozenset({3})
    hold_frames: int = 256
    rx_buffer_bytes: int | None = None  # None: no receive buffer (frames handled at once)
    rx_drain_bps: float = 10e9
    mtu: int = 1500  # the host's: its largest frame is this plus the Ethernet header

    def __post_init__(self) -> None:
        if self.rx_buffer_bytes is not None and self.rx_drain_bps <= 0:
            raise ValueError("rx_drain_bps must be positive")
        bad = sorted(p for p in {*self.lossless, *self.dscp_priority.values()}
                     if not 0 <= p < NUM_PRIORITIES)
        if bad:  # frames of priority 9 are never paused, nor are a class's
            raise ValueError(f"priorities are 0..{NUM_PRIORITIES - 1}, got {bad[0]}")
        bad = sorted(d for d in self.dscp_priority if not 0 <= d <= 63)
        if bad:
            raise ValueError(f"DSCP values are 0..63, got {bad[0]}")


@dataclass(frozen=True)
class HostPfcParams(HostMacParams):
    """Settings of a host MAC with PFC."""

    global_pause: str = "honour"
    rx_xoff_bytes: int = 20_000
    rx_xon_bytes: int = 10_000
    pause_quanta: int = DEFAULT_QUANTA

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rx_buffer_bytes is not None and \
                not 0 <= self.rx_xon_bytes <= self.rx_xoff_bytes <= self.rx_buffer_bytes:
            raise ValueError("need 0 <= rx_xon <= rx_xoff <= rx_buffer bytes")


def host_pfc_params(d: Mapping[str, object], mac: str, rate_bps: float) -> HostPfcParams:
    """HostPfcParams from JSON (`python -m emu.roce agent --pfc`): lossless priorities,
    the DSCP -> priority map and optional HostPfcParams fields; ValueError when bad."""
    kw = dict(d)
    kw.pop("mode", None)
    try:
        lossless = frozenset(int(p) for p in kw.pop("lossless", [3]))  # type: ignore[attr-defined]
        dscp = {int(k): int(v) for k, v in kw.pop("dscp_priority", {}).items()}  # type: ignore[attr-defined]
        return HostPfcParams(mac=mac, rate_bps=rate_bps, dscp_priority=dscp,
                             lossless=lossless, **kw)  # type: ignore[arg-type]
    except (TypeError, AttributeError) as exc:
        raise ValueError(f"bad host PFC settings: {exc}") from None


def frame_priority(frame: bytes, dscp_priority: Mapping[int, int]) -> int:
    if frame[12:14] == b"\x08\x00" and len(frame) > 15:
        return dscp_priority.get(frame[15] >> 2, 0)
    return 0


class _TxMac(Protocol):
    """What put_frame needs of a host MAC (HostMac, emu.roce.credit.HostCreditMac)."""

    clock: Clock
    lower: FramePort
    busy_until: int
    stats: PortStats


def put_frame(mac: _TxMac, frame: bytes, rate_bps: float) -> bool:
    """A host MAC puts `frame` on its lower port: the link is busy for its serialisation
    (preamble, FCS and gap included) and the MAC's stats count what the wire took."""
    now = mac.clock.now_ns()
    mac.busy_until = max(now, mac.busy_until) + int((len(frame) + 24) * 8e9 / rate_bps)
    ok = mac.lower.send(frame)
    st = mac.stats
    if ok:
        st.tx_frames += 1
        st.tx_bytes += len(frame)
    else:
        st.tx_drops += 1
    return ok


class HostMacBase(FramePort):
    """What the PFC and the credit host MAC share: per-priority queues of held frames
    sent one at a time at the link rate, and the receive buffer drained at
    `rx_drain_bps`. A subclass says when a frame may leave and what draining frees."""

    params: HostMacParams

    def __init__(self, clock: Clock, lower: FramePort) -> None:
        super().__init__(lower.name)
        self.clock = clock
        self.lower = lower
        self.hold: list[deque[bytes]] = [deque() for _ in range(NUM_PRIORITIES)]
        self._flush_at: TimerHandle | None = None
        self.busy_until = 0  # the MAC's transmitter is busy until then
        self.held_frames = 0
        self.hold_refused = 0
        self.rx_q: deque[tuple[bytes, int]] = deque()
        self.rx_total = 0
        self.rx_max = 0
        self._draining = False

    # -- transmit ------------------------------------------------------------------------
    def _hold(self, hold: deque[bytes], frame: bytes) -> bool:
        """Queue `frame` behind its priority's held frames; False when that queue is full."""
        if len(hold) >= self.params.hold_frames:
            self.hold_refused += 1
            return False
        hold.append(frame)
        self.held_frames += 1
        return True

    def _put(self, frame: bytes) -> bool:
        return put_frame(self, frame, self.params.rate_bps)

    def _busy(self) -> bool:
        """Start of a flush turn: True (and the turn moved) while the transmitter is busy."""
        self._flush_at = None
        if self.busy_until > self.clock.now_ns():
            self._flush_at = self.clock.call_at(self.busy_until, self._flush)
            return True
        return False

    def _put_held(self, frame: bytes) -> None:
        """Send a frame taken from a hold queue; the next one waits for the link."""
        self._put(frame)
        if any(self.hold):
            self._flush_at = self.clock.call_at(self.busy_until, self._flush)

    def _flush(self) -> None:
        raise NotImplementedError

    # -- receive -------------------------------------------------------------------------
    def _buffer(self, frame: bytes, prio: int, size: int) -> None:
        """Put a received frame in the receive buffer, where it takes `size` units."""
        self.rx_q.append((frame, prio))
        self.rx_total += size
        self.rx_max = max(self.rx_max, self.rx_total)
        if not self._draining:
            self._draining = True
            self.clock.call_soon(self._drain)

    def _drain(self) -> None:
        if not self.rx_q:
            self._draining = False
            return
        frame, prio = self.rx_q.popleft()
        n = len(frame)
        self._freed(prio, n)
        self._deliver(frame)
        self.clock.call_later(max(1, int(n * 8e9 / self.params.rx_drain_bps)), self._drain)

    def _freed(self, prio: int, n: int) -> None:
        """A frame of `n` bytes left the receive buffer."""
        raise NotImplementedError


class HostMac(HostMacBase):
    params: HostPfcParams

    def __init__(self, clock: Clock, lower: FramePort, params: HostPfcParams) -> None:
        super().__init__(clock, lower)
        self.params = params
        # PFC enabled on the lossless priorities only (mlnx_qos --pfc): a PFC frame for
        # another priority is counted and ignored, as the NIC's MAC does.
        self.pause = PauseState(clock.now_ns, params.rate_bps, params.global_pause,
                                sum(1 << p for p in params.lossless))
        self.pause.on_resume = lambda mask: self._flush()
        # receive buffer (slow receiver)
        self.rx_bytes = [0] * NUM_PRIORITIES
        self.rx_overflow = 0
        self._xoff: dict[int, TimerHandle] = {}
        self.pause_tx = [0] * NUM_PRIORITIES
        self.resume_tx = [0] * NUM_PRIORITIES
        self._src = bytes.fromhex(params.mac.replace(":", ""))
        lower.set_receiver(self._rx)

    # -- transmit ------------------------------------------------------------------------
    def send(self, frame: bytes) -> bool:
        prio = frame_priority(frame, self.params.dscp_priority)
        hold = self.hold[prio]
        if hold or self.pause.until[prio] > self.clock.now_ns():
            if not self._hold(hold, frame):
                return False
            self._arm()
            return True
        return self._put(frame)

    def _arm(self) -> None:
        """Wake at the earliest pause expiry of a priority with frames held."""
        now = self.clock.now_ns()
        due = min((self.pause.until[p] for p in range(NUM_PRIORITIES) if self.hold[p]),
                  default=None)
        if due is None:
            return
        due = max(due, now)
        h = self._flush_at
        if h is not None:
            if h.when_ns <= due:
                return
            h.cancel()
        self._flush_at = self.clock.call_at(due, self._flush)

    def _flush(self) -> None:
        # Held frames leave one at a time at the link rate, highest priority first, so
        # a PAUSE arriving meanwhile still stops what has not started (a burst handed to
        # the link at once would be beyond the MAC's control).
        if self._busy():
            return
        now = self.clock.now_ns()
        for p in range(NUM_PRIORITIES - 1, -1, -1):
            hold = self.hold[p]
            if hold and self.pause.until[p] <= now:
                self._put_held(hold.popleft())
                return
        self._arm()

    # -- receive -------------------------------------------------------------------------
    def _rx(self, frame: bytes) -> None:
        if frame[12:14] == b"\x88\x08":
            self.pause.rate_bps = self.params.rate_bps
            self.pause.on_frame(frame)
            return
        if self.params.rx_buffer_bytes is None:
            self._deliver(frame)
            return
        prm = self.params
        n = len(frame)
        if self.rx_total + n > prm.rx_buffer_bytes:  # type: ignore[operator]
            self.rx_overflow += 1
            return
        prio = frame_priority(frame, prm.dscp_priority)
        used = self.rx_bytes[prio] = self.rx_bytes[prio] + n
        if prio in prm.lossless and used > prm.rx_xoff_bytes and prio not in self._xoff:
            self._send_pause(prio)
        self._buffer(frame, prio, n)

    def _freed(self, prio: int, n: int) -> None:
        self.rx_total -= n
        self.rx_bytes[prio] -= n
        if prio in self._xoff and self.rx_bytes[prio] <= self.params.rx_xon_bytes:
            self._xoff.pop(prio).cancel()
            self.lower.send(pfc_frame(self._src, {prio: 0}))
            self.resume_tx[prio] += 1

    def _send_pause(self, prio: int) -> None:
        q = self.params.pause_quanta
        self.lower.send(pfc_frame(self._src, {prio: q}))
        self.pause_tx[prio] += 1
        period = max(1, quanta_ns(q, self.params.rate_bps) // 2)
        self._xoff[prio] = self.clock.call_later(period, lambda: self._refresh(prio))

    def _refresh(self, prio: int) -> None:
        if prio in self._xoff:
            self._send_pause(prio)

    def counters(self) -> dict[str, object]:
        return {**self.pause.counters(), "pause_tx": list(self.pause_tx),
                "resume_tx": list(self.resume_tx), "held_frames": self.held_frames,
                "hold_refused": self.hold_refused, "rx_overflow": self.rx_overflow,
                "rx_max_bytes": self.rx_max}
