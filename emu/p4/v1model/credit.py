"""Credit-based flow control in the traffic manager (the switch side of emu.core.credit):
a lossless egress queue starts a packet only within the credit its link's peer granted,
and the ingress buffer returns credit to the port a packet came from as it leaves.

Attached to a TrafficManager with `SwitchCreditControl(tm, settings, send_frame)` (the
sibling of buffer.SwitchFlowControl, PFC); off, nothing here runs. The same code runs on
the virtual clock (SimFabric) and the switch daemon's real clock.

Ingress (the receive buffer): a lossless packet counts against its (ingress port,
priority) from enqueue until it leaves the switch; the port's CreditPort advertises the
free part of `buffer_bytes` as the peer's limit. A packet the peer sent beyond its credit
does not fit and is dropped as `credit_overrun` (a peer that breaks the protocol). A
packet the pipeline drops never occupies the buffer: its blocks come back at the peer's
next update (ABR is set to the peer's count), which is the safe direction.

Egress: a lossless queue whose head packet does not fit the peer's limit waits (other
priorities go on); an update that raises the limit serves the port again. Lossless
queues are not tail-dropped: credit is their admission control. Lossy priorities keep
tail drop and ignore credit. Credit is charged at the size the packet was queued with
(docs/credit.md: what an egress program that lengthens packets would do).

Frames of EtherType 0x88B5 are consumed before the pipeline; PAUSE frames (0x8808) are
counted (`pause_rx`) and dropped, as a port in credit mode does not speak PFC.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from emu.core.credit import CreditPort, check_link_buffers
from emu.core.pfc import NUM_PRIORITIES, FlowControl

from .lossless import LosslessControl
from .traffic_manager import EnqueueResult

if TYPE_CHECKING:
    from .traffic_manager import TrafficManager, _Port

__all__ = ["CREDIT_OVERRUN", "SwitchCreditControl", "install_credit"]

CREDIT_OVERRUN = "credit_overrun"
_tuple_new = tuple.__new__
_NONE_LOSSLESS = [False] * NUM_PRIORITIES


class SwitchCreditControl(LosslessControl):
    """Credit mode for one switch's traffic manager. `send_frame(port, frame)` sends a
    frame from a port's MAC; `src_mac(port)` gives the port's address; `links` maps a
    port to its (modelled rate, delay, mtu) (only the rate is used, for the period).

    Set `ingress` to the arrival port and `arrival` True before the pipeline runs, and
    back to -1 / False after it (the switch does)."""

    def __init__(self, tm: TrafficManager, settings: FlowControl,
                 send_frame: Callable[[int, bytes], None], *,
                 src_mac: Callable[[int], bytes] | None = None,
                 links: Mapping[int, tuple[float, int, int]] | None = None,
                 no_credit_ports: Iterable[int] = ()) -> None:
        super().__init__(tm, settings, send_frame, src_mac=src_mac, links=links)
        check_link_buffers(settings.credit.buffer_bytes, self.links)
        # Ports without a link peer (the CPU port): no credit, nothing announced there.
        self.no_credit = frozenset(no_credit_ports)
        self.credit = settings.credit
        self.arrival = False
        self.ports: dict[int, CreditPort] = {}
        self.pause_rx: dict[int, int] = {}
        tm.attach_flow_control(self)

    def set_link(self, port: int, rate_bps: float, delay_ns: int, mtu: int) -> None:
        check_link_buffers(self.credit.buffer_bytes, {port: (rate_bps, delay_ns, mtu)})
        super().set_link(port, rate_bps, delay_ns, mtu)

    def port_state(self, port: int) -> CreditPort:
        cp = self.ports.get(port)
        if cp is None:
            cp = self.ports[port] = CreditPort(
                self.clock, lambda f: self.send_frame(port, f), self.src_mac(port),
                self.credit, self.cfg.lossless, self._rate(port),
                on_credit=lambda _prio: self._kick(port))
        return cp

    def start(self) -> None:
        """Announce every port's credit (link start; a port whose announcement is lost
        learns the limit when its peer asks for credit)."""
        for port in sorted((set(self.links) | set(self.tm._ports)) - self.no_credit):
            self.port_state(port).announce()

    # --- MAC: received frames ---------------------------------------------------------
    def on_credit_frame(self, port: int, frame: bytes) -> None:
        self.port_state(port).on_frame(frame)

    def on_mac_control(self, port: int, frame: bytes) -> None:
        self.pause_rx[port] = self.pause_rx.get(port, 0) + 1

    # --- data path --------------------------------------------------------------------
    def enqueue(self, port: int, pkt: object, size: int, priority: int = 0
                ) -> EnqueueResult | None:
        p = self._egress(port, priority)
        if p is None:
            return None
        q = p.queues[priority]
        key = -1
        ing = self.ingress
        if priority < NUM_PRIORITIES and self.lossless[priority] and ing >= 0 \
                and ing not in self.no_credit:
            cp = self.ports.get(ing) or self.port_state(ing)
            if self.arrival:
                self.arrival = False  # further copies (multicast) only hold buffer
                if not cp.received(priority, size):
                    self._drop(port, priority, CREDIT_OVERRUN)
                    return None
            else:
                cp.hold(priority, size)
            key = ing * 8 + priority
            if cp.used[priority] > self.max_used.get(key, 0):
                self.max_used[key] = cp.used[priority]
        return self._append(p, q, pkt, size, priority, key)  # type: ignore[arg-type]

    def serve(self, p: _Port) -> None:
        """The traffic manager's service turn, skipping lossless queues out of credit."""
        now, budget = self._start_turn(p)
        lossless = self.lossless
        if p.port in self.no_credit:
            lossless = _NONE_LOSSLESS
        cp = self.ports.get(p.port) or self.port_state(p.port)
        clock = self.clock
        queues = p.queues
        while budget > 0:
            prio = len(queues) - 1
            while prio >= 0:
                q = queues[prio]
                if q and (prio >= NUM_PRIORITIES or not lossless[prio]
                          or cp.can_send(prio, q[0][1])):  # type: ignore[index]
                    break
                prio -= 1
            if prio < 0:
                # Out of credit with packets waiting: the transmitter idles until an
                # update comes (no timer), and that idle time is no backlog.
                p.scheduled = False
                self._idle.add(p.port)
                return
            budget -= 1
            pkt, size, ts, qdepth, enq_ns, key = self._take(p, prio)
            if prio < NUM_PRIORITIES and lossless[prio]:
                cp.sent(prio, size)
            if key >= 0:
                self.ports[key >> 3].freed(key & 7, size)
            self._depart(p, pkt, size, enq_ns, ts, qdepth, prio, now, budget)
            if budget:
                now = clock.now_ns()

    # --- observation ------------------------------------------------------------------
    def counters(self) -> dict[str, Any]:
        """Per port: updates sent/received, FCTBS/FCCL/ABR, blocks in use, overruns,
        times a queue waited for credit, malformed updates and PAUSE frames received;
        drops per "port:priority:reason"; the largest blocks in use per "port:priority"
        (JSON-ready)."""
        out: dict[str, Any] = {"mode": "credit", "ports": {}, "drops": {},
                               "max_ingress_blocks": {}}
        for port in sorted(set(self.ports) | set(self.pause_rx)):
            entry: dict[str, Any] = {"pause_rx": self.pause_rx.get(port, 0)}
            cp = self.ports.get(port)
            if cp is not None:
                entry.update(cp.counters())
            out["ports"][port] = entry
        out["drops"] = {f"{p}:{q}:{r}": n for (p, q, r), n in self.class_drops.items()}
        out["max_ingress_blocks"] = {f"{k >> 3}:{k & 7}": v for k, v in self.max_used.items()}
        return out


