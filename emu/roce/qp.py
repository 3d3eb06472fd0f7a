"""Reliable-connected queue pairs: requester (send queue) and responder halves.

Sequence numbers are kept as absolute ints (0, 1, 2, ... from the QP's start) and
mapped to 24-bit PSNs only on the wire, so PSN wrap-around is handled in exactly one
place: the conversion of a received PSN to a distance from a known sequence number.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from struct import Struct, unpack_from
from typing import Protocol

from emu.core.clock import Clock, TimerHandle
from emu.roce import recovery as rec
from emu.roce import wire
from emu.roce.dcqcn import NotificationPoint, ReactionPoint
from emu.roce.metrics import DropCounter, RequesterStats, ResponderStats
from emu.roce.pacing import Pacer
from emu.roce.payload import LazyPayload
from emu.roce.plb import Plb
from emu.roce.reorder import ReorderBuffer
from emu.roce.wire import PSN_HALF, PSN_MASK, Parsed

_pack_reth = Struct("!QII").pack
_pack_imm = Struct("!I").pack

SEND = "send"
WRITE = "write"

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


@dataclass(eq=False)
class WorkRequest:
    """One posted message (SEND or RDMA WRITE)."""

    wr_id: int
    op: str
    data: memoryview | LazyPayload  # read by slices; a LazyPayload builds bytes on demand
    imm: int | None
    va: int
    rkey: int
    first_seq: int
    npkts: int
    opcodes: tuple[int, int, int, int]
    posted_ns: int
    completed_ns: int | None = None
    first_sent_ns: int | None = None
    on_complete: Callable[[WorkRequest], None] | None = None

    @property
    def length(self) -> int:
        return len(self.data)


@dataclass(eq=False)
class Message:
    """A message delivered by the responder, in order, exactly once."""

    op: str
    length: int
    imm: int | None
    va: int
    rkey: int
    first_psn: int
    completed_ns: int
    first_ns: int
    data: bytes | None = None  # with deliver="bytes"
    sha256: str | None = None  # with deliver="digest"
    ecn_marked: int = 0


@dataclass
class QpParams:
    """Everything one QP needs, in wire units (see config.QpConfig for the user view)."""

    qpn: int
    path: wire.Path
    start_psn: int = 0
    peer_start_psn: int = 0
    mtu: int = 1024
    recovery: str = "gbn"
    reorder_window_pkts: int = 256
    max_outstanding_pkts: int = 256
    ack_every_pkts: int = 16
    ack_interval_ns: int = 16_000  # ACK an in-order packet arriving this long after the last ACK
    sr_dupthresh: int = 8
    rto_ns: int = 4_000_000
    rto_max_ns: int = 256_000_000
    deliver: str = "digest"  # "bytes", "digest" or "none"
    extra: dict[str, object] = field(default_factory=dict)


class Requester:
    """The send side: segmentation, PSNs, ACK/NAK processing, retransmission timer."""

    def __init__(self, qp: QueuePair, p: QpParams, clock: Clock) -> None:
        self.qp = qp
        self.clock = clock
        self.mtu = p.mtu
        self.start_psn = p.start_psn & PSN_MASK
        self.window = p.max_outstanding_pkts
        self.rto_base_ns = p.rto_ns
        self.rto_ns = p.rto_ns
        self.rto_max_ns = p.rto_max_ns
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
        if len(mv) >= 1 << 31:
            raise ValueError("message too large (>= 2 GiB)")
        self._next_wr_id += 1
        wr = WorkRequest(self._next_wr_id, op, mv, imm, va, rkey, self.tail, npkts,
                         _OPS[(op == WRITE, imm is not None)], self.clock.now_ns(),
                         on_complete=on_complete)
        self.tail += npkts
        self._wrs.append(wr)
        self._firsts.append(wr.first_seq)
        return wr

    def outstanding_wrs(self) -> int:
        return len(self._wrs) - self._head

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
        if self._force_ackreq:
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
        self._rto_deadline = now + self.rto_ns
        if self._rto_timer is None:
            self._rto_timer = self.clock.call_at(self._rto_deadline, self._on_rto)

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
        self.rto_ns = min(self.rto_ns * 2, self.rto_max_ns)
        self.recovery.on_timeout(s)
        self._force_ackreq = True
        if self.qp.plb.on_timeout():
            self.qp.repath()
        self._arm_rto(now)
        self.qp.nic.kick(self.qp)

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
        self.qp.nic.kick(self.qp)

    def _advance(self, new_una: int) -> None:
        s = self.s
        if new_una <= s.una:
            return
        s.una = new_una
        if s.nxt < new_una:
            s.nxt = new_una
        now = self.clock.now_ns()
        self.rto_ns = self.rto_base_ns
        self._rto_deadline = now + self.rto_ns if new_una < s.snd_max else None
        self.recovery.on_ack(new_una)
        wrs = self._wrs
        h = self._head
        while h < len(wrs) and wrs[h].first_seq + wrs[h].npkts <= new_una:
            wr = wrs[h]
            wr.completed_ns = now
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
        if qp.plb.on_ack(new_una, s.snd_max):
            qp.repath()

    def idle(self) -> bool:
        """Nothing posted is unacknowledged."""
        return self.s.una >= self.tail


class Responder:
    """The receive side: PSN checking, reorder buffer, reassembly, ACK/NAK, CNP."""

    def __init__(self, qp: QueuePair, p: QpParams, clock: Clock,
                 np: NotificationPoint | None) -> None:
        self.qp = qp
        self.clock = clock
        self.start_psn = p.peer_start_psn & PSN_MASK
        self.epsn = 0  # absolute expected sequence number
        self.sr = p.recovery == "sr"
        self.window = p.reorder_window_pkts
        self.ack_every = p.ack_every_pkts
        self.ack_interval_ns = p.ack_interval_ns
        self._last_ack_ns = 0
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

    def on_cnp(self) -> None:
        self.cnps_rcvd += 1
        self.requester.stats.cnps_rcvd += 1
        self.plb.on_cnp()
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
        self.sport_history.append((self.nic.clock.now_ns(), new_port))
