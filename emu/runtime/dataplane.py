"""The data-plane interface the P4Runtime server and the device work against.

- `ControlPlane`: the committed program's control-plane objects, looked up by
  their P4Info (fully qualified) names -- the table engine's `Table` and
  `ActionProfile`, the stateful externs, the parser value sets, the
  replication engine. The server translates P4Runtime entities onto these
  engine objects itself (emu.runtime.entities).
- `Dataplane`: one loaded program instance: a ControlPlane plus packet I/O
  (`inject(port, frame)`, an output callback per frame) and its traffic
  manager knobs. Built from a device config (formats in emu.runtime.devconfig).

Only interfaces here, so every module can name them without importing an
implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from emu.p4.tables import ActionProfile, Table
from emu.p4.target.runtime import ValueSet
from emu.p4.v1model.replication import PacketReplicationEngine
from emu.p4.v1model.stateful import CounterArray, MeterArray, RegisterArray
from emu.p4.v1model.traffic_manager import DropCounters

OutputFn = Callable[[int, bytes], None]
DigestFn = Callable[[str, tuple[int, ...]], None]

__all__ = ["ControlPlane", "Dataplane", "DigestFn", "OutputFn"]


class ControlPlane(Protocol):
    """Control-plane objects of one program, by P4Info name (the dicts are read, not copied)."""

    pre: PacketReplicationEngine
    tables: dict[str, Table]
    action_profiles: dict[str, ActionProfile]
    counters: dict[str, CounterArray]
    meters: dict[str, MeterArray]
    registers: dict[str, RegisterArray]
    value_sets: dict[str, ValueSet]


class Dataplane(Protocol):
    """One loaded program instance with packet I/O and queue knobs."""

    control: ControlPlane
    drops: DropCounters

    def inject(self, port: int, frame: bytes) -> None: ...
    def set_output(self, out: OutputFn) -> None: ...
    def set_digest_sink(self, sink: DigestFn | None) -> None: ...
    def set_queue_rate(self, port: int | None, *, rate_bps: float | None = None,
                       rate_pps: float | None = None) -> None: ...
    def set_queue_depth(self, port: int | None, depth_pkts: int, *,
                        priority: int | None = None) -> None: ...
    def queue_info(self, port: int) -> dict[str, Any]: ...
    def take_tm_lag_ns(self) -> int | None:
        """Largest lateness of a queue service turn since the last call (None: unknown)."""
        ...
    def close(self) -> None: ...
