"""Link-level credit-based flow control per priority, as InfiniBand does it per virtual
lane: the update frame codec and the per-link-end state machine (`CreditPort`).

Shared by the switch traffic manager (emu.p4.v1model.credit), the host NIC
(emu.roce.credit) and the switch daemon; nothing here is in the P4 program.

The scheme (IBA volume 1, link-level flow control), per lossless priority:
  - the sender counts the 64-byte blocks it has sent, modulo 4096: FCTBS;
  - the receiver counts the blocks it has received, ABR, and advertises an absolute
    limit FCCL = ABR + free blocks of its buffer (at most 2048 ahead), modulo 4096;
  - the sender starts a packet of n blocks only if (FCCL - (FCTBS + n)) mod 4096 <= 2048;
  - every update carries the sender's FCTBS too: the receiver sets ABR to it, so blocks
    lost on the wire are given back, and a lost update is healed by the next one.
An update frame is re-sent periodically while it matters (buffer in use, limit not yet
advertised, or the sender waiting for credit: its updates then ask for a reply).

Frame (big-endian, padded with zeros to 60 bytes, FCS not carried):
    dst 01:80:C2:00:00:0E | src | EtherType 0x88B5 | version (1) | flags (1)
    | priority (1) | reserved (1, zero) | FCTBS (2, 12 bits used) | FCCL (2, 12 bits used)
flags bit 0: "reply requested" (the sender is waiting for credit). See docs/credit.md.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from .clock import Clock, TimerHandle
from .wire import mac_bytes

__all__ = [
    "BLOCK_BYTES", "CREDIT_DST", "CREDIT_VERSION", "ETHERTYPE_CREDIT", "FLAG_REQUEST",
    "HALF", "MODULO", "CreditPort", "CreditSettings", "CreditUpdate", "blocks",
    "check_buffer", "check_link_buffers", "credit_frame", "fits", "min_buffer_bytes", "parse_credit",
]

ETHERTYPE_CREDIT = 0x88B5  # IEEE 802 local experimental EtherType 1
CREDIT_DST = bytes.fromhex("0180c200000e")  # nearest-bridge group: never relayed
CREDIT_VERSION = 1
FLAG_REQUEST = 0x01
BLOCK_BYTES = 64
MODULO = 4096
HALF = 2048
MIN_FRAME = 60
NUM_PRIORITIES = 8  # as emu.core.pfc (which imports this module)
_ETYPE = b"\x88\xb5"
_BODY = struct.Struct("!BBBBHH")
_MASK = MODULO - 1


def blocks(nbytes: int) -> int:
    """Flow-control blocks a frame of `nbytes` takes (64 bytes each, rounded up)."""
    return (nbytes + BLOCK_BYTES - 1) // BLOCK_BYTES


ETH_HEADER = 14  # a frame's bytes beyond its MTU (FCS not carried)


def min_buffer_bytes(mtu: int) -> int:
    """Two maximum frames of a link of `mtu`, in whole blocks: less and the largest frame
    can never be granted credit (its sender would wait for ever), or never two in flight."""
    return 2 * blocks(mtu + ETH_HEADER) * BLOCK_BYTES


def check_buffer(buffer_bytes: int, mtu: int, setting: str) -> None:
    """ValueError naming `setting` when `buffer_bytes` cannot hold two maximum frames."""
    need = min_buffer_bytes(mtu)
    if buffer_bytes < need:
        raise ValueError(f"{setting} {buffer_bytes} bytes cannot hold two maximum frames "
                         f"of MTU {mtu} ({need} bytes in 64-byte blocks): raise it to at "
                         f"least {need}")


def check_link_buffers(buffer_bytes: int, links: Mapping[int, tuple[float, int, int]]) -> None:
    """check_buffer for a switch's ports: port -> (rate bps, delay ns, MTU) of its link."""
    for port, (_rate, _delay, mtu) in sorted(links.items()):
        check_buffer(buffer_bytes, mtu, f"port {port}: credit buffer_bytes")


def fits(fccl: int, fctbs: int, nblocks: int) -> bool:
    """IBA's rule: a packet of `nblocks` may start when (FCCL - (FCTBS + n)) mod 4096
    <= 2048 (limit and count are modulo 4096, so "ahead" means at most half way round)."""
    return (fccl - (fctbs + nblocks)) & _MASK <= HALF


def credit_frame(src_mac: bytes | str, priority: int, fctbs: int, fccl: int,
                 flags: int = 0) -> bytes:
    """An update for `priority`: the blocks this end has sent (FCTBS) and the limit it
    grants its peer (FCCL), both modulo 4096."""
    if not 0 <= priority < NUM_PRIORITIES:
        raise ValueError(f"credit priority must be 0..7, got {priority}")
    if not (0 <= fctbs < MODULO and 0 <= fccl < MODULO):
        raise ValueError(f"FCTBS and FCCL are 12-bit values, got {fctbs}, {fccl}")
    if flags & ~FLAG_REQUEST:
        raise ValueError(f"unknown credit flags {flags:#x}")
    body = _BODY.pack(CREDIT_VERSION, flags, priority, 0, fctbs, fccl)
    frame = CREDIT_DST + mac_bytes(src_mac) + _ETYPE + body
    return frame + bytes(MIN_FRAME - len(frame))


