"""Client arbitration (P4Runtime spec, "Client Arbitration and Controller Replication").

Per role, the connected StreamChannel with the highest election_id is the
primary, provided its id is not lower than the highest primary id seen so far
for that role (so a primary that went away is not silently replaced by a
lower-ranked backup). Every arbitration change is announced to all streams of
the role with a MasterArbitrationUpdate: status OK to the primary,
ALREADY_EXISTS to backups while a primary exists, NOT_FOUND to all when there
is none; `election_id` is the primary's (or the highest seen).
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .errors import invalid

__all__ = ["Arbitration", "Stream", "election_int"]


def election_int(eid: p4runtime_pb2.Uint128) -> int:
    return (eid.high << 64) | eid.low


@dataclass(eq=False)
class Stream:
    """One StreamChannel: its arbitration state and its outgoing message queue."""

    out: queue.Queue[p4runtime_pb2.StreamMessageResponse | None] = field(
        default_factory=lambda: queue.Queue(maxsize=4096))
    election_id: int | None = None  # None until arbitration; -1: sent without an id
    role: str = ""
    dropped: int = 0  # messages not queued because the client does not read

    def send(self, msg: p4runtime_pb2.StreamMessageResponse) -> None:
        try:
            self.out.put_nowait(msg)
        except queue.Full:
            self.dropped += 1

    def close(self) -> None:
        try:
            self.out.put_nowait(None)
        except queue.Full:
            # Make room for the end marker: a client that does not read loses messages anyway.
            try:
                self.out.get_nowait()
            except queue.Empty:
                pass
            self.out.put_nowait(None)


class Arbitration:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._streams: dict[str, list[Stream]] = {}
        self._primary: dict[str, Stream | None] = {}
        self._highest: dict[str, int] = {}

    def update(self, stream: Stream, role: str, election_id: int | None) -> None:
        """Handle a MasterArbitrationUpdate; INVALID_ARGUMENT for a duplicate election id."""
        eid = -1 if election_id is None else election_id
        with self._lock:
            if stream.election_id is not None and stream.role != role:
                raise invalid("a stream cannot change its role")
            peers = self._streams.setdefault(role, [])
            for s in peers:
                if s is not stream and s.election_id == eid and eid >= 0:
                    raise invalid(f"election_id {eid} is already used by another client "
                                  f"of role {role!r}")
            if stream not in peers:
                peers.append(stream)
            stream.role = role
            stream.election_id = eid
            changed = self._elect(role)
            targets = peers if changed else [stream]
            msgs = [(s, self._message(role, s)) for s in targets]
        for s, m in msgs:
            s.send(m)

    def remove(self, stream: Stream) -> None:
        with self._lock:
            peers = self._streams.get(stream.role, [])
            if stream not in peers:
                return
            peers.remove(stream)
            changed = self._elect(stream.role)
            msgs = [(s, self._message(stream.role, s)) for s in peers] if changed else []
        for s, m in msgs:
            s.send(m)

    def _elect(self, role: str) -> bool:
        peers = self._streams.get(role, [])
        best = max(peers, key=lambda s: s.election_id or -1, default=None)
        new: Stream | None = None
        if best is not None and best.election_id is not None and best.election_id >= 0 \
                and best.election_id >= self._highest.get(role, 0):
            new = best
            self._highest[role] = best.election_id
        old = self._primary.get(role)
        self._primary[role] = new
        return new is not old

    def _message(self, role: str, s: Stream) -> p4runtime_pb2.StreamMessageResponse:
        primary = self._primary.get(role)
        eid = primary.election_id if primary is not None else self._highest.get(role, 0)
        msg = p4runtime_pb2.StreamMessageResponse()
        a = msg.arbitration
        a.device_id = self.device_id
        if role:
            a.role.name = role
        if eid is not None and eid > 0:
            a.election_id.high = eid >> 64
            a.election_id.low = eid & ((1 << 64) - 1)
        if primary is s:
            a.status.code = code_pb2.OK
            a.status.message = "Is primary"
        elif primary is not None:
            a.status.code = code_pb2.ALREADY_EXISTS
            a.status.message = "Is backup; a primary exists"
        else:
            a.status.code = code_pb2.NOT_FOUND
            a.status.message = "Is backup; no primary"
        return msg

    def is_primary(self, role: str, election_id: int) -> bool:
        with self._lock:
            p = self._primary.get(role)
            return p is not None and p.election_id == election_id

    def primary(self, role: str = "") -> Stream | None:
        with self._lock:
            return self._primary.get(role)

    def streams(self) -> list[Stream]:
        with self._lock:
            return [s for peers in self._streams.values() for s in peers]
