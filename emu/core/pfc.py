"""IEEE 802.1Qbb priority flow control (PFC) and 802.3x PAUSE: the MAC-control frame
codec, the per-port receive-side pause state, the headroom a link needs, and the settings.

This is MAC-layer code shared by the switch traffic manager (emu.p4.v1model.buffer), the
host NIC (emu.roce.pfc) and the switch daemon. Nothing here is in the P4 program: on real
switches flow control lives in the MAC and the buffer manager, not in the pipeline.

Frame (all big-endian, padded with zeros to the 60-byte minimum, FCS not carried):
    dst 01:80:C2:00:00:01 | src | EtherType 0x8808 | opcode (0x0101 PFC, 0x0001 PAUSE)
    PFC:   class-enable vector (16 bits, bit n = priority n; upper 8 reserved, must be 0)
           then eight 16-bit pause times, priority 0 first
    PAUSE: one 16-bit pause time (applies to every priority)
A pause time is in quanta of 512 bit times of the link; 0 means "resume now". A new
frame reloads a priority's timer (it does not add to it); the time of a class whose
enable bit is clear is ignored. A receiver acts only on the priorities it has PFC
enabled for (its lossless ones, as `mlnx_qos --pfc` or SONiC's pfc_enable set them): a
PFC frame naming another priority is counted and has no effect.

802.3x global PAUSE is honoured as "every priority paused" (configurable: `global_pause`
"honour" or "drop"; dropped ones are counted as `pause_global_dropped`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from .credit import CreditSettings
from .flowmode import WatchdogAction
from .wire import mac_bytes

__all__ = [
    "DEFAULT_QUANTA", "ETHERTYPE_MAC_CONTROL", "MAC_CONTROL_DST", "NUM_PRIORITIES", "OP_PAUSE",
    "OP_PFC", "FlowControl", "MacControl", "PauseState", "PfcThresholds", "WatchdogSettings",
    "headroom_bytes", "is_mac_control", "parse_mac_control", "pause_frame", "pfc_frame",
    "quanta_ns", "response_bits",
]

ETHERTYPE_MAC_CONTROL = 0x8808
MAC_CONTROL_DST = bytes.fromhex("0180c2000001")
OP_PAUSE = 0x0001
OP_PFC = 0x0101
NUM_PRIORITIES = 8
QUANTUM_BITS = 512
DEFAULT_QUANTA = 0xFFFF
MIN_FRAME = 60  # without FCS
PAUSE_FRAME_WIRE_BYTES = 64 + 20  # with FCS, preamble+SFD (8) and inter-frame gap (12)
_ETYPE = b"\x88\x08"
_PFC = struct.Struct("!HH8H")
_PAUSE = struct.Struct("!HH")


def _pad(frame: bytes) -> bytes:
    return frame + bytes(MIN_FRAME - len(frame)) if len(frame) < MIN_FRAME else frame


def pfc_frame(src_mac: bytes | str, quanta: Mapping[int, int]) -> bytes:
    """An 802.1Qbb frame pausing each priority in `quanta` for that many quanta (0 =
    resume); the other classes are not enabled in the vector."""
    times = [0] * NUM_PRIORITIES
    vector = 0
    for prio, q in quanta.items():
        if not 0 <= prio < NUM_PRIORITIES:
            raise ValueError(f"PFC priority must be 0..7, got {prio}")
        if not 0 <= q <= 0xFFFF:
            raise ValueError(f"pause quanta must be 0..65535, got {q}")
        vector |= 1 << prio
        times[prio] = q
    return _pad(MAC_CONTROL_DST + mac_bytes(src_mac) + _ETYPE + _PFC.pack(OP_PFC, vector, *times))


def pause_frame(src_mac: bytes | str, quanta: int) -> bytes:
    """An 802.3x (global) PAUSE frame."""
    if not 0 <= quanta <= 0xFFFF:
        raise ValueError(f"pause quanta must be 0..65535, got {quanta}")
    return _pad(MAC_CONTROL_DST + mac_bytes(src_mac) + _ETYPE + _PAUSE.pack(OP_PAUSE, quanta))


class MacControl(NamedTuple):
    """A decoded MAC-control frame: opcode, class-enable vector and eight pause times
    (an 802.3x PAUSE has every class enabled with the same time)."""

    opcode: int
    vector: int
    quanta: tuple[int, ...]


def is_mac_control(frame: bytes) -> bool:
    return frame[12:14] == _ETYPE


def parse_mac_control(frame: bytes) -> MacControl | str:
    """Decode a frame of EtherType 0x8808; a string names why it is malformed
    (`short`, `unknown_opcode`, `bad_class_vector`)."""
    if len(frame) < MIN_FRAME or frame[12:14] != _ETYPE:
        return "short" if len(frame) < MIN_FRAME else "not_mac_control"
    op = (frame[14] << 8) | frame[15]
    if op == OP_PFC:
        _op, vector, *times = _PFC.unpack_from(frame, 14)
        if vector >> NUM_PRIORITIES:
            return "bad_class_vector"  # the upper byte is reserved
        return MacControl(op, vector, tuple(times))
    if op == OP_PAUSE:
        q = _PAUSE.unpack_from(frame, 14)[1]
        return MacControl(op, 0xFF, (q,) * NUM_PRIORITIES)
    return "unknown_opcode"


def quanta_ns(quanta: int, rate_bps: float) -> int:
    """Duration of `quanta` pause quanta at `rate_bps` (the rate of the wire this process
    drives: with time dilation the link runs at modelled rate / dilation, so a quantum
    lasts dilation times longer, consistently with everything else on that link)."""
    return -(-quanta * QUANTUM_BITS * 1_000_000_000 // int(rate_bps))


# Upper bounds of a peer's response time (bit times from the end of a received PAUSE to
# the moment its transmitter stops, PHY/MAC/higher-layer delay together), as switch
# vendors use them in their headroom calculations, by link speed.
_RESPONSE_BITS = ((10e9, 30_720), (25e9, 40_960), (40e9, 60_416), (100e9, 201_728),
                  (400e9, 463_360))


def response_bits(rate_bps: float) -> int:
    """The response-time term for a link of `rate_bps` (the next listed speed up)."""
    for rate, bits in _RESPONSE_BITS:
        if rate_bps <= rate:
            return bits
    return _RESPONSE_BITS[-1][1]


def headroom_bytes(rate_bps: float, delay_ns: int, mtu: int, *,
                   response: int | None = None) -> int:
    """Headroom (bytes) a lossless priority needs so that nothing in flight after the
    XOFF crossing is lost:
      rate x 2 x one-way propagation delay (the PAUSE travels up while data still comes)
      + 2 maximum frames (one being sent upstream when the peer's PAUSE arrives, one
        delaying our PAUSE frame on the way out)
      + the PAUSE frame itself
      + the peer's response time (`response` bit times; default by speed, above).
    Rate and delay are those of the modelled link."""
    bits = rate_bps * 2 * delay_ns / 1e9
    bits += 2 * (mtu + 18 + 20) * 8  # Ethernet header+FCS, preamble and IFG per frame
    bits += PAUSE_FRAME_WIRE_BYTES * 8
    bits += response_bits(rate_bps) if response is None else response
    return int(-(-bits // 8))


@dataclass(frozen=True)
class PfcThresholds:
    """Per ingress port and lossless priority: XOFF/XON in bytes, headroom in bytes
    (None = computed from the link: `headroom_bytes`)."""

    xoff_bytes: int = 40_000
    xon_bytes: int = 20_000
    headroom: int | None = None

    def __post_init__(self) -> None:
        if self.xoff_bytes <= 0 or self.xon_bytes < 0:
            raise ValueError("PFC xoff must be positive and xon not negative")
        if self.xon_bytes > self.xoff_bytes:
            raise ValueError(f"PFC needs xon <= xoff, got xon={self.xon_bytes} "
                             f"xoff={self.xoff_bytes}")
        if self.headroom is not None and self.headroom < 0:
            raise ValueError("PFC headroom must not be negative")


@dataclass(frozen=True)
class WatchdogSettings:
    """PFC watchdog (SONiC semantics). A lossless egress queue paused without a break
    for `detection_ns` (whether or not it holds packets) is declared stormed; `forward`
    and `drop` hold until no PAUSE for it has arrived for `restoration_ns`; `alert`
    (which never stopped honouring PAUSE) ends the moment the queue is no longer paused
    (its last PAUSE expired, or a resume came), as SONiC ends it at the first poll where
    the storm condition fails. Modelled time; the
    defaults are SONiC's 200 ms / 200 ms. `enabled` False by default."""

    enabled: bool = False
    detection_ns: int = 200_000_000
    restoration_ns: int = 200_000_000
    action: WatchdogAction = "drop"

    def __post_init__(self) -> None:
        if self.action not in ("forward", "drop", "alert"):
            raise ValueError(f"watchdog action must be forward, drop or alert, "
                             f"got {self.action!r}")
        if self.detection_ns <= 0 or self.restoration_ns <= 0:
            raise ValueError("watchdog detection and restoration times must be positive")


