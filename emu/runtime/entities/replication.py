"""PacketReplicationEngineEntry: multicast groups and clone sessions (group/session id 0
reads all of them)."""

from __future__ import annotations

from collections.abc import Iterable

from p4.v1 import p4runtime_pb2

from emu.p4.v1model.replication import Replica

from ..errors import invalid, not_found
from ..translate import decode_uint
from .common import Entity, EntityContext, U


def _replicas(reps: Iterable[p4runtime_pb2.Replica]) -> list[Replica]:
    out = []
    for r in reps:
        if r.WhichOneof("port_kind") == "port":
            # At most the width of egress_port (uint32), the field reads return it in.
            port = decode_uint(r.port, 32, "replica port")
        else:
            port = r.egress_port
        out.append(Replica(port, r.instance))
    return out


def write(ctx: EntityContext, typ: int, e: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
    pre = ctx.pipe.control.pre
    which = e.WhichOneof("type")
    if which == "multicast_group_entry":
        g = e.multicast_group_entry
        if g.multicast_group_id == 0:
            raise invalid("multicast_group_id 0 is not a group")
        if typ == U.INSERT:
            pre.insert_multicast_group(g.multicast_group_id, _replicas(g.replicas))
        elif typ == U.MODIFY:
            pre.modify_multicast_group(g.multicast_group_id, _replicas(g.replicas))
        else:
            pre.delete_multicast_group(g.multicast_group_id)
    elif which == "clone_session_entry":
        s = e.clone_session_entry
        if s.session_id == 0:
            raise invalid("clone session id 0 is not a session")
        if typ == U.DELETE:
            pre.delete_clone_session(s.session_id)
            return
        fn = pre.insert_clone_session if typ == U.INSERT else pre.modify_clone_session
        fn(s.session_id, _replicas(s.replicas), class_of_service=s.class_of_service,
           packet_length_bytes=s.packet_length_bytes)
    else:
        raise invalid("empty PacketReplicationEngineEntry")


def read(ctx: EntityContext, e: p4runtime_pb2.PacketReplicationEngineEntry) -> list[Entity]:
    pre = ctx.pipe.control.pre
    kind = e.WhichOneof("type")
    out = []
    if kind == "multicast_group_entry":
        gid = e.multicast_group_entry.multicast_group_id
        groups = pre.multicast_groups()
        ids = [gid] if gid else sorted(groups)
        for g in ids:
            reps = pre.multicast_group(g)  # NOT_FOUND for a missing id
            r = Entity()
            mg = r.packet_replication_engine_entry.multicast_group_entry
            mg.multicast_group_id = g
            for rep in reps:
                mg.replicas.add(egress_port=rep.egress_port, instance=rep.instance)
            out.append(r)
    elif kind == "clone_session_entry":
        sid = e.clone_session_entry.session_id
        sessions = pre.clone_sessions()
        if sid and sid not in sessions:
            raise not_found(f"clone session {sid} does not exist")
        for s in ([sessions[sid]] if sid else [sessions[k] for k in sorted(sessions)]):
            r = Entity()
            cs = r.packet_replication_engine_entry.clone_session_entry
            cs.session_id = s.session_id
            cs.class_of_service = s.class_of_service
            cs.packet_length_bytes = s.packet_length_bytes
            for rep in s.replicas:
                cs.replicas.add(egress_port=rep.egress_port, instance=rep.instance)
            out.append(r)
    else:
        raise invalid("empty PacketReplicationEngineEntry in read")
    return out