class CreditUpdate(NamedTuple):
    priority: int
    fctbs: int
    fccl: int
    flags: int


def parse_credit(frame: bytes) -> CreditUpdate | str:
    """Decode a frame of EtherType 0x88B5; a string names why it is not a valid update
    (`short`, `not_credit`, `bad_version`, `bad_priority`, `bad_value`, `bad_flags`)."""
    if len(frame) < MIN_FRAME:
        return "short"
    if frame[12:14] != _ETYPE:
        return "not_credit"
    version, flags, prio, _res, fctbs, fccl = _BODY.unpack_from(frame, 14)
    if version != CREDIT_VERSION:
        return "bad_version"
    if prio >= NUM_PRIORITIES:
        return "bad_priority"
    if fctbs >= MODULO or fccl >= MODULO:
        return "bad_value"  # the upper four bits are reserved
    if flags & ~FLAG_REQUEST:
        return "bad_flags"
    return CreditUpdate(prio, fctbs, fccl, flags)


@dataclass(frozen=True)
class CreditSettings:
    """Credit mode of a switch or host.

    buffer_bytes: receive buffer per (ingress port, lossless priority); the credit a
    port can grant (at most 2048 blocks, 128 KiB, can be outstanding: more is unused).
    update_blocks: an update is sent as soon as the limit grew by this many blocks since
    the last one (so credit flows back without waiting for the period).
    refresh_bytes: the re-send period, as the time to send that many bytes at the
    port's rate (the wire rate, so it scales with time dilation as the link does).
    """

    buffer_bytes: int = 64 * 1024
    update_blocks: int = 32
    refresh_bytes: int = 65_536

    def __post_init__(self) -> None:
        # The smallest switch MTU (1500); each link's own is checked where it is known.
        check_buffer(self.buffer_bytes, 1500, "credit buffer_bytes")
        if not 1 <= self.update_blocks <= HALF:
            raise ValueError(f"credit update_blocks must be 1..{HALF}")
        if self.refresh_bytes < MIN_FRAME:
            raise ValueError(f"credit refresh_bytes must be at least {MIN_FRAME}")

    @property
    def buffer_blocks(self) -> int:
        return self.buffer_bytes // BLOCK_BYTES


