"""CounterEntry and DirectCounterEntry: MODIFY sets the counts (every cell without an
index); reads return them (id 0 = every counter, index unset = every cell)."""

from __future__ import annotations

from typing import Any

from p4.v1 import p4runtime_pb2

from .common import (
    Entity,
    EntityContext,
    array_to_modify,
    cells_of,
    direct_entries,
    direct_entry,
    modify_only,
    read_cells,
)


def write(ctx: EntityContext, typ: int, c: p4runtime_pb2.CounterEntry) -> None:
    pipe = ctx.pipe
    info, arr = array_to_modify(typ, "counter", pipe.index.counters, c.counter_id,
                                pipe.control.counters)
    pk, by = c.data.packet_count, c.data.byte_count
    for i in cells_of(c, arr, info.preamble.name):
        arr.write(i, pk, by)


def read(ctx: EntityContext, c: p4runtime_pb2.CounterEntry) -> list[Entity]:
    def fill(entry: p4runtime_pb2.CounterEntry, arr: Any, i: int) -> None:
        entry.data.packet_count, entry.data.byte_count = arr.read(i)

    return read_cells("counter", ctx.pipe.index.counters, c.counter_id,
                      ctx.pipe.control.counters, c, fill)


def write_direct(ctx: EntityContext, typ: int, d: p4runtime_pb2.DirectCounterEntry) -> None:
    modify_only(typ, "direct counter")
    _ti, e = direct_entry(ctx.pipe, d.table_entry, "counter")
    e.counter.packets, e.counter.bytes = d.data.packet_count, d.data.byte_count


def read_direct(ctx: EntityContext, d: p4runtime_pb2.DirectCounterEntry) -> list[Entity]:
    out = []
    for ti, e in direct_entries(ctx.pipe, d.table_entry, "counter"):
        r = Entity()
        ctx.pipe.index.key_to_proto(ti, e, r.direct_counter_entry.table_entry)
        r.direct_counter_entry.data.packet_count = e.counter.packets
        r.direct_counter_entry.data.byte_count = e.counter.bytes
        out.append(r)
    return out
