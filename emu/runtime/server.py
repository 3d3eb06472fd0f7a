"""P4Runtime server (p4.v1.P4Runtime over gRPC) for the embedded v1model target.

Serves one `Device` (see device.py). Semantics follow the P4Runtime spec as
simple_switch_grpc (PI) implements it, with these choices:

- Write: device_id mismatch or a role no stream ever named NOT_FOUND; a writer
  that is not the primary of its role PERMISSION_DENIED; an update outside the
  role's config (roles.py) PERMISSION_DENIED for that update; no pipeline
  FAILED_PRECONDITION. Atomicity CONTINUE_ON_ERROR, ROLLBACK_ON_ERROR and
  DATAPLANE_ATOMIC (atomicity.py: a failed all-or-none batch is rolled back,
  its other updates ABORTED). Any failed update makes the RPC fail with
  UNKNOWN and one p4.v1.Error per update in the binary status details (OK for
  the ones applied). ValueSetEntry: MODIFY replaces a parser value set's
  members, read returns them (valuesets.py).
- Read: wildcards per the spec (id 0 = all of that kind, index unset = all
  cells, group/session id 0 = all); registers can be read *and* written (PI
  cannot). Default entries are read only with is_default_action set.
- StreamChannel: at most MAX_STREAMS at once, more are RESOURCE_EXHAUSTED
  (each holds a gRPC worker thread; unary RPCs have their own); arbitration per (device, role) with role configs (arbitration.py,
  roles.py); PacketOut only from a primary, encoded into the
  @controller_header("packet_out") header and injected on the CPU port; frames
  the pipeline sends to the CPU port become PacketIn (header decoded into
  metadata) for every primary whose role takes them; digests only once a
  DigestEntry configures them, batched, deduplicated and acked (digests.py).
- SetForwardingPipelineConfig: VERIFY, VERIFY_AND_SAVE (the old pipeline
  keeps forwarding with its entries; Writes and Reads address the saved one
  from then on), COMMIT (the saved config with the writes made since the save,
  and only those; NOT_FOUND with nothing saved, INVALID_ARGUMENT with a config
  attached), VERIFY_AND_COMMIT (state reset), RECONCILE_AND_COMMIT (state kept;
  to a different program the state is carried over by name, or the request is
  INVALID_ARGUMENT and the old pipeline keeps running: reconcile.py).
- Idle timeout: entries of tables with idle_timeout_behavior NOTIFY_CONTROL
  whose idle_timeout_ns has passed without a hit are reported to the primaries
  whose role covers the table in
  IdleTimeoutNotification messages (checked every IDLE_POLL_S; each idle period
  once); TableEntry reads fill time_since_last_hit when asked.
- One-shot action sets (action_profile_action_set) are turned into hidden
  members and a group (ids from 2**31 up, which clients may not use), removed
  with the entry, left out of member/group reads, and read back as written.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from typing import Any

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emu.p4.tables import KEEP, Table, TableEntry
from emu.p4.v1model.replication import Replica
from emu.p4.v1model.stateful import MeterRates

from .arbitration import Arbitration, Stream, election_int
from .atomicity import write_batch
from .dataplane import ControlPlane
from .device import Device
from .digests import DigestConfig, DigestManager
from .errors import (
    STATUS_DETAILS_KEY,
    P4RTError,
    as_p4rt_error,
    batch_status,
    failed_precondition,
    invalid,
    not_found,
    out_of_range,
    permission_denied,
    unimplemented,
)
from .reconcile import IdMap, snapshot_entities, transfer
from .roles import RoleConfig, entity_p4_id
from .translate import P4InfoIndex, TableInfo, decode_uint, encode_uint
from .valuesets import read_value_sets, write_value_set

log = logging.getLogger("emu.runtime.server")

__all__ = ["P4RuntimeServer", "serve"]

U = p4runtime_pb2.Update
WR = p4runtime_pb2.WriteRequest
SFPC = p4runtime_pb2.SetForwardingPipelineConfigRequest
GFPC = p4runtime_pb2.GetForwardingPipelineConfigRequest
API_VERSION = "1.4.1"
# gRPC's sync server runs each StreamChannel on one of its worker threads for the
# stream's whole life: streams beyond MAX_STREAMS are refused (RESOURCE_EXHAUSTED) and
# the pool has UNARY_WORKERS more threads, so unary RPCs are never starved by streams.
MAX_STREAMS = 16
UNARY_WORKERS = 8
READ_CHUNK = 1000  # entities per ReadResponse message
IDLE_POLL_S = 0.1  # how often idle timeouts are checked


ONESHOT_BASE = 1 << 31  # member/group ids of one-shot action sets


class _OneShot:
    """The hidden members/group behind one table entry's one-shot action set."""

    __slots__ = ("profile", "group_id", "member_ids", "action_set")

    def __init__(self, profile: Any, group_id: int | None, member_ids: list[int],
                 action_set: p4runtime_pb2.ActionProfileActionSet) -> None:
        self.profile = profile
        self.group_id = group_id
        self.member_ids = member_ids
        self.action_set = action_set

    def release(self) -> None:
        if self.group_id is not None:
            self.profile.delete_group(self.group_id)
        for mid in self.member_ids:
            self.profile.delete_member(mid)


class _Pipeline:
    """The committed pipeline as the server sees it."""

    def __init__(self, index: P4InfoIndex, config: p4runtime_pb2.ForwardingPipelineConfig,
                 control: ControlPlane) -> None:
        self.index = index
        self.config = config
        self.control = control
        self.oneshots: dict[TableEntry, _OneShot] = {}
        self.next_oneshot_id = ONESHOT_BASE
        self.timeout_tables = [ti for ti in index.tables.values()
                               if ti.proto.idle_timeout_behavior
                               == p4info_pb2.Table.NOTIFY_CONTROL]


