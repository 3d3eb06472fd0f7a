"""Priority flow control in the traffic manager: ingress buffer accounting, PAUSE
generation, paused egress queues and the PFC watchdog (emu.core.pfc has the frames).

Attached to a TrafficManager with `SwitchFlowControl(tm, settings, send_frame)`; off
(the default) nothing here runs and the traffic manager is unchanged. The same code runs
on the virtual clock (SimFabric) and on the switch daemon's real clock.

Ingress side (the buffer manager). A packet of a lossless priority counts against the
(ingress port, priority) it arrived on from enqueue until it leaves the switch (dequeue,
or a watchdog flush). When that count exceeds XOFF a PFC frame for the priority goes out
of the ingress port, and is re-sent every `refresh_fraction` of its pause time while the
count stays above XON; falling to XON or below sends a zero-quanta frame (resume). Above
XOFF the headroom absorbs what the peer still sends; a packet that would exceed
XOFF + headroom is dropped (`pfc_headroom_overflow`: a lossless drop, i.e. a headroom
too small for the link). Lossless queues are not tail-dropped at their egress depth: the
ingress accounting is their admission control. Lossy priorities keep tail drop.

Egress side (the MAC). PAUSE frames received on a port (EtherType 0x8808, consumed
before the pipeline) stop that port's queue of the priority for the quanta received,
if the priority is lossless (PFC is enabled for those only; a frame for another one is
counted and ignored); the other priorities go on. PAUSE frames the switch sends use the
MAC path: they skip the egress queues and the pipeline, and are never themselves paused.

Which priority a packet has is standard_metadata.priority as the program sets it
(fabric.p4 maps DSCP to it, QosSettings): the PFC priority is that same number.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from emu.core.clock import TimerHandle
from emu.core.pfc import (
    NUM_PRIORITIES,
    FlowControl,
    PauseState,
    PfcThresholds,
    headroom_bytes,
    pfc_frame,
    quanta_ns,
)

from .lossless import LinkInfo, LosslessControl
from .traffic_manager import EnqueueResult

if TYPE_CHECKING:
    from .traffic_manager import TrafficManager, _Port

__all__ = ["HEADROOM_OVERFLOW", "WATCHDOG_DROP", "LinkInfo", "SwitchFlowControl"]

log = logging.getLogger("emu.pfc")

HEADROOM_OVERFLOW = "pfc_headroom_overflow"
WATCHDOG_DROP = "pfc_watchdog"
_tuple_new = tuple.__new__



class _Storm:
    __slots__ = ("stormed", "start", "last_rx", "detect", "restore", "detected", "restored",
                 "dropped")

    def __init__(self) -> None:
        self.stormed = False
        self.start = -1  # pause period start the pending detection check belongs to
        self.last_rx = 0
        self.detect: TimerHandle | None = None
        self.restore: TimerHandle | None = None
        self.detected = 0
        self.restored = 0
        self.dropped = 0


class SwitchFlowControl(LosslessControl):
    """PFC for one switch's traffic manager. `send_frame(port, frame)` transmits a
    MAC-control frame on a port; `src_mac(port)` gives the port's MAC address.

    Set `ingress` to the arrival port before the pipeline runs (the switch does).
    """

    def __init__(self, tm: TrafficManager, settings: FlowControl,
                 send_frame: Callable[[int, bytes], None], *,
                 src_mac: Callable[[int], bytes] | None = None,
                 links: Mapping[int, LinkInfo] | None = None) -> None:
        super().__init__(tm, settings, send_frame, src_mac=src_mac, links=links)
        # Ingress accounting, keyed by port * 8 + priority.
        self.used: dict[int, int] = {}
        self._limits: dict[int, tuple[int, int, int]] = {}  # port -> xoff, xon, xoff+headroom
        self._xoff: dict[int, TimerHandle | None] = {}  # keys in XOFF -> refresh timer
        self.pause_tx: dict[int, list[int]] = {}
        self.resume_tx: dict[int, list[int]] = {}
        self.rx: dict[int, PauseState] = {}
        self.storms: dict[int, _Storm] = {}
        self._wd_drop: set[int] = set()  # keys whose queue and priority group drop
        # Watchdog events in order: (clock ns, "storm" | "restored", port, priority).
        self.events: list[tuple[int, str, int, int]] = []
        # PFC is enabled for the lossless priorities only: a PFC frame for another one
        # (a lossy class, the CNPs') must not stop it; no watchdog would free it.
        self._pfc_mask = sum(1 << p for p in settings.lossless)
        tm.attach_flow_control(self)

    # --- configuration ----------------------------------------------------------------

    def set_link(self, port: int, rate_bps: float, delay_ns: int, mtu: int) -> None:
        """The modelled link on `port`, for the headroom it needs."""
        super().set_link(port, rate_bps, delay_ns, mtu)
        self._limits.pop(port, None)

    def headroom_needed(self, port: int) -> int | None:
        link = self.links.get(port)
        if link is None:
            return None
        rate, delay, mtu = link
        extra = -(-int(rate * self.cfg.reaction_ns) // 8_000_000_000)  # bytes in that time
        return headroom_bytes(rate, delay, mtu) + extra

    def limits(self, port: int) -> tuple[int, int, int]:
        """(xoff, xon, xoff + headroom) in bytes for an ingress port."""
        lim = self._limits.get(port)
        if lim is None:
            th: PfcThresholds = self.cfg.for_port(port)
            need = self.headroom_needed(port)
            head = th.headroom if th.headroom is not None else (need or 0)
            if need is not None and head < need:
                log.warning("port %d: PFC headroom %d bytes is below the %d bytes the link "
                            "needs; lossless traffic may be dropped", port, head, need)
            lim = self._limits[port] = (th.xoff_bytes, th.xon_bytes, th.xoff_bytes + head)
        return lim

    def headroom_report(self) -> dict[int, dict[str, int | bool | None]]:
        """Per known port: the headroom configured and the one its link needs."""
        out: dict[int, dict[str, int | bool | None]] = {}
        for port in sorted(set(self.links) | set(self.tm._ports)):
            xoff, _xon, lim = self.limits(port)
            need = self.headroom_needed(port)
            out[port] = {"configured": lim - xoff, "needed": need,
                         "ok": need is None or lim - xoff >= need}
        return out

    def pause_state(self, port: int) -> PauseState:
        st = self.rx.get(port)
        if st is None:
            st = self.rx[port] = PauseState(self.clock.now_ns, self._rate(port),
                                            self.cfg.global_pause, self._pfc_mask)
            st.on_resume = lambda mask: self._resumed(port, mask)
            if self.cfg.watchdog.enabled:
                st.on_pause = lambda prio, now: self._wd_pause(port, prio, now)
        return st

    def _resumed(self, port: int, mask: int) -> None:
        """A zero-quanta frame ended pauses early: restart, and end an alert there."""
        if self.storms and self.cfg.watchdog.action == "alert":
            for prio in range(NUM_PRIORITIES):
                wd = self.storms.get(port * 8 + prio)
                if mask >> prio & 1 and wd is not None and wd.stormed:
                    self._wd_alert_end(port, prio)
        self._kick(port)

    # --- MAC: received control frames -----------------------------------------------------

    def on_mac_control(self, port: int, frame: bytes) -> None:
        """A frame of EtherType 0x8808 arrived on `port` (never given to the pipeline)."""
        st = self.pause_state(port)
        st.rate_bps = self._rate(port)
        st.on_frame(frame)

    # --- data path ------------------------------------------------------------------------

    def enqueue(self, port: int, pkt: object, size: int, priority: int = 0
                ) -> EnqueueResult | None:
        p = self._egress(port, priority)
        if p is None:
            return None
        ing = self.ingress
        if self._wd_drop and (port * 8 + priority in self._wd_drop
                              or ing * 8 + priority in self._wd_drop):
            self._drop(port, priority, WATCHDOG_DROP)
            wd = self.storms.get(port * 8 + priority) or self.storms.get(ing * 8 + priority)
            if wd is not None:
                wd.dropped += 1
            return None
        q = p.queues[priority]
        key = -1
        if priority < NUM_PRIORITIES and self.lossless[priority] and ing >= 0:
            key = ing * 8 + priority
            xoff, _xon, limit = self.limits(ing)
            used = self.used.get(key, 0) + size
            if used > limit:
                self._drop(port, priority, HEADROOM_OVERFLOW)
                return None
            self.used[key] = used
            if used > self.max_used.get(key, 0):
                self.max_used[key] = used
            if used > xoff and key not in self._xoff:
                self._send_pause(ing, priority)
        return self._append(p, q, pkt, size, priority, key)  # type: ignore[arg-type]

    def serve(self, p: _Port) -> None:
        """The traffic manager's service turn, skipping paused priorities."""
        now, budget = self._start_turn(p)
        rx = self.rx.get(p.port)
        clock = self.clock
        queues = p.queues
        while budget > 0:
            prio = len(queues) - 1
            wake = 0
            while prio >= 0:
                if queues[prio]:
                    if rx is None or prio >= NUM_PRIORITIES or rx.until[prio] <= now:
                        break
                    if not wake or rx.until[prio] < wake:
                        wake = rx.until[prio]
                prio -= 1
            if prio < 0:
                p.scheduled = False
                # Paused with packets waiting: the transmitter idles, and that idle
                # time must not count as a backlog to catch up on afterwards.
                self._idle.add(p.port)
                if wake:  # everything waiting is paused: come back when the first expires
                    self._schedule(p, wake)
                return
            budget -= 1
            pkt, size, ts, qdepth, enq_ns, key = self._take(p, prio)
            if key >= 0:
                self._release(key, size)
            self._depart(p, pkt, size, enq_ns, ts, qdepth, prio, now, budget)
            if budget:
                now = clock.now_ns()

    def _release(self, key: int, size: int) -> None:
        used = self.used[key] - size
        self.used[key] = used
        if key in self._xoff and used <= self.limits(key >> 3)[1]:
            self._send_resume(key >> 3, key & 7)

    # --- PAUSE generation -----------------------------------------------------------------

    def _count_tx(self, table: dict[int, list[int]], port: int, prio: int) -> None:
        c = table.get(port)
        if c is None:
            c = table[port] = [0] * NUM_PRIORITIES
        c[prio] += 1

    def _send_pause(self, port: int, prio: int) -> None:
        key = port * 8 + prio
        q = self.cfg.pause_quanta
        self.send_frame(port, pfc_frame(self.src_mac(port), {prio: q}))
        self._count_tx(self.pause_tx, port, prio)
        period = max(1, int(quanta_ns(q, self._rate(port)) * self.cfg.refresh_fraction))
        self._xoff[key] = self.clock.call_later(period, lambda: self._refresh(key))

    def _refresh(self, key: int) -> None:
        if key in self._xoff:
            self._send_pause(key >> 3, key & 7)

    def _send_resume(self, port: int, prio: int) -> None:
        h = self._xoff.pop(port * 8 + prio, None)
        if h is not None:
            h.cancel()
        self.send_frame(port, pfc_frame(self.src_mac(port), {prio: 0}))
        self._count_tx(self.resume_tx, port, prio)

    # --- watchdog -------------------------------------------------------------------------

    def _wd_pause(self, port: int, prio: int, now: int) -> None:
        if not self.lossless[prio]:
            return
        key = port * 8 + prio
        wd = self.storms.get(key)
        if wd is None:
            wd = self.storms[key] = _Storm()
        wd.last_rx = now
        if wd.stormed:
            return
        st = self.rx[port]
        if st.until[prio] <= now:  # this frame starts a new pause period
            if wd.detect is not None:
                wd.detect.cancel()
            wd.start = now
            det = self.cfg.watchdog.detection_ns
            wd.detect = self.clock.call_at(now + det, lambda: self._wd_check(port, prio, now))

    def _wd_check(self, port: int, prio: int, start: int) -> None:
        key = port * 8 + prio
        wd = self.storms[key]
        wd.detect = None
        st = self.rx[port]
        now = self.clock.now_ns()
        # Paused without a break since `start` (a resume or expiry resets `since`).
        if wd.stormed or st.since[prio] != start or st.until[prio] <= now:
            return
        wd.stormed = True
        wd.detected += 1
        self.events.append((now, "storm", port, prio))
        wd.last_rx = now  # the quiet period for restoration counts from detection on
        action = self.cfg.watchdog.action
        log.warning("PFC storm on port %d priority %d: action %s", port, prio, action)
        if action != "alert":
            st.ignore |= 1 << prio
            st.release(prio)
            if action == "drop":
                self._wd_drop.add(key)
                self._flush(port, prio, wd)
            self._kick(port)
            self._wd_restore_at(port, prio, wd.last_rx + self.cfg.watchdog.restoration_ns)
        else:  # alert ends with the storm itself (SONiC: at the first poll it fails)
            wd.restore = self.clock.call_at(st.until[prio],
                                            lambda: self._wd_alert_end(port, prio))

    def _wd_alert_end(self, port: int, prio: int) -> None:
        """Alert: the queue is no longer paused (the last PAUSE expired or a resume
        came) and the alert ends at once; a PAUSE that reloaded the timer moves it."""
        wd = self.storms[port * 8 + prio]
        if wd.restore is not None:
            wd.restore.cancel()
        wd.restore = None
        until = self.rx[port].until[prio]
        if until > self.clock.now_ns():
            wd.restore = self.clock.call_at(until, lambda: self._wd_alert_end(port, prio))
            return
        self._wd_restored(port, prio)

    def _wd_restore_at(self, port: int, prio: int, when: int) -> None:
        wd = self.storms[port * 8 + prio]
        wd.restore = self.clock.call_at(when, lambda: self._wd_restore(port, prio))

    def _wd_restore(self, port: int, prio: int) -> None:
        key = port * 8 + prio
        wd = self.storms[key]
        wd.restore = None
        due = wd.last_rx + self.cfg.watchdog.restoration_ns
        if self.clock.now_ns() < due:  # PAUSE kept coming: wait for a quiet period
            self._wd_restore_at(port, prio, due)
            return
        self._wd_restored(port, prio)

    def _wd_restored(self, port: int, prio: int) -> None:
        key = port * 8 + prio
        wd = self.storms[key]
        wd.stormed = False
        wd.restored += 1
        self.events.append((self.clock.now_ns(), "restored", port, prio))
        self.rx[port].ignore &= ~(1 << prio)
        self._wd_drop.discard(key)
        log.warning("PFC storm on port %d priority %d: restored", port, prio)

    def _flush(self, port: int, prio: int, wd: _Storm) -> None:
        p = self.tm._ports.get(port)
        if p is None or prio >= len(p.queues):
            return
        q = p.queues[prio]
        while q:
            _pkt, size, _ts, _qd, _enq, key = q.popleft()  # type: ignore[misc]
            p.pkts -= 1
            p.qbytes[prio] -= size
            if key >= 0:
                self._release(key, size)
            self._drop(port, prio, WATCHDOG_DROP)
            wd.dropped += 1

    # --- observation ----------------------------------------------------------------------

    def counters(self) -> dict[str, Any]:
        """PAUSE sent/received and paused time per port and priority, watchdog events,
        drops per "port:priority:reason", the largest ingress occupancy per
        "port:priority" and the malformed MAC-control frames per port (JSON-ready)."""
        ports = sorted(set(self.rx) | set(self.pause_tx) | set(self.resume_tx))
        out: dict[str, Any] = {"ports": {}, "watchdog": {}, "drops": {}, "max_ingress_bytes": {}}
        zero = [0] * NUM_PRIORITIES
        for port in ports:
            st = self.rx.get(port)
            entry: dict[str, Any] = {"pause_tx": list(self.pause_tx.get(port, zero)),
                                     "resume_tx": list(self.resume_tx.get(port, zero)),
                                     # priorities this port is pausing its peer for now
                                     "xoff": [k & 7 for k in self._xoff if k >> 3 == port],
                                     "ingress_bytes": {k & 7: v for k, v in self.used.items()
                                                       if k >> 3 == port and v}}
            if st is not None:
                entry.update(st.counters())
            out["ports"][port] = entry
        for key, wd in self.storms.items():
            out["watchdog"][f"{key >> 3}:{key & 7}"] = {
                "detected": wd.detected, "restored": wd.restored, "dropped": wd.dropped,
                "stormed": wd.stormed}
        out["drops"] = {f"{p}:{q}:{r}": n for (p, q, r), n in self.class_drops.items()}
        out["max_ingress_bytes"] = {f"{k >> 3}:{k & 7}": v for k, v in self.max_used.items()}
        return out
