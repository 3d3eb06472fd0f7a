"""CounterEntry and DirectCounterEntry: MODIFY sets the counts (every cell without an
index); reads return them (id 0 = every counter, index unset = every cell)."""

from __future__ import annotations

from typing import Any

from p4.v1 import p4runtime_pb2

from ..errors import invalid
from .common import (
    Entity,
    EntityContext,
    array_to_modify,
    cells_of,
    direct_entry,
    entry_of,
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
    pipe = ctx.pipe
    idx = pipe.index
    te = d.table_entry
    tis = ([idx.table(te.table_id)] if te.table_id
           else [t for t in idx.tables.values() if t.direct_counter_id])
    out = []
    for ti in tis:
        if not ti.direct_counter_id:
            raise invalid(f"{ti.name}: table has no direct counter")
        table = pipe.control.tables[ti.name]
        if te.table_id and (len(te.match) or te.is_default_action):
            entries = [entry_of(pipe, te)[1]]
        else:
            entries = table.entries()
        for e in entries:
            r = Entity()
            idx.entry_to_proto(ti, e, r.direct_counter_entry.table_entry)
            r.direct_counter_entry.table_entry.ClearField("action")
            r.direct_counter_entry.data.packet_count = e.counter.packets
            r.direct_counter_entry.data.byte_count = e.counter.bytes
            out.append(r)
    return out
