"""DigestEntry: the digest configs, kept by the server's DigestManager (digests.py)."""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from ..errors import invalid
from .common import Entity, EntityContext


def write(ctx: EntityContext, typ: int, d: p4runtime_pb2.DigestEntry) -> None:
    if d.digest_id == 0:
        raise invalid("digest_id 0 (wildcard) is only valid in reads")
    ctx.digests.write(typ, d)


def read(ctx: EntityContext, d: p4runtime_pb2.DigestEntry) -> list[Entity]:
    return [Entity(digest_entry=e) for e in ctx.digests.read(d.digest_id)]
