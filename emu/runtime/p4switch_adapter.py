"""Dataplane adapter for the compiled v1model switch (emu.p4.api.P4Switch).

The server only needs the Dataplane interface of dataplane.py; this maps it onto
P4Switch: tables / action profiles / externs / parser value sets by qualified name, inject, the
output handlers (CPU-port frames included: the device routes them to PacketIn),
digests and the traffic manager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emu.core.clock import Clock
from emu.core.wire import WIRE_OVERHEAD_BYTES

from .dataplane import DigestFn, OutputFn
from .translate import P4InfoIndex


class _DigestTap(list):  # type: ignore[type-arg]
    """Stands in for V1ModelSwitch.digests: forwards each digest, keeps none."""

    def __init__(self) -> None:
        super().__init__()
        self.sink: DigestFn | None = None

    def append(self, d: Any) -> None:
        sink = self.sink
        if sink is not None:
            sink(d.name, tuple(d.values))


class P4SwitchDataplane:
    def __init__(self, program: Any, index: P4InfoIndex, clock: Clock, *,
                 priority_queues: int = 1, seed: int = 0) -> None:
        from emu.p4.api import P4Switch

        # cpu_port=None: every output goes through the output handler; the device
        # routes the CPU port's frames to PacketIn.
        self.switch = P4Switch(program, clock=clock, capture=False,
                               priority_queues=priority_queues, seed=seed,
                               wire_overhead_bytes=WIRE_OVERHEAD_BYTES)
        self.sw = self.switch.sw
        # The switch's own dicts: what the server writes is what the pipeline reads.
        self.control = self.sw
        self.drops = self.sw.drops
        self._out: OutputFn | None = None
        self._digests = _DigestTap()
        self.sw.digests = self._digests
        # The hot path binds straight through: frames in go to the switch's receive,
        # frames out go to the output function as (port, frame), no wrappers between.
        self.inject: Callable[[int, bytes], None] = self.sw.receive

    def set_output(self, out: OutputFn) -> None:
        self._out = out
        self.sw.frame_handlers[:] = [out] if out is not None else []

    def set_digest_sink(self, sink: DigestFn | None) -> None:
        self._digests.sink = sink

    def set_queue_rate(self, port: int | None, *, rate_bps: float | None = None,
                       rate_pps: float | None = None) -> None:
        self.sw.tm.set_queue_rate(port, rate_bps=rate_bps, rate_pps=rate_pps)

    def set_queue_depth(self, port: int | None, depth_pkts: int, *,
                        priority: int | None = None) -> None:
        self.sw.tm.set_queue_depth(port, depth_pkts, priority=priority)

    def enable_flow_control(self, settings: Any, **kw: Any) -> Any:
        """PFC or credit mode in the traffic manager and the ports' MAC (emu.core.pfc,
        emu.core.credit); frames of EtherType 0x8808 (and 0x88B5 in credit mode) are
        consumed before the pipeline from then on."""
        fc = self.switch.enable_flow_control(settings, **kw)
        self.inject = self.sw.receive  # the MAC-control-aware receive
        return fc

    def flow_control_counters(self) -> dict[str, Any] | None:
        """PFC's or credit mode's counters ("mode" says which); PFC adds its headroom."""
        fc = self.sw.flow_control
        if fc is None:
            return None
        report = getattr(fc, "headroom_report", None)  # PFC only
        return {"mode": fc.cfg.mode, **fc.counters(),
                **({"headroom": report()} if report is not None else {})}

    def take_tm_lag_ns(self) -> int | None:
        return self.sw.tm.take_max_lag_ns()

    def queue_info(self, port: int) -> dict[str, Any]:
        tm = self.sw.tm
        pk, by = tm.occupancy(port)
        st = tm.stats(port)
        return {**tm.port_config(port), "queued_pkts": pk, "queued_bytes": by,
                "enq_pkts": st.enq_pkts, "deq_pkts": st.deq_pkts}

    def close(self) -> None:
        self._out = None
        self.sw.frame_handlers.clear()
        self._digests.sink = None
