"""The v1model traffic manager: per-port egress queues served on the shared Clock.

What BMv2 simple_switch does (targets/simple_switch/simple_switch.cpp, include/bm/bm_sim/
queueing.h QueueingLogicPriRL), and what this module keeps:

- Each egress port has `priority_queues` FIFO queues. standard_metadata.priority selects
  the queue; a priority >= the number of queues drops the packet ("Priority out of range").
  A higher priority value is served first (BMv2 stores priority p in internal queue
  N-1-p and serves internal queue 0 first); qid reported at dequeue equals the priority.
- Capacity is per queue, in packets, default 64; a full queue tail-drops.
- enq_qdepth = packets in the packet's own priority queue just before the push;
  deq_qdepth = packets left in that queue after the pop (BMv2's
  egress_buffers.size(port, priority), since 1.15.1; before, the port's total).
- Timestamps are microseconds of the shared clock; deq_timedelta = dequeue - enqueue time.
- Without a rate the queues never build: a packet for an idle port is dequeued (and its
  egress runs) inside enqueue, as BMv2's egress thread pops it at once; packets that
  find the port busy (say, enqueued from egress) leave on the next clock turn.

One deliberate difference: BMv2 paces each priority queue on its own (set_queue_rate gives
every priority queue that rate), so N busy queues can send N times the rate. Here a port is
one transmitter: its rate (bits or packets per second) is shared, and strict priority picks
the next packet whenever the transmitter frees up. With one queue per port the two agree.

Service model: `on_dequeue` runs when a packet starts transmission (the egress pipeline runs
then); the port stays busy for the packet's serialisation time ((size + wire overhead) * 8 /
rate_bps, or 1 / rate_pps) before the next dequeue. Rate changes apply from the next packet on.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from emu.core.clock import Clock

__all__ = [
    "DEFAULT_DEPTH_PKTS",
    "DequeueCallback",
    "DequeueInfo",
    "DropCounters",
    "DropReason",
    "EnqueueResult",
    "PortQueueStats",
    "TrafficManager",
]

DEFAULT_DEPTH_PKTS = 64
_NS_PER_S = 1_000_000_000


class DropReason:
    """Drop reason names used in DropCounters (plain strings so callers can add their own)."""

    TAIL_DROP: Final = "tail_drop"
    PRIORITY_OUT_OF_RANGE: Final = "priority_out_of_range"
    PIPELINE_DROP: Final = "pipeline_drop"


class DropCounters:
    """Drop counts per (port, reason). Shared by the traffic manager and the pipeline."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[tuple[int, str], int] = {}

    def count(self, port: int, reason: str, n: int = 1) -> None:
        key = (port, reason)
        self._counts[key] = self._counts.get(key, 0) + n

    def get(self, port: int, reason: str) -> int:
        return self._counts.get((port, reason), 0)

    def port_total(self, port: int) -> int:
        return sum(n for (p, _), n in self._counts.items() if p == port)

    def reason_total(self, reason: str) -> int:
        return sum(n for (_, r), n in self._counts.items() if r == reason)

    def total(self) -> int:
        return sum(self._counts.values())

    def snapshot(self) -> dict[tuple[int, str], int]:
        """A copy of all counts keyed by (port, reason)."""
        return dict(self._counts)

    def reset(self) -> None:
        self._counts.clear()


class EnqueueResult(NamedTuple):
    """What ingress-to-egress metadata gets at enqueue (v1model names, microseconds).

    NamedTuples, not frozen dataclasses: one is built per packet, and a frozen
    dataclass's __init__ costs several times more.
    """

    enq_timestamp: int
    enq_qdepth: int
    qid: int


class DequeueInfo(NamedTuple):
    """The queueing metadata egress sees for a dequeued packet (microseconds, packets)."""

    enq_timestamp: int
    enq_qdepth: int
    deq_timedelta: int
    deq_qdepth: int
    qid: int


@dataclass(slots=True)
class PortQueueStats:
    """Cumulative per-port counters, for metrics."""

    enq_pkts: int = 0
    enq_bytes: int = 0
    deq_pkts: int = 0
    deq_bytes: int = 0


DequeueCallback = Callable[[int, object, DequeueInfo], None]