@dataclass(frozen=True)
class FlowControl:
    """Flow control of one switch or host. mode "off" (the default everywhere) keeps
    today's behaviour; "pfc" makes `lossless` priorities lossless with PAUSE frames;
    "credit" makes them lossless with link-level credit (emu.core.credit, `credit`).

    thresholds: the default per ingress port; `ports` overrides it per port number.
    pause_quanta: the time each XOFF PAUSE asks for; it is re-sent every
    `refresh_fraction` of that time while the buffer stays above XON (default: at half
    the pause time, so one lost or late refresh still leaves margin).
    default_rate_bps: the rate quanta are converted at on a port without a rate.
    reaction_ns: added to the peer's response time in each port's computed headroom
    (what the link carries in that time): a real-time emulation's processing lag, during
    which frames already sent wait in the kernel and PAUSE frames wait to be read. It is
    modelled time, as the links the headroom is computed on are the modelled ones (a lag
    of L ns on a wire dilated D times is L / D modelled ns: the same bytes).
    """

    mode: Literal["off", "pfc", "credit"] = "off"
    lossless: frozenset[int] = frozenset({3})
    thresholds: PfcThresholds = field(default_factory=PfcThresholds)
    ports: Mapping[int, PfcThresholds] = field(default_factory=dict)
    pause_quanta: int = DEFAULT_QUANTA
    refresh_fraction: float = 0.5
    global_pause: Literal["honour", "drop"] = "honour"
    watchdog: WatchdogSettings = field(default_factory=WatchdogSettings)
    default_rate_bps: float = 100e9
    credit: CreditSettings = field(default_factory=CreditSettings)
    reaction_ns: int = 0

    def __post_init__(self) -> None:
        if self.reaction_ns < 0:
            raise ValueError("reaction_ns must not be negative")
        if self.mode not in ("off", "pfc", "credit"):
            raise ValueError(f"flow control mode must be off, pfc or credit, "
                             f"got {self.mode!r}")
        object.__setattr__(self, "lossless", frozenset(self.lossless))
        for p in self.lossless:
            if not 0 <= p < NUM_PRIORITIES:
                raise ValueError(f"lossless priority must be 0..7, got {p}")
        if not 1 <= self.pause_quanta <= 0xFFFF:
            raise ValueError("pause_quanta must be 1..65535")
        if not 0 < self.refresh_fraction < 1:
            raise ValueError("refresh_fraction must be in (0, 1)")
        if self.global_pause not in ("honour", "drop"):
            raise ValueError("global_pause must be honour or drop")

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def for_port(self, port: int) -> PfcThresholds:
        return self.ports.get(port, self.thresholds)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the switch daemon's --pfc-config file); `from_dict` reads it."""
        def th(t: PfcThresholds) -> dict[str, Any]:
            return {"xoff_bytes": t.xoff_bytes, "xon_bytes": t.xon_bytes,
                    "headroom": t.headroom}

        w, c = self.watchdog, self.credit
        return {"mode": self.mode, "lossless": sorted(self.lossless),
                "thresholds": th(self.thresholds),
                "ports": {str(p): th(t) for p, t in sorted(self.ports.items())},
                "pause_quanta": self.pause_quanta, "refresh_fraction": self.refresh_fraction,
                "global_pause": self.global_pause,
                "watchdog": {"enabled": w.enabled, "detection_ns": w.detection_ns,
                             "restoration_ns": w.restoration_ns, "action": w.action},
                "credit": {"buffer_bytes": c.buffer_bytes, "update_blocks": c.update_blocks,
                           "refresh_bytes": c.refresh_bytes},
                "default_rate_bps": self.default_rate_bps, "reaction_ns": self.reaction_ns}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FlowControl:
        """The inverse of `to_dict`; raises ValueError naming what is wrong."""
        try:
            known = {f for f in cls.__dataclass_fields__}
            unknown = set(d) - known
            if unknown:
                raise ValueError(f"unknown flow-control keys: {', '.join(sorted(unknown))}")
            kw: dict[str, Any] = dict(d)
            if "lossless" in kw:
                kw["lossless"] = frozenset(int(p) for p in kw["lossless"])
            if "thresholds" in kw:
                kw["thresholds"] = PfcThresholds(**kw["thresholds"])
            if "ports" in kw:
                kw["ports"] = {int(p): PfcThresholds(**t) for p, t in kw["ports"].items()}
            if "watchdog" in kw:
                kw["watchdog"] = WatchdogSettings(**kw["watchdog"])
            if "credit" in kw:
                kw["credit"] = CreditSettings(**kw["credit"])
            return cls(**kw)
        except TypeError as exc:
            raise ValueError(f"bad flow-control settings: {exc}") from None