def install_credit(sw: Any, settings: FlowControl, send_frame: Callable[[int, bytes], None],
                   **kw: Any) -> SwitchCreditControl:
    """Credit mode on a switch (V1ModelSwitch): its `receive` hands updates (0x88B5) to
    the credit layer and counts and drops PAUSE frames, both before the pipeline, and
    marks a data frame's arrival so its first enqueue is charged to the ingress port.
    The switch's CPU port, and `no_credit_ports`, carry no credit."""
    if sw.cpu_port is not None:
        kw["no_credit_ports"] = {*kw.get("no_credit_ports", ()), sw.cpu_port}
    fc = SwitchCreditControl(sw.tm, settings, send_frame, **kw)
    plain = sw.receive
    on_credit = fc.on_credit_frame
    on_mac = fc.on_mac_control

    def receive(port: int, data: bytes) -> None:
        etype = data[12:14]
        if etype == b"\x88\xb5":
            on_credit(port, data)
            return
        if etype == b"\x88\x08":
            on_mac(port, data)
            return
        fc.ingress = port
        fc.arrival = True
        try:
            plain(port, data)
        finally:
            # enqueues from egress (clones, recirculation) are not arrivals
            fc.ingress = -1
            fc.arrival = False

    sw.receive = receive
    return fc
