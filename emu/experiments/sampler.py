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

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .metrics import PortCount, PortKey

log = logging.getLogger(__name__)

TargetStats = Callable[[str], Mapping[str, Any] | None]  # switch -> admin `stats` or None


@dataclass
class Snapshot:
    t_s: float
    ports: dict[PortKey, PortCount]
    queues: list[tuple[float, str, int, float]] = field(default_factory=list)
    tm_lag_ms: float | None = None
    switch_t: dict[str, float] = field(default_factory=dict)  # when each switch was read


def from_target_stats(switch: str, stats: Mapping[str, Any], t_s: float
                      ) -> tuple[dict[PortKey, PortCount], list[tuple[float, str, int, float]],
                                 float | None]:
    """PortCounts, queue samples and the largest traffic-manager lag from one switch's
    admin `stats` answer (emu.runtime.admin protocol)."""
    ports: dict[PortKey, PortCount] = {}
    queues = []
    lag: float | None = None
    drops = stats.get("drops") or {}
    for num_s, p in (stats.get("ports") or {}).items():
        num = int(num_s)
        d = drops.get(num_s) or drops.get(num) or {}
        q = p.get("queue") or {}
        ports[(switch, num)] = PortCount(
            rx_pkts=int(p.get("rx_frames", 0)), rx_bytes=int(p.get("rx_bytes", 0)),
            tx_pkts=int(p.get("tx_frames", 0)), tx_bytes=int(p.get("tx_bytes", 0)),
            queue_drops=int(d.get("tail_drop", 0)) + int(d.get("priority_out_of_range", 0)),
            kernel_drops=int(p.get("kernel_drops", 0)), link_drops=int(p.get("tx_drops", 0)))
        if "queued_pkts" in q:
            queues.append((t_s, switch, num, float(q["queued_pkts"])))
    # The embedded daemon reports how late its traffic manager ran since the previous
    # `stats` call (one figure per switch, reset on read); BMv2 has none (absent/None).
    if stats.get("tm_lag_ms") is not None:
        lag = float(stats["tm_lag_ms"])
    return ports, queues, lag


def merge_p4(ports: dict[PortKey, PortCount], p4: Mapping[PortKey, Any]) -> dict[PortKey, PortCount]:
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


class FabricSampler:
    """Snapshots of every switch: `sample(with_p4)`; remembers the last P4 reading so
    fast samples carry the most recent ECN/drop counts."""

    def __init__(self, switches: list[str], target_stats: TargetStats,
                 controller: Any | None, t0: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.switches = switches
        self.target_stats = target_stats
        self.controller = controller
        self.clock = clock  # the run's timeline (virtual runs: the virtual clock)
        self.t0 = clock() if t0 is None else t0
        self._p4: dict[PortKey, Any] = {}
        self.errors = 0
        # Wall time spent reading, per source: what sampling costs (recorded per run).
        self.target_s = 0.0
        self.p4_s = 0.0
        self.p4_reads = 0

    def read_p4(self) -> dict[PortKey, Any]:
        if self.controller is None:
            return {}
        t0 = time.monotonic()
        self.p4_reads += 1
        out: dict[PortKey, Any] = {}
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
        self.target_s += time.monotonic() - t0
        if with_p4 or not self._p4:
            self.read_p4()
        return Snapshot(t, merge_p4(ports, self._p4), queues, lag, switch_t)
