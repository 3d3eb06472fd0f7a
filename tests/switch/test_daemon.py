"""The switch daemon on veths in network namespaces, driven by real clients:
p4runtime-shell (subprocess), our P4RuntimeClient, the admin client, raw frames."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from emu.p4.v1model.hashes import csum16
from emu.runtime.admin import AdminClient, AdminError
from emu.runtime.client import P4RuntimeClient
from emu.runtime.devconfig import make_source_config
from emu.switch.pcap import read_pcap
from tests.conftest import needs_root

from .conftest import ECMP_P4INFO, PY, REPO, Topo, ipv4_udp

pytestmark = [needs_root, pytest.mark.root, pytest.mark.timeout(180)]


def _p4info() -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    text_format.Parse(ECMP_P4INFO.read_text(), info)
    return info


_pending: dict[int, bytes] = {}


def _read_json_line(p: subprocess.Popen[bytes], timeout: float) -> dict:  # type: ignore[type-arg]
    """The next JSON line from the client's stdout (raw fd reads: select and a buffered
    file object do not mix, a second line would sit unseen in the buffer)."""
    assert p.stdout is not None
    fd = p.stdout.fileno()
    deadline = time.monotonic() + timeout
    while True:
        buf = _pending.get(fd, b"")
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            _pending[fd] = buf
            if line.strip().startswith(b"{"):
                return json.loads(line)  # type: ignore[no-any-return]
        left = deadline - time.monotonic()
        r, _, _ = select.select([fd], [], [], max(0.0, left))
        if not r:
            raise AssertionError("no output from the client in time")
        chunk = os.read(fd, 65536)
        if not chunk:
            err = p.stderr.read().decode() if p.stderr else ""
            raise AssertionError(f"client exited: {err}")
        _pending[fd] = buf + chunk


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err, err


def _program(client: P4RuntimeClient, port: int = 2) -> None:
    client.set_pipeline(_p4info(), _device_config())
    client.insert_member("MyIngress.ecmp_selector", 1, "MyIngress.set_nhop",
                         {"dmac": 0x020000000002, "port": port})
    client.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000200, 24)},
                        member_id=1)


_config: list[bytes] = []


def _device_config() -> bytes:
    """ecmp_ecn.p4 as a p4-source config (the switch compiles it); checked to compile
    once per session."""
    if _config:
        return _config[0]
    from emu.core.clock import VirtualClock
    from emu.runtime.device import LocalDevice
    from emu.runtime.translate import P4InfoIndex

    src = ECMP_P4INFO.with_name("ecmp_ecn.p4")
    cfg = make_source_config(src.name, {src.name: src.read_text()})
    try:
        LocalDevice(0, VirtualClock()).prepare(P4InfoIndex.build(_p4info()), cfg)
    except Exception as exc:  # the compiler is another team's moving part
        pytest.skip(f"the compiler cannot build ecmp_ecn.p4 now: {exc}")
    _config.append(cfg)
    return cfg


def test_p4runtime_shell_end_to_end(topo) -> None:  # type: ignore[no-untyped-def]
    cfg = _device_config()
    t: Topo = topo(2)
    sw = t.start_switch("--pcap", str(t.tmp / "pcap"))
    h1, h2 = t.host(1), t.host(2)
    devcfg = t.tmp / "devcfg.json"
    devcfg.write_bytes(cfg)
    cli = subprocess.Popen([PY, str(Path(__file__).parent / "p4rt_shell_client.py"),
                            t.grpc_addr, "1", str(ECMP_P4INFO), str(devcfg)],
                           cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    t.procs.append(cli)
    assert _read_json_line(cli, 30) == {"oneshot_actions": [2]}
    assert _read_json_line(cli, 10) == {"dup_error": [6]}  # ALREADY_EXISTS, per update
    assert _read_json_line(cli, 10) == {"mix_error": [3]}  # INVALID_ARGUMENT
    listing = _read_json_line(cli, 10)
    assert listing["entries"] == 2
    assert listing["groups"] == [[[1, 1], [2, 2]]]
    assert _read_json_line(cli, 10) == {"step": "installed"}
    # PacketOut(egress_port=2) came out of port 2, header stripped
    out = h2.recv(1, 5, keep=lambda f: f[12:14] == b"\x88\xb5")
    assert [f for _, f in out] == [bytes.fromhex("ffffffffffff020000000003" "88b5")
                                   + b"hello-out"]
    # ECMP over the group's two members, rewritten as the program says
    n = 64
    for i in range(n):
        h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1000 + i, 4791, seq=i))
    got = [f for _, f in h2.recv(n, 10)]
    assert len(got) == n
    macs = {f[:6].hex() for f in got}
    assert macs == {"020000000002", "020000000012"}
    for f in got:
        assert f[6:12] == bytes.fromhex("020000000a01")  # src = old dst
        assert f[22] == 63  # ttl - 1
        assert csum16(f[14:34]) == 0  # the checksum was updated
    # one flow always takes the same member
    for _ in range(5):
        h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 7777, 4791))
    assert len({f[:6] for _, f in h2.recv(5, 5)}) == 1
    # a route to the CPU: PacketIn with ingress_port metadata
    to_cpu = ipv4_udp("10.0.1.1", "10.0.9.9", 1, 2)
    h1.send(to_cpu)
    assert cli.stdin is not None
    cli.stdin.write(b"go\n")
    cli.stdin.flush()
    pin = _read_json_line(cli, 15)["packet_in"]
    assert len(pin) == 1
    assert bytes.fromhex(pin[0]["payload"]) == to_cpu
    assert pin[0]["md"] == {"1": "01", "2": "00"}  # ingress_port 1, pad 0
    counts = _read_json_line(cli, 10)["port_rx"]
    assert counts.get("1") == n + 6 and counts.get("255") == 1
    assert _read_json_line(cli, 10) == {"step": "done"}
    assert cli.wait(10) == 0
    rc, err = t.stop_switch(sw)
    assert rc == 0
    _no_traceback(err)
    # BMv2-style pcaps: <iface>_in.pcap / <iface>_out.pcap
    pin_frames = read_pcap(str(t.tmp / "pcap" / f"{t.sw_ifaces[1]}_in.pcap"))
    pout_frames = read_pcap(str(t.tmp / "pcap" / f"{t.sw_ifaces[2]}_out.pcap"))
    assert to_cpu in pin_frames and len([f for f in pin_frames if f[12:14] == b"\x08\x00"]) \
        == n + 6
    assert sum(1 for f in pout_frames if f[12:14] == b"\x08\x00") == n + 5


def test_queues_rate_depth_ecn_and_delay(topo) -> None:  # type: ignore[no-untyped-def]
    t: Topo = topo(2)
    sw = t.start_switch("--queue-depth", "2=20")
    h1, h2 = t.host(1), t.host(2)
    c = P4RuntimeClient(t.grpc_addr, 1, (0, 1))
    admin = AdminClient(t.admin_path)
    try:
        _program(c)
        assert admin.get_port_config(2)["depths_pkts"] == [20]
        # packets per second, BMv2's unit
        admin.set_queue_rate(2, rate_pps=2000)
        burst = 200
        for i in range(burst):
            h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 5000, 4791, ecn=1, seq=i, size=256))
        got = h2.recv(burst, 3)
        n = len(got)
        assert 20 <= n < burst, n  # the queue holds 20, the rest is tail-dropped
        drops = admin.drops()
        assert drops["2"]["tail_drop"] == burst - n
        # enq_qdepth grows: the first packets go unmarked; a packet is marked CE when
        # 10 or more wait ahead of it, so the first mark is never before index 10.
        ecn = [f[15] & 3 for _, f in got]
        assert ecn[0] == 1 and 3 in ecn
        assert ecn.index(3) >= 10, ecn
        # Departures are paced at 1/2000 s. Only the upper rate bound is sharp: on a
        # loaded machine a late wake-up delays every later departure (the traffic
        # manager does not catch up), so rates come out low, never high.
        assert 0.00045 < _median_gap(got) < 0.001, _median_gap(got)
        pps = (n - 1) / (got[-1][0] - got[0][0])
        assert 800 < pps < 2100, pps
        # bits per second: frame-size dependent serialisation
        admin.set_queue_depth(2, 64)
        admin.set_queue_rate(2, rate_bps=8_000_000)
        for i in range(40):
            h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 5001, 4791, seq=i, size=1000))
        got = h2.recv(40, 5)
        assert len(got) == 40
        assert 0.0009 < _median_gap(got) < 0.002, _median_gap(got)  # 1000 B at 8 Mb/s
        rate = 39 * 1000 * 8 / (got[-1][0] - got[0][0])
        assert 3_000_000 < rate < 8_400_000, rate
        # link delay
        admin.set_queue_rate(2)  # no limit
        admin.set_link_delay(2, 20_000)
        h2.drain()
        t0 = time.time()
        h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 5002, 4791))
        got = h2.recv(1, 3)
        assert got and 0.019 < got[0][0] - t0 < 0.2
        # A frame is all on the wire its serialisation time after the port starts it,
        # as on virtual time's links (1000 bytes at 80 kb/s: 0.1 s); the veth alone
        # delivered it at once, a frame time early at every hop of a real-time run.
        admin.set_link_delay(2, 0)
        admin.set_queue_rate(2, rate_bps=80_000)
        h2.drain()
        t0 = time.time()
        h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 5003, 4791, size=1000))
        got = h2.recv(1, 3)
        assert got and got[0][0] - t0 > 0.1, got and got[0][0] - t0
        # admin errors are replies, not crashes
        with pytest.raises(AdminError):
            admin.set_queue_depth(2, -1)
        with pytest.raises(AdminError):
            admin.call("no_such_command")
        st = admin.stats()
        assert st["ports"]["1"]["kernel_drops"] == 0
        assert st["ports"]["2"]["queue"]["depths_pkts"] == [64]
        # The paced port above ran service turns: their lateness is reported, then reset.
        assert isinstance(st["tm_lag_ms"], float) and st["tm_lag_ms"] >= 0.0
        h2.drain()
        assert admin.stats()["tm_lag_ms"] == 0.0  # nothing queued since the last read
    finally:
        admin.close()
        c.close()
    rc, err = t.stop_switch(sw)
    assert rc == 0
    _no_traceback(err)


def test_lifecycle_signals_netdown_and_parent_death(topo) -> None:  # type: ignore[no-untyped-def]
    t: Topo = topo(2)
    sw = t.start_switch()
    # no pipeline: frames are dropped and counted, not crashed on
    h1 = t.host(1)
    h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2))
    admin = AdminClient(t.admin_path)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and admin.drops().get("1", {}).get("no_pipeline", 0) < 1:
            time.sleep(0.02)
        assert admin.drops()["1"]["no_pipeline"] >= 1
        # interfaces disappear (Mininet removes links before stopping switches)
        hns, hif = t.hosts[2]
        subprocess.run(["ip", "netns", "exec", hns, "ip", "link", "del", hif], check=True)
        c = P4RuntimeClient(t.grpc_addr, 1, (0, 1))
        try:
            _program(c)
            h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2))
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not admin.stats()["ports"]["2"]["down"]:
                h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2))
                time.sleep(0.05)
            assert admin.stats()["ports"]["2"]["down"]
            assert admin.ping()["pipeline"] is True
        finally:
            c.close()
    finally:
        admin.close()
    rc, err = t.stop_switch(sw)
    assert rc == 0
    _no_traceback(err)
    assert not os.path.exists(t.admin_path)
    # SIGINT works too
    sw2 = t.start_switch(ports=[1])
    sw2.send_signal(signal.SIGINT)
    assert sw2.wait(10) == 0
    # the switch dies with its parent (PR_SET_PDEATHSIG)
    ready = t.tmp / "ready.json"
    args = [PY, "-m", "emu.switch", "--device-id", "3", "--port-netns", t.sw_ns,
            "-i", f"1@{t.sw_ifaces[1]}", "--grpc-addr", f"unix:{t.tmp}/p3.sock",
            "--ready-file", str(ready), "--no-p4"]
    parent_code = ("import subprocess, sys, time\n"
                   f"p = subprocess.Popen({args!r})\n"
                   "print(p.pid, flush=True)\n"
                   "time.sleep(120)\n")
    parent = subprocess.Popen([PY, "-c", parent_code], cwd=REPO, stdout=subprocess.PIPE)
    t.procs.append(parent)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    deadline = time.monotonic() + 20
    while not ready.exists():
        assert time.monotonic() < deadline, "grandchild switch not ready"
        time.sleep(0.02)
    parent.kill()
    parent.wait(5)
    deadline = time.monotonic() + 10
    while _alive(child):
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
            raise AssertionError("the switch outlived its parent")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return "Z" not in line.split()[1]
    except FileNotFoundError:
        return False
    return False


def _median_gap(got: list[tuple[float, bytes]]) -> float:
    gaps = sorted(b - a for (a, _), (b, _) in zip(got, got[1:], strict=False))
    return gaps[len(gaps) // 2]


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_fuzz_ports_and_grpc(topo) -> None:  # type: ignore[no-untyped-def]
    """Random frames at the ports and random bytes at the gRPC methods: no crash, no leak."""
    import grpc

    t: Topo = topo(2)
    sw = t.start_switch()
    h1, h2 = t.host(1), t.host(2)
    c = P4RuntimeClient(t.grpc_addr, 1, (0, 1))
    rnd = random.Random(99)
    try:
        _program(c)

        def round_(n: int) -> None:
            for _ in range(n):
                kind = rnd.random()
                size = rnd.randint(0, 1514)
                body = bytes(rnd.getrandbits(8) for _ in range(size))
                if kind < 0.5:  # IPv4 ethertype: reaches the IPv4 parser and the table
                    body = (b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + body)[:max(14, size)]
                h1.send(body if len(body) >= 14 else body + bytes(14 - len(body)))
            h2.drain()

        round_(500)
        rss1 = _rss_kb(sw.pid)
        for _ in range(3):
            round_(500)
        rss2 = _rss_kb(sw.pid)
        assert rss2 - rss1 < 8_000, (rss1, rss2)  # KB; no growth per packet
        ch = grpc.insecure_channel(t.grpc_addr)
        try:
            for i in range(100):
                data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 100)))
                m = ("Write", "SetForwardingPipelineConfig", "GetForwardingPipelineConfig")[i % 3]
                call = ch.unary_unary(f"/p4.v1.P4Runtime/{m}", request_serializer=None,
                                      response_deserializer=None)
                try:
                    call(data, timeout=5)
                except grpc.RpcError as e:
                    assert e.code() is not grpc.StatusCode.UNAVAILABLE
        finally:
            ch.close()
        # still forwarding
        h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2))
        assert len(h2.recv(1, 5)) == 1
        assert sw.poll() is None
    finally:
        c.close()
    rc, err = t.stop_switch(sw)
    assert rc == 0
    _no_traceback(err)


def test_program_given_at_start(topo) -> None:  # type: ignore[no-untyped-def]
    """`switch PROG.p4`: compiled at start; P4Runtime serves its P4Info and source bundle."""
    _device_config()  # skips when the compiler cannot build the program
    t: Topo = topo(2)
    sw = t.start_switch(str(ECMP_P4INFO.with_name("ecmp_ecn.p4")), no_p4=False, timeout=60)
    h1, h2 = t.host(1), t.host(2)
    c = P4RuntimeClient(t.grpc_addr, 1, (0, 1))
    try:
        cfg = c.get_pipeline()
        assert cfg.p4info == _p4info()
        assert json.loads(cfg.p4_device_config)["format"] == "p4-source"
        c.fetch_p4info()
        c.insert_member("MyIngress.ecmp_selector", 1, "MyIngress.set_nhop",
                        {"dmac": 0x020000000002, "port": 2})
        c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000200, 24)},
                       member_id=1)
        h1.send(ipv4_udp("10.0.1.1", "10.0.2.2", 1, 2))
        got = h2.recv(1, 5)
        assert len(got) == 1 and got[0][1][:6] == bytes.fromhex("020000000002")
    finally:
        c.close()
    rc, err = t.stop_switch(sw)
    assert rc == 0
    _no_traceback(err)


def test_launcher_thread_exit_does_not_stop_the_switch(topo) -> None:  # type: ignore[no-untyped-def]
    """PR_SET_PDEATHSIG fires when the launching *thread* exits; the switch must only
    stop when the parent *process* is gone."""
    t: Topo = topo(1)
    ready = t.tmp / "ready-thread.json"
    args = [PY, "-m", "emu.switch", "--device-id", "4", "--port-netns", t.sw_ns,
            "-i", f"1@{t.sw_ifaces[1]}", "--grpc-addr", f"unix:{t.tmp}/p4.sock",
            "--ready-file", str(ready), "--no-p4"]
    code = ("import subprocess, sys, threading, time\n"
            "box = []\n"
            f"th = threading.Thread(target=lambda: box.append(subprocess.Popen({args!r})))\n"
            "th.start(); th.join()\n"
            "print(box[0].pid, flush=True)\n"
            "time.sleep(120)\n")
    parent = subprocess.Popen([PY, "-c", code], cwd=REPO, stdout=subprocess.PIPE)
    t.procs.append(parent)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    deadline = time.monotonic() + 20
    while not ready.exists():
        assert time.monotonic() < deadline, "switch not ready"
        time.sleep(0.02)
    time.sleep(1.5)  # the launching thread is long gone; a parent poll has run
    assert _alive(child)
    parent.kill()
    parent.wait(5)
    deadline = time.monotonic() + 10
    while _alive(child):
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
            raise AssertionError("the switch outlived its parent")
        time.sleep(0.05)


def test_a_taken_grpc_address_has_its_own_exit_status(tmp_path: Path) -> None:
    """98 (EADDRINUSE) when another program listens on the address, so a launcher can
    start the switch on another port; 1 for an address that cannot work at all."""
    import errno
    import socket

    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = f"127.0.0.1:{squatter.getsockname()[1]}"
        statuses = {}
        for addr in (taken, "192.0.2.1:9559"):  # TEST-NET-1: no local interface has it
            p = subprocess.run([PY, "-m", "emu.switch", "--no-p4", "--grpc-addr", addr],
                               cwd=REPO, capture_output=True, text=True, timeout=60)
            statuses[addr] = (p.returncode, p.stderr)
    assert statuses[taken][0] == errno.EADDRINUSE, statuses[taken][1]
    assert f"address already in use: {taken}" in statuses[taken][1]
    assert statuses["192.0.2.1:9559"][0] == 1, statuses["192.0.2.1:9559"][1]
    assert "cannot listen on 192.0.2.1:9559" in statuses["192.0.2.1:9559"][1]
