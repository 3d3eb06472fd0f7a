"""Lossless-fabric scenarios in virtual time (fabric.p4 on the embedded switches, RoCE
NICs behind PFC MACs): what PFC costs and how it is contained.

    python -m emu.experiments.pfc_scenarios victim|dcqcn|storm|deadlock [--plots DIR]

- victim: a flow to an idle receiver shares the spine's port toward the receiver's leaf
  with a 7:1 incast; PFC's pauses spread back and slow it (congestion spreading) until
  DCQCN keeps the incast's queue below XOFF.
- dcqcn: the same incast with PFC, congestion control off and on: PAUSE frames sent.
- storm: a host NIC that keeps sending PAUSE; the leaf's PFC watchdog detects it, drops
  what is queued for that host, and restores the port once the storm is over.
- deadlock: five switches in a ring, each flow two hops clockwise: a cyclic buffer
  dependency; under PFC every ring buffer fills and nothing moves until the watchdog
  breaks the cycle (slowly: it drops, the transport times out), as routes without the
  cycle avoid it.

Each scenario returns its figures (dataclasses) and, given a directory, writes a plot.
Times are virtual nanoseconds; the modelled network runs without dilation.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from emu.control import EcnSettings, QosSettings
from emu.core.pfc import FlowControl, PfcThresholds, WatchdogSettings, pfc_frame
from emu.p4.v1model.buffer import WATCHDOG_DROP, SwitchFlowControl
from emu.roce import wire
from emu.roce.dcqcn import DcqcnParams, profile
from emu.roce.nic import Nic, NicParams
from emu.roce.pfc import HostMac
from emu.roce.qp import QpParams, QueuePair, WorkRequest
from emu.sim.fabric import SimFabric
from emu.topo import Fabric, loads_topology
from emu.topo.generators import clos_fabric
from emu.topo.model import Defaults

from .pfc_results import DcqcnResult, DeadlockResult, StormResult, VictimResult

__all__ = ["SCENARIOS", "Harness", "deadlock", "dcqcn_pauses", "main", "pause_storm",
           "victim_flow"]

RATE = 10_000_000_000
MTU = 1024
MSG = 64 * 1024
PFC = FlowControl(mode="pfc", lossless=frozenset({3}), thresholds=PfcThresholds(40_000, 20_000))
ECN = EcnSettings(5, 20, 0.2)


@dataclass
class Flow:
    """One QP pair posting `count` messages of `msg` bytes; completion times kept."""

    src: str
    dst: str
    qp: QueuePair
    wrs: list[WorkRequest] = field(default_factory=list)
    msg: int = MSG

    start_ns: int = 0

    @property
    def done(self) -> bool:
        return bool(self.wrs) and all(w.completed_ns for w in self.wrs)

    def goodput_bps(self) -> float:
        """Message bytes over the time from posting to the last completion."""
        return len(self.wrs) * self.msg * 8 / ((self.last_ns() - self.start_ns) / 1e9)

    def completed_bytes(self, until_ns: int) -> int:
        return sum(self.msg for w in self.wrs if w.completed_ns and w.completed_ns <= until_ns)

    def last_ns(self) -> int:
        return max((w.completed_ns or 0) for w in self.wrs)


class Harness:
    """A SimFabric with every host's NIC behind a HostMac (PFC on the host side too)."""

    def __init__(self, fabric: Fabric, fc: FlowControl | None, *, dcqcn: bool = False,
                 ecn: EcnSettings | None = None) -> None:
        self.fabric = fabric
        self.sim = SimFabric(fabric, qos=QosSettings.lossless(8), flow_control=fc,
                             ecn=ecn or EcnSettings(enabled=False))
        self.clock = self.sim.clock
        self.macs: dict[str, HostMac] = {h.name: self.sim.host_mac(h.name)
                                         for h in fabric.hosts}
        dc = profile("hpcc", RATE) if dcqcn else DcqcnParams(enabled=False)
        self.nics = {h.name: Nic(self.clock, self.macs[h.name],
                                 NicParams(mac=h.mac, ip=str(h.ip), line_rate_bps=RATE,
                                           mtu=MTU, dcqcn=dc))
                     for h in fabric.hosts}
        self.flows: list[Flow] = []
        self._qpn = 100

    def flow(self, src: str, dst: str, count: int, msg: int = MSG, at_ns: int = 0) -> Flow:
        """`count` messages from `src` to `dst`, posted at `at_ns` (virtual time)."""
        s, d = self.fabric.host(src), self.fabric.host(dst)
        a, b = self._qpn, self._qpn + 1
        self._qpn += 2
        sport = 49152 + a
        qa = self.nics[src].add_qp(QpParams(a, wire.Path(s.mac, s.gateway_mac, str(s.ip),
                                                         str(d.ip), sport, b), mtu=MTU,
                                            rto_ns=2_000_000))
        self.nics[dst].add_qp(QpParams(b, wire.Path(d.mac, d.gateway_mac, str(d.ip),
                                                    str(s.ip), sport + 1, a), mtu=MTU,
                                       deliver="none"))
        f = Flow(src, dst, qa, msg=msg, start_ns=at_ns)

        def post() -> None:
            f.wrs = [qa.post_send(bytes(msg)) for _ in range(count)]

        if at_ns:
            f.wrs = []
            self.clock.call_at(at_ns, post)
        else:
            post()
        self.flows.append(f)
        return f

    def switch_fc(self) -> dict[str, SwitchFlowControl]:
        return {n: sw.flow_control for n, sw in self.sim.switches.items()
                if sw.flow_control is not None}

    def pause_frames(self) -> int:
        """PAUSE (XOFF) frames sent by every switch and host."""
        sw = sum(sum(c) for fc in self.switch_fc().values() for c in fc.pause_tx.values())
        return sw + sum(sum(m.pause_tx) for m in self.macs.values())

    def drops(self) -> int:
        return sum(sw.drops.total() for sw in self.sim.switches.values())

    def retransmits(self) -> int:
        return sum(f.qp.requester.stats.retx_pkts for f in self.flows)

    def run_until(self, done: Callable[[], bool], limit_ns: int, step_ns: int = 100_000,
                  each: Callable[[int], None] | None = None) -> None:
        while not done() and self.clock.now_ns() < limit_ns:
            self.clock.advance(step_ns)
            if each is not None:
                each(self.clock.now_ns())


