"""The send half of an RC queue pair: segmentation, PSNs, ACK/NAK processing and the
retransmission timer.

Sequence numbers are kept as absolute ints (0, 1, 2, ... from the QP's start) and
mapped to 24-bit PSNs only on the wire, so PSN wrap-around is handled in exactly one
place: the conversion of a received PSN to a distance from a known sequence number.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from struct import Struct, unpack_from

from emu.core.clock import Clock, TimerHandle
from emu.core.wire import MAX_MESSAGE_BYTES
from emu.roce import recovery as rec
from emu.roce import wire
from emu.roce.metrics import RequesterStats
from emu.roce.payload import LazyPayload
from emu.roce.verbs import SEND, WRITE, QpParams, QpSide, WorkRequest
from emu.roce.wire import PSN_MASK, Parsed

_pack_reth = Struct("!QII").pack
_pack_imm = Struct("!I").pack

# opcode tables indexed [op is write][position]: position 0 first, 1 middle, 2 last, 3 only
_OPS = {
    (False, False): (wire.OP_SEND_FIRST, wire.OP_SEND_MIDDLE, wire.OP_SEND_LAST, wire.OP_SEND_ONLY),
    (False, True): (wire.OP_SEND_FIRST, wire.OP_SEND_MIDDLE, wire.OP_SEND_LAST_IMM,
                    wire.OP_SEND_ONLY_IMM),
    (True, False): (wire.OP_WRITE_FIRST, wire.OP_WRITE_MIDDLE, wire.OP_WRITE_LAST,
                    wire.OP_WRITE_ONLY),
    (True, True): (wire.OP_WRITE_FIRST, wire.OP_WRITE_MIDDLE, wire.OP_WRITE_LAST_IMM,
                   wire.OP_WRITE_ONLY_IMM),
}


class Requester:
    """The send side: segmentation, PSNs, ACK/NAK processing, retransmission timer."""

    def __init__(self, qp: QpSide, p: QpParams, clock: Clock) -> None:
        self.qp = qp
        self.clock = clock
        self.mtu = p.mtu
        self.start_psn = p.start_psn & PSN_MASK
        self.window = p.max_outstanding_pkts
        self.rto_base_ns = p.rto_ns
        self.rto_ns = p.rto_ns
        self.rto_max_ns = p.rto_max_ns
        self.retry_cnt = p.retry_cnt
        self.retries_left = p.retry_cnt
        self.error_ns: int | None = None  # when the QP went to the error state
        self.s = rec.RequesterState()
        self.recovery = rec.make(p.recovery, p.sr_dupthresh)
        self.stats = RequesterStats()
        self.tail = 0  # next sequence number to assign to a posted packet
        self._wrs: list[WorkRequest] = []
        self._firsts: list[int] = []
        self._head = 0  # index of the oldest uncompleted WR
        self._cur: WorkRequest | None = None  # WR holding s.nxt (fast path)
        self._rto_deadline: int | None = None
        self._rto_timer: TimerHandle | None = None
        self._force_ackreq = False
        self._next_wr_id = 0

    # -- posting ---------------------------------------------------------------
    def post(self, data: bytes | bytearray | memoryview | LazyPayload, op: str = SEND, *,
             imm: int | None = None, va: int = 0, rkey: int = 0,
             on_complete: Callable[[WorkRequest], None] | None = None) -> WorkRequest:
        if op not in (SEND, WRITE):
            raise ValueError(f"unknown operation {op!r}")
        mv = data if isinstance(data, LazyPayload) else memoryview(data).cast("B")
        npkts = max(1, -(-len(mv) // self.mtu))
        if len(mv) > MAX_MESSAGE_BYTES:
            raise ValueError(f"message too large ({len(mv)} bytes; at most {MAX_MESSAGE_BYTES})")
        self._next_wr_id += 1
        wr = WorkRequest(self._next_wr_id, op, mv, imm, va, rkey, self.tail, npkts,
                         _OPS[(op == WRITE, imm is not None)], self.clock.now_ns(),
                         on_complete=on_complete)
        if self.error_ns is not None:
            # Posted to a QP in the error state: completes at once, flushed (verbs).
            self._end(wr, "wr_flush_err", wr.posted_ns)
            return wr
        self.tail += npkts
        self._wrs.append(wr)
        self._firsts.append(wr.first_seq)
        return wr

    def outstanding_wrs(self) -> int:
        return len(self._wrs) - self._head

    def sending_wr(self) -> WorkRequest | None:
        """The message whose packet was sent last (a CNP or re-path is counted to it)."""
        return self._cur

    def first_sends(self, wr: WorkRequest) -> int:
        """How many of `wr`'s packets have been sent at least once."""
        return min(wr.npkts, max(0, self.s.snd_max - wr.first_seq))

    # -- transmission ------------------------------------------------------------
    def has_work(self) -> bool:
        s = self.s
        return self.recovery.pending() or (s.nxt < self.tail and s.nxt - s.una < self.window)

    def _wr_for(self, seq: int) -> WorkRequest:
        cur = self._cur
        if cur is not None and cur.first_seq <= seq < cur.first_seq + cur.npkts:
            return cur
        i = bisect_right(self._firsts, seq, self._head) - 1
        wr = self._wrs[i]
        self._cur = wr
        return wr

    def next_frame(self, now: int) -> bytes | None:
        """Build the next packet to send (retransmission first), or None if none."""
        s = self.s
        rec_ = self.recovery
        seq = rec_.pop_retx(s) if rec_.retx else None
        if seq is None:
            seq = s.nxt
            if seq >= self.tail or seq - s.una >= self.window:
                return None
            s.nxt = seq + 1
        wr = self._cur
        if wr is None or not wr.first_seq <= seq < wr.first_seq + wr.npkts:
            wr = self._wr_for(seq)
        k = seq - wr.first_seq
        n = wr.npkts
        mtu = self.mtu
        ops = wr.opcodes
        ext = b""
        if n == 1:
            opcode = ops[3]
            ackreq = True
        elif k == 0:
            opcode = ops[0]
            ackreq = False
        elif k == n - 1:
            opcode = ops[2]
            ackreq = True
        else:
            opcode = ops[1]
            ackreq = False
        if k == 0 and wr.op == WRITE:
            ext = _pack_reth(wr.va, wr.rkey, len(wr.data))
        if k == n - 1 and wr.imm is not None:
            ext += _pack_imm(wr.imm & 0xFFFFFFFF)
        if self._force_ackreq or s.nxt - s.una >= self.window:
            # A sender its window stops asks for an ACK: the responder coalesces ACKs
            # (ack_every_pkts, a message's end), and one it never sends is a timeout.
            ackreq = True
            self._force_ackreq = False
        off = k * mtu
        payload = wr.data[off:off + mtu]
        plen = len(payload)
        pad = -plen & 3
        w = self.qp.wire
        frame = w._build(w._data, opcode, pad << 4,
                         ((self.start_psn + seq) & PSN_MASK) | (0x80000000 if ackreq else 0),
                         0, ext, payload, pad)
        st = self.stats
        st.data_pkts_sent += 1
        st.data_bytes_sent += plen
        if seq < s.snd_max:
            st.retx_pkts += 1
            wr.retx_pkts += 1
        else:
            s.snd_max = seq + 1
            if k == 0:
                wr.first_sent_ns = now
        if self._rto_deadline is None:
            self._arm_rto(now)
        rp = self.qp.rp
        if rp is not None and rp.active:
            rp.on_sent(len(frame))
        return frame

    # -- retransmission timer ------------------------------------------------------
    def _arm_rto(self, now: int) -> None:
        dl = now + self.rto_ns
        self._rto_deadline = dl
        t = self._rto_timer
        if t is None or t.when_ns > dl:
            self._move_rto_timer(dl)

    def _move_rto_timer(self, dl: int) -> None:
        # The timer is lazy: a deadline moved later is found when it fires (_on_rto sleeps
        # on), so an ACK costs no reschedule. A deadline moved earlier (progress reset a
        # backed-off RTO) must move the timer, or the next timeout fires at the old one.
        t = self._rto_timer
        if t is not None:
            t.cancel()
        self._rto_timer = self.clock.call_at(dl, self._on_rto)

    def _on_rto(self) -> None:
        self._rto_timer = None
        s = self.s
        if s.una >= s.snd_max:
            self._rto_deadline = None
            return
        now = self.clock.now_ns()
        dl = self._rto_deadline
        if dl is not None and dl > now:  # progress moved the deadline: sleep on
            self._rto_timer = self.clock.call_at(dl, self._on_rto)
            return
        self.stats.timeouts += 1
        # to the message of the oldest unacknowledged packet (not via _wr_for: _cur
        # stays the message being sent)
        self._wrs[bisect_right(self._firsts, s.una, self._head) - 1].timeouts += 1
        left = self.retries_left
        if left is not None:
            if left == 0:
                self._error(now)
                return
            self.retries_left = left - 1
        self.rto_ns = min(self.rto_ns * 2, self.rto_max_ns)
        self.recovery.on_timeout(s)
        self._force_ackreq = True
        if self.qp.plb.on_timeout(now):
            self.qp.repath()
        self._arm_rto(now)
        self.qp.kick()

    def _error(self, now: int) -> None:
        """Transport retries exhausted: the QP goes to the error state. Its oldest
        message completes with retry_exc_err, every later one is flushed, and it sends
        nothing more (no window, nothing queued for retransmission)."""
        self.error_ns = now
        self.stats.transport_retries_exceeded += 1
        self.window = 0
        self.recovery.abandon()
        self._rto_deadline = None
        wrs = self._wrs
        for i in range(self._head, len(wrs)):
            self._end(wrs[i], "retry_exc_err" if i == self._head else "wr_flush_err", now)
        self._head = len(wrs)

    def _end(self, wr: WorkRequest, status: str, now: int) -> None:
        wr.status = status
        wr.error_ns = now
        self.stats.msgs_failed += 1
        cb = wr.on_complete
        if cb is not None:
            # Never inside post() or a timer's own bookkeeping: from the clock, as a
            # completion queue would be polled.
            self.clock.call_soon(lambda: cb(wr))

    # -- ACK / NAK processing --------------------------------------------------------
    def on_ack(self, p: Parsed, frame: bytes) -> None:
        if p.end - p.off < 4:
            self.qp.nic.drops["malformed_ack"] += 1
            return
        aeth = unpack_from("!I", frame, p.off)[0]
        syndrome = aeth >> 24
        s = self.s
        st = self.stats
        una_psn = (self.start_psn + s.una) & PSN_MASK
        d = (p.psn - una_psn) & PSN_MASK
        outstanding = s.snd_max - s.una
        kind = syndrome >> 5
        if kind == 0:  # ACK: BTH.PSN is the last PSN acknowledged
            st.acks_rcvd += 1
            if d >= outstanding:
                st.stale_acks += 1
                return
            self._advance(s.una + d + 1)
        elif kind == 3:  # NAK
            st.naks_rcvd += 1
            if syndrome & 0x1F != 0:  # not a PSN sequence error: nothing to resend from
                return
            if d > outstanding:
                st.stale_acks += 1
                return
            una = s.una
            exp = una + d
            sack = None
            end = p.end - ((p.b43 >> 4) & 3)  # the SACK extension's pad
            if end - p.off > 4:
                ext = wire.parse_sack(frame, p.off + 4, end)
                if ext is not None:
                    st.sacks_rcvd += 1
                    # Relative to the una the PSNs were read against: _advance moves it.
                    base = una + ((ext[0] - una_psn) & PSN_MASK)
                    sack = (base, int.from_bytes(ext[1], "little"))
            self._advance(exp)
            self.recovery.on_nak(s, exp, sack)
        else:
            st.stale_acks += 1
            return
        self.qp.kick()

    def _advance(self, new_una: int) -> None:
        s = self.s
        if new_una <= s.una:
            return
        s.una = new_una
        if s.nxt < new_una:
            s.nxt = new_una
        now = self.clock.now_ns()
        self.rto_ns = self.rto_base_ns
        self.retries_left = self.retry_cnt
        if new_una < s.snd_max:
            self._arm_rto(now)
        else:
            self._rto_deadline = None
        self.recovery.on_ack(new_una)
        wrs = self._wrs
        h = self._head
        while h < len(wrs) and wrs[h].first_seq + wrs[h].npkts <= new_una:
            wr = wrs[h]
            wr.completed_ns = now
            wr.status = "success"
            h += 1
            self.stats.msgs_completed += 1
            if wr.on_complete is not None:
                wr.on_complete(wr)
        self._head = h
        if h > 256 and h * 2 > len(wrs):
            del wrs[:h]
            del self._firsts[:h]
            self._head = 0
        qp = self.qp
        if qp.plb.on_ack(new_una, s.snd_max, now):
            qp.repath()

    def idle(self) -> bool:
        """Nothing posted is unacknowledged."""
        return self.s.una >= self.tail
