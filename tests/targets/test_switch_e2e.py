"""One switch of each target present, end to end: compile, start on a veth pair in
namespaces, wait_ready, push the pipeline over P4Runtime, forward a frame, read a
register the target's own way, change a queue, stop with nothing left behind."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from emu.core import netns
from emu.targets import PortQueueConfig, SpecError, SwitchSpec, Unsupported
from emu.targets.base import load_p4info

from ..conftest import needs_root
from .conftest import PORTFWD, pid_gone
from .params import requires_bmv2

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def ipv4_frame(ttl: int = 64) -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8, 1, 0, ttl, 17, 0,
                     bytes([10, 0, 1, 1]), bytes([10, 0, 2, 1]))
    csum = checksum(ip)
    ip = ip[:10] + struct.pack("!H", csum) + ip[12:]
    udp = struct.pack("!HHHH", 49152, 4791, 8, 0)
    return bytes.fromhex("020000000002" "020000000001" "0800") + ip + udp + bytes(18)


def checksum(data: bytes) -> int:
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@contextlib.contextmanager
def raw_socket(ns: str, iface: str) -> Iterator[socket.socket]:
    with netns.inside(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        s.bind((iface, 0))
        yield s
    finally:
        s.close()


def receive(s: socket.socket, timeout_s: float) -> bytes | None:
    """The next frame arriving on `s` (not one it sent), or None."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        r, _, _ = select.select([s], [], [], left)
        if r:
            data, addr = s.recvfrom(65535)
            if addr[2] != PACKET_OUTGOING:
                return data
    return None


def test_p4info_loading_formats(tmp_path):
    from google.protobuf import json_format
    from p4.config.v1 import p4info_pb2

    text = tmp_path / "x.p4info.txtpb"
    text.write_text('pkg_info { arch: "v1model" }\n'
                    'tables { preamble { id: 33554433 name: "Ing.port_map" alias: "port_map" }\n'
                    '  match_fields { id: 1 name: "sm.ingress_port" bitwidth: 9 match_type: EXACT }\n'
                    '  size: 16 }\n')
    info = load_p4info(text)
    assert info.pkg_info.arch == "v1model"
    assert info.tables[0].match_fields[0].match_type == p4info_pb2.MatchField.EXACT
    binary = tmp_path / "x.p4info.bin"
    binary.write_bytes(info.SerializeToString())
    assert load_p4info(binary) == info
    js = tmp_path / "x.p4info.json"
    js.write_text(json_format.MessageToJson(info))
    assert load_p4info(js) == info
    bad = tmp_path / "bad.txtpb"
    bad.write_text("tables { nonsense: 1 }\n")
    with pytest.raises(ValueError, match="not a P4Info"):
        load_p4info(bad)


def test_compile_portfwd(target, tmp_path):
    pipe = target.compile(PORTFWD, tmp_path / "build")
    info = pipe.load_p4info()
    assert [t.preamble.name for t in info.tables] == ["Ing.port_map"]
    assert [r.preamble.name for r in info.registers] == ["Ing.rx_packets"]
    assert pipe.device_config()
    with pytest.raises(FileNotFoundError):
        target.compile(tmp_path / "absent.p4", tmp_path / "build")


def test_compile_fabric_p4(target, tmp_path):
    from emu.p4.frontend.diagnostics import P4Error

    try:
        pipe = target.compile(P4SRC / "fabric.p4", tmp_path / "build")
    except P4Error as exc:
        if target.name == "embedded" and "not supported by the embedded" in str(exc):
            pytest.skip(f"the embedded compiler cannot lower fabric.p4 yet: {exc}")
        raise
    names = {t.preamble.name for t in pipe.load_p4info().tables}
    assert "FabricIngress.routing.ipv4_lpm" in names


