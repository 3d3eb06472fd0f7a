"""The per-packet objects of the embedded v1model switch and the small helpers its
registry uses: output frames, digests, a packet's state through the pipeline, direct
meters, table match inputs, and the hash/counter/meter kind names of a program's
externs (emu.p4.target.switch builds the switch from them)."""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from emu.core.clock import Clock
from emu.p4.tables import Lpm, Range, Ternary
from emu.p4.v1model.hashes import hash_function
from emu.p4.v1model.stateful import Meter

from . import runtime


class OutputPacket(NamedTuple):
    """A packet leaving the switch (a tuple: cheap to create on the hot path)."""

    port: int
    data: bytes
    instance_type: int = 0
    time_ns: int = 0


@dataclass(frozen=True, slots=True)
class Digest:
    name: str
    receiver: int
    values: tuple[int, ...]
    time_ns: int = 0


class PacketState:
    """Per-packet state beside the P4-visible structs (requests made by externs).

    Defaults live on the class so that creating one per packet is cheap."""

    hdr: Any = None
    meta: Any = None
    sm: Any = None
    payload = b""
    base_len = 0
    clone: tuple[str, int, str | None] | None = None
    resubmit: tuple[str | None] | None = None
    recirc: tuple[str | None] | None = None
    trunc = 0
    depth = 0
    loop_budget = runtime.LOOP_LIMIT  # generated loops count it down (instance on first use)
    digests: tuple[tuple[str, int, tuple[int, ...]], ...] = ()  # generated code appends

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.length = len(data)
        # The hot path reads these for every packet: as instance attributes the
        # interpreter's specialised loads apply (class attributes take a slow path).
        self.clone = None
        self.digests = ()
        self.resubmit = None
        self.recirc = None
        self.trunc = 0
        self.depth = 0


class DirectMeter:
    """A direct_meter: one Meter per table entry, created on first use; `color` is the
    result of the last execution, read by direct_meter.read()."""

    def __init__(self, name: str, kind: str, clock: Clock) -> None:
        self.name = name
        self.kind = kind
        self.clock = clock
        self.color = 0

    def execute_entry(self, entry: Any, nbytes: int) -> int:
        m = entry.meter_state
        if m is None:
            m = entry.meter_state = Meter(self.kind, self.clock)
            if entry.meter_config is not None:
                m.set_rates(entry.meter_config)
        return m.execute(nbytes)


def _match_input(m: Any) -> Any:
    if m is None or isinstance(m, int):
        return m
    kind = m[0]
    if kind == "ternary":
        return Ternary(m[1], m[2])
    if kind == "lpm":
        return Lpm(m[1], m[2])
    if kind == "range":
        return Range(m[1], m[2])
    raise ValueError(f"bad match {m!r}")


def _hash_fn(algo: str, rng: random.Random) -> Callable[[bytes], int]:
    # crc16: the two-bytes-per-step version in runtime (same values, faster); every
    # other deterministic algorithm is memoised per input (packets of a flow hash alike),
    # but crc32, which zlib computes faster than a Python-level memo lookup.
    if algo == "random":
        return hash_function(algo, rng=rng)
    if algo == "crc32":
        return zlib.crc32
    return runtime.cached(runtime.crc16 if algo == "crc16" else hash_function(algo))


def _ckind(t: str) -> str:
    t = t.rsplit(".", 1)[-1]
    return t if t in ("packets", "bytes", "packets_and_bytes") else "packets"


def _mkind(t: str) -> str:
    t = t.rsplit(".", 1)[-1]
    return t if t in ("packets", "bytes") else "packets"


def _algo(a: str) -> str:
    return a.rsplit(".", 1)[-1]
