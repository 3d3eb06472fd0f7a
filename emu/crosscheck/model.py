"""Crosscheck's data: packets, per-packet outputs, reports, and the comparison of two
sides' outputs (which byte differs, which differences a documented target difference
explains)."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PROGRAM = ROOT / "p4src" / "fabric.p4"
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4

# Offsets in an untagged Ethernet/IPv4 frame, for naming the first differing byte.
_FIELDS = [(0, 6, "eth.dst"), (6, 12, "eth.src"), (12, 14, "eth.type"), (14, 15, "ipv4.ver_ihl"),
           (15, 16, "ipv4.dscp_ecn"), (16, 18, "ipv4.len"), (18, 20, "ipv4.id"),
           (20, 22, "ipv4.flags_frag"), (22, 23, "ipv4.ttl"), (23, 24, "ipv4.proto"),
           (24, 26, "ipv4.checksum"), (26, 30, "ipv4.src"), (30, 34, "ipv4.dst"),
           (34, 36, "l4.sport"), (36, 38, "l4.dport"), (38, 40, "udp.len"),
           (40, 42, "udp.checksum")]


# ---------------------------------------------------------------------- data


@dataclass(frozen=True)
class Packet:
    port: int
    frame: bytes


Outputs = list[tuple[int, bytes]]


@dataclass
class Report:
    program: str
    side_a: str
    side_b: str
    packets: int = 0
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Differences a documented target difference accounts for (see the module doc).
    explained: list[str] = field(default_factory=list)
    counters_b: dict[str, list[int]] = field(default_factory=dict)  # side B, name[i] -> values

    def to_dict(self) -> dict[str, Any]:
        return {"program": self.program, "a": self.side_a, "b": self.side_b,
                "packets": self.packets, "differences": self.differences,
                "explained": self.explained, "notes": self.notes, "counters_b": self.counters_b}


def field_at(offset: int) -> str:
    for lo, hi, name in _FIELDS:
        if lo <= offset < hi:
            return name
    return f"byte {offset}"


def describe_bytes(a: bytes, b: bytes) -> str:
    if len(a) != len(b):
        return f"lengths {len(a)} vs {len(b)} B"
    diffs = [i for i in range(len(a)) if a[i] != b[i]]
    names = list(dict.fromkeys(field_at(i) for i in diffs))  # in frame order
    first = diffs[0]
    return (f"{len(diffs)} bytes differ ({', '.join(names)}); first at {first}: "
            f"{a[first]:#04x} vs {b[first]:#04x}")


def compare_outputs(index: int, pkt: Packet, a: Outputs, b: Outputs,
                    names: tuple[str, str]) -> list[str]:
    """Differences between the frames two targets sent for one input packet."""
    if Counter(a) == Counter(b):
        return []
    head = f"packet {index} (in port {pkt.port}, {len(pkt.frame)} B)"
    ports_a, ports_b = sorted(p for p, _ in a), sorted(p for p, _ in b)
    if ports_a != ports_b:
        return [f"{head}: output ports {names[0]} {ports_a or 'dropped'} vs "
                f"{names[1]} {ports_b or 'dropped'}"]
    out = []
    rest_b = list(b)
    for port, frame in a:
        if (port, frame) in rest_b:
            rest_b.remove((port, frame))
            continue
        other = next(f for p, f in rest_b if p == port)
        rest_b.remove((port, other))
        out.append(f"{head}: port {port} bytes: {describe_bytes(frame, other)}")
    return out


# ---------------------------------------------------------------------- packets


# An AF_PACKET socket sends nothing shorter than an Ethernet header (EINVAL), and
# nothing longer than the veth's MTU 1500 plus that header (EMSGSIZE).
MIN_FRAME = 14
MAX_FRAME = 1514


def read_packets(path: Path) -> list[Packet]:
    """The packets of a file: `packet PORT HEX` or JSON `{"port", "frame"}` lines, or an
    STF file's `packet` commands (its other commands are not applied)."""
    if path.suffix == ".stf":
        from emu.p4.stf.model import Packet as StfPacket
        from emu.p4.stf.model import StfError
        from emu.p4.stf.parser import parse_stf

        try:
            cmds = [c for c in parse_stf(path.read_text(), str(path)) if isinstance(c, StfPacket)]
        except StfError as exc:
            raise ValueError(str(exc)) from None
        out, lines = [Packet(c.port, c.data) for c in cmds], [c.line for c in cmds]
    else:
        out, lines = [], []
        try:
            text = path.read_text()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") \
                from None
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                out.append(_packet_line(line))
            except KeyError as exc:
                raise ValueError(f"{path}:{n}: the JSON object has no {exc}") from None
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path}:{n}: {exc}") from None
            lines.append(n)
    if not out:
        raise ValueError(f"{path}: no packets")
    for pkt, n in zip(out, lines, strict=True):
        if not MIN_FRAME <= len(pkt.frame) <= MAX_FRAME:
            raise ValueError(f"{path}:{n}: a frame of {len(pkt.frame)} bytes; a frame sent on a "
                             f"veth has {MIN_FRAME} (an Ethernet header) to {MAX_FRAME} "
                             f"(its MTU and the header)")
    return out


