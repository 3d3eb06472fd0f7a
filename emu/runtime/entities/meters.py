"""MeterEntry and DirectMeterEntry: MODIFY sets (or, without a config, resets) the rates;
reads return the configured rates (none for a cell at its default)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4.v1 import p4runtime_pb2

from emu.p4.v1model.stateful import MeterRates

from ..errors import invalid
from .common import (
    Entity,
    EntityContext,
    array_to_modify,
    direct_entries,
    direct_entry,
    index_in,
    modify_only,
    read_cells,
)

_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class WrittenRates(MeterRates):
    """Rates from a P4Runtime MeterConfig, with its per-second rates as written: reads
    return those, not the per-microsecond float the meter runs on (which loses digits
    past 2**53, and rounds 2**63 - 1 up beyond the int64 field)."""

    cir_per_s: int = 0
    pir_per_s: int = 0


def meter_from_proto(msg: Any) -> MeterRates:
    """The rates of a TableEntry's meter_config or a (Direct)MeterEntry's config."""
    c = msg.meter_config if hasattr(msg, "meter_config") else msg.config
    if c.cir > c.pir:
        raise invalid("meter config: cir must not exceed pir")
    if min(c.cir, c.pir, c.cburst, c.pburst) < 0:
        raise invalid("meter config: negative rate or burst")
    r = MeterRates.per_second(c.cir, c.cburst, c.pir, c.pburst)
    return WrittenRates(r.cir, r.cbs, r.pir, r.pbs, c.cir, c.pir)


def meter_to_proto(rates: object, out: p4runtime_pb2.MeterConfig) -> None:
    if not isinstance(rates, MeterRates):
        return
    if isinstance(rates, WrittenRates):
        out.cir, out.pir = rates.cir_per_s, rates.pir_per_s
    else:  # set by other means (STF, the switch API)
        out.cir = min(round(rates.cir * 1e6), _INT64_MAX)
        out.pir = min(round(rates.pir * 1e6), _INT64_MAX)
    out.cburst = rates.cbs
    out.pburst = rates.pbs


def write(ctx: EntityContext, typ: int, m: p4runtime_pb2.MeterEntry) -> None:
    pipe = ctx.pipe
    info, arr = array_to_modify(typ, "meter", pipe.index.meters, m.meter_id, pipe.control.meters)
    index = (index_in(m.index.index, arr.size, info.preamble.name)
             if m.HasField("index") else None)
    arr.configure(meter_from_proto(m) if m.HasField("config") else None, index)


def read(ctx: EntityContext, m: p4runtime_pb2.MeterEntry) -> list[Entity]:
    def fill(entry: p4runtime_pb2.MeterEntry, marr: Any, i: int) -> None:
        rates = marr.get_rates(i)
        if rates is not None:
            meter_to_proto(rates, entry.config)

    return read_cells("meter", ctx.pipe.index.meters, m.meter_id, ctx.pipe.control.meters, m,
                      fill)


def write_direct(ctx: EntityContext, typ: int, d: p4runtime_pb2.DirectMeterEntry) -> None:
    modify_only(typ, "direct meter")
    _ti, e = direct_entry(ctx.pipe, d.table_entry, "meter")
    e.meter_config = meter_from_proto(d) if d.HasField("config") else None
    e.meter_state = None


def read_direct(ctx: EntityContext, d: p4runtime_pb2.DirectMeterEntry) -> list[Entity]:
    out = []
    for ti, e in direct_entries(ctx.pipe, d.table_entry, "meter"):
        r = Entity()
        ctx.pipe.index.key_to_proto(ti, e, r.direct_meter_entry.table_entry)
        if e.meter_config is not None:
            meter_to_proto(e.meter_config, r.direct_meter_entry.config)
        out.append(r)
    return out
