"""Frame ports: raw Ethernet frames in and out, on a real interface or an in-memory link.

A port pushes received frames to one receiver callback; `send()` never blocks.
On an `AfPacketPort` the callback runs from the `RealClock` reactor; on a
`MemLink` it runs from clock timers, so the same switch/host code works in both.
"""

from __future__ import annotations

import collections
import errno
import fcntl
import functools
import logging
import random
import socket
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from mypy_extensions import mypyc_attr

from emu.core.clock import Clock, RealClock
from emu.core.wire import ETH_P_8021Q, ETH_P_ALL

Receiver = Callable[[bytes], None]
StateFn = Callable[[bool, str], None]

log = logging.getLogger("emu.core.port")

SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
SIOCGIFFLAGS = 0x8913
SIOCGIFINDEX = 0x8933
IFF_UP = 0x1
# struct tpacket_auxdata: status, len, snaplen (u32), mac, net, vlan_tci, vlan_tpid (u16)
_AUX = struct.Struct("IIIHHHH")
AUX_SPACE = socket.CMSG_SPACE(_AUX.size)

# Errors meaning "the interface is gone or down": expected while Mininet tears
# links down before it stops switches, so they end the port quietly.
_IFACE_GONE = {errno.ENETDOWN, errno.ENXIO, errno.ENODEV, errno.EBADF}
_partial = functools.partial


@dataclass
class PortStats:
    rx_frames: int = 0
    rx_bytes: int = 0
    tx_frames: int = 0
    tx_bytes: int = 0
    tx_drops: int = 0  # frames the port could not send (queue full, ENOBUFS, link down,
    # or any other send error, e.g. EMSGSIZE for a frame beyond the interface's MTU)
    rx_drops: int = 0  # frames that arrived with no receiver attached
    kernel_drops: int = 0  # AF_PACKET receive-ring drops (PACKET_STATISTICS)


