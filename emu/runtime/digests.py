"""Digest lists (P4Runtime spec, "DigestEntry" and "Digest Messages").

A digest is only streamed once the controller has configured it with a
DigestEntry (INSERT enables it, MODIFY changes the config, DELETE disables it
and drops what is buffered). Per configured digest the server keeps:

- a buffer of *distinct* digest messages (data equal as P4 values is a
  duplicate), sent as one DigestList once `max_list_size` messages are in it or
  `max_timeout_ns` has passed since the first one went into the empty buffer;
  `max_timeout_ns` 0 sends every message at once, `max_list_size` 0 means no
  size limit (the timeout alone decides);
- the spec's cache: the messages of every sent list that is neither acked
  (DigestListAck with the same digest_id and list_id) nor older than
  `ack_timeout_ns`. A message in the cache or already in the buffer is
  suppressed; `ack_timeout_ns` 0 keeps no cache at all.

Choices where the spec leaves latitude, following PI (BMv2's server) unless noted:

- list ids count from 1 per digest and never repeat while the pipeline lives.
- INSERT of a configured digest is ALREADY_EXISTS, MODIFY/DELETE of an
  unconfigured one NOT_FOUND, an unknown digest id NOT_FOUND, negative values
  INVALID_ARGUMENT. A read of one unconfigured digest is NOT_FOUND (as PI);
  unlike PI, digest_id 0 reads every configured digest.
- Timeouts are enforced to the timer's precision (one thread waiting for the
  next deadline) instead of PI's two-sweep approximation and 100 ms floor.
- With no primary to send to, a list is dropped and not cached, so the same
  data is reported again once a primary exists; a primary change empties the
  cache (the spec allows it: the new primary has seen none of it).
- An ack with an unknown digest_id is a StreamError INVALID_ARGUMENT (spec,
  "Stream Error Reporting"); an unknown list_id is ignored (already expired).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from .errors import already_exists, invalid, not_found
from .translate import encode_uint

__all__ = ["DigestConfig", "DigestManager", "digest_encoder"]

U = p4runtime_pb2.Update
Sample = tuple[int, ...]
Encoder = Callable[[Sample, p4data_pb2.P4Data], None]
SendFn = Callable[[p4runtime_pb2.DigestList], bool]


@dataclass(frozen=True)
class DigestConfig:
    """DigestEntry.Config, validated."""

    max_timeout_ns: int = 0
    max_list_size: int = 0
    ack_timeout_ns: int = 0

    @classmethod
    def from_proto(cls, cfg: p4runtime_pb2.DigestEntry.Config) -> DigestConfig:
        if min(cfg.max_timeout_ns, cfg.max_list_size, cfg.ack_timeout_ns) < 0:
            raise invalid("DigestEntry config values must not be negative")
        return cls(cfg.max_timeout_ns, cfg.max_list_size, cfg.ack_timeout_ns)

    def to_proto(self, out: p4runtime_pb2.DigestEntry.Config) -> None:
        out.max_timeout_ns = self.max_timeout_ns
        out.max_list_size = self.max_list_size
        out.ack_timeout_ns = self.ack_timeout_ns


def digest_encoder(info: p4info_pb2.Digest) -> Encoder:
    """How one digest message becomes P4Data, after the digest's type_spec."""
    kind = info.type_spec.WhichOneof("type_spec")

    def as_bitstring(values: Sample, out: p4data_pb2.P4Data) -> None:
        out.bitstring = encode_uint(values[0] if values else 0)

    def as_tuple(values: Sample, out: p4data_pb2.P4Data) -> None:
        for v in values:
            out.tuple.members.add(bitstring=encode_uint(v))

    def as_struct(values: Sample, out: p4data_pb2.P4Data) -> None:
        for v in values:
            out.struct.members.add(bitstring=encode_uint(v))

    if kind == "bitstring":
        return as_bitstring
    if kind == "tuple":
        return as_tuple
    return as_struct


@dataclass
class _SentList:
    samples: list[Sample]
    sent_ns: int


@dataclass
class _Digest:
    digest_id: int
    encode: Encoder
    config: DigestConfig | None = None
    buffer: dict[Sample, None] = field(default_factory=dict)  # ordered set
    first_ns: int = 0  # when the first message entered the empty buffer
    cache: set[Sample] = field(default_factory=set)
    unacked: dict[int, _SentList] = field(default_factory=dict)
    next_list_id: int = 1

    def drop_state(self) -> None:
        self.buffer.clear()
        self.cache.clear()
        self.unacked.clear()


