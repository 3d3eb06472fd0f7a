"""Fixtures: switch daemons on veths in network namespaces, host ports to talk to them.

Topology per test: namespace `sw` holds the switch's interfaces; `h1`, `h2`
each hold one host end. The daemon runs as a subprocess in the root namespace
with `--port-netns sw` and serves P4Runtime on a unix socket. Everything is
removed afterwards, even on failure: processes by pid, namespaces by name.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from emu.core import netns

REPO = Path(__file__).resolve().parents[2]
P4DIR = Path(__file__).parent / "p4"
ECMP_P4INFO = P4DIR / "ecmp_ecn.p4info.txtpb"
PY = sys.executable
ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35
_TS = struct.Struct("qq")
_ANC = socket.CMSG_SPACE(_TS.size)


class HostPort:
    """A raw AF_PACKET socket on a host's interface (inside its namespace)."""

    def __init__(self, ns: str, iface: str) -> None:
        with netns.inside(ns):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((iface, 0))
        s.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        # Kernel receive stamps: arrival times do not depend on when this process runs.
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.setblocking(False)
        self.sock = s

    def send(self, frame: bytes) -> None:
        while True:
            try:
                self.sock.send(frame)
                return
            except BlockingIOError:
                select.select([], [self.sock], [], 0.1)

    def recv(self, count: int, timeout: float,
             keep: Callable[[bytes], bool] = lambda f: f[12:14] == b"\x08\x00"
             ) -> list[tuple[float, bytes]]:
        """Up to `count` frames that pass `keep`, with their arrival times (seconds on
        time.time()'s clock, stamped by the kernel)."""
        out: list[tuple[float, bytes]] = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                break
            while len(out) < count:
                try:
                    f, anc, _fl, _ad = self.sock.recvmsg(65536, _ANC)
                except BlockingIOError:
                    break
                if keep(f):
                    t = time.time()
                    for level, typ, data in anc:
                        if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                            sec, nsec = _TS.unpack(data[:_TS.size])
                            t = sec + nsec / 1e9
                    out.append((t, f))
        return out

    def drain(self) -> None:
        while True:
            try:
                self.sock.recv(65536)
            except BlockingIOError:
                return

    def close(self) -> None:
        self.sock.close()


@dataclass
class Topo:
    tag: str
    sw_ns: str
    hosts: dict[int, tuple[str, str]]  # port -> (host ns, host iface)
    sw_ifaces: dict[int, str]
    tmp: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    ports: list[HostPort] = field(default_factory=list)

    def host(self, port: int) -> HostPort:
        ns, iface = self.hosts[port]
        hp = HostPort(ns, iface)
        self.ports.append(hp)
        return hp

    @property
    def grpc_addr(self) -> str:
        return f"unix:{self.tmp}/p4rt.sock"

    @property
    def admin_path(self) -> str:
        return str(self.tmp / "admin.sock")

    def start_switch(self, *extra: str, device_id: int = 1, no_p4: bool = True,
                     timeout: float = 20.0, ports: list[int] | None = None
                     ) -> subprocess.Popen[bytes]:
        ready = self.tmp / "ready.json"
        args = [PY, "-m", "emu.switch", "--device-id", str(device_id),
                "--port-netns", self.sw_ns, "--grpc-addr", self.grpc_addr,
                "--admin-socket", self.admin_path, "--ready-file", str(ready),
                "--cpu-port", "255",
                "--log-file", str(self.tmp / "switch.log")]
        for num, iface in sorted(self.sw_ifaces.items()):
            if ports is None or num in ports:
                args += ["-i", f"{num}@{iface}"]
        args += list(extra)
        if no_p4:
            args.append("--no-p4")
        p = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.procs.append(p)
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if p.poll() is not None:
                raise AssertionError(f"switch exited {p.returncode}: "
                                     f"{p.stderr.read().decode() if p.stderr else ''}")
            if time.monotonic() > deadline:
                raise AssertionError("switch did not become ready")
            time.sleep(0.02)
        info = json.loads(ready.read_text())
        assert info["pid"] == p.pid
        return p

    def stop_switch(self, p: subprocess.Popen[bytes], timeout: float = 10.0) -> tuple[int, str]:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
            raise AssertionError("switch ignored SIGTERM") from None
        err = p.stderr.read().decode() if p.stderr else ""
        return p.returncode, err


def _veth(a: str, ns_a: str, b: str, ns_b: str) -> None:
    subprocess.run(["ip", "link", "add", a, "netns", ns_a, "type", "veth", "peer", "name", b,
                    "netns", ns_b], check=True, capture_output=True)
    for ns, ifc in ((ns_a, a), (ns_b, b)):
        # No IPv6 chatter (router solicitations, DAD) on the test links.
        netns.run(ns, "sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1", check=False)
        netns.run(ns, "ip", "link", "set", ifc, "up")


@pytest.fixture
def topo(tmp_path: Path) -> Iterator[Callable[[int], Topo]]:
    made: list[Topo] = []

    def make(nports: int = 2) -> Topo:
        tag = uuid.uuid4().hex[:6]
        sw_ns = f"emusw-{tag}"
        netns.add(sw_ns)
        t = Topo(tag, sw_ns, {}, {}, tmp_path)
        made.append(t)
        for i in range(1, nports + 1):
            hns = f"emuh{i}-{tag}"
            netns.add(hns)
            sw_if, h_if = f"s{tag}e{i}", f"h{tag}e{i}"
            _veth(sw_if, sw_ns, h_if, hns)
            t.hosts[i] = (hns, h_if)
            t.sw_ifaces[i] = sw_if
        return t

    try:
        yield make
    finally:
        for t in made:
            for p in t.procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(5)
                for s in (p.stdout, p.stderr):
                    if s is not None:
                        s.close()
            for hp in t.ports:
                hp.close()
            for hns, _ in t.hosts.values():
                netns.delete(hns)
            netns.delete(t.sw_ns)
            for f in ("p4rt.sock", "admin.sock"):
                try:
                    os.unlink(t.tmp / f)
                except OSError:
                    pass


# ------------------------------------------------------------------ frames

SW_MAC = bytes.fromhex("020000000a01")
H1_MAC = bytes.fromhex("020000000001")


def ipv4_udp(src: str, dst: str, sport: int, dport: int, size: int = 128, ecn: int = 0,
             ttl: int = 64, seq: int = 0) -> bytes:
    """Ethernet/IPv4/UDP frame of `size` bytes with a valid IPv4 checksum."""
    import struct

    from emu.p4.v1model.hashes import csum16

    payload_len = size - 14 - 20 - 8
    body = seq.to_bytes(4, "big") + bytes(max(0, payload_len - 4))
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20 + 8 + len(body), seq & 0xFFFF,
                               0, ttl, 17, 0, socket.inet_aton(src), socket.inet_aton(dst)))
    c = csum16(bytes(ip))
    ip[10:12] = c.to_bytes(2, "big")
    udp = struct.pack("!HHHH", sport, dport, 8 + len(body), 0)
    return SW_MAC + H1_MAC + b"\x08\x00" + bytes(ip) + udp + body
