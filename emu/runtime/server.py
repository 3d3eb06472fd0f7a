"""P4Runtime server (p4.v1.P4Runtime over gRPC) for the embedded v1model target.

Serves one `Device` (see device.py). This module is the RPC layer: device, role and
primary checks, then the work is done by entities/ (one module per entity kind, each
with its write and read), pipeline_config.py (SetForwardingPipelineConfig's actions)
and stream.py (StreamChannel). Semantics follow the P4Runtime spec as
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

import errno
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .arbitration import Arbitration, election_int
from .atomicity import write_batch
from .device import Device, check_device_id
from .digests import DigestManager
from .entities import apply_update, read_entity
from .errors import (
    STATUS_DETAILS_KEY,
    P4RTError,
    as_p4rt_error,
    batch_status,
    invalid,
    is_client_error,
    not_found,
    permission_denied,
)
from .malformed import MalformedRequests
from .pipeline_config import PipelineConfigs
from .roles import RoleConfig, entity_p4_id
from .stream import StreamChannels

log = logging.getLogger("emu.runtime.server")

__all__ = ["MAX_STREAMS", "P4RuntimeServer"]

WR = p4runtime_pb2.WriteRequest
GFPC = p4runtime_pb2.GetForwardingPipelineConfigRequest
API_VERSION = "1.4.1"
# gRPC's sync server runs each StreamChannel on one of its worker threads for the
# stream's whole life: streams beyond MAX_STREAMS are refused (RESOURCE_EXHAUSTED) and
# the pool has UNARY_WORKERS more threads, so unary RPCs are never starved by streams.
MAX_STREAMS = 16
UNARY_WORKERS = 8
READ_CHUNK = 1000  # entities per ReadResponse message
IDLE_POLL_S = 0.1  # how often idle timeouts are checked


class P4RuntimeServer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: Device) -> None:
        self.device = device
        self.arbitration = Arbitration(device.device_id,
                                       on_primary_change=self._on_primary_change)
        self.digests = DigestManager(self._send_digest_list)
        self.configs = PipelineConfigs(device, self.digests)
        self._config_lock = threading.Lock()  # serialises pipeline changes and writes
        self._grpc: grpc.Server | None = None
        self._stop = threading.Event()
        self._streams = 0  # live StreamChannel handlers (each holds a worker thread)
        self._streams_lock = threading.Lock()
        self._idle_thread: threading.Thread | None = None
        self.stats = {"packet_in": 0, "packet_in_dropped": 0, "packet_out": 0, "digests": 0,
                      "idle_notifications": 0, "streams_refused": 0}
        self.streams = StreamChannels(device, self.arbitration, self.digests, self.configs,
                                      self.stats)
        device.set_packet_in_sink(self.streams.on_packet_in)
        device.set_digest_sink(self.digests.learn)

    # ------------------------------------------------------------------ lifecycle

    def start(self, address: str) -> int:
        """Listen on `host:port` or `unix:PATH`; returns the bound TCP port (0 for unix)."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=MAX_STREAMS + UNARY_WORKERS,
                                                        thread_name_prefix="p4rt"),
                             interceptors=[MalformedRequests(self.stats)],
                             options=[("grpc.max_receive_message_length", 256 << 20),
                                      ("grpc.max_send_message_length", 256 << 20),
                                      ("grpc.so_reuseport", 0)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, server)
        _check_port(address)
        try:
            port = server.add_insecure_port(address)
        except RuntimeError as exc:  # grpc >= 1.5x raises where older ones returned 0
            raise _bind_error(address, str(exc)) from None
        if port == 0 and not address.startswith("unix:"):
            raise _bind_error(address, "")
        server.start()
        self._grpc = server
        self.digests.start()
        self._idle_thread = threading.Thread(target=self._idle_loop, name="p4rt-idle",
                                             daemon=True)
        self._idle_thread.start()
        return 0 if address.startswith("unix:") else port

    def stop(self, grace: float = 0.5) -> None:
        self._stop.set()
        self.digests.stop()
        for s in self.arbitration.streams():
            s.close()
        if self._grpc is not None:
            self._grpc.stop(grace).wait(grace + 1)
            self._grpc = None

    def load_initial(self, cfg: p4runtime_pb2.ForwardingPipelineConfig) -> None:
        """Commit a pipeline given on the command line (no client, no arbitration)."""
        with self._config_lock:
            self.configs.load_initial(cfg)

    def _idle_loop(self) -> None:
        while not self._stop.wait(IDLE_POLL_S):
            try:
                self.streams.notify_idle()
            except Exception:  # a bug here must not end the notifications for good
                log.exception("idle timeout check failed")

    # ------------------------------------------------------------------ helpers

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

    @staticmethod
    def _abort(context: grpc.ServicerContext, err: P4RTError) -> None:
        context.abort(err.code, err.message)

    @classmethod
    def _abort_unexpected(cls, context: grpc.ServicerContext, exc: Exception,
                          where: str) -> None:
        """Abort with the code of an exception that is not a P4RTError. The engines'
        errors (a NOT_FOUND entry, ...) are the client's mistake, not worth a traceback;
        anything else may be a bug and is logged with it."""
        if not is_client_error(exc):
            log.exception("internal error%s", where)
        cls._abort(context, as_p4rt_error(exc))

    def _guard(self, context: grpc.ServicerContext, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except P4RTError as e:
            self._abort(context, e)
        except Exception as e:  # never let a bug take the server down
            self._abort_unexpected(context, e, "")

    # ------------------------------------------------------------------ Capabilities

    def Capabilities(self, request: p4runtime_pb2.CapabilitiesRequest,
                     context: grpc.ServicerContext) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ------------------------------------------------------------------ pipeline config

    def SetForwardingPipelineConfig(self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest, context: grpc.ServicerContext
                                    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        def run() -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
            check_device_id(self.device, request.device_id)
            self._check_primary(request.role, request.election_id,
                                request.HasField("election_id"))
            cfg = self.arbitration.config(request.role)
            if cfg is not None and not cfg.can_push_pipeline:
                raise permission_denied(f"role {request.role!r} may not set the pipeline "
                                        "(its role config has can_push_pipeline false)")
            with self._config_lock:
                self.configs.apply(request.action, request.config)
            return p4runtime_pb2.SetForwardingPipelineConfigResponse()
        return self._guard(context, run)  # type: ignore[no-any-return]

    def GetForwardingPipelineConfig(self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest, context: grpc.ServicerContext
                                    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        def run() -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
            check_device_id(self.device, request.device_id)
            resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
            p = self.configs.committed
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
            check_device_id(self.device, request.device_id)
            self._check_primary(request.role, request.election_id,
                                request.HasField("election_id"))
            atomicity = request.atomicity
            if atomicity not in (WR.CONTINUE_ON_ERROR, WR.ROLLBACK_ON_ERROR,
                                 WR.DATAPLANE_ATOMIC):
                raise invalid(f"unknown atomicity {atomicity}")
            role = request.role
            cfg = self.arbitration.config(role)
            with self._config_lock:
                ctx = self.configs.context(self.configs.addressed())
                updates = list(request.updates)
                denied = [self._role_denies(role, cfg, u) for u in updates]
                # DATAPLANE_ATOMIC: the whole batch, rollback included, in one call (the
                # switch loop runs no packet in between); the other modes in chunks,
                # forwarding in between (atomicity.py).
                results = write_batch(
                    updates, denied, atomicity, lambda u: apply_update(ctx, u),
                    lambda e: read_entity(ctx, e), run=self.device.call)
        except P4RTError as e:
            self._abort(context, e)
        except Exception as e:
            self._abort_unexpected(context, e, " in Write")
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

    # ------------------------------------------------------------------ Read

    def Read(self, request: p4runtime_pb2.ReadRequest,
             context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.ReadResponse]:
        try:
            check_device_id(self.device, request.device_id)
            ctx = self.configs.context(self.configs.addressed())
            entities: list[p4runtime_pb2.Entity] = self.device.call(
                lambda: [x for ent in request.entities for x in read_entity(ctx, ent)])
        except P4RTError as e:
            self._abort(context, e)
        except Exception as e:
            self._abort_unexpected(context, e, " in Read")
        for i in range(0, max(1, len(entities)), READ_CHUNK):
            yield p4runtime_pb2.ReadResponse(entities=entities[i:i + READ_CHUNK])

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
            yield from self.streams.serve(request_iterator, context)
        finally:
            with self._streams_lock:
                self._streams -= 1

    def _send_digest_list(self, dl: p4runtime_pb2.DigestList) -> bool:
        return self.streams.send_digest_list(dl)

    def _on_primary_change(self, role: str) -> None:
        # The new primary has seen none of the cached digest data (spec allows emptying).
        self.digests.clear_cache()


def _check_port(address: str) -> None:
    """gRPC takes a TCP port past 65535 modulo 2^16 (99999 listened on 34463): refuse it."""
    if address.startswith("unix:"):
        return
    port = address.rpartition(":")[2]
    if port.isdigit() and int(port) > 0xFFFF:
        raise OSError(f"cannot listen on {address}: a TCP port is 0..65535")


def _bind_error(address: str, detail: str) -> OSError:
    """Why gRPC could not listen on `address`: EADDRINUSE when a plain bind to it fails
    that way (the launcher then starts the switch on other ports), else gRPC's reason."""
    host, _, port = address.rpartition(":")
    if not address.startswith("unix:") and port.isdigit():
        try:
            family, kind, _, _, sockaddr = socket.getaddrinfo(host.strip("[]"), int(port),
                                                              type=socket.SOCK_STREAM)[0]
            with socket.socket(family, kind) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC's
                probe.bind(sockaddr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return OSError(errno.EADDRINUSE, f"address already in use: {address}")
    return OSError(f"cannot listen on {address}" + (f": {detail.splitlines()[0]}" if detail else ""))
