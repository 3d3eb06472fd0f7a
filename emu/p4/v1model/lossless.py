"""What the two lossless modes of the traffic manager share (PFC in `buffer.py`, credits
in `credit.py`): the hooks the traffic manager calls when flow control is on, the
per-port link facts, drops counted per class, and the queueing tail of an admitted
packet. Each mode adds its own admission (ingress accounting) and service gating."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from emu.core.clock import TimerHandle
from emu.core.pfc import NUM_PRIORITIES, FlowControl

from .traffic_manager import DequeueInfo, DropReason, EnqueueResult

if TYPE_CHECKING:
    from collections import deque

    from .traffic_manager import TrafficManager, _Port

LinkInfo = tuple[float, int, int]  # (modelled rate_bps, one-way delay ns, mtu bytes)
_tuple_new = tuple.__new__


def _port_mac(port: int) -> bytes:
    return bytes((2, 0, 0, 0, port >> 8 & 0xFF, port & 0xFF))


class LosslessControl:
    """Base of a lossless mode attached to a traffic manager. Subclasses set their own
    state, then call `tm.attach_flow_control(self)`."""

    def __init__(self, tm: TrafficManager, settings: FlowControl,
                 send_frame: Callable[[int, bytes], None], *,
                 src_mac: Callable[[int], bytes] | None = None,
                 links: Mapping[int, LinkInfo] | None = None) -> None:
        self.tm = tm
        self.cfg = settings
        self.clock = tm._clock
        self.send_frame = send_frame
        self.src_mac = src_mac or _port_mac
        self.links: dict[int, LinkInfo] = dict(links or {})
        self.lossless = [p in settings.lossless for p in range(NUM_PRIORITIES)]
        self.ingress = -1
        self.max_used: dict[int, int] = {}  # port * 8 + prio -> largest occupancy seen
        self.class_drops: dict[tuple[int, int, str], int] = {}
        self._handles: dict[int, TimerHandle] = {}
        self._idle: set[int] = set()  # ports whose transmitter stopped for flow control

    def set_link(self, port: int, rate_bps: float, delay_ns: int, mtu: int) -> None:
        """The modelled link on `port`."""
        self.links[port] = (rate_bps, delay_ns, mtu)

    def _rate(self, port: int) -> float:
        """The rate PAUSE quanta are timed at: the port's own, on this clock. Not the
        link's from `links`: that is the modelled link's, dilation times faster than
        the wire a dilated run's clock times."""
        p = self.tm._ports.get(port)
        if p is not None and p.rate_bps:
            return p.rate_bps
        return self.cfg.default_rate_bps

    def _egress(self, port: int, priority: int) -> _Port | None:
        """The egress port a packet is queued on, or None (counted) for a priority
        it has no queue for."""
        tm = self.tm
        p = tm._ports.get(port) or tm._port(port)
        if not 0 <= priority < len(p.queues):
            tm.drops.count(port, DropReason.PRIORITY_OUT_OF_RANGE)
            return None
        return p

    def _append(self, p: _Port, q: deque[object], pkt: object, size: int, priority: int,
                key: int) -> EnqueueResult | None:
        """Queue a packet (as the traffic manager's own enqueue does) and make sure the
        port is served. One outside lossless accounting (key < 0) is tail-dropped when
        its queue is full; a lossless one was admitted by the mode's own accounting."""
        if key < 0 and len(q) >= p.depths[priority]:
            self._drop(p.port, priority, DropReason.TAIL_DROP)
            return None
        now = self.clock.now_ns()
        ts = now // 1000
        qdepth = len(q)  # the packet's own priority queue, as BMv2 reports it
        st = p.stats
        st.enq_pkts += 1
        st.enq_bytes += size
        q.append((pkt, size, ts, qdepth, now, key))
        p.pkts += 1
        p.qbytes[priority] += size
        if not p.scheduled:
            self._schedule(p, max(p.busy_until, now))
        return _tuple_new(EnqueueResult, (ts, qdepth, priority))  # type: ignore[no-any-return]

    def _start_turn(self, p: _Port) -> tuple[int, int]:
        """(now, packets this turn may send) at the start of a service turn, whose timer
        has fired; records how late the turn is."""
        self._handles.pop(p.port, None)
        tm = self.tm
        now = self.clock.now_ns()
        if now - p.due > tm._max_lag_ns:
            tm._max_lag_ns = now - p.due
        return now, p.pkts if p.unlimited else 1

    def _take(self, p: _Port, prio: int) -> tuple[object, int, int, int, int, int]:
        """Dequeue the head of queue `prio`: (pkt, size, enqueue ts us, qdepth at
        enqueue, enqueue ns, accounting key), with the port's counts updated."""
        item = p.queues[prio].popleft()
        size = item[1]  # type: ignore[index]
        p.pkts -= 1
        p.qbytes[prio] -= size
        st = p.stats
        st.deq_pkts += 1
        st.deq_bytes += size
        return item  # type: ignore[return-value]

    def _depart(self, p: _Port, pkt: object, size: int, enq_ns: int, ts: int, qdepth: int,
                prio: int, now: int, budget: int) -> None:
        """A packet leaves: the port stays busy for its serialisation (from when it was
        queued, or now after flow control idled the transmitter, with no catch-up beyond
        the traffic manager's bound), the next turn is scheduled when this was the last
        of the turn's budget, and the packet goes to egress."""
        tm = self.tm
        not_before = enq_ns
        if self._idle and p.port in self._idle:
            self._idle.discard(p.port)
            if not_before < now:
                not_before = now
        busy = p.transmit(size, not_before, now, tm._max_catchup_ns)
        if budget == 0:
            if p.pkts:
                self._schedule(p, busy if busy > now else now)
            else:
                p.scheduled = False
        tm._on_dequeue(p.port, pkt,
                       _tuple_new(DequeueInfo, (ts, qdepth, now // 1000 - ts,
                                                len(p.queues[prio]), prio)))

    def _drop(self, port: int, prio: int, reason: str) -> None:
        self.tm.drops.count(port, reason)
        k = (port, prio, reason)
        self.class_drops[k] = self.class_drops.get(k, 0) + 1

    def _schedule(self, p: _Port, when: int) -> None:
        h = self._handles.get(p.port)
        if h is not None:
            h.cancel()
        p.scheduled = True
        p.due = when
        self._handles[p.port] = self.clock.call_at(when, p.serve)

    def _kick(self, port: int) -> None:
        """Flow control let a queue go early: serve the port now if it has packets."""
        p = self.tm._ports.get(port)
        if p is None or not p.pkts:
            return
        when = max(p.busy_until, self.clock.now_ns())
        if not p.scheduled or p.due > when:
            self._schedule(p, when)
