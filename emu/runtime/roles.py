"""Controller roles (P4Runtime spec, "Default Role", "Role Config").

A role is named by `Role.name` (the deprecated numeric `Role.id` is ignored).
Each (device, role) has its own primary (arbitration.py). What a role may do:

- No `role.config` (the default role "" always; a named role too): full
  pipeline access, as the spec says for an unset config -- write every entity,
  set the pipeline, PacketIn/PacketOut, digests and idle-timeout notifications.
- A `role.config`: the role definition scheme is target-specific; ours is
  Stratum's `stratum.P4RoleConfig` (stratum/public/proto/p4_role_config.proto),
  packed in the Any, so controllers written for Stratum work unchanged:

      message P4RoleConfig {
        message PacketFilter { uint32 metadata_id = 1; bytes value = 2; }
        repeated uint32 exclusive_p4_ids = 1;  // writable by this role only
        repeated uint32 shared_p4_ids = 2;     // writable by this role and others
        PacketFilter packet_in_filter = 3;     // unset: every PacketIn
        bool receives_packet_ins = 4;
        bool can_push_pipeline = 5;
      }

  Writes are allowed for the listed P4Info ids (table, action profile,
  counter, meter, register, digest; direct counters/meters by their table),
  else PERMISSION_DENIED for that update (spec, "Write RPC"). A
  PacketReplicationEngineEntry has no P4Info id, so only roles without a config
  write it. DigestList and IdleTimeoutNotification go to the primaries of every
  role in whose scope the digest / table is. Any other Any type is
  INVALID_ARGUMENT (spec: a config that does not match the agreed scheme).
- An id listed as exclusive by one role cannot be written by any other role,
  including roles without a config; a config listing an id that another
  role's config lists, exclusively for either of them, is INVALID_ARGUMENT.
- Reads are never restricted (spec: any controller may read any entity).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from p4.v1 import p4runtime_pb2

from .errors import invalid

__all__ = ["ROLE_CONFIG_TYPE", "PacketFilter", "RoleConfig", "entity_p4_id",
           "make_role_config", "role_config_class"]

ROLE_CONFIG_TYPE = "stratum.P4RoleConfig"


@cache
def role_config_class() -> Any:
    """The P4RoleConfig message class, built from its descriptor (no generated code):
    in a private pool, so it never clashes with a generated stratum module."""
    f = descriptor_pb2.FileDescriptorProto(name="emu/stratum_p4_role_config.proto",
                                           package="stratum", syntax="proto3")
    m = f.message_type.add(name="P4RoleConfig")
    pf = m.nested_type.add(name="PacketFilter")
    fd = descriptor_pb2.FieldDescriptorProto
    pf.field.add(name="metadata_id", number=1, type=fd.TYPE_UINT32, label=fd.LABEL_OPTIONAL)
    pf.field.add(name="value", number=2, type=fd.TYPE_BYTES, label=fd.LABEL_OPTIONAL)
    m.field.add(name="exclusive_p4_ids", number=1, type=fd.TYPE_UINT32,
                label=fd.LABEL_REPEATED)
    m.field.add(name="shared_p4_ids", number=2, type=fd.TYPE_UINT32, label=fd.LABEL_REPEATED)
    m.field.add(name="packet_in_filter", number=3, type=fd.TYPE_MESSAGE,
                label=fd.LABEL_OPTIONAL, type_name=".stratum.P4RoleConfig.PacketFilter")
    m.field.add(name="receives_packet_ins", number=4, type=fd.TYPE_BOOL,
                label=fd.LABEL_OPTIONAL)
    m.field.add(name="can_push_pipeline", number=5, type=fd.TYPE_BOOL, label=fd.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(ROLE_CONFIG_TYPE))


@dataclass(frozen=True)
class PacketFilter:
    metadata_id: int
    value: int


@dataclass(frozen=True)
class RoleConfig:
    """A parsed P4RoleConfig."""

    exclusive_p4_ids: frozenset[int] = frozenset()
    shared_p4_ids: frozenset[int] = frozenset()
    packet_in_filter: PacketFilter | None = None
    receives_packet_ins: bool = False
    can_push_pipeline: bool = False

    @classmethod
    def from_any(cls, config: any_pb2.Any) -> RoleConfig:
        if config.type_url.rsplit("/", 1)[-1] != ROLE_CONFIG_TYPE:
            raise invalid(f"role config type {config.type_url!r} is not supported; "
                          f"this target takes {ROLE_CONFIG_TYPE}")
        msg = role_config_class()()
        try:
            msg.ParseFromString(config.value)
        except Exception as exc:  # DecodeError: a config that is not the message
            raise invalid(f"bad {ROLE_CONFIG_TYPE}: {exc}") from None
        flt = None
        if msg.HasField("packet_in_filter"):
            flt = PacketFilter(msg.packet_in_filter.metadata_id,
                               int.from_bytes(msg.packet_in_filter.value, "big"))
        return cls(frozenset(msg.exclusive_p4_ids), frozenset(msg.shared_p4_ids), flt,
                   msg.receives_packet_ins, msg.can_push_pipeline)

    def may_write(self, p4_id: int | None) -> bool:
        return p4_id is not None and (p4_id in self.exclusive_p4_ids
                                      or p4_id in self.shared_p4_ids)

    def in_scope(self, p4_id: int) -> bool:
        return p4_id in self.exclusive_p4_ids or p4_id in self.shared_p4_ids

    def wants_packet_in(self, metadata: dict[int, int]) -> bool:
        if not self.receives_packet_ins:
            return False
        f = self.packet_in_filter
        return f is None or metadata.get(f.metadata_id) == f.value


def make_role_config(*, exclusive_p4_ids: Iterable[int] = (), shared_p4_ids: Iterable[int] = (),
                     packet_in_filter: tuple[int, bytes] | None = None,
                     receives_packet_ins: bool = False,
                     can_push_pipeline: bool = False) -> any_pb2.Any:
    """A role config for MasterArbitrationUpdate.role.config (clients, tests)."""
    msg = role_config_class()(exclusive_p4_ids=list(exclusive_p4_ids),
                              shared_p4_ids=list(shared_p4_ids),
                              receives_packet_ins=receives_packet_ins,
                              can_push_pipeline=can_push_pipeline)
    if packet_in_filter is not None:
        msg.packet_in_filter.metadata_id = packet_in_filter[0]
        msg.packet_in_filter.value = packet_in_filter[1]
    out = any_pb2.Any()
    out.Pack(msg)
    return out


# Entity kind -> the path to the P4Info id it belongs to, in its message.
_P4_ID_PATH: dict[str, tuple[str, ...]] = {
    "table_entry": ("table_id",),
    "action_profile_member": ("action_profile_id",),
    "action_profile_group": ("action_profile_id",),
    "counter_entry": ("counter_id",),
    "direct_counter_entry": ("table_entry", "table_id"),
    "meter_entry": ("meter_id",),
    "direct_meter_entry": ("table_entry", "table_id"),
    "register_entry": ("register_id",),
    "digest_entry": ("digest_id",),
    "value_set_entry": ("value_set_id",),
    "extern_entry": ("extern_id",),
}


def entity_p4_id(entity: p4runtime_pb2.Entity) -> int | None:
    """The P4Info id a written entity belongs to (None: the PRE, which has none)."""
    which = entity.WhichOneof("entity")
    path = _P4_ID_PATH.get(which) if which else None
    if path is None:
        return None
    obj = getattr(entity, which)
    for name in path:
        obj = getattr(obj, name)
    return int(obj)
