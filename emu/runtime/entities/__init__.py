"""P4Runtime entities by kind: one module per kind, each with its write and its read.

`apply_update` and `read_entity` dispatch on the Entity's oneof name through WRITERS
and READERS; a kind missing there is UNIMPLEMENTED. Handlers run serialised with the
data path (the server calls them through Device.call).
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from ..errors import invalid, unimplemented
from . import action_profiles, counters, digests, meters, registers, replication, tables, value_sets
from .common import Entity, EntityContext, Reader, U, Writer

__all__ = ["READERS", "WRITERS", "EntityContext", "apply_update", "read_entity"]

WRITERS: dict[str, Writer] = {
    "table_entry": tables.write,
    "action_profile_member": action_profiles.write_member,
    "action_profile_group": action_profiles.write_group,
    "counter_entry": counters.write,
    "direct_counter_entry": counters.write_direct,
    "meter_entry": meters.write,
    "direct_meter_entry": meters.write_direct,
    "register_entry": registers.write,
    "packet_replication_engine_entry": replication.write,
    "digest_entry": digests.write,
    "value_set_entry": value_sets.write,
}

READERS: dict[str, Reader] = {
    "table_entry": tables.read,
    "action_profile_member": action_profiles.read_members,
    "action_profile_group": action_profiles.read_groups,
    "counter_entry": counters.read,
    "direct_counter_entry": counters.read_direct,
    "meter_entry": meters.read,
    "direct_meter_entry": meters.read_direct,
    "register_entry": registers.read,
    "packet_replication_engine_entry": replication.read,
    "digest_entry": digests.read,
    "value_set_entry": value_sets.read,
}


def apply_update(ctx: EntityContext, u: p4runtime_pb2.Update) -> None:
    if u.type not in (U.INSERT, U.MODIFY, U.DELETE):
        raise invalid("update type must be INSERT, MODIFY or DELETE")
    which = u.entity.WhichOneof("entity")
    if which is None:
        raise invalid("update without an entity")
    write = WRITERS.get(which)
    if write is None:
        raise unimplemented(f"writing {which} is not supported")
    write(ctx, u.type, getattr(u.entity, which))


def read_entity(ctx: EntityContext, ent: p4runtime_pb2.Entity) -> list[Entity]:
    which = ent.WhichOneof("entity")
    if which is None:
        raise invalid("read of an empty entity")
    read = READERS.get(which)
    if read is None:
        raise unimplemented(f"reading {which} is not supported")
    return read(ctx, getattr(ent, which))