# --------------------------------------------------------------------------- victim


def victim_fabric() -> Fabric:
    """Two leaves under one spine, 8 hosts each; uplinks 4x the host rate, so the
    spine's port toward leaf2 has room for the incast's share and the victim's."""
    return clos_fabric(2, 1, 8, host_rate_bps=RATE, uplink_rate_bps=4 * RATE,
                       defaults=Defaults(rate_bps=RATE, delay_ns=1000, depth_pkts=64, mtu=1500))


VICTIM_START_NS = 6_000_000  # after the incast's start-up transient (DCQCN converged)


def _victim_run(incast: bool, dcqcn: bool, victim_msgs: int, incast_msgs: int
                ) -> tuple[float, int, int, list[tuple[float, float]]]:
    h = Harness(victim_fabric(), PFC, dcqcn=dcqcn, ecn=ECN if dcqcn else None)
    senders = [f"h{i}" for i in range(1, 8)]
    if incast:
        for s in senders:
            h.flow(s, "h9", incast_msgs)
    v = h.flow("h8", "h10", victim_msgs, at_ns=VICTIM_START_NS)
    series: list[tuple[float, float]] = []
    last = [0, 0]

    def sample(now: int) -> None:
        b = v.completed_bytes(now)
        series.append((now / 1e6, (b - last[1]) * 8 / ((now - last[0]) or 1)))  # Gb/s
        last[:] = [now, b]

    h.run_until(lambda: v.done, 200_000_000, step_ns=200_000, each=sample)
    assert v.done, "the victim flow did not finish"
    return v.goodput_bps(), h.pause_frames(), h.drops(), series