# Compiled (emu.core.accel) but subclassed by Python code (emu.roce.pfc, tests).
@mypyc_attr(allow_interpreted_subclasses=True)
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

    - Send errors never raise: a frame the kernel refuses (EMSGSIZE beyond the
      MTU, ENOBUFS, ...) is a tx drop; the first error of each kind is kept in
      `last_error` and logged once.
    - VLAN tags: the kernel takes an 802.1Q tag out of the frame (VLAN offload)
      and reports it in PACKET_AUXDATA; it is put back, so the pipeline sees the
      frame as it was on the wire.
    - Down and back: when the interface goes down or disappears the port is
      marked down (`on_state(False, why)`), then polled every POLL_NS; once an
      interface of that name is up again (the same or a re-created one) the
      socket is re-bound to it and the port resumes (`on_state(True, why)`).
    """

    RECV_BATCH = 512
    POLL_NS = 200_000_000

    def __init__(self, iface: str, clock: RealClock, *, rcvbuf_bytes: int = 8 << 20,
                 sndbuf_bytes: int = 4 << 20, promisc: bool = True, mtu: int = 9216) -> None:
        super().__init__(iface)
        self.iface = iface
        self.clock = clock
        self.down = False
        self.on_state: StateFn | None = None
        self.last_error: str | None = None  # the last hard send error (not EAGAIN, ENOBUFS)
        self.last_failure = ""  # why the last send() that returned False failed
        self._errors_seen: set[int] = set()
        self._closed = False
        self._poll: object | None = None
        self._promisc = promisc
        self._mtu = mtu + 64
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            sock.bind((iface, 0))
            # Without this we would read back every frame we send on the interface.
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            for opt, fallback, size in ((33, socket.SO_RCVBUF, rcvbuf_bytes),
                                        (32, socket.SO_SNDBUF, sndbuf_bytes)):
                try:  # SO_RCVBUFFORCE / SO_SNDBUFFORCE ignore rmem_max (root only)
                    sock.setsockopt(socket.SOL_SOCKET, opt, size)
                except OSError:
                    sock.setsockopt(socket.SOL_SOCKET, fallback, size)
            self.ifindex = self._bind(sock)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self._buf = bytearray(self._mtu)
        self._view = memoryview(self._buf)
        clock.add_reader(sock.fileno(), self._on_readable)

    def _bind(self, sock: socket.socket) -> int:
        """Bind (or re-bind) to the interface by name; returns its ifindex. The name is
        resolved in the socket's own network namespace."""
        ifindex = struct.unpack_from("i", fcntl.ioctl(
            sock.fileno(), SIOCGIFINDEX, struct.pack("16s16x", self.iface.encode())), 16)[0]
        sock.bind((self.iface, 0))
        if self._promisc:
            mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        return int(ifindex)

    def _on_readable(self) -> None:
        # _deliver inlined: this loop runs once per received frame.
        recvmsg_into = self.sock.recvmsg_into
        bufs = [self._buf]
        view = self._view
        st = self.stats
        for _ in range(self.RECV_BATCH):
            try:
                n, anc, _fl, _addr = recvmsg_into(bufs, AUX_SPACE)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in _IFACE_GONE:
                    self._mark_down(f"receive: {exc.strerror}")
                    return
                raise
            st.rx_frames += 1
            rcv = self._receiver
            if rcv is None:
                st.rx_drops += 1
                continue
            frame = view[:n].tobytes()
            if anc and anc[0][2][0] & TP_STATUS_VLAN_VALID:  # tp_status's low byte
                frame = with_vlan_tag(frame, anc)
            st.rx_bytes += len(frame)
            rcv(frame)

    def send(self, frame: bytes) -> bool:
        if self.down:
            self.stats.tx_drops += 1
            self.last_failure = "port is down"
            return False
        try:
            self.sock.send(frame)
        except (BlockingIOError, InterruptedError):
            self.stats.tx_drops += 1
            self.last_failure = "send queue full"
            return False
        except OSError as exc:
            self.stats.tx_drops += 1
            self.last_failure = exc.strerror or str(exc)
            if exc.errno in _IFACE_GONE:
                self._mark_down(f"send: {exc.strerror}")
            elif exc.errno != errno.ENOBUFS:
                # Any other refusal (EMSGSIZE: a frame beyond the MTU) drops this frame
                # only; the port and the switch go on.
                self._send_error(exc, len(frame))
            return False
        self.stats.tx_frames += 1
        self.stats.tx_bytes += len(frame)
        return True

    def _send_error(self, exc: OSError, size: int) -> None:
        self.last_error = f"{exc.strerror} (frame of {size} bytes)"
        if exc.errno not in self._errors_seen:
            self._errors_seen.add(exc.errno or 0)
            log.warning("port %s: send failed: %s; such frames are dropped and counted",
                        self.iface, self.last_error)

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

    def _mark_down(self, why: str) -> None:
        if self.down:
            return
        self.down = True
        self.clock.remove_reader(self.sock.fileno())
        if self._closed:
            return
        cb = self.on_state
        if cb is not None:
            cb(False, why)
        self._poll = self.clock.call_later(self.POLL_NS, self._check_up)

    def _check_up(self) -> None:
        """While down: is an interface of our name up again? Then re-bind and resume."""
        self._poll = None
        if self._closed or not self.down:
            return
        try:
            flags = struct.unpack_from("H", fcntl.ioctl(
                self.sock.fileno(), SIOCGIFFLAGS,
                struct.pack("16s16x", self.iface.encode())), 16)[0]
            up = bool(flags & IFF_UP)
            if up:
                old = self.ifindex
                self.ifindex = self._bind(self.sock)  # a re-created interface: a new index
                self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)  # clear ENETDOWN
                why = "re-created" if self.ifindex != old else "up again"
        except OSError:
            up = False  # still gone
        if not up:
            self._poll = self.clock.call_later(self.POLL_NS, self._check_up)
            return
        self.down = False
        self.clock.add_reader(self.sock.fileno(), self._on_readable)
        cb = self.on_state
        if cb is not None:
            cb(True, why)
        self._on_readable()  # frames that arrived meanwhile

    def close(self) -> None:
        super().close()
        if not self.down:
            self.kernel_drops()
        self._closed = True
        self._mark_down("closed")
        poll = self._poll
        if poll is not None:
            poll.cancel()  # type: ignore[attr-defined]
        self.sock.close()


def with_vlan_tag(frame: bytes, anc: list[tuple[int, int, bytes]]) -> bytes:
    """Put back the 802.1Q tag the kernel took out of `frame` (PACKET_AUXDATA)."""
    for level, typ, data in anc:
        if level == SOL_PACKET and typ == PACKET_AUXDATA and len(data) >= _AUX.size:
            status, _l, _s, _m, _n, tci, tpid = _AUX.unpack_from(data)
            if status & TP_STATUS_VLAN_VALID and len(frame) >= 12:
                if not status & TP_STATUS_VLAN_TPID_VALID:
                    tpid = ETH_P_8021Q
                return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
    return frame


