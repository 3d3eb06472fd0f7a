"""Reading the fabric while a workload runs: per-port counters and queue depths.

Two sources, merged into `PortCount`s:
- the switch target's own statistics (embedded: one admin `stats` call per switch
  gives frames/bytes, kernel drops, traffic-manager drops and the instantaneous
  queue occupancy of every port: cheap enough to sample often);
- fabric.p4's counters over P4Runtime through the controller (ECN marks, pipeline
  drops): one read per port and counter, so read at the start, the end, and at a
  slower pace for the live view.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from .jsontypes import Row, count, num, sub
from .metrics import DROP_FIELDS, PortCount, PortKey, drop_counts
from .pfc import Counters, flow_control_stats

if TYPE_CHECKING:
    from emu.control import FabricController
    from emu.control.controller import PortCounters
    from emu.core.port import PortStats

log = logging.getLogger(__name__)

TargetStats = Callable[[str], Row | None]  # switch -> admin `stats` or None


class QueueReader(Protocol):
    """A switch's traffic manager, as sampled: (packets, bytes) queued at a port."""

    def occupancy(self, port: int) -> tuple[int, int]: ...


class DropReader(Protocol):
    """A switch's drop counters, as sampled: (port, reason) -> count."""

    def snapshot(self) -> dict[tuple[int, str], int]: ...


@dataclass
class Snapshot:
    t_s: float
    ports: dict[PortKey, PortCount]
    queues: list[tuple[float, str, int, float]] = field(default_factory=list)
    tm_lag_ms: float | None = None
    switch_t: dict[str, float] = field(default_factory=dict)  # when each switch was read
    # Per entry of `queues`, how many sample ticks it stands for (None: one each): a
    # depth held unchanged is one weighted point (ChangeSampler).
    queue_weights: list[int] | None = None
    # switch -> admin stats "pfc" (or "credit": their "mode" says so)
    pfc: dict[str, Counters] = field(default_factory=dict)


def from_target_stats(switch: str, stats: Row, t_s: float
                      ) -> tuple[dict[PortKey, PortCount], list[tuple[float, str, int, float]],
                                 float | None]:
    """PortCounts, queue samples and the largest traffic-manager lag from one switch's
    admin `stats` answer (emu.runtime.admin protocol)."""
    ports: dict[PortKey, PortCount] = {}
    queues = []
    drops = sub(stats, "drops")  # port number (a JSON key: a string) -> reason -> count
    all_ports = sub(stats, "ports")
    for num_s in all_ports:
        p, d = sub(all_ports, num_s), sub(drops, num_s)
        port = int(num_s)
        ports[(switch, port)] = PortCount(
            rx_pkts=count(p, "rx_frames"), rx_bytes=count(p, "rx_bytes"),
            tx_pkts=count(p, "tx_frames"), tx_bytes=count(p, "tx_bytes"),
            **drop_counts(functools.partial(count, d)),
            kernel_drops=count(p, "kernel_drops"), link_drops=count(p, "tx_drops"))
        queued = num(sub(p, "queue"), "queued_pkts")
        if queued is not None:
            queues.append((t_s, switch, port, queued))
    # The embedded daemon reports how late its traffic manager ran since the previous
    # `stats` call (one figure per switch, reset on read); BMv2 has none (absent/None).
    lag = num(stats, "tm_lag_ms")
    return ports, queues, lag


def merge_p4(ports: dict[PortKey, PortCount], p4: Mapping[PortKey, PortCounters]
             ) -> dict[PortKey, PortCount]:
    """Add fabric.p4's counters (a controller PortCounters per port) to target counts;
    the P4 counters give rx/tx where the target gave none (BMv2)."""
    out = dict(ports)
    for key, c in p4.items():
        base = out.get(key, PortCount())
        out[key] = replace(base, ecn_marks=int(c.ecn_marks), pipeline_drops=int(c.drops),
                           rx_pkts=base.rx_pkts or int(c.rx_pkts),
                           rx_bytes=base.rx_bytes or int(c.rx_bytes),
                           tx_pkts=base.tx_pkts or int(c.tx_pkts),
                           tx_bytes=base.tx_bytes or int(c.tx_bytes))
    return out


_NO_DROPS = dict.fromkeys(DROP_FIELDS, 0)


