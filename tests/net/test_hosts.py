"""Host and switch-interface configuration, read back from the kernel.

The switches here are the `sleep` stand-in: these tests are about what the
network layer configures (addresses, routes, neighbours, MTU, offloads, htb,
IPv6), not about forwarding.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from emu.core.runstate import RunState
from emu.net import EmuNet
from emu.topo import load_topology

from .conftest import Snapshot, needs_mininet
from .helpers import LOCK_WAIT_S
from .standin import PIPELINE, SleepTarget

pytestmark = [needs_mininet, pytest.mark.timeout(60)]

FABRIC = load_topology("leafspine2")


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmuNet]:
    base = tmp_path_factory.mktemp("hosts")
    before = Snapshot.take()
    state = RunState.begin(base / "run", directory=base / "state", lock_timeout_s=LOCK_WAIT_S)
    n = EmuNet(FABRIC, SleepTarget(), base / "run", pipeline=PIPELINE, state=state)
    try:
        with n:
            yield n
    finally:
        state.finish()
        before.assert_clean()


def in_host(net: EmuNet, host: str, *cmd: str) -> str:
    out, err, code = net.host(host).pexec(list(cmd))
    assert code == 0, f"{cmd}: {err}"
    return str(out)


def test_addresses_routes_and_gateway_neighbour(net: EmuNet) -> None:
    for h in FABRIC.hosts:
        addrs = json.loads(in_host(net, h.name, "ip", "-j", "addr", "show", "dev", h.intf))
        (dev,) = addrs
        assert dev["address"] == h.mac
        assert dev["mtu"] == h.mtu
        assert "UP" in dev["flags"]
        inet = [(a["local"], a["prefixlen"]) for a in dev["addr_info"] if a["family"] == "inet"]
        assert inet == [(str(h.ip), h.subnet.prefixlen)]
        # No IPv6 at all: no link-local address, so no router solicitations.
        assert [a for a in dev["addr_info"] if a["family"] == "inet6"] == []
        routes = json.loads(in_host(net, h.name, "ip", "-j", "route", "show"))
        assert {"dst": "default", "gateway": str(h.gateway), "dev": h.intf} in [
            {k: r.get(k) for k in ("dst", "gateway", "dev")} for r in routes]
        # Own subnet too goes through the gateway: no on-link /24 route.
        assert not [r for r in routes if r["dst"] == str(h.subnet)]
        got = in_host(net, h.name, "ip", "route", "get", str(FABRIC.hosts[0].ip if
                                                                 h is not FABRIC.hosts[0]
                                                                 else FABRIC.hosts[1].ip))
        assert f"via {h.gateway}" in got
        neigh = in_host(net, h.name, "ip", "neigh", "show", str(h.gateway), "dev", h.intf)
        assert h.gateway_mac.lower() in neigh.lower() and "PERMANENT" in neigh


def test_offloads_off_on_host_and_switch_interfaces(net: EmuNet) -> None:
    def checksums(text: str) -> dict[str, str]:
        return dict(re.findall(r"^(rx-checksumming|tx-checksumming): (\w+)", text, re.M))

    for h in FABRIC.hosts:
        assert checksums(in_host(net, h.name, "ethtool", "-k", h.intf)) == {
            "rx-checksumming": "off", "tx-checksumming": "off"}
    for sw in FABRIC.switches:
        for p in sw.ports:
            out = subprocess.run(["ethtool", "-k", p.intf], capture_output=True,
                                 text=True).stdout
            assert checksums(out) == {"rx-checksumming": "off", "tx-checksumming": "off"}


def test_htb_class_has_the_link_rate(net: EmuNet) -> None:
    for h in FABRIC.hosts:
        rate = next(link.rate_bps for link in FABRIC.links if link.index == h.link)
        qdisc = in_host(net, h.name, "tc", "qdisc", "show", "dev", h.intf)
        assert re.search(r"qdisc htb 1: root .*default 0?x?1\b", qdisc), qdisc
        classes = in_host(net, h.name, "tc", "class", "show", "dev", h.intf)
        m = re.search(r"class htb 1:1 root .*rate (\S+) ceil (\S+)", classes)
        assert m, classes
        assert bits(m.group(1)) == rate and bits(m.group(2)) == rate


def bits(text: str) -> int:
    """tc's rate notation ('20Mbit', '1500Kbit', '1Gbit') in bit/s."""
    m = re.fullmatch(r"([\d.]+)([KMG]?)bit", text)
    assert m, text
    return round(float(m.group(1)) * {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}[m.group(2)])


def test_switch_interfaces_up_with_fabric_mtu_and_no_ipv6(net: EmuNet) -> None:
    jumbo = max(h.mtu for h in FABRIC.hosts)
    for sw in FABRIC.switches:
        for p in sw.ports:
            (dev,) = json.loads(subprocess.run(["ip", "-j", "addr", "show", "dev", p.intf],
                                               capture_output=True, text=True).stdout)
            assert dev["address"] == p.mac
            assert dev["mtu"] == jumbo  # a 4200-byte frame from h4 crosses every switch
            assert "UP" in dev["flags"] and "LOWER_UP" in dev["flags"]
            assert dev["addr_info"] == []
            assert Path(f"/proc/sys/net/ipv6/conf/{p.intf}/disable_ipv6").read_text() == "1\n"


