"""Python API of the embedded v1model target, for tests and the STF runner.

    sw = P4Switch.from_file("prog.p4", clock=VirtualClock())
    sw.table_add("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0a000000, 8)},
                 "MyIngress.forward", [2])
    sw.inject(1, frame); sw.run_until_idle(); sw.outputs()

Names (tables, actions, registers, ...) are control-plane names as p4c writes them
(`MyIngress.ipv4_lpm`); any unique dot-suffix is accepted too, as STF does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from emu.core.clock import Clock, VirtualClock
from emu.core.wire import DROP_PORT
from emu.p4.tables import ActionCall, CounterCell, Table, TableEntry
from emu.p4.target.program import CompiledProgram, compile_file
from emu.p4.target.switch import Digest, OutputPacket, V1ModelSwitch
from emu.p4.v1model.replication import Replica
from emu.p4.v1model.stateful import MeterRates

MAX_IDLE_EVENTS = 100_000
"""A budget for run_until_idle after one packet (STF, crosscheck): far more than a packet
takes, a multicast to every port included (a few events per replica); a program whose
clones clone again runs forever (BMv2's STF harness gives up at its timeout)."""


class PipelineBusy(RuntimeError):
    """run_until_idle(max_events) ran out of events before the switch went idle."""


def resolve_name(name: str, names: Iterable[str], what: str = "object") -> str:
    """Exact name, else the unique name ending with '.' + name (or equal after a '.')."""
    names = list(names)
    if name in names:
        return name
    cands = [n for n in names if n.endswith("." + name) or n.split(".")[-1] == name]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        cands = [n for n in names if n.endswith(name)]
        if len(cands) == 1:
            return cands[0]
    if not cands:
        raise KeyError(f"no {what} named {name!r}")
    raise KeyError(f"{what} name {name!r} is ambiguous: {', '.join(sorted(cands))}")


class P4Switch:
    """A v1model switch with a control-plane API by name and a packet API."""

    def __init__(self, program: CompiledProgram, clock: Clock | None = None, *,
                 drop_port: int = DROP_PORT, seed: int = 0, queue_depth_pkts: int = 64,
                 priority_queues: int = 1, cpu_port: int | None = None,
                 capture: bool = True, wire_overhead_bytes: int = 0) -> None:
        self.clock = clock if clock is not None else VirtualClock()
        self.sw = V1ModelSwitch(program, self.clock, drop_port=drop_port, seed=seed,
                                queue_depth_pkts=queue_depth_pkts,
                                priority_queues=priority_queues, cpu_port=cpu_port,
                                wire_overhead_bytes=wire_overhead_bytes)
        self.program = program
        self._outputs: list[OutputPacket] = []
        if capture:
            self.sw.output_handlers.append(self._outputs.append)

    @classmethod
    def from_file(cls, path: str, include_dirs: Sequence[str] = (),
                  defines: Mapping[str, str] | None = None, **kw: Any) -> P4Switch:
        return cls(compile_file(path, include_dirs, defines), **kw)

    # ------------------------------------------------------------------ objects
    @property
    def tables(self) -> dict[str, Table]:
        """Table objects by qualified name (the P4Runtime server drives them directly)."""
        return self.sw.tables

    def table(self, name: str) -> Table:
        return self.sw.tables[resolve_name(name, self.sw.tables, "table")]

    def action_name(self, table: Table | None, name: str) -> str:
        names = [a.name for a in table.actions] if table is not None else list(self.program.actions)
        if table is not None and "NoAction" in self.program.actions and "NoAction" not in names:
            names.append("NoAction")
        return resolve_name(name, names, "action")

    # ------------------------------------------------------------------ tables
    def table_add(self, table: str, match: Sequence[Any] | Mapping[str, Any], action: str,
                  params: Sequence[int] = (), priority: int | None = None) -> TableEntry:
        """Insert an entry; `match` is one value per key field (int / Exact / Lpm / Ternary /
        Range / None) or a mapping by key field name. Priority: larger wins; tables
        without ternary/range/optional fields take none."""
        t = self.table(table)
        call = ActionCall(self.action_name(t, action), tuple(params))
        prio = priority if (priority is not None and t.needs_priority) else (0 if not t.needs_priority else 1)
        return t.insert(match, call, priority=prio)  # type: ignore[arg-type]

    def table_add_member(self, table: str, match: Sequence[Any], member_id: int | None = None,
                         group_id: int | None = None, priority: int | None = None) -> TableEntry:
        t = self.table(table)
        prio = priority if t.needs_priority else 0
        return t.insert(match, member_id=member_id, group_id=group_id, priority=prio or 0)

    def table_modify(self, table: str, match: Sequence[Any], action: str,
                     params: Sequence[int] = (), priority: int = 0) -> TableEntry:
        t = self.table(table)
        return t.modify(match, priority, action=ActionCall(self.action_name(t, action), tuple(params)))

    def table_delete(self, table: str, match: Sequence[Any], priority: int = 0) -> TableEntry:
        return self.table(table).delete(match, priority)

    def table_set_default(self, table: str, action: str, params: Sequence[int] = ()) -> TableEntry:
        t = self.table(table)
        return t.set_default_action(ActionCall(self.action_name(t, action), tuple(params)))

    def table_clear(self, table: str | None = None) -> None:
        for name, t in self.sw.tables.items():
            if table is None or name == resolve_name(table, self.sw.tables, "table"):
                if not t.is_const:
                    t.clear()

    # ------------------------------------------------------------------ PRE
    def mc_mgrp_create(self, mgid: int) -> int:
        return self.sw.pre.mc_mgrp_create(mgid)

    def mc_node_create(self, rid: int, ports: Iterable[int]) -> int:
        return self.sw.pre.mc_node_create(rid, ports)

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        self.sw.pre.mc_node_associate(mgid, handle)

    def set_multicast_group(self, mgid: int, replicas: Sequence[tuple[int, int] | Replica]) -> None:
        """P4Runtime-style: replicas are (egress_port, instance)."""
        pre = self.sw.pre
        if mgid in pre.multicast_groups():
            pre.modify_multicast_group(mgid, replicas)
        else:
            pre.insert_multicast_group(mgid, replicas)

    def set_clone_session(self, session_id: int, replicas: Sequence[tuple[int, int] | Replica],
                          packet_length_bytes: int = 0) -> None:
        pre = self.sw.pre
        if session_id in pre.clone_sessions():
            pre.modify_clone_session(session_id, replicas, packet_length_bytes=packet_length_bytes)
        else:
            pre.insert_clone_session(session_id, replicas, packet_length_bytes=packet_length_bytes)

    def mirroring_add(self, session_id: int, port: int) -> None:
        self.sw.pre.mirroring_add(session_id, port)

    # ------------------------------------------------------------------ externs
    def register_read(self, name: str, index: int) -> int:
        return self.sw.registers[resolve_name(name, self.sw.registers, "register")].get(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        self.sw.registers[resolve_name(name, self.sw.registers, "register")].set(index, value)

    def register_reset(self, name: str) -> None:
        self.sw.registers[resolve_name(name, self.sw.registers, "register")].reset()

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of an indirect counter cell, or of a direct counter's entry
        with that handle."""
        sw = self.sw
        names = list(sw.counters) + list(sw.direct_counters)
        n = resolve_name(name, names, "counter")
        if n in sw.counters:
            return sw.counters[n].read(index)
        for t in sw.direct_counters[n]:
            for e in t.entries():
                if e.handle == index:
                    return (e.counter.packets, e.counter.bytes)
        return (0, 0)

    def direct_counter_cell(self, table: str, entry: TableEntry) -> CounterCell:
        return entry.counter

    def counter_reset(self, name: str) -> None:
        sw = self.sw
        n = resolve_name(name, list(sw.counters) + list(sw.direct_counters), "counter")
        if n in sw.counters:
            sw.counters[n].reset()
        else:
            for t in sw.direct_counters[n]:
                t.reset_counters()

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        self.sw.counters[resolve_name(name, self.sw.counters, "counter")].write(index, packets, nbytes)

    def meter_set_rates(self, name: str, index: int, rates: Sequence[tuple[float, int]]) -> None:
        """BMv2 CLI form: [(cir per us, cburst), (pir per us, pburst)]."""
        (cir, cbs), (pir, pbs) = rates
        n = resolve_name(name, self.sw.meters, "meter")
        self.sw.meters[n].set_rates(cir, cbs, pir, pbs, index)

    def value_set_add(self, name: str, values: Sequence[int], masks: Sequence[int] | None = None) -> None:
        vs = self.sw.value_sets[resolve_name(name, self.sw.value_sets, "value_set")]
        vs.add(tuple(values), None if masks is None else tuple(masks))

    # ------------------------------------------------------------------ queues
    def set_queue_rate(self, port: int | None = None, *, rate_pps: float | None = None,
                       rate_bps: float | None = None) -> None:
        self.sw.tm.set_queue_rate(port, rate_pps=rate_pps, rate_bps=rate_bps)

    def set_queue_depth(self, depth_pkts: int, port: int | None = None) -> None:
        self.sw.tm.set_queue_depth(port, depth_pkts)

    def enable_flow_control(self, settings: Any, **kw: Any) -> Any:
        """PFC on this switch (see V1ModelSwitch.enable_flow_control)."""
        return self.sw.enable_flow_control(settings, **kw)

    @property
    def flow_control(self) -> Any:
        """The SwitchFlowControl (counters(), headroom_report()), None when off."""
        return self.sw.flow_control

    # ------------------------------------------------------------------ data plane
    def inject(self, port: int, frame: bytes) -> None:
        """A frame arrives on `port` now (ingress runs immediately)."""
        self.sw.receive(port, frame)

    def run_until_idle(self, max_events: int | None = None) -> None:
        """Advance a VirtualClock until nothing is queued or scheduled; with max_events,
        PipelineBusy once that many events have run and more are due (a program whose
        clones clone again never goes idle, on BMv2 too)."""
        clock = self.clock
        if isinstance(clock, VirtualClock):
            clock.run_until_idle(max_events=max_events)
            if max_events is not None and clock.next_deadline() is not None:
                raise PipelineBusy(
                    f"the switch was still busy after {max_events:,} events (packets, "
                    "queue turns, timers): a clone, resubmit or recirculation loop that "
                    "never ends? stopped there")

    def outputs(self, clear: bool = False) -> list[OutputPacket]:
        out = list(self._outputs)
        if clear:
            self._outputs.clear()
        return out

    def on_output(self, fn: Callable[[OutputPacket], None]) -> None:
        self.sw.output_handlers.append(fn)

    def on_lookup(self, fn: Callable[[str, tuple[Any, ...]], None]) -> None:
        """`fn(table, key)` before each lookup of a keyed table (V1ModelSwitch.on_lookup)."""
        self.sw.on_lookup(fn)

    def on_packet_in(self, fn: Callable[[bytes], None]) -> None:
        """Packets the deparser sends to the CPU port (with their packet_in header)."""
        self.sw.packet_in_handler = fn

    @property
    def digests(self) -> list[Digest]:
        return self.sw.digests

    @property
    def drops(self) -> Any:
        return self.sw.drops


__all__ = ["MAX_IDLE_EVENTS", "Digest", "MeterRates", "OutputPacket", "P4Switch", "PipelineBusy",
           "resolve_name"]
