"""A thin P4Runtime client: one object per switch (p4runtime-shell's is a module global).

    c = P4RuntimeClient("127.0.0.1:9559", device_id=1, election_id=(0, 1))
    c.set_pipeline(p4info, device_config)          # VERIFY_AND_COMMIT
    c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000, 8)},
                   "MyIngress.set_nhop", {"dmac": 0x0200..., "port": 2})
    c.packet_out(frame, egress_port=2); pkt = c.packet_in(timeout=1)
    c.close()

Match values by kind: exact `v`; lpm `(v, prefix_len)`; ternary `(v, mask)`;
range `(low, high)`; optional `v`. Names are P4Info names (full or alias).
Write failures raise `WriteError` with one `(code, message)` per update.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .errors import STATUS_DETAILS_KEY
from .translate import encode_uint

__all__ = ["P4RuntimeClient", "WriteError", "clone_session_entity", "multicast_group_entity",
           "write_errors"]

U = p4runtime_pb2.Update


class WriteError(Exception):
    """A Write failed; `errors` has one (grpc code int, message) per update (0 = applied)."""

    def __init__(self, code: grpc.StatusCode, message: str,
                 errors: list[tuple[int, str]]) -> None:
        super().__init__(f"{code.name}: {message} {errors}")
        self.code = code
        self.errors = errors


def write_errors(err: grpc.RpcError) -> list[tuple[int, str]]:
    """The per-update (code, message) pairs of a failed Write (empty if none attached)."""
    for key, value in (err.trailing_metadata() or ()):  # type: ignore[attr-defined]
        if key == STATUS_DETAILS_KEY:
            st = status_pb2.Status.FromString(value)
            out = []
            for d in st.details:
                e = p4runtime_pb2.Error()
                d.Unpack(e)
                out.append((e.canonical_code, e.message))
            return out
    return []


def multicast_group_entity(group_id: int, replicas: Iterable[tuple[int, int]]
                           ) -> p4runtime_pb2.Entity:
    """A PRE MulticastGroupEntry: `replicas` are (egress_port, instance) pairs."""
    ent = p4runtime_pb2.Entity()
    g = ent.packet_replication_engine_entry.multicast_group_entry
    g.multicast_group_id = group_id
    for port, instance in replicas:
        g.replicas.add(egress_port=port, instance=instance)
    return ent


def clone_session_entity(session_id: int, replicas: Iterable[tuple[int, int]], *,
                         class_of_service: int = 0, packet_length_bytes: int = 0
                         ) -> p4runtime_pb2.Entity:
    """A PRE CloneSessionEntry: `replicas` are (egress_port, instance) pairs."""
    ent = p4runtime_pb2.Entity()
    c = ent.packet_replication_engine_entry.clone_session_entry
    c.session_id = session_id
    c.class_of_service = class_of_service
    c.packet_length_bytes = packet_length_bytes
    for port, instance in replicas:
        c.replicas.add(egress_port=port, instance=instance)
    return ent


def _find(items: Iterable[Any], name: str, what: str) -> Any:
    for x in items:
        if x.preamble.name == name or x.preamble.alias == name:
            return x
    raise KeyError(f"no {what} named {name!r} in the P4Info")


class P4RuntimeClient:
    def __init__(self, address: str, device_id: int, election_id: tuple[int, int] = (0, 1),
                 *, role: str = "", role_config: any_pb2.Any | None = None,
                 arbitrate: bool = True, timeout_s: float = 10.0) -> None:
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.role = role
        self.role_config = role_config
        self.timeout_s = timeout_s
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.p4info: p4info_pb2.P4Info | None = None
        self.arbitrations: queue.Queue[p4runtime_pb2.MasterArbitrationUpdate] = queue.Queue()
        self.packets: queue.Queue[p4runtime_pb2.PacketIn] = queue.Queue()
        self.digests: queue.Queue[p4runtime_pb2.DigestList] = queue.Queue()
        self.stream_errors: queue.Queue[p4runtime_pb2.StreamError] = queue.Queue()
        self.idle_timeouts: queue.Queue[p4runtime_pb2.IdleTimeoutNotification] = queue.Queue()
        self._out: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._stream: Any = None
        self._rx: threading.Thread | None = None
        self.stream_status: grpc.StatusCode | None = None
        self.is_primary = False
        self.last_arbitration: p4runtime_pb2.MasterArbitrationUpdate | None = None
        if arbitrate:
            self.open_stream()
            upd = self.arbitrations.get(timeout=timeout_s)
            self.is_primary = upd.status.code == code_pb2.OK

    # ------------------------------------------------------------------ stream

    def _uint128(self, msg: p4runtime_pb2.Uint128) -> None:
        msg.high, msg.low = self.election_id

    def open_stream(self) -> None:
        def requests() -> Any:
            while True:
                m = self._out.get()
                if m is None:
                    return
                yield m

        self._stream = self.stub.StreamChannel(requests())
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        if self.role:
            req.arbitration.role.name = self.role
        if self.role_config is not None:
            req.arbitration.role.config.CopyFrom(self.role_config)
        self._uint128(req.arbitration.election_id)
        self._out.put(req)

        def receive() -> None:
            try:
                for msg in self._stream:
                    kind = msg.WhichOneof("update")
                    if kind == "arbitration":
                        self.is_primary = msg.arbitration.status.code == code_pb2.OK
                        self.last_arbitration = msg.arbitration
                        self.arbitrations.put(msg.arbitration)
                    elif kind == "packet":
                        self.packets.put(msg.packet)
                    elif kind == "digest":
                        self.digests.put(msg.digest)
                    elif kind == "error":
                        self.stream_errors.put(msg.error)
                    elif kind == "idle_timeout_notification":
                        self.idle_timeouts.put(msg.idle_timeout_notification)
            except grpc.RpcError as e:
                self.stream_status = e.code()

        self._rx = threading.Thread(target=receive, daemon=True, name="p4rt-client-rx")
        self._rx.start()

    def close(self) -> None:
        self._out.put(None)
        if self._stream is not None:
            self._stream.cancel()
        if self._rx is not None:
            self._rx.join(timeout=2)
        self.channel.close()

    def __enter__(self) -> P4RuntimeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ pipeline

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, *,
                     action: int = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                     cookie: int | None = None) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                               action=action, role=self.role)
        self._uint128(req.election_id)
        if action != p4runtime_pb2.SetForwardingPipelineConfigRequest.COMMIT:
            req.config.p4info.CopyFrom(p4info)  # COMMIT takes the saved config (a cookie at most)
            req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(req, timeout=60)
        a = p4runtime_pb2.SetForwardingPipelineConfigRequest
        if action in (a.VERIFY_AND_COMMIT, a.RECONCILE_AND_COMMIT):
            self.p4info = p4info
        elif action == a.COMMIT:
            self.p4info = None  # the saved one; fetched when needed

    def get_pipeline(self, response_type: int = p4runtime_pb2.GetForwardingPipelineConfigRequest.ALL
                     ) -> p4runtime_pb2.ForwardingPipelineConfig:
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                               response_type=response_type)
        return self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout_s).config

    def fetch_p4info(self) -> p4info_pb2.P4Info:
        self.p4info = self.get_pipeline(
            p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE).p4info
        return self.p4info

    # ------------------------------------------------------------------ write / read

    def write(self, updates: Sequence[p4runtime_pb2.Update], *,
              atomicity: int = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR) -> None:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, role=self.role,
                                         atomicity=atomicity)
        self._uint128(req.election_id)
        req.updates.extend(updates)
        try:
            self.stub.Write(req, timeout=self.timeout_s)
        except grpc.RpcError as e:
            raise WriteError(e.code(), e.details() or "", write_errors(e)) from None

    def write_one(self, typ: int, entity: p4runtime_pb2.Entity) -> None:
        self.write([p4runtime_pb2.Update(type=typ, entity=entity)])

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id, role=self.role)
        req.entities.extend(entities)
        out: list[p4runtime_pb2.Entity] = []
        for resp in self.stub.Read(req, timeout=self.timeout_s):
            out.extend(resp.entities)
        return out

    # ------------------------------------------------------------------ name-based helpers

    def _info(self) -> p4info_pb2.P4Info:
        return self.p4info if self.p4info is not None else self.fetch_p4info()

    def table_entry(self, table: str, match: Mapping[str, Any] | None = None,
                    action: str | None = None, params: Mapping[str, int] | None = None, *,
                    priority: int = 0, member_id: int | None = None,
                    group_id: int | None = None, default: bool = False
                    ) -> p4runtime_pb2.Entity:
        info = self._info()
        t = _find(info.tables, table, "table")
        ent = p4runtime_pb2.Entity()
        te = ent.table_entry
        te.table_id = t.preamble.id
        te.priority = priority
        te.is_default_action = default
        fields = {f.name: f for f in t.match_fields}
        for name, value in (match or {}).items():
            mf = fields[name]
            fm = te.match.add(field_id=mf.id)
            if mf.match_type == p4info_pb2.MatchField.EXACT:
                fm.exact.value = encode_uint(value)
            elif mf.match_type == p4info_pb2.MatchField.LPM:
                fm.lpm.value, fm.lpm.prefix_len = encode_uint(value[0]), value[1]
            elif mf.match_type == p4info_pb2.MatchField.TERNARY:
                fm.ternary.value, fm.ternary.mask = encode_uint(value[0]), encode_uint(value[1])
            elif mf.match_type == p4info_pb2.MatchField.RANGE:
                fm.range.low, fm.range.high = encode_uint(value[0]), encode_uint(value[1])
            else:
                fm.optional.value = encode_uint(value)
        if action is not None:
            self._action(action, params or {}, te.action.action)
        elif member_id is not None:
            te.action.action_profile_member_id = member_id
        elif group_id is not None:
            te.action.action_profile_group_id = group_id
        return ent

    def _action(self, name: str, params: Mapping[str, int], out: p4runtime_pb2.Action) -> None:
        a = _find(self._info().actions, name, "action")
        out.action_id = a.preamble.id
        for p in a.params:
            out.params.add(param_id=p.id, value=encode_uint(params[p.name]))

    def insert_entry(self, table: str, match: Mapping[str, Any], action: str | None = None,
                     params: Mapping[str, int] | None = None, **kw: Any) -> None:
        self.write_one(U.INSERT, self.table_entry(table, match, action, params, **kw))

    def insert_member(self, profile: str, member_id: int, action: str,
                      params: Mapping[str, int] | None = None) -> None:
        p = _find(self._info().action_profiles, profile, "action profile")
        ent = p4runtime_pb2.Entity()
        m = ent.action_profile_member
        m.action_profile_id = p.preamble.id
        m.member_id = member_id
        self._action(action, params or {}, m.action)
        self.write_one(U.INSERT, ent)

    def insert_group(self, profile: str, group_id: int,
                     members: Sequence[tuple[int, int]], max_size: int = 0) -> None:
        """members: (member_id, weight) pairs."""
        p = _find(self._info().action_profiles, profile, "action profile")
        ent = p4runtime_pb2.Entity()
        g = ent.action_profile_group
        g.action_profile_id = p.preamble.id
        g.group_id = group_id
        g.max_size = max_size
        for mid, w in members:
            g.members.add(member_id=mid, weight=w)
        self.write_one(U.INSERT, ent)

    def packet_out(self, payload: bytes, **metadata: int) -> None:
        info = self._info()
        cpm = next((c for c in info.controller_packet_metadata
                    if c.preamble.name == "packet_out"), None)
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        if cpm is not None:
            for m in cpm.metadata:
                if m.name in metadata:
                    req.packet.metadata.add(metadata_id=m.id,
                                            value=encode_uint(metadata[m.name]))
        self._out.put(req)

    def send_stream(self, req: p4runtime_pb2.StreamMessageRequest) -> None:
        """Any StreamMessageRequest (e.g. a second MasterArbitrationUpdate)."""
        self._out.put(req)

    def ack_digest(self, dl: p4runtime_pb2.DigestList) -> None:
        """DigestListAck for a received DigestList."""
        req = p4runtime_pb2.StreamMessageRequest()
        req.digest_ack.digest_id = dl.digest_id
        req.digest_ack.list_id = dl.list_id
        self._out.put(req)

    def digest_entry(self, digest: str, *, max_timeout_ns: int = 0, max_list_size: int = 0,
                     ack_timeout_ns: int = 0) -> p4runtime_pb2.Entity:
        d = _find(self._info().digests, digest, "digest")
        ent = p4runtime_pb2.Entity()
        ent.digest_entry.digest_id = d.preamble.id
        c = ent.digest_entry.config
        c.max_timeout_ns, c.max_list_size, c.ack_timeout_ns = (max_timeout_ns, max_list_size,
                                                               ack_timeout_ns)
        return ent

    def packet_in(self, timeout: float = 1.0) -> p4runtime_pb2.PacketIn | None:
        try:
            return self.packets.get(timeout=timeout)
        except queue.Empty:
            return None

    def packet_in_metadata(self, pkt: p4runtime_pb2.PacketIn) -> dict[str, int]:
        info = self._info()
        cpm = next(c for c in info.controller_packet_metadata if c.preamble.name == "packet_in")
        names = {m.id: m.name for m in cpm.metadata}
        return {names[m.metadata_id]: int.from_bytes(m.value, "big") for m in pkt.metadata}
