"""The receive half of an RC queue pair: in-order delivery (or a reorder buffer with
selective repeat), ACK/NAK generation, CNPs on ECN-marked packets."""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Callable
from struct import unpack_from

from emu.core.clock import Clock
from emu.roce import wire
from emu.roce.dcqcn import NotificationPoint
from emu.roce.metrics import ResponderStats
from emu.roce.reorder import ReorderBuffer
from emu.roce.verbs import SEND, WRITE, Message, QpParams, QpSide
from emu.roce.wire import PSN_HALF, PSN_MASK, Parsed

NEVER_NS = -(1 << 60)  # no ACK yet (below any clock reading, an int that stays a machine word)


class Responder:
    """The receive side: PSN checking, reorder buffer, reassembly, ACK/NAK, CNP."""

    def __init__(self, qp: QpSide, p: QpParams, clock: Clock,
                 np: NotificationPoint | None) -> None:
        self.qp = qp
        self.clock = clock
        self.start_psn = p.peer_start_psn & PSN_MASK
        self.epsn = 0  # absolute expected sequence number
        self.sr = p.recovery == "sr"
        self.window = p.reorder_window_pkts
        self.ack_every = p.ack_every_pkts
        self.ack_interval_ns = p.ack_interval_ns
        # Until the first packet arrives there is no ACK to count from: the first one
        # starts the interval (as if the connection's setup had just been acknowledged).
        # Time 0 did, so the first packet was ACKed at once or not depending on how long
        # the run waited before its first send.
        self._last_ack_ns = NEVER_NS
        self.deliver = p.deliver
        self.np = np  # None: congestion control off, so no CNPs (ECN marks still counted)
        self.buf = ReorderBuffer(max(1, p.reorder_window_pkts))
        # Late vs lost: `high` is one past the highest sequence number that arrived (within
        # the window); `_seen` bit i: epsn + i arrived at least once (held or, go-back-N,
        # dropped). A jump of `high` leaves holes, each remembered with the IP id of the
        # frame that overtook it (`_ov_start[k]`: first hole of the jump, `_ov_id[k]`).
        self.high = 0
        self._seen = 0
        self._ov_start: list[int] = []
        self._ov_id: list[int] = []
        self.stats = ResponderStats()
        self.msn = 0
        self.nak_sent = False
        self._unacked = 0
        self._dups = 0
        self._ooo = 0
        # message being reassembled
        self._in_msg = False
        self._chunks: list[memoryview] = []
        self._hash: hashlib._Hash | None = None
        self._len = 0
        self._op = SEND
        self._va = 0
        self._rkey = 0
        self._first_psn = 0
        self._first_ns = 0
        self._ecn = 0
        self.on_message: Callable[[Message], None] | None = None

    def on_data(self, p: Parsed, frame: bytes, now: int) -> None:
        st = self.stats
        st.data_pkts_rcvd += 1
        if p.ecn == 3:
            st.ecn_marked_rcvd += 1
            self._ecn += 1
            np = self.np
            if np is not None and np.on_ce(now):
                st.cnps_sent += 1
                self.qp.nic.send_ctrl(self.qp.wire.cnp())
        epsn = self.epsn
        d = (p.psn - self.start_psn - epsn) & PSN_MASK
        if d == 0:
            if self.high <= epsn:
                st.reorder_distance.add(0)
            elif not self._seen & 1:
                self._hole_filled(frame, epsn)
            self._accept(p.opcode, frame, p.off, p.end - ((p.b43 >> 4) & 3), now)
            epsn += 1
            self.nak_sent = False
            if self.sr:
                buf = self.buf
                buf.advance()
                if buf.bits & 1:
                    while True:
                        item = buf.pop(epsn)
                        if item is None:
                            break
                        self._accept(item[0], item[1], item[2], item[3], now)
                        buf.advance()
                        epsn += 1
            n = epsn - self.epsn
            drained = n > 1
            self.epsn = epsn
            if self.high <= epsn:
                self.high = epsn
                if self._ov_start:
                    self._ov_start.clear()
                    self._ov_id.clear()
                    self._seen = 0
            else:
                self._seen >>= n
                starts = self._ov_start
                if len(starts) > 1 and starts[1] <= epsn:  # forget jumps wholly below epsn
                    k = bisect_right(starts, epsn) - 1
                    del starts[:k]
                    del self._ov_id[:k]
            self._unacked += 1
            if self._last_ack_ns == NEVER_NS:
                self._last_ack_ns = now
            if (p.ackreq or drained or self._unacked >= self.ack_every
                    or p.opcode in wire.ENDS_MSG or now - self._last_ack_ns >= self.ack_interval_ns):
                self.send_ack()
        elif d >= PSN_HALF:  # behind: a duplicate
            st.duplicates += 1
            self._dups += 1
            if p.ackreq or self._dups >= self.ack_every:
                self.send_ack()
        else:  # ahead of the expected PSN
            if d < self.window:  # late vs lost bookkeeping (see ResponderStats)
                seq = epsn + d
                high = self.high
                bit = 1 << d
                if seq >= high:
                    if seq > high:  # [high, seq) overtaken by this frame
                        self._ov_start.append(high)
                        self._ov_id.append((frame[18] << 8) | frame[19])
                    self.high = seq + 1
                    st.reorder_distance.add(0)
                elif not self._seen & bit:
                    self._hole_filled(frame, seq)
                self._seen |= bit
            if not self.sr:
                st.out_of_sequence += 1
                if not self.nak_sent:
                    self.nak_sent = True
                    st.naks_sent += 1
                    self._send_nak()
                return
            if d >= self.window:
                st.outside_window += 1
                return
            buf = self.buf
            first_hole = not buf.bits
            if not buf.put(epsn + d, d, (p.opcode, frame, p.off, p.end - ((p.b43 >> 4) & 3))):
                st.duplicates += 1
                self._dups += 1
                if p.ackreq or self._dups >= self.ack_every:
                    self.send_ack()
                return
            if buf.hwm > st.reorder_hwm:
                st.reorder_hwm = buf.hwm
            self._ooo += 1
            if first_hole or p.ackreq or self._ooo >= self.ack_every:
                self.send_ack()

    # -- late (reordered) vs lost: see ResponderStats ------------------------------------
    def _hole_filled(self, frame: bytes, seq: int) -> None:
        """First arrival of `seq` after a higher sequence number: late or a resend. The
        original was sent before the frame that overtook it, a retransmission after it
        (the IP id counts the QP's frames; valid within 2^15 frames)."""
        st = self.stats
        ov = self._ov_id[bisect_right(self._ov_start, seq) - 1]
        if 0 < ((ov - ((frame[18] << 8) | frame[19])) & 0xFFFF) < 0x8000:
            st.late_pkts += 1
            st.reorder_distance.add(self.high - 1 - seq)
        else:
            st.lost_gaps += 1

    def _accept(self, opcode: int, frame: bytes, off: int, end: int, now: int) -> None:
        """Consume the in-order packet at the expected PSN."""
        if opcode in wire.STARTS_MSG:
            if self._in_msg:
                self.stats.bad_opcode_sequence += 1  # previous message never ended
            self._in_msg = True
            self._op = WRITE if opcode in wire.WRITE_OPCODES else SEND
            self._first_psn = (self.start_psn + self.epsn) & PSN_MASK
            self._first_ns = now
            self._len = 0
            self._chunks = []
            self._ecn = 0
            self._hash = hashlib.sha256() if self.deliver == "digest" else None
            if opcode in wire.HAS_RETH:
                if end - off < 16:
                    self.stats.bad_opcode_sequence += 1
                    self._in_msg = False
                    return
                self._va, self._rkey, _dmalen = unpack_from("!QII", frame, off)
                off += 16
            else:
                self._va = self._rkey = 0
        elif not self._in_msg:
            self.stats.bad_opcode_sequence += 1
            return
        imm = None
        if opcode in wire.HAS_IMM:
            if end - off < 4:
                self.stats.bad_opcode_sequence += 1
                self._in_msg = False
                return
            imm = unpack_from("!I", frame, off)[0]
            off += 4
        if end > off:
            chunk = memoryview(frame)[off:end]
            self._len += end - off
            if self._hash is not None:
                self._hash.update(chunk)
            elif self.deliver == "bytes":
                self._chunks.append(chunk)
        if opcode in wire.ENDS_MSG:
            self._in_msg = False
            self.msn = (self.msn + 1) & PSN_MASK
            st = self.stats
            st.msgs_delivered += 1
            st.payload_bytes_delivered += self._len
            cb = self.on_message
            if cb is not None:
                msg = Message(self._op, self._len, imm, self._va, self._rkey, self._first_psn,
                              now, self._first_ns, ecn_marked=self._ecn)
                if self._hash is not None:
                    msg.sha256 = self._hash.hexdigest()
                elif self.deliver == "bytes":
                    msg.data = b"".join(self._chunks)
                cb(msg)
            self._chunks = []
            self._hash = None

    def send_ack(self) -> None:
        """Cumulative ACK, or with holes in the reorder buffer a NAK carrying a SACK."""
        self._unacked = self._dups = self._ooo = 0
        self._last_ack_ns = self.clock.now_ns()
        qp = self.qp
        if self.sr and self.buf.bits:
            epsn_psn = (self.start_psn + self.epsn) & PSN_MASK
            ext = wire.sack_ext(epsn_psn, self.buf.sack_bitmap())
            self.stats.naks_sent += 1
            qp.nic.send_ctrl(qp.wire.ack(epsn_psn, wire.SYN_NAK_PSN_SEQ_ERR, self.msn, ext))
            return
        self.stats.acks_sent += 1
        qp.nic.send_ctrl(qp.wire.ack((self.start_psn + self.epsn - 1) & PSN_MASK,
                                     wire.SYN_ACK, self.msn))

    def _send_nak(self) -> None:
        qp = self.qp
        qp.nic.send_ctrl(qp.wire.ack((self.start_psn + self.epsn) & PSN_MASK,
                                     wire.SYN_NAK_PSN_SEQ_ERR, self.msn))