def victim_flow(victim_msgs: int = 32, incast_msgs: int = 40) -> VictimResult:
    alone, _p, _d, s_alone = _victim_run(False, False, victim_msgs, incast_msgs)
    pfc, p1, d1, s_pfc = _victim_run(True, False, victim_msgs, incast_msgs)
    dc, p2, d2, s_dc = _victim_run(True, True, victim_msgs, incast_msgs)
    return VictimResult(alone, pfc, dc, p1, p2, d1 + d2,
                        {"alone": s_alone, "PFC": s_pfc, "PFC + DCQCN": s_dc})


# ---------------------------------------------------------------------------- dcqcn


def _incast(dcqcn: bool, senders: int, msgs: int) -> tuple[int, int, int, float]:
    fabric = clos_fabric(1, 1, senders + 1, defaults=Defaults(rate_bps=RATE, delay_ns=1000,
                                                               depth_pkts=64, mtu=1500))
    h = Harness(fabric, PFC, dcqcn=dcqcn, ecn=ECN if dcqcn else None)
    rx = f"h{senders + 1}"
    for i in range(1, senders + 1):
        h.flow(f"h{i}", rx, msgs)
    h.run_until(lambda: all(f.done for f in h.flows), 2_000_000_000, step_ns=1_000_000)
    assert all(f.done for f in h.flows), "the incast did not finish"
    fct = max(f.last_ns() for f in h.flows) / 1e6
    return h.pause_frames(), h.drops(), h.retransmits(), fct


def dcqcn_pauses(senders: int = 8, msgs: int = 32) -> DcqcnResult:
    p_off, d_off, r_off, f_off = _incast(False, senders, msgs)
    p_on, d_on, r_on, f_on = _incast(True, senders, msgs)
    return DcqcnResult(p_off, p_on, d_off + d_on, r_off + r_on, f_off, f_on)


# ---------------------------------------------------------------------------- storm