# NamedTuples built with tuple.__new__ skip their Python-level __new__ (half the cost).
_tuple_new = tuple.__new__


class _Port:
    """One egress port: its queues, transmitter state and counters."""

    __slots__ = (
        "port", "queues", "depths", "qbytes", "rate_bps", "rate_pps", "pkts",
        "busy_until", "scheduled", "due", "carry", "stats", "serve", "unlimited", "direct", "nq",
        "overhead",
    )

    def __init__(self, port: int, nq: int, depth: int,
                 rate_bps: int | None, rate_pps: int | None, overhead: int = 0) -> None:
        self.port = port
        self.overhead = overhead  # bytes a frame costs on the wire beyond its own
        # queues[p] holds (pkt, size_bytes, enq_timestamp_us, enq_qdepth, enq_ns) for priority p.
        self.queues: list[deque[tuple[object, int, int, int, int]]] = [deque() for _ in range(nq)]
        self.depths = [depth] * nq
        self.qbytes = [0] * nq
        self.rate_bps = rate_bps
        self.rate_pps = rate_pps
        self.unlimited = rate_bps is None and rate_pps is None
        self.nq = nq
        # Set by the TrafficManager: an idle packet may skip the queue (see enqueue).
        self.direct = False
        self.pkts = 0
        self.busy_until = 0  # ns; the transmitter is free from then on
        self.scheduled = False  # a service callback is pending on the clock
        self.due = 0  # ns the pending service callback is scheduled for
        self.carry = 0  # remainder of the last serialisation division, so times don't drift
        self.stats = PortQueueStats()
        self.serve: Callable[[], None] = lambda: None  # bound by the TrafficManager

    def transmit(self, size_bytes: int, not_before: int, now: int, max_catchup_ns: int) -> int:
        """Put a packet of `size_bytes` on the transmitter in a service turn running at
        `now`; returns (and sets) `busy_until`, when the transmitter is free again.

        The packet starts when the transmitter is free, not before `not_before` (when it
        was queued: an idle transmitter does not send in the past) and not before the
        catch-up floor, `max_catchup_ns` before the turn was due (now, if it is on time).
        Counting from when it was due, a turn that woke up late (by more than the bound:
        several ms at high dilations, a good part of a packet time) does not lose that
        time from the link's capacity."""
        start = self.busy_until
        if start < not_before:
            start = not_before
        floor = (self.due if self.due < now else now) - max_catchup_ns
        if start < floor:
            start = floor
        busy = self.busy_until = start + self.service_ns(size_bytes)
        return busy

    @property
    def bytes(self) -> int:
        """Bytes queued, all priorities (summed when read: not kept per packet)."""
        return sum(self.qbytes)

    def service_ns(self, size_bytes: int) -> int:
        if self.rate_bps is not None:
            num = (size_bytes + self.overhead) * 8 * _NS_PER_S + self.carry
            ns, self.carry = divmod(num, self.rate_bps)
            return ns
        if self.rate_pps is not None:
            ns, self.carry = divmod(_NS_PER_S + self.carry, self.rate_pps)
            return ns
        return 0


def _check_rate(rate_bps: float | None, rate_pps: float | None) -> tuple[int | None, int | None]:
    if rate_bps is not None and rate_pps is not None:
        raise ValueError("give rate_bps or rate_pps, not both")
    return _rate("rate_bps", rate_bps), _rate("rate_pps", rate_pps)


def _rate(name: str, value: float | None) -> int | None:
    if value is None:
        return None
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    rate = round(value)
    # A rate of 0 means "no limit", as BMv2's set_queue_rate 0 does; a fraction that
    # rounds to 0 must not silently mean the same.
    if value and not rate:
        raise ValueError(f"{name} {value!r} is below 1 (0 removes the limit)")
    return rate or None