class DelayedPort(FramePort):
    """A port whose transmissions reach the wire `delay_ns` later: a link's propagation
    delay in the one direction nothing else emulates (a Mininet host's link towards its
    switch: the switch daemon delays only what it sends). Reception is unchanged.

    With `rate_bps`, a frame also takes its serialisation time (frame + overhead_bytes
    at that rate, one frame after another) before it is all on the wire, as on a
    MemLink: a veth hands it over at once, so without this every frame would reach the
    switch a frame time earlier in real time than in virtual time."""

    def __init__(self, clock: Clock, lower: FramePort, delay_ns: int,
                 rate_bps: float | None = None, overhead_bytes: int = 0) -> None:
        super().__init__(lower.name)
        self.lower = lower
        self.delay_ns = delay_ns
        self.stats = lower.stats  # what the wire saw
        self._clock = clock
        self._ns_per_byte = 8e9 / rate_bps if rate_bps else 0.0
        self._overhead = overhead_bytes
        self._free_ns = 0  # when the transmitter has sent the last frame's last bit
        lower.set_receiver(self._deliver)

    def send(self, frame: bytes) -> bool:
        now = self._clock.now_ns()
        done = now
        if self._ns_per_byte:
            done = max(now, self._free_ns) + int((len(frame) + self._overhead)
                                                 * self._ns_per_byte)
            self._free_ns = done
        self._clock.call_at(done + self.delay_ns, functools.partial(self._send_now, frame))
        return True

    def _send_now(self, frame: bytes) -> None:
        self.lower.send(frame)  # a refusal is counted in the lower port's stats

    def kernel_drops(self) -> int:
        drops = getattr(self.lower, "kernel_drops", None)
        return int(drops()) if drops is not None else 0

    def close(self) -> None:
        super().close()
        self.lower.close()


class _MemPort(FramePort):
    def __init__(self, name: str, link: MemLink, direction: _Direction) -> None:
        super().__init__(name)
        self._link = link
        self._dir = direction
        # Bound once: send() runs once per frame on every link of a virtual run.
        self._now_ns = link.clock.now_ns
        self._schedule_at = link.clock.schedule_at

    def send(self, frame: bytes) -> bool:
        # _Direction.transmit inlined: once per frame sent on every link of a virtual run.
        d = self._dir
        link = d.link
        st = self.stats
        if not link.up:
            st.tx_drops += 1
            return False
        now = self._now_ns()
        depth = link.queue_depth_pkts
        if depth is not None:
            # in_flight is kept only for this check (a link's depth is fixed at creation).
            q = d.in_flight
            while q and q[0] <= now:
                q.popleft()
            if len(q) >= depth:
                st.tx_drops += 1
                return False
        start = d.busy_until_ns
        if start < now:
            start = now
        n = len(frame)
        rate = link.rate_bps  # serialisation_ns inlined
        end = start if rate is None else start + (n + link.overhead_bytes) * 8_000_000_000 // rate
        d.busy_until_ns = end
        if depth is not None:
            d.in_flight.append(end)
        at = end + link.delay_ns
        if link.jitter_ns:
            at += link.rng.randint(0, link.jitter_ns)
            if at < d.last_arrival_ns:
                at = d.last_arrival_ns
            d.last_arrival_ns = at
        self._schedule_at(at, _partial(d.arrive, frame))
        st.tx_frames += 1
        st.tx_bytes += n
        return True


class _Direction:
    """One direction of a MemLink: a FIFO transmitter with a rate and a delay (its
    sending side is _MemPort.send)."""

    def __init__(self, link: MemLink) -> None:
        self.link = link
        self.arrive = self._arrive  # bound once, not per frame sent
        self.dst: _MemPort | None = None
        self.busy_until_ns = 0
        self.last_arrival_ns = 0  # with jitter: no frame overtakes the one ahead
        # End-of-serialisation times of frames not yet fully sent, for the backlog.
        self.in_flight: collections.deque[int] = collections.deque()

    def _arrive(self, frame: bytes) -> None:
        if self.link.up:
            dst = self.dst
            assert dst is not None
            dst._deliver(frame)


class MemLink:
    """An in-memory point-to-point link with two ports, `a` and `b`.

    Each direction serialises frames at `rate_bps` (None: infinitely fast), then
    delays them by `delay_ns`; with `queue_depth_pkts` set, a frame that finds
    that many frames waiting to be serialised is tail-dropped.

    `jitter_ns`: each frame arrives up to that much later again, drawn uniformly from
    `rng` (never before the frame ahead of it: the link stays FIFO). Real NICs and
    switches have such timing noise; a model without any keeps periodic senders in
    lockstep, so which of them a full queue drops repeats (phase effects).
    """

    def __init__(self, clock: Clock, *, rate_bps: int | None = None, delay_ns: int = 0,
                 queue_depth_pkts: int | None = None, overhead_bytes: int = 0,
                 names: tuple[str, str] = ("a", "b"), jitter_ns: int = 0,
                 rng: random.Random | None = None) -> None:
        if rate_bps is not None and rate_bps <= 0:
            raise ValueError("rate_bps must be positive")
        if delay_ns < 0 or jitter_ns < 0:
            raise ValueError("delay_ns and jitter_ns must not be negative")
        self.clock = clock
        self.rate_bps = rate_bps
        self.delay_ns = delay_ns
        self.jitter_ns = jitter_ns
        self.rng = rng if rng is not None else random.Random(0)
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