@needs_root
def test_switch_forwards_reads_registers_and_stops(target, switches, veth_pair, tmp_path):
    from emu.runtime.client import P4RuntimeClient

    ns_a, if_a, ns_b, if_b = veth_pair()
    for ns in (ns_a, ns_b):  # no IPv6 chatter (router solicitations) through the switch
        netns.run(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
    pipe = target.compile(PORTFWD, tmp_path / "build")
    sockdir = tempfile.mkdtemp(prefix="emut-")  # unix socket paths must stay short
    try:
        grpc_addr = f"unix:{sockdir}/p4rt.sock"
        spec = SwitchSpec("s1", 1, {1: if_a}, grpc_addr, netns=ns_a,
                          queues={1: PortQueueConfig(depth_pkts=64)}, pcap_dir=tmp_path / "pcap")
        p = switches(target, spec, pipe)
        t0 = time.monotonic()
        p.wait_ready(60)
        assert time.monotonic() - t0 < 60
        assert p.alive()
        with contextlib.closing(P4RuntimeClient(grpc_addr, 1)) as c:
            assert c.is_primary
            c.set_pipeline(pipe.load_p4info(), pipe.device_config())
            c.insert_entry("Ing.port_map", {"sm.ingress_port": 1}, "Ing.forward", {"port": 1})
        sent = ipv4_frame(ttl=64)
        with raw_socket(ns_b, if_b) as s:
            s.send(sent)
            got = receive(s, 5.0)
        assert got is not None, "the switch sent nothing back"
        assert got[:14] == sent[:14]
        assert got[14 + 8] == 63  # TTL decremented
        assert checksum(got[14:34]) == 0  # header checksum recomputed
        assert got[34:len(sent)] == sent[34:]
        assert p.read_register("Ing.rx_packets", 1) >= 1
        # Every target refuses the same changes before touching the switch.
        with pytest.raises(SpecError, match="has no port 7"):
            p.set_queue(7, PortQueueConfig())
        with pytest.raises(Unsupported, match="fixed at start"):
            p.set_queue(1, PortQueueConfig(priority_queues=4))
        if target.capabilities["link_delay"] and target.name == "embedded":
            p.set_queue(1, PortQueueConfig(rate_bps=10_000_000, depth_pkts=16, delay_ns=3000))
            cfg = p.port_config(1)  # type: ignore[attr-defined]
            assert cfg["rate_bps"] == 10_000_000 and cfg["depths_pkts"] == [16]
            assert cfg["delay_us"] == 3.0
        elif target.capabilities["link_delay"]:  # BMv2 with netem: the delay is a qdisc
            p.set_queue(1, PortQueueConfig(rate_bps=10_000_000, depth_pkts=16, delay_ns=3000))
            qd = subprocess.run(["tc", "-n", p.spec.netns, "qdisc", "show", "dev",
                                 p.spec.ports[1]], capture_output=True, text=True).stdout
            assert "netem" in qd and "delay 3us" in qd
            p.set_queue(1, PortQueueConfig(rate_bps=10_000_000, depth_pkts=16))
            qd = subprocess.run(["tc", "-n", p.spec.netns, "qdisc", "show", "dev",
                                 p.spec.ports[1]], capture_output=True, text=True).stdout
            assert "netem" not in qd
        else:
            with pytest.raises(Unsupported):
                p.set_queue(1, PortQueueConfig(delay_ns=3000))
            p.set_queue(1, PortQueueConfig(rate_bps=10_000_000, depth_pkts=16))
        pid = p.pid
        p.stop()
        assert not p.alive() and pid_gone(pid)
        assert not os.path.exists(f"{sockdir}/p4rt.sock")
        admin = getattr(p, "admin_socket", None)
        assert admin is None or not os.path.exists(admin)
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


@needs_root
def test_embedded_daemon_dies_with_its_parent(tmp_path):
    """The process that started a switch is killed with SIGKILL: the switch goes too."""
    import signal
    import sys
    import textwrap

    from .params import missing_reason

    if missing_reason("embedded"):
        pytest.skip(missing_reason("embedded") or "")
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from emu.targets import SwitchSpec, get_target
        from emu.targets.proc import free_tcp_port
        t = get_target("embedded")
        pipe = t.compile(Path({str(PORTFWD)!r}), Path({str(tmp_path / 'build')!r}))
        p = t.start(SwitchSpec("s1", 1, {{1: "lo"}}, f"127.0.0.1:{{free_tcp_port()}}"), pipe)
        p.wait_ready(60)
        print(p.pid, flush=True)
        time.sleep(120)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=str(Path(__file__).resolve().parents[2]))
    child = 0
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line.strip().isdigit(), "the parent did not start the switch"
        child = int(line)
        assert not pid_gone(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(5)
        deadline = time.monotonic() + 10
        while not pid_gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid_gone(child), "the embedded switch outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child and not pid_gone(child):
            os.kill(child, signal.SIGKILL)


@needs_root
@requires_bmv2
def test_bmv2_with_its_grpc_address_taken_fails_at_once(switches, tmp_path):
    """simple_switch_grpc keeps running without a server when its address is taken:
    readiness says so instead of waiting out its timeout on UNAVAILABLE."""
    from emu.targets import get_target

    target = get_target("bmv2")
    pipe = target.compile(PORTFWD, tmp_path / "build")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        addr = f"127.0.0.1:{taken.getsockname()[1]}"
        # Port on lo: no pipeline is pushed, so the switch forwards nothing.
        p = switches(target, SwitchSpec("s1", 1, {1: "lo"}, addr), pipe)
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="address already in use"):
            p.wait_ready(60)
        assert time.monotonic() - t0 < 30