def test_veths_join_the_model_endpoints(net: EmuNet) -> None:
    switches = {s.name for s in FABRIC.switches}
    for link in FABRIC.links:
        for end, other in ((link.a, link.b), (link.b, link.a)):
            if end.node not in switches:
                continue
            (dev,) = json.loads(subprocess.run(
                ["ip", "-j", "-d", "link", "show", "dev", end.intf],
                capture_output=True, text=True).stdout)
            assert dev["linkinfo"]["info_kind"] == "veth"
            if other.node in switches:
                assert dev["link"] == other.intf  # peer in the root namespace too
            else:
                assert "link_netnsid" in dev  # peer in the host's namespace
                (peer,) = json.loads(in_host(net, other.node, "ip", "-j", "link", "show",
                                             "dev", other.intf))
                assert peer["address"] == net.host(other.node).model.mac


def test_switches_got_their_ports_queues_and_distinct_grpc_ports(net: EmuNet) -> None:
    addrs = net.grpc_addresses()
    assert set(addrs) == {s.name for s in FABRIC.switches}
    assert len(set(addrs.values())) == len(addrs)
    for s in FABRIC.switches:
        node = net.switch(s.name)
        assert node.process is not None and node.process.alive()
        spec = node.spec
        assert spec.device_id == s.device_id
        assert spec.ports == {p.number: p.intf for p in s.ports}
        for p in s.ports:
            link = next(li for li in FABRIC.links if li.index == p.link)
            q = spec.queues[p.number]
            assert (q.rate_bps, q.depth_pkts, q.delay_ns) == (p.rate_bps, p.depth_pkts,
                                                              link.delay_ns)


def test_everything_is_recorded(net: EmuNet) -> None:
    assert net.state is not None
    data = json.loads(net.state.path.read_text())
    roles = [p["role"] for p in data["processes"]]
    assert roles.count("host-shell") == len(FABRIC.hosts)
    assert roles.count("switch") == len(FABRIC.switches)
    assert all(p["start_time"] for p in data["processes"])
    names = {i["name"] for i in data["interfaces"]}
    assert names == {e.intf for link in FABRIC.links for e in (link.a, link.b)}
    assert {n["name"] for n in data["namespaces"]} == {h.name for h in FABRIC.hosts}
    assert {q["intf"] for q in data["qdiscs"]} == {h.intf for h in FABRIC.hosts}


def test_host_processes_are_recorded_and_ended(net: EmuNet) -> None:
    """Both end with the network (the fixture checks nothing is left): the recorded
    one by PID, the other found in h2's namespace."""
    net.host("h2").popen(["sleep", "600"])
    proc = net.popen("h1", ["sleep", "600"])
    assert net.state is not None
    assert proc.pid in [p["pid"] for p in net.state.data["processes"]]
    # it runs in h1's namespace
    assert in_host(net, "h1", "readlink", f"/proc/{proc.pid}/ns/net") == \
        in_host(net, "h1", "readlink", "/proc/self/ns/net")


def test_hosts_answer_roce_frames_with_no_icmp(net: EmuNet) -> None:
    """The agent reads RoCE frames through AF_PACKET and no socket has their UDP port:
    the host's kernel must not answer them with ICMP port unreachables, frames the
    modelled network does not have (they queued at the switch before RoCE frames and
    raised its queue depth, so real time marked other packets than virtual time)."""
    import socket
    import time

    from scapy.layers.inet import ICMP, IP
    from scapy.layers.l2 import Ether

    from emu.core.wire import ROCEV2_UDP_PORT
    from emu.sim.frames import udp_frame

    h1, h2 = FABRIC.hosts[0], FABRIC.hosts[1]
    link = next(li for li in FABRIC.links if li.index == h1.link)
    sw_end = link.b if link.a.node == h1.name else link.a
    sw_intf = next(p.intf for s in FABRIC.switches for p in s.ports
                   if s.name == sw_end.node and p.number == sw_end.port)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    try:
        sock.bind((sw_intf, 0))
        sock.settimeout(0.1)
        # An ACK-sized RoCE frame from h2, as the switch delivers it (gateway MAC as
        # source); the kernel's rate limit lets a burst of ICMP errors out at first, so
        # a few are enough. Then a ping, which must still be answered.
        for psn in range(3):
            sock.send(udp_frame(h1.gateway_mac, h1.mac, str(h2.ip), str(h1.ip), 49152,
                                ROCEV2_UDP_PORT, psn=psn))
        sock.send(bytes(Ether(src=h1.gateway_mac, dst=h1.mac)
                        / IP(src=str(h2.ip), dst=str(h1.ip)) / ICMP(id=7, seq=1) / bytes(32)))
        answers = []
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                frame, addr = sock.recvfrom(65535)
            except TimeoutError:
                continue
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            pkt = Ether(frame)
            if ICMP in pkt:
                answers.append(pkt[ICMP].type)  # 3: destination unreachable, 0: echo reply
    finally:
        sock.close()
    assert answers == [0]  # the echo reply alone