class PauseState:
    """Receive side of one port's MAC: per-priority pause timers and counters.

    `on_frame` takes a MAC-control frame; `paused_until[p]` is the clock time until
    which priority p must not start a frame. `on_resume(prio_mask)` is called when a
    zero-quanta frame ends a pause early, so the transmitter can restart at once.
    `enabled`: bit mask of the priorities PFC is enabled for on this port; a PFC frame
    pauses only those (the others are counted and go on sending). Per priority, `rx`
    counts the frames that pause it (non-zero quanta) and `rx_resume` those that resume
    it (zero quanta), as the sender counts its PAUSE and resume frames apart; the two
    together are a MAC's per-priority PFC RX counter. An 802.3x PAUSE is not per
    priority and stops every one (`global_pause`).
    """

    __slots__ = ("until", "since", "acc_ns", "rx", "rx_resume", "rx_global", "malformed",
                 "global_pause", "rate_bps", "now", "on_resume", "on_pause", "ignore",
                 "enabled")

    def __init__(self, now: Callable[[], int], rate_bps: float,
                 global_pause: str = "honour", enabled: int = 0xFF) -> None:
        self.now = now
        self.rate_bps = rate_bps
        self.global_pause = global_pause
        self.enabled = enabled
        self.until = [0] * NUM_PRIORITIES
        self.since = [0] * NUM_PRIORITIES
        self.acc_ns = [0] * NUM_PRIORITIES
        self.rx = [0] * NUM_PRIORITIES  # frames received pausing that class (quanta > 0)
        self.rx_resume = [0] * NUM_PRIORITIES  # frames received resuming it (quanta 0)
        self.rx_global = 0
        self.malformed: dict[str, int] = {}
        self.ignore = 0  # bit mask of priorities whose PAUSE is ignored (watchdog forward)
        self.on_resume: Callable[[int], None] | None = None
        self.on_pause: Callable[[int, int], None] | None = None  # (prio, now) new period

    def on_frame(self, frame: bytes) -> None:
        m = parse_mac_control(frame)
        if isinstance(m, str):
            self.malformed[m] = self.malformed.get(m, 0) + 1
            return
        if m.opcode == OP_PAUSE:
            self.rx_global += 1
            if self.global_pause == "drop":
                self.malformed["pause_global_dropped"] = \
                    self.malformed.get("pause_global_dropped", 0) + 1
                return
            self.apply(m.vector, m.quanta, 0xFF)
        else:
            self.apply(m.vector, m.quanta, self.enabled)

    def apply(self, vector: int, quanta: tuple[int, ...] | list[int],
              honour: int = 0xFF) -> None:
        """Take the pause times of the classes in `vector`; only those also in `honour`
        (the PFC-enabled ones, or all for a global PAUSE) stop their priority."""
        now = self.now()
        resumed = 0
        for p in range(NUM_PRIORITIES):
            if not vector >> p & 1:
                continue  # the time of a class not enabled is ignored
            q = quanta[p]
            if q:
                self.rx[p] += 1
            else:
                self.rx_resume[p] += 1
            if not honour >> p & 1:
                continue  # PFC is not enabled for p here: the frame does not stop it
            if self.on_pause is not None:
                self.on_pause(p, now)
            if self.ignore >> p & 1:
                continue
            until = self.until[p]
            if q == 0:
                if until > now:
                    self.acc_ns[p] += now - self.since[p]
                    self.since[p] = self.until[p] = now
                    resumed |= 1 << p
                continue
            end = now + quanta_ns(q, self.rate_bps)
            if until > now:
                self.until[p] = end  # reload, not add
            else:
                if until > self.since[p]:
                    self.acc_ns[p] += until - self.since[p]  # the last period, expired
                self.since[p] = now
                self.until[p] = end
        if resumed and self.on_resume is not None:
            self.on_resume(resumed)

    def release(self, prio: int) -> None:
        """End a pause now (watchdog forward): as a zero-quanta frame would."""
        now = self.now()
        if self.until[prio] > now:
            self.acc_ns[prio] += now - self.since[prio]
            self.since[prio] = self.until[prio] = now

    def paused(self, prio: int, now: int) -> bool:
        return self.until[prio] > now

    def paused_ns(self, prio: int) -> int:
        """Total time priority `prio` has been paused so far."""
        now = self.now()
        s, u = self.since[prio], self.until[prio]
        return self.acc_ns[prio] + max(0, min(now, u) - s)

    def counters(self) -> dict[str, object]:
        now = self.now()
        return {"pause_rx": list(self.rx), "resume_rx": list(self.rx_resume),
                "pause_rx_global": self.rx_global,
                "paused_ns": [self.paused_ns(p) for p in range(NUM_PRIORITIES)],
                "paused_now": [self.until[p] > now for p in range(NUM_PRIORITIES)],
                "malformed": dict(self.malformed)}