def pause_storm(detection_ns: int = 2_000_000, storm_ms: float = 6.0) -> StormResult:
    """h3 (leaf1) keeps sending PAUSE (priority 3) from 1 ms for `storm_ms`. h6 (leaf2)
    sends to h3, so once h3's queue on leaf1 stops, it backs up into leaf1's buffers
    and beyond (the spine, leaf2's uplink, leaf2's hosts). The probe flow h8 -> h4
    never goes to h3, but shares the spine's port toward leaf1: it stalls too until
    the leaf's watchdog drops what is bound for h3."""
    wd = WatchdogSettings(enabled=True, detection_ns=detection_ns,
                          restoration_ns=detection_ns, action="drop")
    fc = dataclasses.replace(PFC, watchdog=wd)
    fabric = clos_fabric(2, 1, 4, host_rate_bps=RATE, uplink_rate_bps=RATE,
                         defaults=Defaults(rate_bps=RATE, delay_ns=1000, depth_pkts=64,
                                           mtu=1500))

    def run(storm: bool) -> tuple[Harness, Flow, list[tuple[float, float]], int, int]:
        h = Harness(fabric, fc)
        h.flow("h6", "h3", 120)
        probe = h.flow("h8", "h4", 60)
        stormer = h.sim.hosts["h3"].port  # the raw link port: PAUSE below the MAC
        src = h.fabric.host("h3").mac
        start, end = 1_000_000, 1_000_000 + int(storm_ms * 1e6)
        leaf = h.sim.switches["leaf1"]
        events: dict[str, int] = {}

        def storm_tick() -> None:
            if h.clock.now_ns() < end:
                stormer.send(pfc_frame(src, {3: 0xFFFF}))
                h.clock.call_later(1_000_000, storm_tick)  # well within 0xFFFF quanta

        if storm:
            h.clock.call_at(start, storm_tick)
        series: list[tuple[float, float]] = []
        last = [0, 0]

        def sample(now: int) -> None:
            b = probe.completed_bytes(now)
            series.append((now / 1e6, (b - last[1]) * 8 / ((now - last[0]) or 1)))
            last[:] = [now, b]
            for t, what, port, prio in leaf.flow_control.events:
                if (port, prio) == (3, 3):  # h3's port, the lossless priority
                    events.setdefault("detected" if what == "storm" else what, t)

        h.run_until(lambda: probe.done and h.clock.now_ns() > end + 3 * detection_ns,
                    200_000_000, step_ns=50_000, each=sample)
        return h, probe, series, events.get("detected", 0), events.get("restored", 0)

    h0, p0, s0, _d, _r = run(False)
    h, probe, series, det, res = run(True)
    start, end = 1_000_000, 1_000_000 + int(storm_ms * 1e6)

    def rate(lo: int, hi: int) -> float:
        return (probe.completed_bytes(hi) - probe.completed_bytes(lo)) * 8 / ((hi - lo) / 1e9)

    pre = det if det else end
    stalled = rate(start + 200_000, pre)
    after = rate(det, min(det + 2_000_000, probe.last_ns())) if det else 0.0
    alone = p0.msg * len(p0.wrs) * 8 / (p0.last_ns() / 1e9)
    paused = [f"{name}:{port}" for name, fcs in h.switch_fc().items() if name != "leaf1"
              for port, st in fcs.rx.items() if st.paused_ns(3) > 0]
    paused += [f"{n}:0" for n, m in h.macs.items() if n != "h3" and m.pause.paused_ns(3) > 0]
    wdrops = sum(n for (_p, _q, why), n in h.switch_fc()["leaf1"].class_drops.items()
                 if why == WATCHDOG_DROP)
    return StormResult(start, end, det or None, res or None, detection_ns, detection_ns,
                       stalled, after, alone, sorted(paused), wdrops,
                       {"no storm": s0, "storm": series})


# ------------------------------------------------------------------------- deadlock

RING = """\
name: ring
defaults: {{rate: 10Gbps, delay: 1us, queue_depth_pkts: 64}}
switches:
{switches}
hosts:
{hosts}
links:
{links}
"""


def ring_fabric(n: int = 5) -> Fabric:
    """`n` leaves in a ring (s_i -- s_i+1), one host each: h_i on s_i."""
    sw = "\n".join(f"  - {{name: s{i}, role: leaf}}" for i in range(1, n + 1))
    hosts = "\n".join(f"  - {{name: h{i}}}" for i in range(1, n + 1))
    links = [f"  - {{a: h{i}, b: s{i}}}" for i in range(1, n + 1)]
    links += [f"  - {{a: s{i}, b: s{i % n + 1}}}" for i in range(1, n + 1)]
    return loads_topology(RING.format(switches=sw, hosts=hosts, links="\n".join(links)),
                          "ring.yaml")


