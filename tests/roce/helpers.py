"""Test helpers: a two-host MemLink setup and a lossy/reordering/duplicating port shim."""

from __future__ import annotations

from collections.abc import Callable

from emu.core.clock import Clock, VirtualClock
from emu.core.port import FramePort, MemLink
from emu.roce import wire
from emu.roce.nic import Nic, NicParams
from emu.roce.qp import QpParams, QueuePair

MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
IP_A, IP_B = "10.9.0.1", "10.9.0.2"
QPN_A, QPN_B = 0x11, 0x22


def path_ab(sport: int = 49500) -> wire.Path:
    return wire.Path(MAC_A, MAC_B, IP_A, IP_B, sport, QPN_B)


def path_ba(sport: int = 49501) -> wire.Path:
    return wire.Path(MAC_B, MAC_A, IP_B, IP_A, sport, QPN_A)


class ShimPort(FramePort):
    """Sits between a NIC and a port; `fate(frame)` returns the extra delays (ns) of the
    copies to forward: [] drops, [0] passes, [0, 500] duplicates, [3000] delays."""

    def __init__(self, inner: FramePort, clock: Clock,
                 fate: Callable[[bytes], list[int]] | None = None) -> None:
        super().__init__("shim")
        self.inner = inner
        self.clock = clock
        self.fate = fate
        self.dropped = 0
        inner.set_receiver(self._deliver)

    def send(self, frame: bytes) -> bool:
        delays = [0] if self.fate is None else self.fate(frame)
        if not delays:
            self.dropped += 1
        for d in delays:
            if d <= 0:
                self.inner.send(frame)
            else:
                self.clock.call_later(d, lambda f=frame: self.inner.send(f))
        return True


def is_data(frame: bytes) -> bool:
    return len(frame) > 42 and frame[42] in wire.DATA_OPCODES


def psn_of(frame: bytes) -> int:
    """The BTH PSN of a frame (IPv4 without options)."""
    return int.from_bytes(frame[51:54], "big")


def pair(*, recovery: str = "gbn", rate_bps: int | None = 10_000_000_000, delay_ns: int = 1000,
         start_a: int = 0, start_b: int = 0, nic_kw: dict | None = None, qp_kw: dict | None = None,
         fate_a: Callable[[bytes], list[int]] | None = None,
         fate_b: Callable[[bytes], list[int]] | None = None,
         link_kw: dict | None = None, clock: VirtualClock | None = None
         ) -> tuple[VirtualClock, Nic, Nic, QueuePair, QueuePair, MemLink]:
    """Two NICs A and B joined by a MemLink, one QP each; optional shims on both sends."""
    clk = clock or VirtualClock()
    link = MemLink(clk, rate_bps=rate_bps, delay_ns=delay_ns, overhead_bytes=24, **(link_kw or {}))
    port_a: FramePort = link.a
    port_b: FramePort = link.b
    if fate_a is not None:
        port_a = ShimPort(link.a, clk, fate_a)
    if fate_b is not None:
        port_b = ShimPort(link.b, clk, fate_b)
    nkw = {"line_rate_bps": None if rate_bps is None else float(rate_bps), **(nic_kw or {})}
    a = Nic(clk, port_a, NicParams(mac=MAC_A, ip=IP_A, **nkw))
    b = Nic(clk, port_b, NicParams(mac=MAC_B, ip=IP_B, **nkw))
    qkw = {"recovery": recovery, "deliver": "bytes", **(qp_kw or {})}
    qa = a.add_qp(QpParams(QPN_A, path_ab(), start_psn=start_a, peer_start_psn=start_b, **qkw))
    qb = b.add_qp(QpParams(QPN_B, path_ba(), start_psn=start_b, peer_start_psn=start_a, **qkw))
    return clk, a, b, qa, qb, link


class EcnSwitch:
    """A test-only output-queued switch: a frame leaves by the port owning its dst MAC;
    each egress FIFO is served at `rate_bps`, marks ECT frames CE with probability rising
    linearly from 0 at `kmin` to 1 at `kmax` packets (deterministic: an accumulator instead
    of a coin), and tail-drops at `depth_pkts`. Enough to close the DCQCN loop in tests."""

    def __init__(self, clock: Clock, rate_bps: int, kmin: int, kmax: int, depth_pkts: int) -> None:
        self.clock = clock
        self.rate_bps = rate_bps
        self.kmin, self.kmax, self.depth = kmin, kmax, depth_pkts
        self.ports: dict[bytes, tuple[FramePort, list[bytes], list[int]]] = {}
        self.max_q: dict[bytes, int] = {}
        self.drops = 0
        self.marked = 0
        self._acc = 0.0

    def attach(self, mac: str, port: FramePort) -> None:
        key = wire.mac_bytes(mac)
        self.ports[key] = (port, [], [0])
        self.max_q[key] = 0
        port.set_receiver(self._ingress)

    def _ingress(self, frame: bytes) -> None:
        key = frame[0:6]
        ent = self.ports.get(key)
        if ent is None:
            return
        port, q, busy = ent
        if len(q) >= self.depth:
            self.drops += 1
            return
        if len(frame) > 42 and frame[15] & 3 in (1, 2) and len(q) > self.kmin:
            self._acc += min(1.0, (len(q) - self.kmin) / max(1, self.kmax - self.kmin))
            if self._acc >= 1.0:
                self._acc -= 1.0
                f = bytearray(frame)
                f[15] |= 3
                frame = bytes(f)
                self.marked += 1
        q.append(frame)
        self.max_q[key] = max(self.max_q[key], len(q))
        if not busy[0]:
            busy[0] = 1
            self._serve(key)

    def _serve(self, key: bytes) -> None:
        port, q, busy = self.ports[key]
        if not q:
            busy[0] = 0
            return
        frame = q.pop(0)
        port.send(frame)
        t = (len(frame) + 24) * 8 * 1_000_000_000 // self.rate_bps
        self.clock.call_later(t, lambda: self._serve(key))