class CreditPort:
    """One end of a link in credit mode: the sender state towards the peer (FCTBS, the
    peer's FCCL) and the receiver state for the peer (ABR, buffer blocks in use), per
    lossless priority; frames go out with `send`, `on_credit(prio)` runs when the peer
    granted more.

    Buffer accounting: `received` when a frame arrives (ABR and the buffer), `hold` for
    an extra copy of it (multicast), `freed` when a buffered copy leaves. A receiver
    without a buffer of its own calls `received` then `freed`.
    """

    __slots__ = ("clock", "send", "src", "cfg", "lossless", "rate_bps", "on_credit",
                 "fctbs", "fccl", "abr", "used", "budget", "adv", "blocked", "_timer",
                 "tx_updates", "rx_updates", "requests_rx", "malformed", "overrun",
                 "blocked_events", "blocked_since", "blocked_ns")

    def __init__(self, clock: Clock, send: Callable[[bytes], object], src_mac: bytes | str,
                 settings: CreditSettings, lossless: frozenset[int], rate_bps: float,
                 on_credit: Callable[[int], None] | None = None,
                 buffer_bytes: int | None = None) -> None:
        self.clock = clock
        self.send = send
        self.src = mac_bytes(src_mac)
        self.cfg = settings
        self.lossless = sorted(lossless)
        self.rate_bps = rate_bps
        self.on_credit = on_credit
        n = NUM_PRIORITIES
        self.fctbs = [0] * n
        self.fccl = [0] * n  # nothing may be sent before the peer's first update
        self.abr = [0] * n
        self.used = [0] * n
        self.budget = blocks(buffer_bytes) if buffer_bytes is not None else \
            settings.buffer_blocks
        self.adv = [-1] * n  # the last FCCL advertised (-1: none yet)
        self.blocked = [False] * n
        self._timer: TimerHandle | None = None
        self.tx_updates = [0] * n
        self.rx_updates = [0] * n
        self.requests_rx = [0] * n
        self.malformed: dict[str, int] = {}
        self.overrun = [0] * n
        self.blocked_events = [0] * n
        # Time each priority waited for credit: since when (while blocked) and the sum
        # of the waits that ended, the credit counterpart of a PFC port's paused time.
        self.blocked_since = [0] * n
        self.blocked_ns = [0] * n

    # --- sender -------------------------------------------------------------------------
    def can_send(self, prio: int, nbytes: int) -> bool:
        if fits(self.fccl[prio], self.fctbs[prio], blocks(nbytes)):
            return True
        if not self.blocked[prio]:
            self.blocked[prio] = True
            self.blocked_events[prio] += 1
            self.blocked_since[prio] = self.clock.now_ns()
            self._arm()  # ask for credit at the next tick
        return False

    def sent(self, prio: int, nbytes: int) -> None:
        self.fctbs[prio] = (self.fctbs[prio] + blocks(nbytes)) & _MASK

    # --- receiver -----------------------------------------------------------------------
    def limit(self, prio: int) -> int:
        free = self.budget - self.used[prio]
        return (self.abr[prio] + (free if free < HALF else HALF)) & _MASK

    def received(self, prio: int, nbytes: int) -> bool:
        """A frame of a lossless priority arrived; False when it exceeds the buffer
        (the peer overran its credit: it must be dropped, and it is counted)."""
        b = blocks(nbytes)
        self.abr[prio] = (self.abr[prio] + b) & _MASK
        if self.used[prio] + b > self.budget:
            self.overrun[prio] += 1
            self._maybe_update(prio)
            return False
        self.used[prio] += b
        self._maybe_update(prio)
        return True

    def hold(self, prio: int, nbytes: int) -> None:
        self.used[prio] += blocks(nbytes)

    def freed(self, prio: int, nbytes: int) -> None:
        self.used[prio] -= blocks(nbytes)
        self._maybe_update(prio)

    def _maybe_update(self, prio: int) -> None:
        adv = self.adv[prio]
        if adv < 0 or (self.limit(prio) - adv) & _MASK >= self.cfg.update_blocks:
            self.update(prio)
        elif self._timer is None:
            self._arm()

    # --- frames -------------------------------------------------------------------------
    def update(self, prio: int, flags: int = 0) -> None:
        """Send this end's FCTBS and the limit it grants for `prio` now."""
        fccl = self.limit(prio)
        self.adv[prio] = fccl
        self.tx_updates[prio] += 1
        self.send(credit_frame(self.src, prio, self.fctbs[prio], fccl, flags))
        if self._timer is None:
            self._arm()

    def announce(self) -> None:
        """Updates for every lossless priority (link start)."""
        for p in self.lossless:
            self.update(p)

    def on_frame(self, frame: bytes) -> None:
        u = parse_credit(frame)
        if isinstance(u, str):
            self.malformed[u] = self.malformed.get(u, 0) + 1
            return
        p = u.priority
        if p not in self.lossless:
            self.malformed["not_lossless"] = self.malformed.get("not_lossless", 0) + 1
            return
        # The peer's first update: it has just come up, maybe after our own announce
        # went out to nobody (a host's agent starts after its leaf's daemon); reply, as
        # a link coming up exchanges credit both ways, or its first frame would wait
        # for its re-send timer and our answer.
        first = self.rx_updates[p] == 0
        self.rx_updates[p] += 1
        # Everything the peer sent before this frame has arrived (the link is FIFO):
        # what it counts and we did not was lost, and frees its credit.
        self.abr[p] = u.fctbs
        old = self.fccl[p]
        self.fccl[p] = u.fccl
        if u.flags & FLAG_REQUEST:
            self.requests_rx[p] += 1
            self.update(p)
        elif first:
            self.update(p)
        elif self.adv[p] < 0 or (self.limit(p) - self.adv[p]) & _MASK >= \
                self.cfg.update_blocks:
            self.update(p)
        if old != u.fccl and self.blocked[p]:
            self.blocked[p] = False
            self.blocked_ns[p] += self.clock.now_ns() - self.blocked_since[p]
            if self.on_credit is not None:
                self.on_credit(p)

    # --- periodic re-send ---------------------------------------------------------------
    def period_ns(self) -> int:
        return max(1, int(self.cfg.refresh_bytes * 8e9 / self.rate_bps))

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = self.clock.call_later(self.period_ns(), self._tick)

    def _tick(self) -> None:
        self._timer = None
        for p in self.lossless:
            if self.blocked[p]:
                self.update(p, FLAG_REQUEST)  # waiting for credit: ask for a reply
            elif self.used[p] or self.adv[p] != self.limit(p):
                self.update(p)
        # The timer stops once nothing is buffered, the limit is advertised and nothing
        # waits: a lost last update is then harmless until the peer wants credit, and
        # a peer waiting for credit asks for it.

    def waited_ns(self, prio: int) -> int:
        """How long `prio` has waited for credit so far, a wait still running included."""
        running = self.clock.now_ns() - self.blocked_since[prio] if self.blocked[prio] else 0
        return self.blocked_ns[prio] + running

    def counters(self) -> dict[str, object]:
        return {"updates_tx": list(self.tx_updates), "updates_rx": list(self.rx_updates),
                "requests_rx": list(self.requests_rx), "fctbs": list(self.fctbs),
                "fccl": list(self.fccl), "abr": list(self.abr),
                "used_blocks": list(self.used), "overrun": list(self.overrun),
                "blocked": list(self.blocked_events), "blocked_now": list(self.blocked),
                "blocked_ns": [self.waited_ns(p) for p in range(NUM_PRIORITIES)],
                "malformed": dict(self.malformed)}