def _packet_line(line: str) -> Packet:
    if line.startswith("{"):
        d = json.loads(line)
        if not isinstance(d, dict):
            raise ValueError("expected a JSON object {\"port\", \"frame\"}")
        return Packet(int(d["port"]), bytes.fromhex(str(d["frame"])))
    words = line.split()
    if words[0] != "packet" or len(words) < 3:
        raise ValueError("expected `packet PORT HEX` or a JSON object")
    return Packet(int(words[1]), bytes.fromhex("".join(words[2:])))


def generate_packets(n: int, ports: Sequence[int], seed: int,
                     hosts: Sequence[tuple[str, str, int | None]] = ()) -> list[Packet]:
    """N frames: mostly IPv4/UDP to the RoCEv2 port; some TTL 1, some not IPv4.

    hosts: (ip, mac, port on this switch or None) to draw addresses from; without
    them random 10.x addresses are used.
    """
    from emu.core.wire import ROCEV2_UDP_PORT as ROCEV2_PORT
    from emu.sim.frames import udp_frame

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if hosts:
            src, dst = rng.sample(list(hosts), 2)
            port = src[2] if src[2] is not None else rng.choice(list(ports))
            sip, smac, dip = src[0], src[1], dst[0]
        else:
            port = rng.choice(list(ports))
            sip = f"10.0.{rng.randrange(1, 5)}.{rng.randrange(1, 250)}"
            dip = f"10.0.{rng.randrange(1, 5)}.{rng.randrange(1, 250)}"
            smac = f"02:00:00:00:{rng.randrange(256):02x}:{rng.randrange(256):02x}"
        kind = rng.random()
        if kind < 0.05:  # not IPv4 (an ARP-typed frame)
            frame = bytes.fromhex("ffffffffffff") + bytes.fromhex(smac.replace(":", "")) \
                + b"\x08\x06" + bytes(46)
        else:
            frame = udp_frame(smac, "02:00:00:00:00:fe", sip, dip, rng.randrange(49152, 65536),
                              ROCEV2_PORT if rng.random() < 0.8 else rng.randrange(1, 65536),
                              size=rng.randrange(64, 300), ttl=1 if kind < 0.10 else 64,
                              dscp=rng.choice((0, 26, 48)), ecn=rng.choice((0, 1, 2)),
                              psn=rng.randrange(1 << 24))
        out.append(Packet(port, frame))
    return out


# ---------------------------------------------------------------------- driver


# LB modes whose member choice draws from the switch's random source (see the module doc).
RANDOM_CHOICE = {"flowlet"}


def explain_random_choice(diffs: list[tuple[str, Packet, Outputs, Outputs]],
                          members: set[int]) -> tuple[list[str], list[str]]:
    """(explained, unexplained) of per-packet differences under RANDOM_CHOICE: one frame
    out on each side, both on group members, identical past the Ethernet addresses."""
    explained: list[str] = []
    unexplained: list[str] = []
    for text, _pkt, a, b in diffs:
        ok = (len(a) == len(b) == 1 and a[0][0] in members and b[0][0] in members
              and a[0][1][12:] == b[0][1][12:])
        (explained if ok else unexplained).append(text)
    return explained, unexplained


# Packets whose difference is re-run alone on fresh switches (each re-run starts side B).
MAX_ALONE_RERUNS = 10


def explain_earlier_packets(diffs: Sequence[tuple[int, str, Outputs]],
                            alone: Callable[[int], tuple[Outputs, Outputs]], side_b: str,
                            limit: int = MAX_ALONE_RERUNS) -> tuple[list[str], list[str]]:
    """(explained, unexplained) of per-packet differences `diffs` ((packet index, text,
    side A's frames)) of a program that keeps no state a packet can read. `alone(i)`
    sends packet i by itself through fresh switches: (side A's frames, side B's). A
    difference is explained when side A sent the same frames alone as in the run and
    side B, alone, sent those too: only side B's output depended on an earlier packet,
    which without a register or meter is BMv2 keeping the fields of headers a packet did
    not extract (docs/v1model.md). The first `limit` packets are re-run."""
    explained: list[str] = []
    unexplained: list[str] = []
    verdict: dict[int, bool] = {}
    for index, text, a in diffs:
        if index not in verdict and len(verdict) < limit:
            a_alone, b_alone = alone(index)
            verdict[index] = Counter(a_alone) == Counter(a) == Counter(b_alone)
        if verdict.get(index):
            explained.append(f"{text} [the same frames on both sides when sent alone to "
                             f"fresh switches: {side_b} read header fields an earlier "
                             "packet left]")
        else:
            unexplained.append(text)
    return explained, unexplained


def counter_totals_equal(name: str, a: Mapping[str, tuple[int, ...]],
                         b: Mapping[str, tuple[int, ...]]) -> bool:
    """Whether counter `name` has the same totals over all its indices on both sides."""
    def total(c: Mapping[str, tuple[int, ...]]) -> list[int]:
        cells = [v for k, v in c.items() if k.rsplit("[", 1)[0] == name]
        return [sum(col) for col in zip(*cells, strict=True)] if cells else []
    return total(a) == total(b)
