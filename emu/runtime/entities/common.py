"""What the entity modules share: the context a handler works in, lookups, checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from p4.v1 import p4runtime_pb2

from emu.p4.tables import Table, TableEntry

from ..digests import DigestManager
from ..errors import invalid, not_found, out_of_range
from ..pipeline import Pipeline
from ..translate import TableInfo

U = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity

__all__ = ["Entity", "EntityContext", "Reader", "U", "Writer", "array_to_modify", "cells_of", "direct_entries", "direct_entry",
           "modify_only",
           "read_cells", "entry_of", "index_in", "profile_of", "table_of"]


@dataclass(frozen=True)
class EntityContext:
    """The pipeline an RPC addresses, and the server's digest state (kept across pipelines)."""

    pipe: Pipeline
    digests: DigestManager


# write(ctx, update type, the entity's message); read(ctx, query) -> entities
Writer = Callable[[EntityContext, int, Any], None]
Reader = Callable[[EntityContext, Any], list[p4runtime_pb2.Entity]]


def table_of(pipe: Pipeline, table_id: int) -> tuple[TableInfo, Table]:
    ti = pipe.index.table(table_id)
    return ti, pipe.control.tables[ti.name]


def profile_of(pipe: Pipeline, profile_id: int) -> tuple[Any, Any]:
    """(P4Info action profile, the engine's action profile)."""
    p = pipe.index.profile(profile_id)
    return p, pipe.control.action_profiles[p.preamble.name]


def entry_of(pipe: Pipeline, te: p4runtime_pb2.TableEntry) -> tuple[TableInfo, TableEntry]:
    """The entry a (direct counter / meter) query names: by match, or the default one."""
    ti, table = table_of(pipe, te.table_id)
    if te.is_default_action:
        return ti, table.default_entry
    match = pipe.index.match_from_proto(ti, te.match)
    return ti, table.get(match, te.priority, strict=True)


def direct_entry(pipe: Pipeline, te: p4runtime_pb2.TableEntry, kind: str
                 ) -> tuple[TableInfo, TableEntry]:
    """The entry a direct counter or meter (`kind`) entity names; its table must have one."""
    ti, e = entry_of(pipe, te)
    if not getattr(ti, f"direct_{kind}_id"):
        raise invalid(f"{ti.name}: table has no direct {kind}")
    return ti, e


def direct_entries(pipe: Pipeline, te: p4runtime_pb2.TableEntry, kind: str
                   ) -> list[tuple[TableInfo, TableEntry]]:
    """The entries a direct counter or meter (`kind`) read names: the one its match (or
    is_default_action) names; with a table_id alone, that table's (of the priority, if
    given); with table_id 0, those of every table with a direct `kind`."""
    if te.table_id and (len(te.match) or te.is_default_action):
        return [direct_entry(pipe, te, kind)]
    attr = f"direct_{kind}_id"
    idx = pipe.index
    tis = ([idx.table(te.table_id)] if te.table_id
           else [t for t in idx.tables.values() if getattr(t, attr)])
    out = []
    for ti in tis:
        if not getattr(ti, attr):
            raise invalid(f"{ti.name}: table has no direct {kind}")
        out += [(ti, e) for e in pipe.control.tables[ti.name].entries()
                if not te.priority or e.priority == te.priority]
    return out


def modify_only(typ: int, kind: str) -> None:
    """Counters, meters and registers (direct or not) exist already: only MODIFY writes."""
    if typ != U.MODIFY:
        raise invalid(f"{kind} entries can only be MODIFYed")


def index_in(i: int, size: int, name: str) -> int:
    # Spec: an index beyond the array is OUT_OF_RANGE; a negative one is malformed.
    if i < 0:
        raise invalid(f"{name}: negative index {i}")
    if i >= size:
        raise out_of_range(f"{name}: index {i} out of range 0..{size - 1}")
    return i


# Indexed externs (counters, meters, registers): `infos` is the P4Info index of the kind,
# `arrays` the engine's arrays of that kind by name.

def array_to_modify(typ: int, kind: str, infos: Mapping[int, Any], array_id: int,
                    arrays: Mapping[str, Any]) -> tuple[Any, Any]:
    """(P4Info object, engine array) a write addresses."""
    modify_only(typ, kind)
    info = infos.get(array_id)
    if info is None:
        raise not_found(f"{kind} id {array_id} not in P4Info")
    return info, arrays[info.preamble.name]


def cells_of(query: Any, arr: Any, name: str) -> Sequence[int]:
    """The cells an entity names: its index, or every cell when it has none."""
    if query.HasField("index"):
        return [index_in(query.index.index, arr.size, name)]
    return range(arr.size)


def read_cells(kind: str, infos: Mapping[int, Any], array_id: int,
               arrays: Mapping[str, Any], query: Any,
               fill: Callable[[Any, Any, int], None]) -> list[p4runtime_pb2.Entity]:
    """One `<kind>_entry` entity per cell a read names (id 0: every array); `fill(entry,
    engine array, index)` writes the cell's data into each."""
    if array_id and array_id not in infos:
        raise not_found(f"{kind} id {array_id} not in P4Info")
    out = []
    for info in [infos[array_id]] if array_id else infos.values():
        arr = arrays[info.preamble.name]
        for i in cells_of(query, arr, info.preamble.name):
            r = Entity()
            entry = getattr(r, f"{kind}_entry")
            setattr(entry, f"{kind}_id", info.preamble.id)
            entry.index.index = i
            fill(entry, arr, i)
            out.append(r)
    return out
