"""A host NIC: one FramePort, QPs demultiplexed by destination QPN, a paced transmit
scheduler, and per-reason drop counters for frames that reach no QP."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from emu.core.clock import Clock, TimerHandle
from emu.core.port import FramePort
from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.roce import wire
from emu.roce.dcqcn import DcqcnParams, NotificationPoint, ReactionPoint, scaled
from emu.roce.metrics import DropCounter, LagHistogram
from emu.roce.pacing import Dilation, Pacer
from emu.roce.plb import Plb, PlbParams
from emu.roce.qp import QpParams, QueuePair
from emu.roce.verbs import rto_cap_ns


@dataclass
class NicParams:
    """Host NIC settings. Rates and durations nominal; `dilation` maps them to the wire."""

    mac: str
    ip: str
    line_rate_bps: float | None = 100e9  # None: no pacing at all (send as fast as possible)
    dilation: float = 1.0
    timer_resolution_ns: int = 0
    mtu: int = 1024
    dcqcn: DcqcnParams = field(default_factory=DcqcnParams)
    plb: PlbParams = field(default_factory=PlbParams)
    tx_batch: int = 64  # frames per scheduler turn before yielding to the clock
    tx_retry_ns: int = 50_000  # wait after the port refused a frame
    pacing_burst_ns: int = 0  # catch-up allowance for late timer wakeups (wire time; the
    # NIC allows at least one MTU frame at the line rate, Nic._burst_ns)
    wire_overhead_bytes: int = WIRE_OVERHEAD_BYTES
    min_rto_ns: int = 0  # floor of the (dilated) RTO in clock time


class Nic:
    def __init__(self, clock: Clock, port: FramePort, params: NicParams) -> None:
        self.clock = clock
        self.port = port
        self.params = params
        self.qps: dict[int, QueuePair] = {}
        self.drops = DropCounter()
        self.ctrl_tx_drops = 0
        self.tx_stalls = 0
        self.dilation = Dilation(params.dilation, params.timer_resolution_ns,
                                 params.line_rate_bps,
                                 params.mtu + wire.DATA_HEADER_BYTES + WIRE_OVERHEAD_BYTES)
        self.wire_line_rate = self.dilation.wire_line_rate_bps
        floor = self.dilation.floor_ns()
        self.dcqcn, self.clamped = scaled(params.dcqcn, self.dilation, floor)
        self._active: deque[QueuePair] = deque()
        self._tx_handle: TimerHandle | None = None
        self._tx_when: int | None = None
        self._stalled: bytes | None = None
        # Catch-up allowance of the pacers: the configured one (late real-clock wakeups,
        # wire time) and at least one MTU frame at the line rate. That frame scales with
        # the dilation, as the time a QP waits for others on the line does: a wire-time
        # allowance alone capped that credit at a different modelled time at each D.
        self._burst_ns = max(params.pacing_burst_ns, floor)
        self._line = Pacer(self.wire_line_rate, self._burst_ns, params.wire_overhead_bytes)
        # How late transmit turns run against the time they were scheduled for (the paced
        # send time, or "now" for a kick): on a real clock, a host CPU that cannot keep the
        # pacing schedule shows here. Microseconds, quarter-octave buckets, plus the max.
        self.tx_lag = LagHistogram()
        self.tx_lag_max_ns = 0
        self.on_message: Callable[[QueuePair, object], None] | None = None
        port.set_receiver(self.on_frame)

    # -- configuration --------------------------------------------------------------
    def add_qp(self, p: QpParams) -> QueuePair:
        if p.qpn in self.qps:
            raise ValueError(f"QPN {p.qpn} already exists")
        if not 0 < p.qpn <= wire.PSN_MASK:
            raise ValueError("QPN must be in 1..2^24-1")
        d = self.dilation
        p.rto_ns = max(d.time_ns(p.rto_ns), self.params.min_rto_ns)
        p.ack_interval_ns = d.time_ns(p.ack_interval_ns)
        # Repeated timeouts double the RTO (reset by progress) unless the QP runs a
        # fixed IBTA timer. The cap is a duration like the RTO, dilated alike: the
        # number of doublings a QP may make must not depend on D.
        p.rto_max_ns = rto_cap_ns(p.rto_ns, d.time_ns(p.rto_max_ns), p.rto_backoff)
        dc = self.dcqcn
        line = self.wire_line_rate
        pacer = Pacer(line, self._burst_ns, self.params.wire_overhead_bytes)
        # Congestion control off: no notification point either (no CNPs; marks counted).
        np = NotificationPoint(dc.min_time_between_cnps_ns) if dc.enabled else None
        plb_p = self.params.plb
        # the suspension after a timeout is a modelled time, like every other timer
        # and a CNP stands for the marks of up to one CNP gap of the peer (its NP's,
        # from the same DCQCN parameters; already on the wire clock)
        plb_p = replace(plb_p, suspend_after_timeout_ns=d.wire_ns(plb_p.suspend_after_timeout_ns),
                        cnp_gap_ns=plb_p.cnp_gap_ns or dc.min_time_between_cnps_ns)
        plb = Plb(plb_p, seed=p.qpn ^ p.path.udp_sport)
        rp = None
        if dc.enabled and line is not None:
            retime = dc.retime_pacing

            def on_rate(rc: float) -> None:
                pacer.set_rate(rc)
                if retime:
                    pacer.retime(self.clock.now_ns())
                    # a raised rate may make the QP's next packet due before the NIC's
                    # next transmit turn: bring it forward (_schedule never delays one)
                    if qp.queued:
                        self._schedule(pacer.next_ns)
            rp = ReactionPoint(dc, line, self.clock, on_rate)
        qp = QueuePair(self, p, rp=rp, np=np, pacer=pacer, plb=plb)
        self.qps[p.qpn] = qp
        return qp

    # -- receive ---------------------------------------------------------------------
    def on_frame(self, frame: bytes) -> None:
        p = wire.parse(frame)
        if isinstance(p, str):
            self.drops[p] += 1
            return
        qp = self.qps.get(p.dqpn)
        if qp is None:
            self.drops["unknown_qpn"] += 1
            return
        if qp.requester.error_ns is not None:  # a QP in the error state takes nothing in
            self.drops["qp_error"] += 1
            return
        op = p.opcode
        if op < 0x11:
            if op in wire.DATA_OPCODES:
                qp.responder.on_data(p, frame, self.clock.now_ns())
            else:
                self.drops["unsupported_opcode"] += 1
        elif op == wire.OP_ACK:
            qp.requester.on_ack(p, frame)
        elif op == wire.OP_CNP:
            qp.on_cnp()
        else:
            self.drops["unsupported_opcode"] += 1

    def tx_lag_stats(self) -> dict[str, float | int]:
        """Transmit-turn lateness: max, p99 (upper edge of its bucket, within 19%), turns."""
        return {"max_us": self.tx_lag_max_ns / 1000, "p99_us": self.tx_lag.quantile_upper(0.99),
                "turns": self.tx_lag.total()}

    def send_ctrl(self, frame: bytes) -> None:
        """ACK/NAK/CNP frames go out at once, ahead of paced data."""
        if not self.port.send(frame):
            self.ctrl_tx_drops += 1

    # -- transmit scheduler -----------------------------------------------------------
    def kick(self, qp: QueuePair) -> None:
        now = self.clock.now_ns()
        if not qp.queued:
            # Active again after having nothing to send: no pacing credit for that time
            # (Pacer.restart), for the QP and, if the NIC sent nothing either, the line.
            qp.pacer.restart(now)
            if not self._active:
                self._line.restart(now)
            qp.queued = True
            self._active.append(qp)
        self._schedule(now)

    def _schedule(self, when: int) -> None:
        h = self._tx_handle
        if h is not None:
            if self._tx_when is not None and self._tx_when <= when:
                return
            h.cancel()
        self._tx_when = when
        self._tx_handle = self.clock.call_at(when, self._tx)

    def _stall(self, frame: bytes, now: int) -> None:
        """The port refused `frame`: keep it for the retry, which comes first."""
        self._stalled = frame
        self.tx_stalls += 1
        self._schedule(now + self.params.tx_retry_ns)

    def _tx(self) -> None:
        clock = self.clock
        now = clock.now_ns()
        when = self._tx_when
        late = 0 if when is None or now <= when else now - when
        if when is not None:
            self.tx_lag.add(late / 1000)
            if late > self.tx_lag_max_ns:
                self.tx_lag_max_ns = late
        self._tx_handle = None
        self._tx_when = None
        send = self.port.send
        if self._stalled is not None:
            if not send(self._stalled):
                self.tx_stalls += 1
                self._schedule(now + self.params.tx_retry_ns)
                return
            self._stalled = None
        active = self._active
        line = self._line
        budget = self.params.tx_batch
        paced = line.rate_bps is not None or self.dcqcn.enabled
        earliest: int | None = None
        skipped = 0
        if not paced and len(active) == 1:
            # One unpaced QP (the common benchmark / line-rate-less case): a tight loop.
            qp = active[0]
            next_frame = qp.requester.next_frame
            while budget > 0:
                frame = next_frame(now)
                if frame is None:
                    active.popleft()
                    qp.queued = False
                    return
                budget -= 1
                if not send(frame):
                    self._stall(frame, now)
                    return
            self._schedule(clock.now_ns())
            return
        while active and budget > 0:
            if line.next_ns > now:
                earliest = line.next_ns
                break
            qp = active.popleft()
            req = qp.requester
            t = qp.pacer.next_ns
            if t > now:
                active.append(qp)
                if earliest is None or t < earliest:
                    earliest = t
                skipped += 1
                if skipped >= len(active):
                    break
                continue
            skipped = 0
            frame = req.next_frame(now)
            if frame is None:
                qp.queued = False
                continue
            if paced:
                n = len(frame)
                qp.pacer.on_send(n, now, late)
                line.on_send(n, now, late)
            active.append(qp)
            budget -= 1
            if not send(frame):
                self._stall(frame, now)
                return
        if not active:
            return
        if budget <= 0:
            self._schedule(clock.now_ns())
        elif earliest is not None:
            self._schedule(earliest)