def drop_counts_by_port(by_reason: Mapping[tuple[int, str], int]) -> dict[int, dict[str, int]]:
    """`drop_counts` of every port of a switch at once, from its counts per (port,
    reason), grouped by port in one pass (ports without a drop absent)."""
    per_port: dict[int, dict[str, int]] = {}
    for (port, reason), n in by_reason.items():
        per_port.setdefault(port, {})[reason] = n
    return {port: drop_counts(functools.partial(count, reasons))
            for port, reasons in per_port.items()}


class FabricSampler:
    """Snapshots of every switch: `sample(with_p4)`; remembers the last P4 reading so
    fast samples carry the most recent ECN/drop counts."""

    def __init__(self, switches: list[str], target_stats: TargetStats,
                 controller: FabricController | None, t0: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.switches = switches
        self.target_stats = target_stats
        self.controller = controller
        self.clock = clock  # the run's timeline (virtual runs: the virtual clock)
        self.t0 = clock() if t0 is None else t0
        self._p4: dict[PortKey, PortCounters] = {}
        self.errors = 0
        # Wall time spent reading, per source: what sampling costs (recorded per run).
        self.target_s = 0.0
        self.p4_s = 0.0
        self.p4_reads = 0

    def read_p4(self) -> dict[PortKey, PortCounters]:
        if self.controller is None:
            return {}
        t0 = time.monotonic()
        self.p4_reads += 1
        out: dict[PortKey, PortCounters] = {}
        for sw in self.switches:
            try:
                for port, c in self.controller.port_counters(sw).items():
                    out[(sw, port)] = c
            except Exception as exc:  # a switch that stopped answering: note, carry on
                self.errors += 1
                log.debug("p4 counters of %s: %s", sw, exc)
        self._p4 = out
        self.p4_s += time.monotonic() - t0
        return out

    def sample(self, with_p4: bool = False) -> Snapshot:
        t = self.clock() - self.t0
        ports: dict[PortKey, PortCount] = {}
        queues: list[tuple[float, str, int, float]] = []
        lag: float | None = None
        t0 = time.monotonic()
        switch_t: dict[str, float] = {}
        pfc: dict[str, Counters] = {}
        for sw in self.switches:
            before = self.clock()
            try:
                st = self.target_stats(sw)
            except Exception as exc:
                self.errors += 1
                log.debug("stats of %s: %s", sw, exc)
                st = None
            # The counters were read during the call: its midpoint is their time.
            switch_t[sw] = (before + self.clock()) / 2 - self.t0
            if st:
                p, q, lg = from_target_stats(sw, st, t)
                ports.update(p)
                queues.extend(q)
                if lg is not None:
                    lag = max(lag or 0.0, lg)
                counters = flow_control_stats(st)
                if counters is not None:
                    pfc[sw] = counters
        self.target_s += time.monotonic() - t0
        if with_p4 or not self._p4:
            self.read_p4()
        return Snapshot(t, merge_p4(ports, self._p4), queues, lag, switch_t, pfc=pfc)


class ChangeSampler:
    """Samples of an in-process fabric (virtual runs) at a fixed tick, kept only where
    something changed, so their cost follows the traffic, not the virtual time.

    Each tick reads every switch port's frame counters and queue depth (attribute
    reads). A port appears in a tick's Snapshot only when one moved; before a change
    that follows a quiet stretch, its unchanged values are repeated at the previous
    tick, so rates between consecutive points stay exact. A queue depth held for n ticks
    is one point plus, at the end of the stretch, one point of weight n - 1
    (`Snapshot.queue_weights`): statistics weighted so equal those of every tick.

    `ports`: (switch, port) -> (its link-side PortStats, the switch's traffic manager,
    its drop counters); `p4`: the FabricSampler whose controller reads fabric.p4's
    counters (every `p4_every` ticks with activity, and by `full()`)."""

    def __init__(self, ports: Mapping[PortKey, tuple[PortStats, QueueReader, DropReader]],
                 p4: FabricSampler,
                 tick_ns: int, p4_every: int = 20) -> None:
        self.tick_ns = tick_ns
        self.p4 = p4
        self.p4_every = p4_every
        self._keys = sorted(ports)
        self._src = [ports[k] for k in self._keys]
        n = len(self._keys)
        self._tx = [-1] * n  # tx frames at the last point
        self._rx = [-1] * n  # rx frames at the last point
        self._depth = [0] * n
        self._last_tick = [0] * n  # tick of the port's last point
        self._run_start = [0] * n  # tick the current queue depth was first seen
        self._counts: list[PortCount] = [PortCount()] * n
        self._active_ticks = 0
        self.snapshots: dict[int, Snapshot] = {}
        self.ticks_read = 0
        # The run's end when it falls inside a tick (--timeout): that tick's point is
        # stamped with it, not with the tick's end the clock never reached.
        self.end_ns: int | None = None

    def _snap(self, tick: int) -> Snapshot:
        s = self.snapshots.get(tick)
        if s is None:
            t_ns = tick * self.tick_ns
            if self.end_ns is not None:
                t_ns = min(t_ns, self.end_ns)
            s = self.snapshots[tick] = Snapshot(t_ns / 1e9, {}, [], queue_weights=[])
        return s

    def start(self, first: Snapshot) -> None:
        """Take the values of the full first snapshot (tick 0) as every port's state."""
        for i, key in enumerate(self._keys):
            c = first.ports.get(key, PortCount())
            self._tx[i] = c.tx_pkts
            self._rx[i] = c.rx_pkts
            self._counts[i] = c
        depth = {(sw, p): int(d) for _t, sw, p, d in first.queues}
        self._depth = [depth.get(k, 0) for k in self._keys]

    def tick(self, tick: int) -> None:
        """Read the fabric at `tick` (the clock is there); record what changed."""
        self.ticks_read += 1
        txs, rxs, depths, src = self._tx, self._rx, self._depth, self._src
        changed = []
        for i, (stats, tm, _drops) in enumerate(src):
            if (stats.tx_frames != txs[i] or stats.rx_frames != rxs[i]
                    or tm.occupancy(self._keys[i][1])[0] != depths[i]):
                changed.append(i)
        if not changed:
            return
        self._active_ticks += 1
        if self._active_ticks % self.p4_every == 0:
            self.p4.read_p4()
        p4 = self.p4._p4
        snap = self._snap(tick)
        t = snap.t_s
        drops_of: dict[int, dict[int, dict[str, int]]] = {}
        for i in changed:
            key = self._keys[i]
            sw, port = key
            stats, tm, drops = src[i]
            if self._last_tick[i] < tick - 1:  # the end of a quiet stretch: hold the values
                self._snap(tick - 1).ports[key] = self._counts[i]
            d = drops_of.get(id(drops))
            if d is None:  # once per switch and tick
                d = drops_of[id(drops)] = drop_counts_by_port(drops.snapshot())
            c4 = p4.get(key)
            # Frames as the port's MAC counts them, both ways (PFC and credit frames
            # included), as a real run's switch daemons report them: not fabric.p4's
            # rx counter, which misses what flow control consumes and is read only
            # every p4_every ticks.
            c = PortCount(tx_pkts=stats.tx_frames, tx_bytes=stats.tx_bytes,
                          rx_pkts=stats.rx_frames, rx_bytes=stats.rx_bytes,
                          **d.get(port, _NO_DROPS),
                          ecn_marks=int(c4.ecn_marks) if c4 is not None else 0,
                          pipeline_drops=int(c4.drops) if c4 is not None else 0)
            snap.ports[key] = c
            self._counts[i] = c
            self._last_tick[i] = tick
            txs[i] = stats.tx_frames
            rxs[i] = stats.rx_frames
            depth = tm.occupancy(port)[0]
            if depth != depths[i]:
                self._close_run(i, tick - 1)
                depths[i] = depth
                self._run_start[i] = tick
                snap.queues.append((t, sw, port, float(depth)))
                assert snap.queue_weights is not None
                snap.queue_weights.append(1)

    def _close_run(self, i: int, last: int) -> None:
        """The depth of port i, held from its run's start to tick `last`: one point of
        the remaining weight at `last`."""
        w = last - self._run_start[i]
        if w > 0:
            s = self._snap(last)
            sw, port = self._keys[i]
            s.queues.append((s.t_s, sw, port, float(self._depth[i])))
            assert s.queue_weights is not None
            s.queue_weights.append(w)

    def finish(self, last_tick: int) -> list[Snapshot]:
        """The recorded Snapshots in time order, up to `last_tick` (the loop's last)."""
        for i in range(len(self._keys)):
            self._close_run(i, last_tick)
        return [self.snapshots[k] for k in sorted(self.snapshots)]