class TrafficManager:
    """Egress queues of one switch, driven by `clock`; `on_dequeue(port, pkt, info)` per packet.

    Ports are created on first use with the defaults; `configure_port` sets one up front.
    """

    def __init__(
        self,
        clock: Clock,
        on_dequeue: DequeueCallback,
        *,
        default_depth_pkts: int = DEFAULT_DEPTH_PKTS,
        default_priority_queues: int = 1,
        drops: DropCounters | None = None,
        max_catchup_ns: int = 1_000_000,
        immediate: bool = True,
        wire_overhead_bytes: int = 0,
    ) -> None:
        self._clock = clock
        # A bit-rate port serialises frame + this (preamble, FCS, gap: emu.core.wire);
        # 0, the library default, times the frame bytes alone, as BMv2's queues do.
        self._overhead = wire_overhead_bytes
        # On a real clock the service timer fires late; a backlogged port then starts
        # its next packet at the scheduled time, not at the late wake-up, so the
        # configured rate holds. Catch-up is bounded so a long stall is not followed
        # by an unbounded burst: max_catchup_ns before the turn's scheduled time (the
        # late turn's own packet keeps its slot, however late the wake-up was).
        self._max_catchup_ns = max_catchup_ns
        # immediate=False defers even an idle unlimited port's dequeue to the next
        # clock turn, so packets injected together queue up behind each other.
        self._immediate = immediate
        self._in_dequeue = False
        self._on_dequeue = on_dequeue
        self._now_ns = clock.now_ns
        self._default_depth = default_depth_pkts
        self._default_nq = default_priority_queues
        self._default_bps: int | None = None
        self._default_pps: int | None = None
        self._ports: dict[int, _Port] = {}
        self.drops = drops if drops is not None else DropCounters()
        self._max_lag_ns = 0
        self.flow_control: Any = None  # emu.p4.v1model.buffer.SwitchFlowControl when on

    def attach_flow_control(self, fc: Any) -> None:
        """Hand enqueue and the service turns to a flow-control layer (buffer.py);
        `enqueue` then forwards to it (one check of an attribute per packet)."""
        if any(p.pkts for p in self._ports.values()):
            raise RuntimeError("attach flow control before traffic")
        self.flow_control = fc
        for p in self._ports.values():
            self._bind_serve(p)

    # --- configuration ----------------------------------------------------------------------

    def configure_port(
        self,
        port: int,
        *,
        depth_pkts: int | None = None,
        rate_bps: float | None = None,
        rate_pps: float | None = None,
        priority_queues: int | None = None,
    ) -> None:
        """(Re)create a port's queues; only allowed while the port holds no packets.

        Arguments left None take the defaults (those last set with port=None).
        """
        old = self._ports.get(port)
        if old is not None and old.pkts:
            raise RuntimeError(f"port {port} has queued packets; cannot reconfigure")
        nq = self._default_nq if priority_queues is None else priority_queues
        if not 1 <= nq <= 32:  # BMv2 supports up to 32 priority queues per port
            raise ValueError("priority_queues must be 1..32")
        depth = self._default_depth if depth_pkts is None else depth_pkts
        if depth < 0:
            raise ValueError("depth_pkts must not be negative")
        if rate_bps is None and rate_pps is None:
            bps, pps = self._default_bps, self._default_pps
        else:
            bps, pps = _check_rate(rate_bps, rate_pps)
        p = self._new_port(port, nq, depth, bps, pps)
        if old is not None:
            p.busy_until, p.stats = old.busy_until, old.stats
        self._ports[port] = p

    def set_queue_rate(
        self, port: int | None, *, rate_bps: float | None = None, rate_pps: float | None = None
    ) -> None:
        """Set a port's rate (None = every port, and the default for new ones).

        Neither rate (or 0) removes the limit. Takes effect from the next dequeued packet.
        """
        bps, pps = _check_rate(rate_bps, rate_pps)
        for p in self._targets(port):
            p.rate_bps, p.rate_pps, p.carry = bps, pps, 0
            p.unlimited = bps is None and pps is None
            self._set_direct(p)
        if port is None:
            self._default_bps, self._default_pps = bps, pps

    def set_queue_depth(self, port: int | None, depth_pkts: int, *,
                        priority: int | None = None) -> None:
        """Set queue capacity in packets (None port = every port and the default).

        `priority` limits the change to one priority queue. Packets already queued stay.
        """
        if depth_pkts < 0:
            raise ValueError("depth_pkts must not be negative")
        targets = list(self._targets(port))
        if priority is not None:
            for p in targets:  # all checked first: a refused change changes no port
                if not 0 <= priority < p.nq:
                    raise ValueError(f"priority {priority} out of range: port {p.port} has "
                                     f"{p.nq} priority queue(s)")
        for p in targets:
            if priority is None:
                p.depths = [depth_pkts] * len(p.queues)
            else:
                p.depths[priority] = depth_pkts
            self._set_direct(p)
        if port is None and priority is None:
            self._default_depth = depth_pkts

    def _targets(self, port: int | None) -> Iterator[_Port]:
        if port is None:
            yield from self._ports.values()
        else:
            yield self._port(port)

    def _port(self, port: int) -> _Port:
        p = self._ports.get(port)
        if p is None:
            p = self._new_port(port, self._default_nq, self._default_depth,
                               self._default_bps, self._default_pps)
            self._ports[port] = p
        return p

    def _new_port(self, port: int, nq: int, depth: int,
                  rate_bps: int | None, rate_pps: int | None) -> _Port:
        p = _Port(port, nq, depth, rate_bps, rate_pps, self._overhead)
        self._bind_serve(p)
        self._set_direct(p)
        return p

    def _bind_serve(self, p: _Port) -> None:
        fc = self.flow_control
        if fc is None:
            p.serve = functools.partial(self._serve, p)  # one callback per port, not per packet
        else:
            p.serve = lambda: fc.serve(p)

    def _set_direct(self, p: _Port) -> None:
        # A queue of depth 0 drops everything, so it must go through the checks.
        p.direct = self._immediate and p.unlimited and min(p.depths) > 0

    # --- data path ----------------------------------------------------------------------------

    def enqueue(self, port: int, pkt: object, size_bytes: int,
                priority: int = 0) -> EnqueueResult | None:
        """Queue `pkt` for `port`; None when it was dropped (counted in `drops`)."""
        fc = self.flow_control
        if fc is not None:
            return fc.enqueue(port, pkt, size_bytes, priority)  # type: ignore[no-any-return]
        p = self._ports.get(port) or self._port(port)
        if p.direct and not p.pkts and not self._in_dequeue and 0 <= priority < p.nq:
            # An idle port without a rate sends at once, as BMv2's egress thread
            # pops a packet as soon as it is pushed: no timer, no queue entry. Packets
            # enqueued by the callback itself (egress clones) take the queued path, so
            # a program that clones every clone loops on the clock, not on the stack.
            ts = self._now_ns() // 1000
            st = p.stats
            st.enq_pkts += 1
            st.enq_bytes += size_bytes
            st.deq_pkts += 1
            st.deq_bytes += size_bytes
            self._in_dequeue = True
            try:
                self._on_dequeue(port, pkt, _tuple_new(DequeueInfo, (ts, 0, 0, 0, priority)))
            finally:
                self._in_dequeue = False
            return _tuple_new(EnqueueResult, (ts, 0, priority))
        if not 0 <= priority < p.nq:
            self.drops.count(port, DropReason.PRIORITY_OUT_OF_RANGE)
            return None
        q = p.queues[priority]
        if len(q) >= p.depths[priority]:
            self.drops.count(port, DropReason.TAIL_DROP)
            return None
        now = self._now_ns()
        ts = now // 1000
        qdepth = len(q)
        st = p.stats
        st.enq_pkts += 1
        st.enq_bytes += size_bytes
        q.append((pkt, size_bytes, ts, qdepth, now))
        p.pkts += 1
        p.qbytes[priority] += size_bytes
        if not p.scheduled:
            p.scheduled = True
            busy = p.busy_until
            due = p.due = busy if busy > now else now
            self._clock.schedule_at(due, p.serve)
        return _tuple_new(EnqueueResult, (ts, qdepth, priority))

    def _serve(self, p: _Port) -> None:
        # A rate-limited port sends one packet and comes back when its transmitter is
        # free: that one-packet turn is written out here (once per packet-hop of a
        # virtual run); an unlimited port sends its whole backlog (_serve_all).
        now = self._clock.now_ns()
        # How late this service turn runs against its schedule: on a real clock, a
        # busy process shows here first (the fidelity signal "TM lag").
        late = now - p.due
        if late > self._max_lag_ns:
            self._max_lag_ns = late
        rate = p.rate_bps
        if rate is None:
            self._serve_all(p, now)
            return
        queues = p.queues
        prio = p.nq - 1
        q = queues[prio]
        while not q:
            if not prio:  # the port was reconfigured or emptied meanwhile
                p.scheduled = False
                return
            prio -= 1
            q = queues[prio]
        pkt, size, ts, qdepth, enq_ns = q.popleft()
        left = p.pkts = p.pkts - 1
        p.qbytes[prio] -= size
        st = p.stats
        st.deq_pkts += 1
        st.deq_bytes += size
        # _Port.transmit, inlined (once per packet-hop of a virtual run)
        start = p.busy_until
        if start < enq_ns:
            start = enq_ns  # the transmitter was idle when this packet arrived
        floor = (p.due if late > 0 else now) - self._max_catchup_ns
        if start < floor:
            start = floor
        ns, p.carry = divmod((size + p.overhead) * 8_000_000_000 + p.carry, rate)
        busy = p.busy_until = start + ns
        if left:
            due = p.due = busy if busy > now else now
            self._clock.schedule_at(due, p.serve)
        else:
            p.scheduled = False
        # State is settled before the callback, which may enqueue again.
        self._on_dequeue(p.port, pkt,
                         _tuple_new(DequeueInfo, (ts, qdepth, now // 1000 - ts, len(q), prio)))

    def _serve_all(self, p: _Port, now: int) -> None:
        """A service turn of a port without a bit rate: everything queued now in one
        clock turn (one timer per burst instead of one per packet) when unlimited, one
        packet when paced in packets per second."""
        budget = p.pkts if p.unlimited else 1
        queues = p.queues
        clock = self._clock
        on_dequeue = self._on_dequeue
        st = p.stats
        while budget > 0:
            budget -= 1
            prio = len(queues) - 1
            while prio >= 0 and not queues[prio]:
                prio -= 1
            if prio < 0:  # the port was reconfigured or emptied meanwhile
                p.scheduled = False
                return
            q = queues[prio]
            pkt, size, ts, qdepth, enq_ns = q.popleft()
            p.pkts -= 1
            p.qbytes[prio] -= size
            st.deq_pkts += 1
            st.deq_bytes += size
            busy = p.transmit(size, enq_ns, now, self._max_catchup_ns)
            if budget == 0:
                if p.pkts:
                    due = busy if busy > now else now
                    p.due = due
                    clock.schedule_at(due, p.serve)
                else:
                    p.scheduled = False
            # State is settled before the callback, which may enqueue again.
            on_dequeue(p.port, pkt,
                       _tuple_new(DequeueInfo, (ts, qdepth, now // 1000 - ts, len(q), prio)))
            if budget:
                now = clock.now_ns()

    # --- observation ------------------------------------------------------------------------

    def take_max_lag_ns(self) -> int:
        """The largest delay (ns) of a queue service turn behind its scheduled time since
        the last call; resets it. Near 0 in virtual time; on a real clock it grows when
        the process cannot keep up, i.e. when queueing happens outside the model."""
        lag, self._max_lag_ns = self._max_lag_ns, 0
        return lag

    def occupancy(self, port: int) -> tuple[int, int]:
        """(packets, bytes) queued on `port`, all priorities."""
        p = self._ports.get(port)
        return (p.pkts, p.bytes) if p else (0, 0)

    def queue_occupancy(self, port: int, priority: int) -> tuple[int, int]:
        """(packets, bytes) in one priority queue of `port`."""
        p = self._ports.get(port)
        if p is None:
            return (0, 0)
        return (len(p.queues[priority]), p.qbytes[priority])

    def stats(self, port: int) -> PortQueueStats:
        """Cumulative enqueue/dequeue counters of `port` (drops are in `drops`)."""
        p = self._ports.get(port)
        return p.stats if p else PortQueueStats()

    def ports(self) -> list[int]:
        return sorted(self._ports)

    def port_config(self, port: int) -> dict[str, object]:
        """The port's current settings: depth per priority, rate_bps, rate_pps."""
        p = self._port(port)
        return {"depths_pkts": list(p.depths), "rate_bps": p.rate_bps, "rate_pps": p.rate_pps,
                "priority_queues": len(p.queues)}
