"""StreamChannel: arbitration, PacketOut / PacketIn, digest lists and acks, idle-timeout
notifications, and stream errors.

The spec's order: the first message of a stream is a MasterArbitrationUpdate (else the
stream ends with FAILED_PRECONDITION); PacketOut only from a primary, encoded into the
@controller_header("packet_out") header and injected on the CPU port; frames the
pipeline sends to the CPU port become PacketIn (header decoded into metadata) for
every primary whose role takes them; digest lists go to the primaries whose role
covers the digest.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .arbitration import Arbitration, Stream, election_int
from .device import Device, check_device_id
from .digests import DigestManager
from .errors import P4RTError, as_p4rt_error, failed_precondition, invalid, permission_denied
from .pipeline_config import PipelineConfigs
from .translate import decode_uint, encode_uint

log = logging.getLogger("emu.runtime.server")

__all__ = ["StreamChannels", "pack_header"]


class StreamChannels:
    """The streams of one server and what flows over them."""

    def __init__(self, device: Device, arbitration: Arbitration, digests: DigestManager,
                 configs: PipelineConfigs, stats: dict[str, int]) -> None:
        self.device = device
        self.arbitration = arbitration
        self.digests = digests
        self.configs = configs
        self.stats = stats

    def serve(self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],
              context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        """One StreamChannel: requests read on a thread of their own, responses yielded."""
        stream = Stream()
        context.add_callback(stream.close)

        def reader() -> None:
            try:
                for req in request_iterator:
                    if not self._request(stream, req):
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

    def _request(self, stream: Stream, req: p4runtime_pb2.StreamMessageRequest) -> bool:
        which = req.WhichOneof("update")
        if which == "arbitration":
            a = req.arbitration
            try:
                if stream.election_id is not None and a.device_id != self.device.device_id:
                    # spec: a live stream naming another device is FAILED_PRECONDITION
                    raise failed_precondition("a stream cannot change its device_id")
                check_device_id(self.device, a.device_id)
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
            self._error(stream, invalid(f"unsupported stream message {which}"))
        return True

    def _error(self, stream: Stream, err: P4RTError,
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
            self._error(stream, e, ack=ack)

    def _packet_out(self, stream: Stream, pkt: p4runtime_pb2.PacketOut) -> None:
        try:
            if self.arbitration.primary(stream.role) is not stream:
                raise permission_denied("only the primary client may send PacketOut")
            pipe = self.configs.committed  # the forwarding one, not a VERIFY_AND_SAVEd one
            if pipe is None:
                raise failed_precondition("no forwarding pipeline config set")
            header = b""
            if pipe.index.packet_out is not None:
                header = pack_header(pipe.index.packet_out, pkt.metadata)
            elif len(pkt.metadata):
                raise invalid("the program has no @controller_header(\"packet_out\")")
            self.device.packet_out(header + pkt.payload)
            self.stats["packet_out"] += 1
        except Exception as e:
            self._error(stream, as_p4rt_error(e), pkt)

    def on_packet_in(self, frame: bytes) -> None:
        """Called by the device (data-path thread) for each frame sent to the CPU port."""
        pipe = self.configs.committed
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

    def send_digest_list(self, dl: p4runtime_pb2.DigestList) -> bool:
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

    def notify_idle(self) -> int:
        """Send one IdleTimeoutNotification for the entries that idled out; returns their count."""
        pipe = self.configs.committed
        if pipe is None or not pipe.timeout_tables:
            return 0
        primaries = self.arbitration.primaries()
        if not primaries:
            return 0

        def collect() -> list[p4runtime_pb2.TableEntry]:
            out = []
            for ti in pipe.timeout_tables:
                table = pipe.control.tables[ti.name]
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


def pack_header(info: p4info_pb2.ControllerPacketMetadata,
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
