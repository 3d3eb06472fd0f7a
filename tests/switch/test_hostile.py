"""The switch daemon against what broke it in issue #16: frames beyond the egress MTU,
links that fail and come back (or are re-created), VLAN-tagged frames, a launcher
that exits during the daemon's start-up."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import time
from collections.abc import Callable

import pytest

from emu.core import netns
from emu.runtime.admin import AdminClient
from emu.runtime.client import P4RuntimeClient
from emu.switch.pcap import read_pcap
from tests.conftest import needs_root

from .conftest import H1_MAC, PY, REPO, SW_MAC, Topo, _veth, ipv4_udp
from .test_daemon import _device_config, _p4info

pytestmark = [needs_root, pytest.mark.root, pytest.mark.timeout(180)]


def _program(c: P4RuntimeClient) -> None:
    c.set_pipeline(_p4info(), _device_config())
    c.insert_member("MyIngress.ecmp_selector", 1, "MyIngress.set_nhop",
                    {"dmac": 0x020000000002, "port": 2})
    c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000200, 24)}, member_id=1)


def _until(pred: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _log(t: Topo) -> str:
    return (t.tmp / "switch.log").read_text()


def test_frames_beyond_the_mtu_are_dropped_and_packet_out_gets_an_error(topo) -> None:  # type: ignore[no-untyped-def]
    t: Topo = topo(2)
    netns.run(t.sw_ns, "ip", "link", "set", t.sw_ifaces[2], "mtu", "1000")
    sw = t.start_switch()
    h1, h2 = t.host(1), t.host(2)
    c = P4RuntimeClient(t.grpc_addr, 1, (0, 1))
    admin = AdminClient(t.admin_path)
    try:
        _program(c)
        for _ in range(3):
            h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2, size=1400))
        _until(lambda: admin.drops().get("2", {}).get("tx", 0) >= 3, 10, "tx drops")
        assert sw.poll() is None
        h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2, size=200))
        assert len(h2.recv(1, 5)) == 1  # the switch still forwards
        # the same frame as a PacketOut: a StreamError naming it, and the stream stays open
        big = SW_MAC + H1_MAC + b"\x88\xb5" + bytes(1400)
        c.packet_out(big, egress_port=2)
        err = c.stream_errors.get(timeout=5)
        assert err.canonical_code == 3  # INVALID_ARGUMENT, not INTERNAL
        assert err.HasField("packet_out") and err.packet_out.packet_out.payload == big
        assert "too long" in err.message.lower()
        c.packet_out(SW_MAC + H1_MAC + b"\x88\xb5" + b"small", egress_port=2)
        assert len(h2.recv(1, 5, keep=lambda f: f[12:14] == b"\x88\xb5")) == 1
        assert sw.poll() is None
    finally:
        admin.close()
        c.close()
    rc, err = t.stop_switch(sw)
    assert rc == 0 and "Traceback" not in err
    assert _log(t).count("send failed") == 1  # logged once, counted always


def test_a_port_resumes_when_its_interface_comes_back(topo) -> None:  # type: ignore[no-untyped-def]
    t: Topo = topo(2)
    sw = t.start_switch()
    h1, h2 = t.host(1), t.host(2)
    c = P4RuntimeClient(t.grpc_addr, 1, (0, 1))
    admin = AdminClient(t.admin_path)
    sw_if = t.sw_ifaces[2]

    def down() -> bool:
        return bool(admin.stats()["ports"]["2"]["down"])

    def forwards(h: object) -> bool:
        h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2))
        return len(h.recv(1, 0.3)) == 1  # type: ignore[attr-defined]

    try:
        _program(c)
        assert forwards(h2)
        # `fail`: the interface goes down, then `restore`: up again
        netns.run(t.sw_ns, "ip", "link", "set", sw_if, "down")
        _until(lambda: forwards(h2) or down(), 10, "port 2 down")
        assert down()
        netns.run(t.sw_ns, "ip", "link", "set", sw_if, "up")
        _until(lambda: forwards(h2), 10, "forwarding on port 2 again")
        assert not down()
        # the interface disappears and is re-created under the same name
        netns.run(t.sw_ns, "ip", "link", "del", sw_if)
        _until(down, 10, "port 2 down after the delete")
        hns, hif = t.hosts[2]
        _veth(sw_if, t.sw_ns, hif, hns)
        h2b = t.host(2)
        _until(lambda: forwards(h2b), 10, "forwarding on the re-created port 2")
        assert not down() and sw.poll() is None
    finally:
        admin.close()
        c.close()
    rc, err = t.stop_switch(sw)
    assert rc == 0 and "Traceback" not in err
    log = _log(t)
    assert log.count(f"port 2 ({sw_if}) is down") == 2, log
    assert log.count(f"port 2 ({sw_if}) is up") == 2, log


def test_vlan_tags_reach_the_pipeline(topo) -> None:  # type: ignore[no-untyped-def]
    t: Topo = topo(2)
    sw = t.start_switch("--pcap", str(t.tmp / "pcap"))
    h1 = t.host(1)
    c = P4RuntimeClient(t.grpc_addr, 1, (0, 1))
    try:
        _program(c)
        plain = ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2)
        tagged = plain[:12] + struct.pack("!HH", 0x8100, (3 << 13) | 100) + plain[12:]
        qinq = plain[:12] + struct.pack("!HHHH", 0x88A8, 7, 0x8100, 100) + plain[12:]
        h1.send(tagged)
        h1.send(qinq)
        h1.send(plain)
        admin = AdminClient(t.admin_path)
        try:
            _until(lambda: admin.stats()["ports"]["1"]["rx_frames"] >= 3, 10, "3 frames in")
        finally:
            admin.close()
    finally:
        c.close()
    rc, _ = t.stop_switch(sw)
    assert rc == 0
    seen = read_pcap(str(t.tmp / "pcap" / f"{t.sw_ifaces[1]}_in.pcap"))
    # as on the wire, tags included (the pcap is what the pipeline was given)
    assert [f for f in seen if f[6:12] == H1_MAC] == [tagged, qinq, plain]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(ln.startswith("State:") and "Z" in ln.split()[1] for ln in f)
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("explicit", [False, True])
def test_a_launcher_that_exits_during_start_up_stops_the_switch(topo, explicit: bool  # type: ignore[no-untyped-def]
                                                                ) -> None:
    t: Topo = topo(1)
    args = [PY, "-m", "emu.switch", "--device-id", "5", "--port-netns", t.sw_ns,
            "-i", f"1@{t.sw_ifaces[1]}", "--grpc-addr", f"unix:{t.tmp}/p5.sock", "--no-p4"]
    # With --parent-pid the launcher may exit at once; without, it exits while the
    # daemon still imports its modules (they take about 0.5 s).
    code = ("import os, subprocess, sys, time\n"
            f"args = {args!r}\n"
            f"if {explicit!r}: args += ['--parent-pid', str(os.getpid())]\n"
            "p = subprocess.Popen(args)\n"
            "print(p.pid, flush=True)\n"
            f"time.sleep({0.0 if explicit else 0.2})\n")
    parent = subprocess.Popen([PY, "-c", code], cwd=REPO, stdout=subprocess.PIPE)
    t.procs.append(parent)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert parent.wait(10) == 0
    deadline = time.monotonic() + 20
    while _alive(child):
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
            raise AssertionError("the switch outlived a launcher that exited during its start")
        time.sleep(0.05)


def test_fabric_packet_in_and_out_through_p4runtime_shell(topo) -> None:  # type: ignore[no-untyped-def]
    """fabric.p4's controller headers, as a standard client uses them."""
    from .test_daemon import _read_json_line

    t: Topo = topo(2)
    sw = t.start_switch(str(REPO / "p4src" / "fabric.p4"), no_p4=False, timeout=120)
    h1, h2 = t.host(1), t.host(2)
    cli = subprocess.Popen([PY, str(REPO / "tests" / "switch" / "p4rt_shell_fabric.py"),
                            t.grpc_addr, "1"], cwd=REPO, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t.procs.append(cli)
    assert _read_json_line(cli, 60) == {"step": "installed"}
    punted = ipv4_udp("10.0.1.1", "10.0.9.9", 1234, 4791)
    h1.send(punted)
    assert cli.stdin is not None
    cli.stdin.write(b"go\n")
    cli.stdin.flush()
    pin = _read_json_line(cli, 20)["packet_in"]
    assert [bytes.fromhex(p["payload"]) for p in pin] == [punted]  # as it came in
    assert pin[0]["md"] == {"1": "01", "2": "00"}  # ingress_port 1, pad 0
    assert _read_json_line(cli, 10) == {"step": "sent"}
    got = h2.recv(1, 10, keep=lambda f: f[12:14] == b"\x88\xb5")
    assert [f for _, f in got] == [bytes.fromhex("ffffffffffff020000000003" "88b5")
                                   + b"fabric-out"]
    assert _read_json_line(cli, 10) == {"step": "done"}
    assert cli.wait(10) == 0
    rc, err = t.stop_switch(sw)
    assert rc == 0 and "Traceback" not in err


# Each was accepted before, or answered with a bare Python error after changing part of
# the port's settings: 1e-300 b/s was "no limit" to the traffic manager and an overflow
# in the port's sender (every later frame lost); priority -1 set the last queue's depth;
# a NaN delay was stored, then failed; port 999 configured a queue no frame uses.
_BAD_ADMIN = [
    ('{"cmd":"set_queue_rate","port":2,"rate_bps":1e-300}', "below 1"),
    ('{"cmd":"set_queue_rate","port":2,"rate_pps":0.4}', "below 1"),
    ('{"cmd":"set_queue_rate","port":2,"rate_bps":NaN}', "rate_bps must be a number"),
    ('{"cmd":"set_queue_rate","port":2,"rate_bps":Infinity}', "rate_bps must be a number"),
    ('{"cmd":"set_queue_rate","port":2,"rate_bps":true}', "rate_bps must be a number"),
    ('{"cmd":"set_queue_rate","port":999,"rate_pps":1000}', "no port 999"),
    ('{"cmd":"set_queue_depth","port":2,"depth_pkts":5,"priority":-1}', "priority"),
    ('{"cmd":"set_queue_depth","port":2,"depth_pkts":5,"priority":99}', "priority 99"),
    ('{"cmd":"set_queue_depth","port":2,"depth_pkts":5,"priority":"x"}', "priority"),
    ('{"cmd":"set_link_delay","port":2,"delay_us":NaN}', "delay_us must be a number"),
    ('{"cmd":"set_link_delay","port":2,"delay_us":1e300}', "delay_us must be a number"),
    ('{"cmd":"set_link_delay","port":2}', "delay_us must be a number"),
    ('{"cmd":"get_port_config","port":999}', "no port 999"),
]


def _admin_line(path: str, line: bytes) -> dict[str, object]:
    import json
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(line + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            assert chunk, "the switch closed the admin connection"
            buf += chunk

    def strict(name: str) -> object:
        raise AssertionError(f"reply is not strict JSON: {name}")
    reply: dict[str, object] = json.loads(buf, parse_constant=strict)
    return reply


def test_bad_admin_requests_are_refused_and_change_nothing(topo) -> None:  # type: ignore[no-untyped-def]
    t: Topo = topo(2)
    sw = t.start_switch()
    h1, h2 = t.host(1), t.host(2)
    c = P4RuntimeClient(t.grpc_addr, 1, (0, 1))
    try:
        _program(c)
        before = _admin_line(t.admin_path, b'{"cmd":"get_port_config","port":2}')["result"]
        for line, why in _BAD_ADMIN:
            reply = _admin_line(t.admin_path, line.encode())
            assert reply["ok"] is False and why in str(reply["error"]), (line, reply)
        # an id that JSON cannot echo strictly still gets a strict reply
        assert _admin_line(t.admin_path, b'{"id":NaN,"cmd":"nope"}')["id"] is None
        after = _admin_line(t.admin_path, b'{"cmd":"get_port_config","port":2}')["result"]
        assert isinstance(before, dict) and isinstance(after, dict)
        assert {k: after[k] for k in ("delay_us", "depths_pkts", "rate_bps", "rate_pps")} \
            == {k: before[k] for k in ("delay_us", "depths_pkts", "rate_bps", "rate_pps")}
        for i in range(5):
            h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 5000, 4791, seq=i))
        assert len(h2.recv(5, 5)) == 5  # the port forwards as before
    finally:
        c.close()
    rc, err = t.stop_switch(sw)
    assert rc == 0 and "Traceback" not in err, err
