"""Requester-side loss recovery: go-back-N (classic RoCE NICs) and selective repeat.

Both work on absolute sequence numbers of the requester: `una` (oldest unacknowledged),
`nxt` (next to transmit), `snd_max` (one past the highest ever transmitted).

Go-back-N: a NAK "PSN sequence error" for PSN e, or a timeout (e = una), moves `nxt`
back to e, so everything from e on is sent again. Under packet spraying, reordering
alone triggers NAKs, hence spurious retransmissions: that is the point of modelling it.
A NAK for the same PSN as the previous one acted on is ignored: the responder NAKs
once per gap, so a repeat is stale and the timeout covers a lost retransmission.

Selective repeat: the responder's SACK bitmap (see `wire`) marks received PSNs. A hole
is declared lost once `dupthresh` PSNs above it are SACKed (reordering from spraying
is tolerated up to that depth) and is retransmitted once per recovery episode. Without
a bitmap (NAK only), the NAKed PSN alone is resent. A timeout resends every
outstanding PSN not SACKed and opens a new episode.
"""

from __future__ import annotations

from collections import deque
from typing import Literal, get_args

# A QP's loss recovery, as configurations and the command line name it.
RecoveryMode = Literal["gbn", "sr"]
RECOVERY_MODES: tuple[str, ...] = get_args(RecoveryMode)


class GoBackN:
    name = "gbn"
    retx: tuple[int, ...] = ()  # never anything queued: lets the send path skip a call

    def __init__(self) -> None:
        self.last_nak: int | None = None
        self.rewinds = 0

    def on_ack(self, una: int) -> None:
        return None

    def on_nak(self, req: RequesterState, exp: int, sack: tuple[int, int] | None) -> None:
        if exp == self.last_nak:
            return
        self.last_nak = exp
        if req.nxt > exp:
            req.nxt = exp
            self.rewinds += 1

    def on_timeout(self, req: RequesterState) -> None:
        self.last_nak = None
        req.nxt = req.una

    def pop_retx(self, req: RequesterState) -> int | None:
        return None

    def abandon(self) -> None:
        return None

    def pending(self) -> bool:
        return False


class SelectiveRepeat:
    name = "sr"

    def __init__(self, dupthresh: int = 3) -> None:
        self.dupthresh = max(1, dupthresh)
        self.sacked: set[int] = set()
        self.retx: deque[int] = deque()
        self.retx_done: set[int] = set()  # resent in this episode

    def on_ack(self, una: int) -> None:
        if self.sacked:
            self.sacked = {s for s in self.sacked if s >= una}
        if self.retx_done:
            self.retx_done = {s for s in self.retx_done if s >= una}

    def on_nak(self, req: RequesterState, exp: int, sack: tuple[int, int] | None) -> None:
        if sack is None:
            self._queue(exp)
            return
        base, bits = sack  # bit i: base + i received
        if bits == 0:
            return
        sacked = self.sacked
        off = 0
        b = bits
        while b:
            if b & 1:
                sacked.add(base + off)
            b >>= 1
            off += 1
        # Holes below the highest SACK with at least dupthresh SACKs above them.
        top = base + bits.bit_length()  # one past the highest SACKed
        above = 0
        for seq in range(top - 1, base - 1, -1):
            if seq in sacked:
                above += 1
            elif above >= self.dupthresh and seq < req.snd_max:
                self._queue(seq)

    def _queue(self, seq: int) -> None:
        if seq not in self.retx_done:
            self.retx_done.add(seq)
            self.retx.append(seq)

    def on_timeout(self, req: RequesterState) -> None:
        self.retx.clear()
        self.retx_done.clear()
        # una goes first even if SACKed, so a lost final ACK is always answered again.
        self.sacked.discard(req.una)
        for seq in range(req.una, req.snd_max):
            if seq not in self.sacked:
                self._queue(seq)

    def pop_retx(self, req: RequesterState) -> int | None:
        retx = self.retx
        while retx:
            seq = retx.popleft()
            if seq >= req.una and seq not in self.sacked:
                return seq
        return None

    def pending(self) -> bool:
        return bool(self.retx)

    def abandon(self) -> None:
        """The QP is in the error state: nothing is resent."""
        self.retx.clear()


class RequesterState:
    """The sequence-number state the recovery policies act on."""

    __slots__ = ("una", "nxt", "snd_max")

    def __init__(self) -> None:
        self.una = 0
        self.nxt = 0
        self.snd_max = 0


Recovery = GoBackN | SelectiveRepeat


def make(mode: str, dupthresh: int = 3) -> GoBackN | SelectiveRepeat:
    if mode == "gbn":
        return GoBackN()
    if mode == "sr":
        return SelectiveRepeat(dupthresh)
    raise ValueError(f"unknown recovery mode {mode!r} (gbn or sr)")