def deadlock(stall_ns: int = 2_000_000, msgs: int = 48, n: int = 5) -> DeadlockResult:
    """`n` switches in a ring; each h_i sends to h_i+2, which shortest-path routing
    sends clockwise (two hops against three), so every ring link carries two flows at
    twice its capacity and each ring ingress buffer waits on the next one's: a cycle.
    Deadlock: no data packet received for `stall_ns` while work remains. Then the same
    with the watchdog (action drop, detection `stall_ns` / 2) on every switch."""
    fabric = ring_fabric(n)
    limit_ns = 100_000_000

    series: dict[str, list[tuple[float, float]]] = {}

    def run(fc: FlowControl, acyclic: bool = False) -> tuple[Harness, int | None, list[int]]:
        h = Harness(fabric, fc)
        if acyclic:
            h.sim.controller.link_down(f"s{n}", "s1")  # routes only; the link stays up
        for i in range(1, n + 1):
            h.flow(f"h{i}", f"h{(i + 1) % n + 1}", msgs)
        hist: list[tuple[int, int]] = []
        found: list[int] = []
        ring: list[int] = []

        def each(now: int) -> None:
            hist.append((now, _rx_pkts(h)))
            old = [b for t, b in hist if t <= now - stall_ns]
            if old and not found and old[-1] == hist[-1][1] and not all(
                    f.done for f in h.flows):
                found.append(now)
                ring.extend(_ring_ingress(h))

        def over() -> bool:  # without a watchdog: watch the deadlock hold a while
            return all(f.done for f in h.flows) or (
                bool(found) and not fc.watchdog.enabled
                and h.clock.now_ns() >= found[0] + 8 * stall_ns)

        h.run_until(over, limit_ns, step_ns=250_000, each=each)
        label = "acyclic routes" if acyclic else \
            "PFC + watchdog" if fc.watchdog.enabled else "PFC"
        series[label] = [(t / 1e6, float(b)) for t, b in hist]
        return h, (found[0] if found else None), ring

    h, at, ring = run(PFC)
    wd = dataclasses.replace(PFC, watchdog=WatchdogSettings(
        enabled=True, detection_ns=stall_ns // 2, restoration_ns=stall_ns // 2, action="drop"))
    h2, _at2, _r2 = run(wd)
    done = sum(1 for f in h2.flows for w in f.wrs if w.completed_ns)
    storms = sum(len([e for e in sw.flow_control.events if e[1] == "storm"])
                 for sw in h2.sim.switches.values())
    h3, at3, _r3 = run(PFC, acyclic=True)
    acyclic = sum(1 for f in h3.flows for w in f.wrs if w.completed_ns)
    before = sum(1 for f in h.flows for w in f.wrs if w.completed_ns)
    return DeadlockResult(0 if at is not None else _rx_pkts(h), stall_ns, at, ring,
                          PFC.thresholds.xoff_bytes, before, done, n * msgs, storms, acyclic,
                          at3 is not None, limit_ns, series)


def _rx_pkts(h: Harness) -> int:
    """Data packets the receivers have taken in (responder side), all flows."""
    return sum(qp.responder.stats.data_pkts_rcvd for nic in h.nics.values()
               for qp in nic.qps.values())


def _ring_ingress(h: Harness) -> list[int]:
    """Lossless bytes held per ring ingress port (from the neighbouring switches)."""
    out = []
    for sw in h.fabric.switches:
        fcs = h.sim.switches[sw.name].flow_control
        for p in sw.fabric_ports:
            out.append(fcs.used.get(p.number * 8 + 3, 0))
    return out


SCENARIOS: dict[str, Callable[[], object]] = {
    "victim": victim_flow, "dcqcn": dcqcn_pauses, "storm": pause_storm, "deadlock": deadlock}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emu.experiments.pfc_scenarios",
                                 description="lossless-fabric (PFC) scenarios in virtual time")
    ap.add_argument("scenario", choices=[*sorted(SCENARIOS), "all"])
    ap.add_argument("--plots", metavar="DIR", default=None,
                    help="write pfc_<scenario>.png there (default: no plot)")
    args = ap.parse_args(argv)
    import logging

    logging.getLogger("emu.pfc").setLevel(logging.ERROR)  # the storms are the point here
    for name in sorted(SCENARIOS) if args.scenario == "all" else [args.scenario]:
        result = SCENARIOS[name]()
        print(f"== {name}")
        for k, v in dataclasses.asdict(result).items():  # type: ignore[call-overload]
            if k != "series":
                print(f"{k}: {v}")
        if args.plots:
            from .pfc_plots import scenario_figure

            print(f"plot: {scenario_figure(name, result, Path(args.plots))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