class P4RuntimeServer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: Device) -> None:
        self.device = device
        self.arbitration = Arbitration(device.device_id,
                                       on_primary_change=self._on_primary_change)
        self.digests = DigestManager(self._send_digest_list)
        self._pipe: _Pipeline | None = None
        # VERIFY_AND_SAVE's pipeline: not forwarding yet, but Writes and Reads go to it
        # (the spec's "replay" of the writes since the save happens by construction).
        self._saved: tuple[_Pipeline, object] | None = None
        self._config_lock = threading.Lock()  # serialises pipeline changes and writes
        self._grpc: grpc.Server | None = None
        self._stop = threading.Event()
        self._streams = 0  # live StreamChannel handlers (each holds a worker thread)
        self._streams_lock = threading.Lock()
        self._idle_thread: threading.Thread | None = None
        self.stats = {"packet_in": 0, "packet_in_dropped": 0, "packet_out": 0, "digests": 0,
                      "idle_notifications": 0, "streams_refused": 0}
        device.set_packet_in_sink(self._on_packet_in)
        device.set_digest_sink(self._on_digest)

    # ------------------------------------------------------------------ lifecycle

    def start(self, address: str) -> int:
        """Listen on `host:port` or `unix:PATH`; returns the bound TCP port (0 for unix)."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=MAX_STREAMS + UNARY_WORKERS,
                                                        thread_name_prefix="p4rt"),
                             options=[("grpc.max_receive_message_length", 256 << 20),
                                      ("grpc.max_send_message_length", 256 << 20),
                                      ("grpc.so_reuseport", 0)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, server)
        port = server.add_insecure_port(address)
        if port == 0 and not address.startswith("unix:"):
            raise OSError(f"cannot listen on {address}")
        server.start()
        self._grpc = server
        self.digests.start()
        self._idle_thread = threading.Thread(target=self._idle_loop, name="p4rt-idle",
                                             daemon=True)
        self._idle_thread.start()
        return 0 if address.startswith("unix:") else port

    def add_to(self, server: grpc.Server) -> None:
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, server)
        self.digests.start()  # digest timeouts run whoever owns the gRPC server

    def stop(self, grace: float = 0.5) -> None:
        self._stop.set()
        self.digests.stop()
        for s in self.arbitration.streams():
            s.close()
        if self._grpc is not None:
            self._grpc.stop(grace).wait(grace + 1)
            self._grpc = None

    # ------------------------------------------------------------------ idle timeouts

    def _idle_loop(self) -> None:
        while not self._stop.wait(IDLE_POLL_S):
            try:
                self.check_idle_timeouts()
            except Exception:  # a bug here must not end the notifications for good
                log.exception("idle timeout check failed")

    def check_idle_timeouts(self) -> int:
        """Send one IdleTimeoutNotification for the entries that idled out; returns their count."""
        pipe = self._pipe
        if pipe is None or not pipe.timeout_tables:
            return 0
        primaries = self.arbitration.primaries()
        if not primaries:
            return 0

        def collect() -> list[p4runtime_pb2.TableEntry]:
            out = []
            for ti in pipe.timeout_tables:
                table = pipe.control.table(ti.name)
                now = table._clock()  # the table's own time base (the switch clock)
                for e in table.expired(now):
                    te = p4runtime_pb2.TableEntry()
                    pipe.index.entry_to_proto(ti, e, te)
                    te.ClearField("action")
                    out.append(te)
            return out

        entries = self.device.call(collect)
        if entries:
            for stream, cfg in primaries:
                mine = [e for e in entries if cfg is None or cfg.in_scope(e.table_id)]
                if not mine:
                    continue
                msg = p4runtime_pb2.StreamMessageResponse()
                msg.idle_timeout_notification.table_entry.extend(mine)
                msg.idle_timeout_notification.timestamp = time.time_ns()
                stream.send(msg)
                self.stats["idle_notifications"] += 1
        return len(entries)

    # ------------------------------------------------------------------ helpers

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise not_found(f"device_id {device_id} does not exist "
                            f"(this switch is {self.device.device_id})")

    def _check_primary(self, role: str, election_id: p4runtime_pb2.Uint128,
                       has_election: bool) -> None:
        """Spec order ("Write RPC"): an unknown role NOT_FOUND, then PERMISSION_DENIED."""
        if not self.arbitration.known_role(role):
            raise not_found(f"role {role!r} is not known to this device "
                            "(no StreamChannel arbitrated for it)")
        eid = election_int(election_id) if has_election else -1
        if not self.arbitration.is_primary(role, eid):
            raise permission_denied("not the primary client for role "
                                    f"{role!r} (election_id {eid})")

    def _pipeline(self) -> _Pipeline:
        """The pipeline Writes and Reads address: the saved one between VERIFY_AND_SAVE
        and COMMIT (the spec: the client writes the new program's state, replayed at
        COMMIT), else the committed one."""
        p = self._saved[0] if self._saved is not None else self._pipe
        if p is None:
            raise failed_precondition("no forwarding pipeline config set")
        return p

    @staticmethod
    def _abort(context: grpc.ServicerContext, err: P4RTError) -> None:
        context.abort(err.code, err.message)

    def _guard(self, context: grpc.ServicerContext, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except P4RTError as e:
            self._abort(context, e)
        except Exception as e:  # never let a bug take the server down
            log.exception("internal error")
            self._abort(context, as_p4rt_error(e))

    # ------------------------------------------------------------------ Capabilities

    def Capabilities(self, request: p4runtime_pb2.CapabilitiesRequest,
                     context: grpc.ServicerContext) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ------------------------------------------------------------------ pipeline config

    def SetForwardingPipelineConfig(self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest, context: grpc.ServicerContext
                                    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        def run() -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
            self._check_device(request.device_id)
            self._check_primary(request.role, request.election_id,
                                request.HasField("election_id"))
            cfg = self.arbitration.config(request.role)
            if cfg is not None and not cfg.can_push_pipeline:
                raise permission_denied(f"role {request.role!r} may not set the pipeline "
                                        "(its role config has can_push_pipeline false)")
            with self._config_lock:
                self._set_pipeline(request)
            return p4runtime_pb2.SetForwardingPipelineConfigResponse()
        return self._guard(context, run)  # type: ignore[no-any-return]

    def _verify(self, cfg: p4runtime_pb2.ForwardingPipelineConfig) -> tuple[P4InfoIndex, object]:
        index = P4InfoIndex.build(cfg.p4info)
        prepared = self.device.prepare(index, cfg.p4_device_config)
        return index, prepared

    def _set_pipeline(self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest) -> None:
        action = request.action
        cfg = request.config
        if action == SFPC.VERIFY:
            self._verify(cfg)
        elif action == SFPC.VERIFY_AND_SAVE:
            index, prepared = self._verify(cfg)
            stored = p4runtime_pb2.ForwardingPipelineConfig()
            stored.CopyFrom(cfg)
            self._drop_saved()
            self._saved = (_Pipeline(index, stored, self.device.prepared_control(prepared)),
                           prepared)
        elif action == SFPC.COMMIT:
            if self._saved is None:
                raise not_found("COMMIT without a config saved by VERIFY_AND_SAVE")
            if cfg.HasField("p4info") or cfg.p4_device_config:
                raise invalid("COMMIT takes no config: it commits the one saved by "
                              "VERIFY_AND_SAVE (a cookie alone may be given)")
            staged, prepared = self._saved
            self._saved = None
            if cfg.HasField("cookie"):
                staged.config.cookie.CopyFrom(cfg.cookie)
            # The staged control plane already holds the writes made since the save.
            self.device.commit(prepared)
            self._pipe = staged
            self.digests.set_pipeline(staged.index.digests.values())
        elif action == SFPC.VERIFY_AND_COMMIT:
            index, prepared = self._verify(cfg)
            self._drop_saved()
            self._commit(index, cfg, prepared)
        elif action == SFPC.RECONCILE_AND_COMMIT:
            if not cfg.HasField("p4info"):
                raise invalid("RECONCILE_AND_COMMIT needs a config")
            cur = self._pipe
            self._drop_saved()
            if cur is None:
                index, prepared = self._verify(cfg)
                self._commit(index, cfg, prepared)
            elif (cur.config.p4info == cfg.p4info
                  and cur.config.p4_device_config == cfg.p4_device_config):
                new_cfg = p4runtime_pb2.ForwardingPipelineConfig()
                new_cfg.CopyFrom(cur.config)
                new_cfg.cookie.CopyFrom(cfg.cookie)
                kept = _Pipeline(cur.index, new_cfg, cur.control)
                kept.oneshots, kept.next_oneshot_id = cur.oneshots, cur.next_oneshot_id
                self._pipe = kept
            else:
                index, prepared = self._verify(cfg)
                self._reconcile(cur, index, cfg, prepared)
        else:
            raise invalid(f"unsupported SetForwardingPipelineConfig action {action}")

    def _drop_saved(self) -> None:
        """Forget a VERIFY_AND_SAVEd pipeline (a later config supersedes it)."""
        if self._saved is not None:
            self.device.discard(self._saved[1])
            self._saved = None

    def load_initial(self, cfg: p4runtime_pb2.ForwardingPipelineConfig) -> None:
        """Commit a pipeline given on the command line (no client, no arbitration)."""
        with self._config_lock:
            index, prepared = self._verify(cfg)
            self._commit(index, cfg, prepared)

    def _commit(self, index: P4InfoIndex, cfg: p4runtime_pb2.ForwardingPipelineConfig,
                prepared: object) -> None:
        control = self.device.commit(prepared)
        stored = p4runtime_pb2.ForwardingPipelineConfig()
        stored.CopyFrom(cfg)
        self._pipe = _Pipeline(index, stored, control)
        self.digests.set_pipeline(index.digests.values())

    def _reconcile(self, cur: _Pipeline, index: P4InfoIndex,
                   cfg: p4runtime_pb2.ForwardingPipelineConfig, prepared: object) -> None:
        """Commit a different program keeping the state (reconcile.py); atomic."""
        ids = IdMap(cur.index, index)
        stored = p4runtime_pb2.ForwardingPipelineConfig()
        stored.CopyFrom(cfg)
        digest_ids = ids.digest_ids()
        keep: dict[int, DigestConfig] = {}
        for old_id, dcfg in self.digests.configs().items():
            if old_id not in digest_ids:
                name = cur.index.digests[old_id].preamble.name
                raise invalid("RECONCILE_AND_COMMIT cannot preserve the forwarding state: "
                              f"digest {name} is configured but not in the new P4Info "
                              "with the same type")
            keep[digest_ids[old_id]] = dcfg
        box: list[_Pipeline] = []

        def carry(control: ControlPlane) -> None:
            # Runs on the switch loop before the swap: the old pipeline is quiet.
            new = _Pipeline(index, stored, control)
            state = snapshot_entities(lambda e: self._read(cur, e), cur.index, cur.control)
            transfer(ids, state, lambda u: self._apply(new, u))
            box.append(new)

        self.device.commit(prepared, before_swap=carry)
        self._pipe = box[0]
        self.digests.set_pipeline(index.digests.values(), keep)

    def GetForwardingPipelineConfig(self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest, context: grpc.ServicerContext
                                    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        def run() -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
            self._check_device(request.device_id)
            resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
            p = self._pipe
            if p is None:
                return resp  # nothing set: an empty config (controllers check the cookie)
            rt = request.response_type
            if p.config.HasField("cookie"):
                resp.config.cookie.CopyFrom(p.config.cookie)
            if rt in (GFPC.ALL, GFPC.P4INFO_AND_COOKIE):
                resp.config.p4info.CopyFrom(p.config.p4info)
            if rt in (GFPC.ALL, GFPC.DEVICE_CONFIG_AND_COOKIE):
                resp.config.p4_device_config = p.config.p4_device_config
            if rt not in (GFPC.ALL, GFPC.P4INFO_AND_COOKIE, GFPC.DEVICE_CONFIG_AND_COOKIE,
                          GFPC.COOKIE_ONLY):
                raise invalid(f"unknown response_type {rt}")
            return resp
        return self._guard(context, run)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ Write

    def Write(self, request: p4runtime_pb2.WriteRequest,
              context: grpc.ServicerContext) -> p4runtime_pb2.WriteResponse:
        try:
            self._check_device(request.device_id)
            self._check_primary(request.role, request.election_id,
                                request.HasField("election_id"))
            atomicity = request.atomicity
            if atomicity not in (WR.CONTINUE_ON_ERROR, WR.ROLLBACK_ON_ERROR,
                                 WR.DATAPLANE_ATOMIC):
                raise invalid(f"unknown atomicity {atomicity}")
            role = request.role
            cfg = self.arbitration.config(role)
            with self._config_lock:
                pipe = self._pipeline()
                updates = list(request.updates)
                denied = [self._role_denies(role, cfg, u) for u in updates]
                # DATAPLANE_ATOMIC: the whole batch, rollback included, in one call (the
                # switch loop runs no packet in between); the other modes in chunks,
                # forwarding in between (atomicity.py).
                results = write_batch(
                    updates, denied, atomicity, lambda u: self._apply(pipe, u),
                    lambda e: self._read(pipe, e), run=self.device.call)
        except P4RTError as e:
            self._abort(context, e)
        except Exception as e:
            log.exception("internal error in Write")
            self._abort(context, as_p4rt_error(e))
        if any(r is not None for r in results):
            st = batch_status(results)
            context.set_trailing_metadata(((STATUS_DETAILS_KEY, st.SerializeToString()),))
            first = next(r for r in results if r is not None)
            context.abort(grpc.StatusCode.UNKNOWN, f"Write failure: {str(first)[:300]}")
        return p4runtime_pb2.WriteResponse()

    def _role_denies(self, role: str, cfg: RoleConfig | None,
                     u: p4runtime_pb2.Update) -> P4RTError | None:
        """PERMISSION_DENIED for an update outside the writer's role (roles.py)."""
        p4_id = entity_p4_id(u.entity)
        if cfg is not None and not cfg.may_write(p4_id):
            what = u.entity.WhichOneof("entity")
            return permission_denied(f"role {role!r} may not write {what} "
                                     f"(P4 id {p4_id}): not in its role config")
        if p4_id is not None:
            owner = self.arbitration.exclusive_owner(p4_id)
            if owner is not None and owner != role:
                return permission_denied(f"P4 id {p4_id} belongs exclusively to role {owner!r}")
        return None

    def _apply(self, pipe: _Pipeline, u: p4runtime_pb2.Update) -> None:
        if u.type not in (U.INSERT, U.MODIFY, U.DELETE):
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        ent = u.entity
        which = ent.WhichOneof("entity")
        if which == "table_entry":
            self._write_table_entry(pipe, u.type, ent.table_entry)
        elif which == "action_profile_member":
            self._write_member(pipe, u.type, ent.action_profile_member)
        elif which == "action_profile_group":
            self._write_group(pipe, u.type, ent.action_profile_group)
        elif which == "counter_entry":
            self._write_counter(pipe, u.type, ent.counter_entry)
        elif which == "direct_counter_entry":
            self._write_direct_counter(pipe, u.type, ent.direct_counter_entry)
        elif which == "meter_entry":
            self._write_meter(pipe, u.type, ent.meter_entry)
        elif which == "direct_meter_entry":
            self._write_direct_meter(pipe, u.type, ent.direct_meter_entry)
        elif which == "register_entry":
            self._write_register(pipe, u.type, ent.register_entry)
        elif which == "packet_replication_engine_entry":
            self._write_pre(pipe, u.type, ent.packet_replication_engine_entry)
        elif which == "digest_entry":
            self._write_digest(pipe, u.type, ent.digest_entry)
        elif which == "value_set_entry":
            write_value_set(pipe.index, pipe.control, u.type, ent.value_set_entry)
        elif which is None:
            raise invalid("update without an entity")
        else:
            raise unimplemented(f"writing {which} is not supported")

    # -- table entries

    def _table(self, pipe: _Pipeline, table_id: int) -> tuple[TableInfo, Table]:
        ti = pipe.index.table(table_id)
        return ti, pipe.control.table(ti.name)

    def _write_table_entry(self, pipe: _Pipeline, typ: int,
                           te: p4runtime_pb2.TableEntry) -> None:
        if te.table_id == 0:
            raise invalid("table_id 0 (wildcard) is only valid in reads")
        if te.is_const:
            # Spec: is_const is set by the server on reads of const entries; a client
            # may not write it (INSERT, MODIFY and DELETE alike).
            raise invalid("is_const is read-only: entries with is_const set cannot be written")
        ti, table = self._table(pipe, te.table_id)
        idx = pipe.index
        where = ti.name
        if te.is_default_action:
            if typ != U.MODIFY:
                raise invalid(f"{where}: the default entry can only be MODIFYed")
            if len(te.match) or te.priority:
                raise invalid(f"{where}: the default entry has no match and no priority")
            if ti.profile_id:
                raise unimplemented(f"{where}: default entries of indirect tables")
            meter = self._meter_from_proto(te) if te.HasField("meter_config") else None
            if te.HasField("action"):
                if te.action.WhichOneof("type") != "action":
                    raise invalid(f"{where}: the default entry needs a direct action")
                call = idx.action_from_proto(te.action.action, ti.action_ids, where)
                table.set_default_action(call, metadata=te.metadata,
                                         controller_metadata=te.controller_metadata,
                                         meter_config=meter)
            else:
                table.reset_default_action()
            if te.HasField("counter_data"):
                table.default_entry.counter.packets = te.counter_data.packet_count
                table.default_entry.counter.bytes = te.counter_data.byte_count
            return
        match = idx.match_from_proto(ti, te.match)
        if not ti.needs_priority and te.priority:
            raise invalid(f"{where}: priority must be 0 for a table without "
                          "ternary/range/optional fields")
        if typ == U.DELETE:
            gone = table.delete(match, te.priority, strict=True)
            old_shot = pipe.oneshots.pop(gone, None)
            if old_shot is not None:
                old_shot.release()
            return
        action: Any = None
        member: Any = None
        group: Any = None
        shot: _OneShot | None = None
        if te.HasField("action"):
            kind = te.action.WhichOneof("type")
            if kind == "action":
                if ti.profile_id:
                    raise invalid(f"{where}: entries of an indirect table need a member "
                                  "or a group")
                action = idx.action_from_proto(te.action.action, ti.action_ids, where)
            elif kind == "action_profile_member_id":
                member = te.action.action_profile_member_id
            elif kind == "action_profile_group_id":
                group = te.action.action_profile_group_id
            elif kind == "action_profile_action_set":
                if not ti.profile_id:
                    raise invalid(f"{where}: one-shot action sets need an action profile")
                shot = self._make_oneshot(pipe, ti, te.action.action_profile_action_set)
                if shot.group_id is not None:
                    group = shot.group_id
                else:
                    member = shot.member_ids[0]
            else:
                raise invalid(f"{where}: empty TableAction")
            if (member is not None or group is not None) and not ti.profile_id:
                raise invalid(f"{where}: a direct table takes an action, not a member/group")
        elif typ == U.INSERT:
            raise invalid(f"{where}: INSERT needs an action")
        try:
            self._insert_or_modify(pipe, ti, table, typ, te, match, action, member, group,
                                   shot)
        except BaseException:
            if shot is not None:
                shot.release()
            raise

    def _insert_or_modify(self, pipe: _Pipeline, ti: TableInfo, table: Table, typ: int,
                          te: p4runtime_pb2.TableEntry, match: Any, action: Any,
                          member: Any, group: Any, shot: _OneShot | None) -> None:
        where = ti.name
        if te.HasField("counter_data") and not ti.direct_counter_id:
            raise invalid(f"{where}: table has no direct counter")
        if te.HasField("meter_config") and not ti.direct_meter_id:
            raise invalid(f"{where}: table has no direct meter")
        counter = ((te.counter_data.packet_count, te.counter_data.byte_count)
                   if te.HasField("counter_data") else None)
        meter = self._meter_from_proto(te) if te.HasField("meter_config") else None
        if typ == U.INSERT:
            e = table.insert(match, action, member_id=member, group_id=group,
                             priority=te.priority, idle_timeout_ns=te.idle_timeout_ns,
                             metadata=te.metadata, controller_metadata=te.controller_metadata,
                             counter=counter, meter_config=meter, strict=True)
        else:
            retarget = te.HasField("action")
            e = table.modify(
                match, te.priority,
                action=action if retarget else KEEP,
                member_id=member if retarget else KEEP,
                group_id=group if retarget else KEEP,
                idle_timeout_ns=te.idle_timeout_ns, metadata=te.metadata,
                controller_metadata=te.controller_metadata,
                counter=counter if counter is not None else KEEP,
                meter_config=meter if te.HasField("meter_config") else KEEP, strict=True)
            if retarget:
                old_shot = pipe.oneshots.pop(e, None)
                if old_shot is not None:
                    old_shot.release()  # the entry no longer references it
        if shot is not None:
            pipe.oneshots[e] = shot

    def _make_oneshot(self, pipe: _Pipeline, ti: TableInfo,
                      aset: p4runtime_pb2.ActionProfileActionSet) -> _OneShot:
        """Hidden members (and a group, for selectors) for a one-shot action set."""
        from emu.p4.tables import GroupMember

        where = ti.name
        pinfo = pipe.index.profile(ti.profile_id)
        prof = pipe.control.action_profile(pinfo.preamble.name)
        acts = list(aset.action_profile_actions)
        if not acts:
            raise invalid(f"{where}: empty one-shot action set")
        if not pinfo.with_selector and len(acts) != 1:
            raise invalid(f"{where}: an action profile without selector takes one action")
        calls = []
        for a in acts:
            if a.weight <= 0:
                raise invalid(f"{where}: one-shot action weights must be positive")
            wp: int | None = None
            which = a.WhichOneof("watch_kind")
            if which == "watch_port":
                wp = decode_uint(a.watch_port, 0, "watch_port")
            elif which == "watch" and a.watch:
                wp = a.watch
            calls.append((pipe.index.action_from_proto(a.action, ti.action_ids, where),
                          a.weight, wp))
        stored = p4runtime_pb2.ActionProfileActionSet()
        stored.CopyFrom(aset)
        shot = _OneShot(prof, None, [], stored)
        try:
            for call, _w, _wp in calls:
                mid = pipe.next_oneshot_id
                pipe.next_oneshot_id += 1
                prof.insert_member(mid, call)
                shot.member_ids.append(mid)
            if pinfo.with_selector:
                gid = pipe.next_oneshot_id
                pipe.next_oneshot_id += 1
                prof.insert_group(gid, [GroupMember(mid, w, wp) for mid, (_c, w, wp)
                                        in zip(shot.member_ids, calls, strict=True)],
                                  max_size=pinfo.max_group_size)
                shot.group_id = gid
        except BaseException:
            shot.release()
            raise
        return shot

    @staticmethod
    def _meter_from_proto(msg: Any) -> MeterRates:
        c = msg.meter_config if hasattr(msg, "meter_config") else msg.config
        if c.cir > c.pir:
            raise invalid("meter config: cir must not exceed pir")
        if min(c.cir, c.pir, c.cburst, c.pburst) < 0:
            raise invalid("meter config: negative rate or burst")
        return MeterRates.per_second(c.cir, c.cburst, c.pir, c.pburst)

    # -- action profiles

    def _profile(self, pipe: _Pipeline, profile_id: int) -> Any:
        if profile_id == 0:
            raise invalid("action_profile_id 0 (wildcard) is only valid in reads")
        p = pipe.index.profile(profile_id)
        return p, pipe.control.action_profile(p.preamble.name)

    def _write_member(self, pipe: _Pipeline, typ: int,
                      m: p4runtime_pb2.ActionProfileMember) -> None:
        info, prof = self._profile(pipe, m.action_profile_id)
        if m.member_id >= ONESHOT_BASE:
            raise invalid(f"member ids from {ONESHOT_BASE} up are reserved (one-shot sets)")
        if typ == U.DELETE:
            prof.delete_member(m.member_id)
            return
        if not m.HasField("action"):
            raise invalid(f"{info.preamble.name}: member {m.member_id} needs an action")
        allowed = frozenset(a for t in pipe.index.tables.values()
                            if t.profile_id == m.action_profile_id for a in t.action_ids)
        call = pipe.index.action_from_proto(m.action, allowed, info.preamble.name)
        if typ == U.INSERT:
            prof.insert_member(m.member_id, call)
        else:
            prof.modify_member(m.member_id, call)

    def _write_group(self, pipe: _Pipeline, typ: int,
                     g: p4runtime_pb2.ActionProfileGroup) -> None:
        from emu.p4.tables import GroupMember

        info, prof = self._profile(pipe, g.action_profile_id)
        if g.group_id >= ONESHOT_BASE:
            raise invalid(f"group ids from {ONESHOT_BASE} up are reserved (one-shot sets)")
        if typ == U.DELETE:
            prof.delete_group(g.group_id)
            return
        members = []
        for gm in g.members:
            wp: int | None = None
            which = gm.WhichOneof("watch_kind")
            if which == "watch_port":
                wp = decode_uint(gm.watch_port, 0, "watch_port")
            elif which == "watch" and gm.watch:
                wp = gm.watch
            members.append(GroupMember(gm.member_id, gm.weight, wp))
        if typ == U.INSERT:
            prof.insert_group(g.group_id, members, max_size=g.max_size)
        else:
            prof.modify_group(g.group_id, members, max_size=g.max_size or None)

    # -- counters, meters, registers

    def _write_counter(self, pipe: _Pipeline, typ: int, c: p4runtime_pb2.CounterEntry) -> None:
        if typ != U.MODIFY:
            raise invalid("counter entries can only be MODIFYed")
        info = pipe.index.counters.get(c.counter_id)
        if info is None:
            raise not_found(f"counter id {c.counter_id} not in P4Info")
        arr = pipe.control.counter(info.preamble.name)
        pk, by = c.data.packet_count, c.data.byte_count
        if c.HasField("index"):
            arr.write(self._index_in(c.index.index, arr.size, info.preamble.name), pk, by)
        else:
            for i in range(arr.size):
                arr.write(i, pk, by)

    @staticmethod
    def _index_in(i: int, size: int, name: str) -> int:
        # Spec: an index beyond the array is OUT_OF_RANGE; a negative one is malformed.
        if i < 0:
            raise invalid(f"{name}: negative index {i}")
        if i >= size:
            raise out_of_range(f"{name}: index {i} out of range 0..{size - 1}")
        return i

    def _entry_of(self, pipe: _Pipeline, te: p4runtime_pb2.TableEntry) -> tuple[TableInfo,
                                                                                TableEntry]:
        ti, table = self._table(pipe, te.table_id)
        if te.is_default_action:
            return ti, table.default_entry
        match = pipe.index.match_from_proto(ti, te.match)
        return ti, table.get(match, te.priority, strict=True)

    def _write_direct_counter(self, pipe: _Pipeline, typ: int,
                              d: p4runtime_pb2.DirectCounterEntry) -> None:
        if typ != U.MODIFY:
            raise invalid("direct counter entries can only be MODIFYed")
        ti, e = self._entry_of(pipe, d.table_entry)
        if not ti.direct_counter_id:
            raise invalid(f"{ti.name}: table has no direct counter")
        e.counter.packets, e.counter.bytes = d.data.packet_count, d.data.byte_count

    def _write_meter(self, pipe: _Pipeline, typ: int, m: p4runtime_pb2.MeterEntry) -> None:
        if typ != U.MODIFY:
            raise invalid("meter entries can only be MODIFYed")
        info = pipe.index.meters.get(m.meter_id)
        if info is None:
            raise not_found(f"meter id {m.meter_id} not in P4Info")
        arr = pipe.control.meter(info.preamble.name)
        index = (self._index_in(m.index.index, arr.size, info.preamble.name)
                 if m.HasField("index") else None)
        if m.HasField("config"):
            r = self._meter_from_proto(m)
            arr.set_rates(r.cir, r.cbs, r.pir, r.pbs, index)
        else:
            arr.reset_rates(index)

    def _write_direct_meter(self, pipe: _Pipeline, typ: int,
                            d: p4runtime_pb2.DirectMeterEntry) -> None:
        if typ != U.MODIFY:
            raise invalid("direct meter entries can only be MODIFYed")
        ti, e = self._entry_of(pipe, d.table_entry)
        if not ti.direct_meter_id:
            raise invalid(f"{ti.name}: table has no direct meter")
        e.meter_config = self._meter_from_proto(d) if d.HasField("config") else None
        e.meter_state = None

    def _write_register(self, pipe: _Pipeline, typ: int,
                        r: p4runtime_pb2.RegisterEntry) -> None:
        if typ != U.MODIFY:
            raise invalid("register entries can only be MODIFYed")
        info = pipe.index.registers.get(r.register_id)
        if info is None:
            raise not_found(f"register id {r.register_id} not in P4Info")
        arr = pipe.control.register(info.preamble.name)
        if r.data.WhichOneof("data") != "bitstring":
            raise invalid(f"{info.preamble.name}: register data must be a bitstring")
        value = decode_uint(r.data.bitstring, arr.width, info.preamble.name)
        if r.HasField("index"):
            arr.set(self._index_in(r.index.index, arr.size, info.preamble.name), value)
        else:
            for i in range(arr.size):
                arr.set(i, value)

    # -- replication engine

    @staticmethod
    def _replicas(reps: Iterable[p4runtime_pb2.Replica]) -> list[Replica]:
        out = []
        for r in reps:
            if r.WhichOneof("port_kind") == "port":
                port = decode_uint(r.port, 0, "replica port")
            else:
                port = r.egress_port
            out.append(Replica(port, r.instance))
        return out

    def _write_pre(self, pipe: _Pipeline, typ: int,
                   e: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        pre = pipe.control.pre
        which = e.WhichOneof("type")
        if which == "multicast_group_entry":
            g = e.multicast_group_entry
            if g.multicast_group_id == 0:
                raise invalid("multicast_group_id 0 is not a group")
            if typ == U.INSERT:
                pre.insert_multicast_group(g.multicast_group_id, self._replicas(g.replicas))
            elif typ == U.MODIFY:
                pre.modify_multicast_group(g.multicast_group_id, self._replicas(g.replicas))
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
            fn(s.session_id, self._replicas(s.replicas), class_of_service=s.class_of_service,
               packet_length_bytes=s.packet_length_bytes)
        else:
            raise invalid("empty PacketReplicationEngineEntry")

    def _write_digest(self, pipe: _Pipeline, typ: int, d: p4runtime_pb2.DigestEntry) -> None:
        if d.digest_id == 0:
            raise invalid("digest_id 0 (wildcard) is only valid in reads")
        self.digests.write(typ, d)

    # ------------------------------------------------------------------ Read

    def Read(self, request: p4runtime_pb2.ReadRequest,
             context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.ReadResponse]:
        try:
            self._check_device(request.device_id)
            pipe = self._pipeline()
            entities: list[p4runtime_pb2.Entity] = self.device.call(
                lambda: [x for ent in request.entities for x in self._read(pipe, ent)])
        except P4RTError as e:
            self._abort(context, e)
        except Exception as e:
            log.exception("internal error in Read")
            self._abort(context, as_p4rt_error(e))
        for i in range(0, max(1, len(entities)), READ_CHUNK):
            yield p4runtime_pb2.ReadResponse(entities=entities[i:i + READ_CHUNK])

    def _read(self, pipe: _Pipeline, ent: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        which = ent.WhichOneof("entity")
        idx = pipe.index
        out: list[p4runtime_pb2.Entity] = []
        if which == "table_entry":
            te = ent.table_entry
            tis = [idx.table(te.table_id)] if te.table_id else list(idx.tables.values())
            if not te.table_id and (len(te.match) or te.is_default_action):
                raise invalid("a wildcard table read cannot filter on match fields")
            for ti in tis:
                table = pipe.control.table(ti.name)
                if te.is_default_action:
                    entries = [table.default_entry]
                else:
                    match = idx.match_from_proto(ti, te.match) if len(te.match) else None
                    entries = table.read(match, priority=te.priority,
                                         metadata=te.metadata if te.metadata else b"")
                for e in entries:
                    r = p4runtime_pb2.Entity()
                    idx.entry_to_proto(ti, e, r.table_entry)
                    shot = pipe.oneshots.get(e)
                    if shot is not None:
                        r.table_entry.action.action_profile_action_set.CopyFrom(
                            shot.action_set)
                    if ti.direct_counter_id and te.HasField("counter_data"):
                        r.table_entry.counter_data.packet_count = e.counter.packets
                        r.table_entry.counter_data.byte_count = e.counter.bytes
                    if ti.direct_meter_id and te.HasField("meter_config"):
                        self._meter_to_proto(e.meter_config, r.table_entry.meter_config)
                    if e.is_const:
                        r.table_entry.is_const = True
                    if te.HasField("time_since_last_hit") and table.support_timeout:
                        r.table_entry.time_since_last_hit.elapsed_ns = \
                            e.time_since_last_hit(table._clock())
                    out.append(r)
        elif which == "action_profile_member":
            m = ent.action_profile_member
            for pinfo in ([idx.profile(m.action_profile_id)] if m.action_profile_id
                          else idx.profiles.values()):
                prof = pipe.control.action_profile(pinfo.preamble.name)
                for mem in prof.members():
                    if (m.member_id and mem.member_id != m.member_id) or \
                            mem.member_id >= ONESHOT_BASE:
                        continue
                    r = p4runtime_pb2.Entity()
                    rm = r.action_profile_member
                    rm.action_profile_id = pinfo.preamble.id
                    rm.member_id = mem.member_id
                    idx.action_to_proto(mem.action, rm.action)
                    out.append(r)
        elif which == "action_profile_group":
            g = ent.action_profile_group
            for pinfo in ([idx.profile(g.action_profile_id)] if g.action_profile_id
                          else idx.profiles.values()):
                prof = pipe.control.action_profile(pinfo.preamble.name)
                if not prof.with_selector:
                    continue
                for grp in prof.groups():
                    if (g.group_id and grp.group_id != g.group_id) or \
                            grp.group_id >= ONESHOT_BASE:
                        continue
                    r = p4runtime_pb2.Entity()
                    rg = r.action_profile_group
                    rg.action_profile_id = pinfo.preamble.id
                    rg.group_id = grp.group_id
                    rg.max_size = grp.max_size
                    for gm in grp.members:
                        x = rg.members.add(member_id=gm.member_id, weight=gm.weight)
                        if gm.watch_port is not None:
                            x.watch_port = encode_uint(gm.watch_port)
                    out.append(r)
        elif which == "counter_entry":
            c = ent.counter_entry
            for info in ([idx.counters[c.counter_id]] if c.counter_id in idx.counters
                         else [] if c.counter_id else idx.counters.values()):
                arr = pipe.control.counter(info.preamble.name)
                cells = ([self._index_in(c.index.index, arr.size, info.preamble.name)]
                         if c.HasField("index") else range(arr.size))
                for i in cells:
                    pk, by = arr.read(i)
                    r = p4runtime_pb2.Entity()
                    r.counter_entry.counter_id = info.preamble.id
                    r.counter_entry.index.index = i
                    r.counter_entry.data.packet_count = pk
                    r.counter_entry.data.byte_count = by
                    out.append(r)
            if c.counter_id and c.counter_id not in idx.counters:
                raise not_found(f"counter id {c.counter_id} not in P4Info")
        elif which == "direct_counter_entry":
            d = ent.direct_counter_entry
            te = d.table_entry
            tis = ([idx.table(te.table_id)] if te.table_id
                   else [t for t in idx.tables.values() if t.direct_counter_id])
            for ti in tis:
                if not ti.direct_counter_id:
                    raise invalid(f"{ti.name}: table has no direct counter")
                table = pipe.control.table(ti.name)
                if te.table_id and (len(te.match) or te.is_default_action):
                    entries = [self._entry_of(pipe, te)[1]]
                else:
                    entries = table.entries()
                for e in entries:
                    r = p4runtime_pb2.Entity()
                    idx.entry_to_proto(ti, e, r.direct_counter_entry.table_entry)
                    r.direct_counter_entry.table_entry.ClearField("action")
                    r.direct_counter_entry.data.packet_count = e.counter.packets
                    r.direct_counter_entry.data.byte_count = e.counter.bytes
                    out.append(r)
        elif which == "meter_entry":
            m = ent.meter_entry
            if m.meter_id and m.meter_id not in idx.meters:
                raise not_found(f"meter id {m.meter_id} not in P4Info")
            for info in [idx.meters[m.meter_id]] if m.meter_id else idx.meters.values():
                marr = pipe.control.meter(info.preamble.name)
                cells = ([self._index_in(m.index.index, marr.size, info.preamble.name)]
                         if m.HasField("index") else range(marr.size))
                for i in cells:
                    r = p4runtime_pb2.Entity()
                    r.meter_entry.meter_id = info.preamble.id
                    r.meter_entry.index.index = i
                    rates = marr.get_rates(i)
                    if rates is not None:
                        self._meter_to_proto(rates, r.meter_entry.config)
                    out.append(r)
        elif which == "direct_meter_entry":
            d = ent.direct_meter_entry
            ti, e = self._entry_of(pipe, d.table_entry)
            if not ti.direct_meter_id:
                raise invalid(f"{ti.name}: table has no direct meter")
            r = p4runtime_pb2.Entity()
            idx.entry_to_proto(ti, e, r.direct_meter_entry.table_entry)
            r.direct_meter_entry.table_entry.ClearField("action")
            if e.meter_config is not None:
                self._meter_to_proto(e.meter_config, r.direct_meter_entry.config)
            out.append(r)
        elif which == "register_entry":
            reg = ent.register_entry
            if reg.register_id and reg.register_id not in idx.registers:
                raise not_found(f"register id {reg.register_id} not in P4Info")
            for info in ([idx.registers[reg.register_id]] if reg.register_id
                         else idx.registers.values()):
                rarr = pipe.control.register(info.preamble.name)
                cells = ([self._index_in(reg.index.index, rarr.size, info.preamble.name)]
                         if reg.HasField("index") else range(rarr.size))
                for i in cells:
                    r = p4runtime_pb2.Entity()
                    r.register_entry.register_id = info.preamble.id
                    r.register_entry.index.index = i
                    r.register_entry.data.bitstring = encode_uint(rarr.get(i))
                    out.append(r)
        elif which == "packet_replication_engine_entry":
            e = ent.packet_replication_engine_entry
            pre = pipe.control.pre
            kind = e.WhichOneof("type")
            if kind == "multicast_group_entry":
                gid = e.multicast_group_entry.multicast_group_id
                groups = pre.multicast_groups()
                ids = [gid] if gid else sorted(groups)
                for g in ids:
                    reps = pre.multicast_group(g)  # NOT_FOUND for a missing id
                    r = p4runtime_pb2.Entity()
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
                for s in ([sessions[sid]] if sid else
                          [sessions[k] for k in sorted(sessions)]):
                    r = p4runtime_pb2.Entity()
                    cs = r.packet_replication_engine_entry.clone_session_entry
                    cs.session_id = s.session_id
                    cs.class_of_service = s.class_of_service
                    cs.packet_length_bytes = s.packet_length_bytes
                    for rep in s.replicas:
                        cs.replicas.add(egress_port=rep.egress_port, instance=rep.instance)
                    out.append(r)
            else:
                raise invalid("empty PacketReplicationEngineEntry in read")
        elif which == "digest_entry":
            out.extend(p4runtime_pb2.Entity(digest_entry=e)
                       for e in self.digests.read(ent.digest_entry.digest_id))
        elif which == "value_set_entry":
            out.extend(read_value_sets(idx, pipe.control, ent.value_set_entry))
        elif which is None:
            raise invalid("read of an empty entity")
        else:
            raise unimplemented(f"reading {which} is not supported")
        return out

    @staticmethod
    def _meter_to_proto(rates: object, out: p4runtime_pb2.MeterConfig) -> None:
        if isinstance(rates, MeterRates):
            out.cir = round(rates.cir * 1e6)
            out.cburst = rates.cbs
            out.pir = round(rates.pir * 1e6)
            out.pburst = rates.pbs

    # ------------------------------------------------------------------ StreamChannel

    def StreamChannel(self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
                      context: grpc.ServicerContext
                      ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        with self._streams_lock:
            full = self._streams >= MAX_STREAMS
            if not full:
                self._streams += 1
        if full:
            self.stats["streams_refused"] += 1
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"too many StreamChannels: this switch serves at most {MAX_STREAMS}")
        try:
            yield from self._stream_channel(request_iterator, context)
        finally:
            with self._streams_lock:
                self._streams -= 1

    def _stream_channel(self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
                        context: grpc.ServicerContext
                        ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        stream = Stream()
        context.add_callback(stream.close)

        def reader() -> None:
            try:
                for req in request_iterator:
                    if not self._stream_request(stream, req):
                        break
            except grpc.RpcError:
                pass
            except Exception:
                log.exception("stream reader failed")
            finally:
                stream.close()

        t = threading.Thread(target=reader, name="p4rt-stream", daemon=True)
        t.start()
        try:
            while True:
                msg = stream.out.get()
                if msg is None:
                    break
                yield msg
        finally:
            self.arbitration.remove(stream)
        err = getattr(stream, "fatal", None)
        if err is not None:
            context.abort(err.code, err.message)

    def _stream_request(self, stream: Stream, req: p4runtime_pb2.StreamMessageRequest) -> bool:
        which = req.WhichOneof("update")
        if which == "arbitration":
            a = req.arbitration
            try:
                if stream.election_id is not None and a.device_id != self.device.device_id:
                    # spec: a live stream naming another device is FAILED_PRECONDITION
                    raise failed_precondition("a stream cannot change its device_id")
                self._check_device(a.device_id)
                self.arbitration.update(stream, a.role.name,
                                        election_int(a.election_id)
                                        if a.HasField("election_id") else None,
                                        a.role.config if a.role.HasField("config") else None)
            except P4RTError as e:
                stream.fatal = e  # type: ignore[attr-defined]
                return False
            return True
        if stream.election_id is None:
            # The spec wants arbitration first; anything else ends the stream.
            stream.fatal = failed_precondition(  # type: ignore[attr-defined]
                "the first stream message must be a MasterArbitrationUpdate")
            return False
        if which == "packet":
            self._packet_out(stream, req.packet)
        elif which == "digest_ack":
            self._digest_ack(stream, req.digest_ack)
        else:
            self._stream_error(stream, invalid(f"unsupported stream message {which}"))
        return True

    def _stream_error(self, stream: Stream, err: P4RTError,
                      packet: p4runtime_pb2.PacketOut | None = None,
                      ack: p4runtime_pb2.DigestListAck | None = None) -> None:
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.error.canonical_code = err.code_value
        msg.error.message = err.message
        if packet is not None:
            msg.error.packet_out.packet_out.CopyFrom(packet)
        if ack is not None:
            msg.error.digest_list_ack.digest_list_ack.CopyFrom(ack)
        stream.send(msg)

    def _digest_ack(self, stream: Stream, ack: p4runtime_pb2.DigestListAck) -> None:
        try:
            if self.arbitration.primary(stream.role) is not stream:
                raise permission_denied("only a primary client acks digest lists")
            self.digests.ack(ack.digest_id, ack.list_id)
        except P4RTError as e:
            self._stream_error(stream, e, ack=ack)

    def _packet_out(self, stream: Stream, pkt: p4runtime_pb2.PacketOut) -> None:
        try:
            if self.arbitration.primary(stream.role) is not stream:
                raise permission_denied("only the primary client may send PacketOut")
            pipe = self._pipe  # the forwarding one, not a VERIFY_AND_SAVEd one
            if pipe is None:
                raise failed_precondition("no forwarding pipeline config set")
            header = b""
            if pipe.index.packet_out is not None:
                header = _pack_header(pipe.index.packet_out, pkt.metadata)
            elif len(pkt.metadata):
                raise invalid("the program has no @controller_header(\"packet_out\")")
            self.device.packet_out(header + pkt.payload)
            self.stats["packet_out"] += 1
        except Exception as e:
            self._stream_error(stream, as_p4rt_error(e), pkt)

    def _on_packet_in(self, frame: bytes) -> None:
        """Called by the device (data-path thread) for each frame sent to the CPU port."""
        pipe = self._pipe
        primaries = self.arbitration.primaries()
        if pipe is None or not primaries:
            self.stats["packet_in_dropped"] += 1
            return
        msg = p4runtime_pb2.StreamMessageResponse()
        info = pipe.index.packet_in
        if info is not None:
            nbytes = sum(m.bitwidth for m in info.metadata) // 8
            if len(frame) < nbytes:
                self.stats["packet_in_dropped"] += 1
                return
            value = int.from_bytes(frame[:nbytes], "big")
            shift = nbytes * 8
            for m in info.metadata:
                shift -= m.bitwidth
                v = (value >> shift) & ((1 << m.bitwidth) - 1)
                msg.packet.metadata.add(metadata_id=m.id, value=encode_uint(v))
            frame = frame[nbytes:]
        msg.packet.payload = frame
        md = {m.metadata_id: int.from_bytes(m.value, "big") for m in msg.packet.metadata}
        sent = 0
        for stream, cfg in primaries:
            if cfg is None or cfg.wants_packet_in(md):
                stream.send(msg)
                sent += 1
        self.stats["packet_in" if sent else "packet_in_dropped"] += 1

    def _on_digest(self, name: str, values: tuple[int, ...]) -> None:
        """Called by the device (data-path thread) for each digest message."""
        self.digests.learn(name, values)

    def _send_digest_list(self, dl: p4runtime_pb2.DigestList) -> bool:
        """Deliver a DigestList to every primary whose role covers the digest."""
        msg = p4runtime_pb2.StreamMessageResponse(digest=dl)
        sent = False
        for stream, cfg in self.arbitration.primaries():
            if cfg is None or cfg.in_scope(dl.digest_id):
                stream.send(msg)
                sent = True
        if sent:
            self.stats["digests"] += 1
        return sent

    def _on_primary_change(self, role: str) -> None:
        # The new primary has seen none of the cached digest data (spec allows emptying).
        self.digests.clear_cache()


def _pack_header(info: p4info_pb2.ControllerPacketMetadata,
                 given: Iterable[p4runtime_pb2.PacketMetadata]) -> bytes:
    """The packet_out header bytes: fields in P4Info order, MSB first; unset fields are 0."""
    widths = {m.id: m.bitwidth for m in info.metadata}
    values: dict[int, int] = {}
    for md in given:
        w = widths.get(md.metadata_id)
        if w is None:
            raise invalid(f"packet_out has no metadata id {md.metadata_id}")
        values[md.metadata_id] = decode_uint(md.value, w, f"packet_out metadata {md.metadata_id}")
    total = 0
    bits = 0
    for m in info.metadata:
        total = (total << m.bitwidth) | values.get(m.id, 0)
        bits += m.bitwidth
    pad = (-bits) % 8
    return (total << pad).to_bytes((bits + pad) // 8, "big")


def serve(device: Device, address: str) -> tuple[P4RuntimeServer, int]:
    """Start a server for `device` on `address`; returns it and the bound port."""
    srv = P4RuntimeServer(device)
    port = srv.start(address)
    return srv, port
