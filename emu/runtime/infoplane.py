"""Control-plane objects built from a P4Info alone (no compiled program).

`InfoControlPlane` backs the `emu-null-v1` device config (`NullDataplane`:
control plane only, every packet dropped), which lets the server be tested
without a compiled program; hand-written test data paths build on it too.
"""

from __future__ import annotations

from typing import Any

from emu.core.clock import Clock
from emu.p4.tables import ActionCall, ActionProfile, SizeSemantics, Table
from emu.p4.target.runtime import ValueSet
from emu.p4.v1model.replication import PacketReplicationEngine
from emu.p4.v1model.stateful import CounterArray, MeterArray, RegisterArray
from emu.p4.v1model.traffic_manager import DropCounters

from .dataplane import DigestFn, OutputFn
from .errors import resource_exhausted
from .translate import P4InfoIndex

__all__ = ["MAX_CELLS", "InfoControlPlane", "NullDataplane"]

# Counter, meter and register cells are allocated up front, as many as the P4Info sizes
# ask for: beyond this many in all the config is refused (RESOURCE_EXHAUSTED) instead of
# the server spending minutes and gigabytes on a P4Info's `size: 4294967296`.
MAX_CELLS = 1 << 20


def _check_cells(index: P4InfoIndex) -> None:
    arrays = [*index.counters.values(), *index.meters.values(), *index.registers.values()]
    total = sum(max(1, a.size) for a in arrays)
    if total > MAX_CELLS:
        big = max(arrays, key=lambda a: a.size)
        raise resource_exhausted(
            f"P4Info counters, meters and registers need {total} cells, more than the "
            f"{MAX_CELLS} this target allocates (the largest: {big.preamble.name}, "
            f"size {big.size})")


class InfoControlPlane:
    """Control-plane objects built from a P4Info alone (no program needed)."""

    def __init__(self, index: P4InfoIndex, clock: Clock) -> None:
        _check_cells(index)
        self.index = index
        self.pre = PacketReplicationEngine()
        self.action_profiles: dict[str, ActionProfile] = {}
        self.tables: dict[str, Table] = {}
        self.counters: dict[str, CounterArray] = {}
        self.meters: dict[str, MeterArray] = {}
        self.registers: dict[str, RegisterArray] = {}
        self.value_sets: dict[str, ValueSet] = {
            vs.preamble.name: ValueSet(vs.preamble.name, max(1, vs.size),
                                       tuple(m.bitwidth for m in vs.match))
            for vs in index.value_sets.values()}
        actions_of_profile: dict[int, list[Any]] = {}
        for ti in index.tables.values():
            if ti.profile_id:
                actions_of_profile.setdefault(ti.profile_id, []).extend(ti.action_specs)
        for pid, p in index.profiles.items():
            specs = {s.name: s for s in actions_of_profile.get(pid, [])}
            sem = (SizeSemantics.SUM_OF_MEMBERS
                   if p.WhichOneof("selector_size_semantics") == "sum_of_members"
                   else SizeSemantics.SUM_OF_WEIGHTS)
            self.action_profiles[p.preamble.name] = ActionProfile(
                p.preamble.name, profile_id=pid, size=p.size, with_selector=p.with_selector,
                max_group_size=p.max_group_size, size_semantics=sem,
                actions=list(specs.values()))
        now = clock.now_ns
        for ti in index.tables.values():
            t = ti.proto
            default = None
            if t.HasField("initial_default_action") and not ti.profile_id:
                ida = t.initial_default_action
                a = index.actions.get(ida.action_id)
                if a is not None and len(ida.arguments) == len(a.params):
                    default = ActionCall(a.preamble.name, tuple(
                        int.from_bytes(arg.value, "big") for arg in ida.arguments))
            elif ti.const_default_action_id:
                a = index.actions.get(ti.const_default_action_id)
                if a is not None and not a.params:
                    default = ActionCall(a.preamble.name)
            impl = None
            if ti.profile_id:
                impl = self.action_profiles[index.profiles[ti.profile_id].preamble.name]
            self.tables[ti.name] = Table(
                ti.name, ti.key, table_id=t.preamble.id, size=t.size or 1024,
                actions=ti.action_specs if not ti.profile_id else None,
                default_action=default, const_default_action=bool(ti.const_default_action_id),
                is_const=t.is_const_table, implementation=impl,
                support_timeout=t.idle_timeout_behavior == t.NOTIFY_CONTROL,
                clock=now, direct_counter=bool(ti.direct_counter_id),
                direct_meter=bool(ti.direct_meter_id))
        kinds = {0: "packets_and_bytes", 1: "bytes", 2: "packets", 3: "packets_and_bytes"}
        for c in index.counters.values():
            self.counters[c.preamble.name] = CounterArray(
                c.preamble.name, max(1, c.size), kinds.get(c.spec.unit, "packets_and_bytes"))
        for m in index.meters.values():
            self.meters[m.preamble.name] = MeterArray(
                m.preamble.name, max(1, m.size), "packets" if m.spec.unit == 2 else "bytes",
                clock)
        for r in index.registers.values():
            width = r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth
            self.registers[r.preamble.name] = RegisterArray(r.preamble.name, max(1, r.size),
                                                            max(1, width))


class NullDataplane:
    """Control plane from P4Info; the data plane drops every packet (emu-null-v1)."""

    def __init__(self, index: P4InfoIndex, clock: Clock) -> None:
        self.control = InfoControlPlane(index, clock)
        self.drops = DropCounters()
        self._depths: dict[int | None, int] = {}

    def inject(self, port: int, frame: bytes) -> None:
        self.drops.count(port, "no_pipeline_logic")

    def set_output(self, out: OutputFn) -> None:
        pass

    def set_digest_sink(self, sink: DigestFn | None) -> None:
        pass

    def set_queue_rate(self, port: int | None, *, rate_bps: float | None = None,
                       rate_pps: float | None = None) -> None:
        pass

    def set_queue_depth(self, port: int | None, depth_pkts: int, *,
                        priority: int | None = None) -> None:
        self._depths[port] = depth_pkts

    def queue_info(self, port: int) -> dict[str, Any]:
        return {"depth_pkts": self._depths.get(port, self._depths.get(None, 64))}

    def take_tm_lag_ns(self) -> int | None:
        return None

    def close(self) -> None:
        pass
