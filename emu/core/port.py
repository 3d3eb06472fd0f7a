"""Frame ports: raw Ethernet frames in and out, on a real interface or an in-memory link.

A port pushes received frames to one receiver callback; `send()` never blocks.
On an `AfPacketPort` the callback runs from the `RealClock` reactor; on a
`MemLink` it runs from clock timers, so the same switch/host code works in both.
"""

from __future__ import annotations

import collections
import errno
import socket
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from emu.core.clock import Clock, RealClock

Receiver = Callable[[bytes], None]

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23

# Errors meaning "the interface is gone or down": expected while Mininet tears
# links down before it stops switches, so they end the port quietly.
_IFACE_GONE = {errno.ENETDOWN, errno.ENXIO, errno.ENODEV, errno.EBADF}


@dataclass
class PortStats:
    rx_frames: int = 0
    rx_bytes: int = 0
    tx_frames: int = 0
    tx_bytes: int = 0
    tx_drops: int = 0  # frames the port could not send (queue full, ENOBUFS, link down)
    rx_drops: int = 0  # frames that arrived with no receiver attached
    kernel_drops: int = 0  # AF_PACKET receive-ring drops (PACKET_STATISTICS)


class FramePort(ABC):
    """A full-duplex Ethernet port carrying whole frames (no FCS)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stats = PortStats()
        self._receiver: Receiver | None = None

    @property
    def receiver(self) -> Receiver | None:
        """The callback frames go to (a tap wraps it: `set_receiver(tap)`)."""
        return self._receiver

    def set_receiver(self, receiver: Receiver | None) -> None:
        self._receiver = receiver

    @abstractmethod
    def send(self, frame: bytes) -> bool:
        """Queue a frame for transmission; False if it was dropped."""

    def close(self) -> None:
        self._receiver = None

    def _deliver(self, frame: bytes) -> None:
        st = self.stats
        st.rx_frames += 1
        st.rx_bytes += len(frame)
        rcv = self._receiver
        if rcv is None:
            st.rx_drops += 1
        else:
            rcv(frame)


class AfPacketPort(FramePort):
    """A port bound to a Linux interface through an AF_PACKET raw socket.

    Reads are drained in batches from the reactor until EAGAIN, so the kernel
    ring does not overflow below the rated load; kernel drops are still counted.
    """

    RECV_BATCH = 512

    def __init__(self, iface: str, clock: RealClock, *, rcvbuf_bytes: int = 8 << 20,
                 sndbuf_bytes: int = 4 << 20, promisc: bool = True, mtu: int = 9216) -> None:
        super().__init__(iface)
        self.iface = iface
        self.clock = clock
        self.down = False
        self._mtu = mtu + 64
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            sock.bind((iface, 0))
            # Without this we would read back every frame we send on the interface.
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            for opt, fallback, size in ((33, socket.SO_RCVBUF, rcvbuf_bytes),
                                        (32, socket.SO_SNDBUF, sndbuf_bytes)):
                try:  # SO_RCVBUFFORCE / SO_SNDBUFFORCE ignore rmem_max (root only)
                    sock.setsockopt(socket.SOL_SOCKET, opt, size)
                except OSError:
                    sock.setsockopt(socket.SOL_SOCKET, fallback, size)
            if promisc:
                ifindex = socket.if_nametoindex(iface)
                mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
                sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self._buf = bytearray(self._mtu)
        self._view = memoryview(self._buf)
        clock.add_reader(sock.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        # _deliver inlined: this loop runs once per received frame.
        recv_into = self.sock.recv_into
        buf, view = self._buf, self._view
        size = len(buf)
        st = self.stats
        for _ in range(self.RECV_BATCH):
            try:
                n = recv_into(buf, size)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in _IFACE_GONE:
                    self._mark_down()
                    return
                raise
            st.rx_frames += 1
            rcv = self._receiver
            if rcv is None:
                st.rx_drops += 1
                continue
            st.rx_bytes += n
            rcv(view[:n].tobytes())

    def send(self, frame: bytes) -> bool:
        if self.down:
            self.stats.tx_drops += 1
            return False
        try:
            self.sock.send(frame)
        except (BlockingIOError, InterruptedError):
            self.stats.tx_drops += 1
            return False
        except OSError as exc:
            if exc.errno == errno.ENOBUFS:
                self.stats.tx_drops += 1
                return False
            if exc.errno in _IFACE_GONE:
                self._mark_down()
                self.stats.tx_drops += 1
                return False
            raise
        self.stats.tx_frames += 1
        self.stats.tx_bytes += len(frame)
        return True

    def kernel_drops(self) -> int:
        """Frames the kernel dropped because our socket was full (cumulative)."""
        if not self.down:
            try:
                raw = self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
                _packets, drops = struct.unpack("II", raw)
                self.stats.kernel_drops += drops  # the kernel resets them on read
            except OSError:
                pass
        return self.stats.kernel_drops

    def _mark_down(self) -> None:
        if not self.down:
            self.down = True
            self.clock.remove_reader(self.sock.fileno())

    def close(self) -> None:
        super().close()
        if not self.down:
            self.kernel_drops()
            self._mark_down()
        self.sock.close()


class _MemPort(FramePort):
    def __init__(self, name: str, link: MemLink, direction: _Direction) -> None:
        super().__init__(name)
        self._link = link
        self._dir = direction

    def send(self, frame: bytes) -> bool:
        ok = self._dir.transmit(frame)
        if ok:
            self.stats.tx_frames += 1
            self.stats.tx_bytes += len(frame)
        else:
            self.stats.tx_drops += 1
        return ok


class _Direction:
    """One direction of a MemLink: a FIFO transmitter with a rate and a delay."""

    def __init__(self, link: MemLink) -> None:
        self.link = link
        self.dst: _MemPort | None = None
        self.busy_until_ns = 0
        # End-of-serialisation times of frames not yet fully sent, for the backlog.
        self.in_flight: collections.deque[int] = collections.deque()

    def transmit(self, frame: bytes) -> bool:
        link = self.link
        if not link.up:
            return False
        now = link.clock.now_ns()
        q = self.in_flight
        while q and q[0] <= now:
            q.popleft()
        if link.queue_depth_pkts is not None and len(q) >= link.queue_depth_pkts:
            return False
        start = max(now, self.busy_until_ns)
        end = start + link.serialisation_ns(len(frame))
        self.busy_until_ns = end
        q.append(end)
        dst = self.dst
        assert dst is not None
        link.clock.call_at(end + link.delay_ns, lambda: link._arrive(dst, frame))
        return True


class MemLink:
    """An in-memory point-to-point link with two ports, `a` and `b`.

    Each direction serialises frames at `rate_bps` (None: infinitely fast), then
    delays them by `delay_ns`; with `queue_depth_pkts` set, a frame that finds
    that many frames waiting to be serialised is tail-dropped.
    """

    def __init__(self, clock: Clock, *, rate_bps: int | None = None, delay_ns: int = 0,
                 queue_depth_pkts: int | None = None, overhead_bytes: int = 0,
                 names: tuple[str, str] = ("a", "b")) -> None:
        if rate_bps is not None and rate_bps <= 0:
            raise ValueError("rate_bps must be positive")
        if delay_ns < 0:
            raise ValueError("delay_ns must not be negative")
        self.clock = clock
        self.rate_bps = rate_bps
        self.delay_ns = delay_ns
        self.queue_depth_pkts = queue_depth_pkts
        self.overhead_bytes = overhead_bytes  # e.g. 24 for preamble+FCS+IFG accounting
        self.up = True
        ab, ba = _Direction(self), _Direction(self)
        self.a = _MemPort(names[0], self, ab)
        self.b = _MemPort(names[1], self, ba)
        ab.dst, ba.dst = self.b, self.a

    def serialisation_ns(self, nbytes: int) -> int:
        if self.rate_bps is None:
            return 0
        return ((nbytes + self.overhead_bytes) * 8 * 1_000_000_000) // self.rate_bps

    def set_up(self, up: bool) -> None:
        """Take the link down (frames in flight are lost) or bring it back."""
        self.up = up

    def _arrive(self, dst: _MemPort, frame: bytes) -> None:
        if self.up:
            dst._deliver(frame)
