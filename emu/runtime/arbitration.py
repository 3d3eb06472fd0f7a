"""Client arbitration (P4Runtime spec, "Client Arbitration and Controller Replication").

Per role, the connected StreamChannel with the highest election_id is the
primary, provided its id is not lower than the highest primary id seen so far
for that role (so a primary that went away is not silently replaced by a
lower-ranked backup). Every arbitration change is announced to all streams of
the role with a MasterArbitrationUpdate: status OK to the primary,
ALREADY_EXISTS to backups while a primary exists, NOT_FOUND to all when there
is none; `election_id` is the primary's (or the highest seen).

Role configs (roles.py): the config of a role is the one its primary sent last
(a backup's is checked, not adopted); a change by the primary is announced to
every stream of the role, and notifications carry it. A stream's second update
naming another role is FAILED_PRECONDITION (spec, "Rules for Handling
MasterArbitrationUpdate Messages"). A role is known once a stream named it;
the default role "" always is.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from google.protobuf import any_pb2
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .errors import failed_precondition, invalid
from .roles import RoleConfig

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


@dataclass(frozen=True)
class _RoleConfigState:
    parsed: RoleConfig
    raw: any_pb2.Any


class Arbitration:
    def __init__(self, device_id: int, *,
                 on_primary_change: Callable[[str], None] | None = None) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._streams: dict[str, list[Stream]] = {}
        self._primary: dict[str, Stream | None] = {}
        self._highest: dict[str, int] = {}
        self._configs: dict[str, _RoleConfigState] = {}
        self._on_primary_change = on_primary_change

    def update(self, stream: Stream, role: str, election_id: int | None,
               config: any_pb2.Any | None = None) -> None:
        """Handle a MasterArbitrationUpdate: INVALID_ARGUMENT for a duplicate election id
        or a bad role config, FAILED_PRECONDITION for a role change on a live stream."""
        eid = -1 if election_id is None else election_id
        parsed = RoleConfig.from_any(config) if config is not None else None
        with self._lock:
            if stream.election_id is not None and stream.role != role:
                raise failed_precondition("a stream cannot change its role; open a new one")
            peers = self._streams.setdefault(role, [])
            for s in peers:
                if s is not stream and s.election_id == eid and eid >= 0:
                    raise invalid(f"election_id {eid} is already used by another client "
                                  f"of role {role!r}")
            if parsed is not None:
                for other, st in self._configs.items():
                    theirs = st.parsed.exclusive_p4_ids | st.parsed.shared_p4_ids
                    clash = ((parsed.exclusive_p4_ids & theirs)
                             | (parsed.shared_p4_ids & st.parsed.exclusive_p4_ids))
                    if other != role and clash:
                        raise invalid(f"role {role!r} and role {other!r} both list P4 ids "
                                      f"{sorted(clash)}, exclusively for one of them")
            if stream not in peers:
                peers.append(stream)
            stream.role = role
            stream.election_id = eid
            changed = self._elect(role)
            if self._primary.get(role) is stream:
                old = self._configs.get(role)
                if parsed is None:
                    self._configs.pop(role, None)
                else:
                    assert config is not None
                    self._configs[role] = _RoleConfigState(parsed, config)
                changed = changed or (old.raw if old else None) != config
            targets = peers if changed else [stream]
            msgs = [(s, self._message(role, s)) for s in targets]
        for s, m in msgs:
            s.send(m)
        if changed and self._on_primary_change is not None:
            self._on_primary_change(role)

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
        if changed and self._on_primary_change is not None:
            self._on_primary_change(stream.role)

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
        cfg = self._configs.get(role)
        if cfg is not None:
            a.role.config.CopyFrom(cfg.raw)
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

    def primaries(self) -> list[tuple[Stream, RoleConfig | None]]:
        """Every role's primary with its role config (None: full pipeline access)."""
        with self._lock:
            out = []
            for role, p in self._primary.items():
                if p is not None:
                    cfg = self._configs.get(role)
                    out.append((p, cfg.parsed if cfg else None))
            return out

    def known_role(self, role: str) -> bool:
        with self._lock:
            return role == "" or role in self._streams

    def config(self, role: str) -> RoleConfig | None:
        with self._lock:
            cfg = self._configs.get(role)
            return cfg.parsed if cfg else None

    def exclusive_owner(self, p4_id: int) -> str | None:
        """The role that claims `p4_id` exclusively, if any."""
        with self._lock:
            for role, cfg in self._configs.items():
                if p4_id in cfg.parsed.exclusive_p4_ids:
                    return role
            return None

    def streams(self) -> list[Stream]:
        with self._lock:
            return [s for peers in self._streams.values() for s in peers]