class DigestManager:
    """Buffers, batches, deduplicates and times out digest lists for one device.

    `send(DigestList) -> bool` delivers a list to the primary client(s) and says
    whether anyone took it. Thread-safe: messages come from the data path, acks
    from streams, configs from Write, timeouts from the manager's own thread.
    """

    def __init__(self, send: SendFn, *, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._send = send
        self._clock = clock
        self._cond = threading.Condition()
        self._digests: dict[int, _Digest] = {}
        self._by_name: dict[str, int] = {}
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.lists_sent = 0
        self.lists_dropped = 0  # no primary to take them
        self.suppressed = 0  # duplicates not sent

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="p4rt-digests", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def set_pipeline(self, digests: Iterable[p4info_pb2.Digest],
                     keep: dict[int, DigestConfig] | None = None) -> None:
        """A new pipeline: its digests, unconfigured except those in `keep` (new ids)."""
        with self._cond:
            self._digests = {d.preamble.id: _Digest(d.preamble.id, digest_encoder(d))
                             for d in digests}
            self._by_name = {d.preamble.name: d.preamble.id for d in digests}
            for did, cfg in (keep or {}).items():
                self._digests[did].config = cfg
            self._cond.notify_all()

    # -- DigestEntry ------------------------------------------------------------

    def write(self, typ: int, entry: p4runtime_pb2.DigestEntry) -> None:
        with self._cond:
            d = self._digests.get(entry.digest_id)
            if d is None:
                raise not_found(f"digest id {entry.digest_id} not in P4Info")
            if typ == U.INSERT:
                if d.config is not None:
                    raise already_exists(f"digest {entry.digest_id} is already configured")
                d.config = DigestConfig.from_proto(entry.config)
            elif typ == U.MODIFY:
                if d.config is None:
                    raise not_found(f"digest {entry.digest_id} is not configured")
                d.config = DigestConfig.from_proto(entry.config)
                if d.config.ack_timeout_ns == 0:
                    d.cache.clear()  # "the cache must always be an empty set"
                    d.unacked.clear()
            elif typ == U.DELETE:
                if d.config is None:
                    raise not_found(f"digest {entry.digest_id} is not configured")
                d.config = None
                d.drop_state()
            else:
                raise invalid("update type must be INSERT, MODIFY or DELETE")
            self._cond.notify_all()  # deadlines may have moved

    def read(self, digest_id: int) -> list[p4runtime_pb2.DigestEntry]:
        with self._cond:
            if digest_id == 0:
                ds = [d for d in self._digests.values() if d.config is not None]
            else:
                d = self._digests.get(digest_id)
                if d is None:
                    raise not_found(f"digest id {digest_id} not in P4Info")
                if d.config is None:
                    raise not_found(f"digest {digest_id} is not configured")
                ds = [d]
            out = []
            for d in sorted(ds, key=lambda x: x.digest_id):
                assert d.config is not None
                e = p4runtime_pb2.DigestEntry(digest_id=d.digest_id)
                d.config.to_proto(e.config)
                out.append(e)
            return out

    def configs(self) -> dict[int, DigestConfig]:
        with self._cond:
            return {i: d.config for i, d in self._digests.items() if d.config is not None}

    # -- stream -----------------------------------------------------------------

    def learn(self, name: str, values: Sample) -> None:
        """One digest message from the data plane."""
        with self._cond:
            did = self._by_name.get(name)
            d = self._digests.get(did) if did is not None else None
            if d is None or d.config is None:
                return
            if values in d.buffer or values in d.cache:
                self.suppressed += 1
                return
            if not d.buffer:
                d.first_ns = self._clock()
            d.buffer[values] = None
            cfg = d.config
            if cfg.max_timeout_ns == 0 or (cfg.max_list_size
                                           and len(d.buffer) >= cfg.max_list_size):
                self._flush(d)
            elif len(d.buffer) == 1:
                self._cond.notify_all()  # a new deadline for the timer thread

    def ack(self, digest_id: int, list_id: int) -> None:
        """DigestListAck: INVALID_ARGUMENT for a digest the P4Info does not have."""
        with self._cond:
            d = self._digests.get(digest_id)
            if d is None:
                raise invalid(f"DigestListAck for digest id {digest_id}, not in P4Info")
            sent = d.unacked.pop(list_id, None)
            if sent is not None:
                d.cache.difference_update(sent.samples)

    def clear_cache(self) -> None:
        """The primary changed: what the old one saw may be reported again."""
        with self._cond:
            for d in self._digests.values():
                d.cache.clear()
                d.unacked.clear()

    # -- timing -------------------------------------------------------------------

    def poll(self) -> int | None:
        """Send due lists and expire old cache entries; the next deadline (ns) or None."""
        with self._cond:
            return self._poll()

    def _poll(self) -> int | None:
        now = self._clock()
        nxt: int | None = None
        for d in self._digests.values():
            cfg = d.config
            if cfg is None:
                continue
            if d.buffer:
                due = d.first_ns + cfg.max_timeout_ns
                if now >= due:
                    self._flush(d)
                else:
                    nxt = due if nxt is None else min(nxt, due)
            if cfg.ack_timeout_ns and d.unacked:
                for lid, sent in list(d.unacked.items()):
                    due = sent.sent_ns + cfg.ack_timeout_ns
                    if now >= due:
                        del d.unacked[lid]
                        d.cache.difference_update(sent.samples)
                    else:
                        nxt = due if nxt is None else min(nxt, due)
        return nxt

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                nxt = self._poll()
                wait = None if nxt is None else max(0.0, (nxt - self._clock()) / 1e9)
                self._cond.wait(wait)

    def _flush(self, d: _Digest) -> None:
        samples = list(d.buffer)
        d.buffer.clear()
        if not samples or d.config is None:
            return
        msg = p4runtime_pb2.DigestList(digest_id=d.digest_id, list_id=d.next_list_id,
                                       timestamp=time.time_ns())
        d.next_list_id += 1
        for s in samples:
            d.encode(s, msg.data.add())
        if not self._send(msg):
            self.lists_dropped += 1
            return
        self.lists_sent += 1
        if d.config.ack_timeout_ns:
            d.cache.update(samples)
            d.unacked[msg.list_id] = _SentList(samples, self._clock())
            self._cond.notify_all()

