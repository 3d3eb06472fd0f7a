"""AfPacketPort on a real veth pair between two namespaces."""

from __future__ import annotations

import subprocess

from emu.core import AfPacketPort, RealClock, netns
from tests.conftest import needs_root

pytestmark = needs_root


def _frame(i: int, size: int = 200) -> bytes:
    # Locally administered unicast MACs; an experimental EtherType.
    hdr = bytes.fromhex("020000000002" "020000000001" "88b5")
    body = i.to_bytes(4, "big")
    return hdr + body + bytes(size - len(hdr) - len(body))


def test_frames_cross_a_veth_in_order(veth_pair) -> None:  # type: ignore[no-untyped-def]
    ns_a, if_a, ns_b, if_b = veth_pair()
    clock = RealClock()
    with netns.inside(ns_a):
        pa = AfPacketPort(if_a, clock)
    with netns.inside(ns_b):
        pb = AfPacketPort(if_b, clock)
    got: list[bytes] = []
    echoed: list[bytes] = []
    # Only our EtherType: the kernel may put a frame of its own on a fresh link (IPv6
    # neighbour discovery, MLD), which is not ours to count.
    pb.set_receiver(lambda f: got.append(f) if f[12:14] == b"\x88\xb5" else None)
    pa.set_receiver(lambda f: echoed.append(f) if f[12:14] == b"\x88\xb5" else None)
    n = 2000
    sent = 0

    def burst() -> None:
        nonlocal sent
        for _ in range(100):
            if sent < n and pa.send(_frame(sent)):
                sent += 1
        if sent < n:
            clock.call_later(200_000, burst)

    clock.call_soon(burst)
    clock.run(until=lambda: len(got) >= n, timeout_s=20)
    try:
        assert len(got) == n
        assert [int.from_bytes(f[14:18], "big") for f in got] == list(range(n))
        assert got[5] == _frame(5)
        assert echoed == []
        assert pb.kernel_drops() == 0
        assert pa.stats.tx_frames == n and pb.stats.rx_frames >= n
    finally:
        pa.close()
        pb.close()
        clock.close()


def test_interface_removal_is_not_an_error(veth_pair) -> None:  # type: ignore[no-untyped-def]
    ns_a, if_a, ns_b, _ = veth_pair()
    clock = RealClock()
    with netns.inside(ns_a):
        pa = AfPacketPort(if_a, clock)
    try:
        assert pa.send(_frame(0))
        netns.run(ns_a, "ip", "link", "del", if_a)
        clock.run(timeout_s=0.2)  # the reactor sees ENETDOWN and drops the reader quietly
        assert pa.send(_frame(1)) is False
        assert pa.stats.tx_drops >= 1
    finally:
        pa.close()
        clock.close()
    # Deleting one end of a veth removes its peer: nothing is left behind.
    out = subprocess.run(["ip", "netns", "exec", ns_b, "ip", "-o", "link", "show"],
                         capture_output=True, text=True, check=True).stdout
    assert [ln.split(":")[1].strip() for ln in out.splitlines()] == ["lo"]
