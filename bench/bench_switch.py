"""Switch daemon benchmark: forwarding rate, added latency, RSS, kernel drops.

    sudo .venv/bin/python bench/bench_switch.py [--size 1024] [--repeat 3] [--json]

Topology: namespaces h1 -- sw -- h2 joined by veths. The same run measures
  * a direct veth h1 -- h2 (no switch): the latency floor;
  * a trivial Python AF_PACKET bridge in `sw` (recv on one side, send on the other);
  * the switch daemon (`python -m emu.switch`) running ecmp_ecn.p4 (IPv4 LPM ->
    action selector with crc16 over the 5-tuple -> ECN marking at egress), compiled
    by the switch from its source;
  * where p4c and BMv2 are on PATH, BMv2's simple_switch_grpc running the same
    ecmp_ecn.p4 (compiled by p4c) with the same entries and frames, and the ratio
    of the embedded daemon's rate to BMv2's.
For each: forwarded pps under overload (sender in its own process at full speed,
counted by h2's kernel; best and median of --repeat runs, and frames per CPU-second
of the device, which holds when other work shares the machine), one-way latency at
low load (1000 pps) and p50/p99 at 50% of the median rate, kernel socket drops
(PACKET_STATISTICS) at 80% of the median rate, and the daemon's RSS.
Latency: the sender's CLOCK_REALTIME stamp in the payload vs. the kernel's receive
stamp (SO_TIMESTAMPNS) on h2 (one host, one clock).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from google.protobuf import text_format  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402

from bench._machine import describe  # noqa: E402
from emu.core import netns  # noqa: E402
from emu.runtime.admin import AdminClient  # noqa: E402
from emu.runtime.client import P4RuntimeClient  # noqa: E402
from emu.runtime.devconfig import make_source_config  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
P4 = REPO / "tests" / "switch" / "p4" / "ecmp_ecn.p4"
P4INFO = REPO / "tests" / "switch" / "p4" / "ecmp_ecn.p4info.txtpb"
PY = sys.executable
# Two cores: the device under test (bridge or switch) gets CPU 1 to itself; the
# sender and the receiver (this process) share CPU 0.
DUT_CPU = ["taskset", "-c", "1"] if (os.cpu_count() or 1) >= 2 else []
LOAD_CPU = ["taskset", "-c", "0"] if (os.cpu_count() or 1) >= 2 else []

SENDER = r"""
import socket, struct, sys, time
iface, count, rate, size = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((iface, 0))
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
eth = bytes.fromhex("020000000a01" "020000000001" "0800")
def csum(b):
    t = sum(struct.unpack("!10H", b))
    while t >> 16: t = (t & 0xFFFF) + (t >> 16)
    return ~t & 0xFFFF
ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 1, size - 14, 0, 0, 64, 17, 0,
                           socket.inet_aton("10.0.1.1"), socket.inet_aton("10.0.2.2")))
ip[10:12] = csum(bytes(ip)).to_bytes(2, "big")
frame = bytearray(eth + bytes(ip) + struct.pack("!HHHH", 1000, 4791, size - 34, 0)
                  + bytes(size - 42))
pack_into = struct.pack_into
send = s.send
mono = time.monotonic_ns
wall = time.time_ns
gap = 0 if rate <= 0 else int(1e9 / rate)
# Paced runs send bursts every 1 ms (sleeping in between) when the gap is short, so
# the sender does not spin on a core the switch needs.
burst = max(1, int(1_000_000 / gap)) if gap and gap < 200_000 else 1
t_next = mono()
for i in range(count):
    if gap and i % burst == 0:
        wait = t_next - mono()
        if wait > 0:
            time.sleep(wait / 1e9)
        t_next += gap * burst
    pack_into("!H", frame, 34, 1000 + (i & 1023))   # UDP sport: spread over ECMP members
    pack_into("!IQ", frame, 42, i, wall())          # seq, send stamp (CLOCK_REALTIME)
    while True:
        try:
            send(frame)
            break
        except OSError:
            time.sleep(0.0001)
"""

BRIDGE = r"""
import os, socket, sys
a, b = sys.argv[1], sys.argv[2]
def sock(i):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((i, 0)); s.setsockopt(263, 23, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    return s
sa, sb = sock(a), sock(b)
print("READY", flush=True)
buf = bytearray(65536); view = memoryview(buf)
recv_into, send = sa.recv_into, sb.send
while True:
    n = recv_into(buf)
    try:
        send(view[:n])
    except OSError:
        pass
"""


class Topo:
    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:6]
        self.h1, self.sw, self.h2 = (f"bh1-{tag}", f"bsw-{tag}", f"bh2-{tag}")
        self.h1if, self.s1, self.s2, self.h2if = (f"b{tag}h1", f"b{tag}s1", f"b{tag}s2",
                                                  f"b{tag}h2")
        self.d1, self.d2 = f"b{tag}d1", f"b{tag}d2"  # the direct h1 -- h2 veth
        for ns in (self.h1, self.sw, self.h2):
            netns.add(ns)
        self._veth(self.h1if, self.h1, self.s1, self.sw)
        self._veth(self.s2, self.sw, self.h2if, self.h2)
        self._veth(self.d1, self.h1, self.d2, self.h2)

    @staticmethod
    def _veth(a: str, na: str, b: str, nb: str) -> None:
        subprocess.run(["ip", "link", "add", a, "netns", na, "type", "veth", "peer", "name",
                        b, "netns", nb], check=True, capture_output=True)
        for ns, i in ((na, a), (nb, b)):
            netns.run(ns, "sysctl", "-qw", f"net.ipv6.conf.{i}.disable_ipv6=1", check=False)
            netns.run(ns, "ip", "link", "set", i, "up")

    def close(self) -> None:
        for ns in (self.h1, self.sw, self.h2):
            netns.delete(ns)


SO_TIMESTAMPNS = 35
_ts = struct.Struct("qq")


def receive(ns: str, iface: str, count: int, idle_s: float = 1.0
            ) -> tuple[int, float, list[int]]:
    """(frames, seconds between first and last, latencies in ns) of our frames.

    Arrival times are the kernel's receive stamps (SO_TIMESTAMPNS, CLOCK_REALTIME,
    the sender stamps the same clock), so this process's own scheduling delays
    do not count as switch latency.
    """
    with netns.inside(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)  # SO_RCVBUFFORCE
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setblocking(False)
    buf = bytearray(65536)
    lat: list[int] = []
    n = 0
    first = last = 0
    anc = socket.CMSG_SPACE(_ts.size)
    try:
        while n < count:
            r, _, _ = select.select([s], [], [], idle_s)
            if not r:
                break
            while True:
                try:
                    k, cmsgs, _flags, _addr = s.recvmsg_into([buf], anc)
                except BlockingIOError:
                    break
                if k < 54 or buf[12] != 8 or buf[13] != 0 or buf[23] != 17:
                    continue
                now = time.time_ns()
                for level, typ, data in cmsgs:
                    if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                        sec, nsec = _ts.unpack(data[:_ts.size])
                        now = sec * 1_000_000_000 + nsec
                lat.append(now - int.from_bytes(buf[46:54], "big"))
                if n == 0:
                    first = now
                last = now
                n += 1
    finally:
        s.close()
    return n, (last - first) / 1e9, lat


def run(ns: str, iface: str, out_ns: str, out_iface: str, count: int, rate: float,
        size: int, pinned: bool = True) -> tuple[int, float, list[int]]:
    cpu = LOAD_CPU if pinned else []
    sender = subprocess.Popen(["ip", "netns", "exec", ns, *cpu, PY, "-c", SENDER, iface,
                               str(count), str(rate), str(size)])
    try:
        res = receive(out_ns, out_iface, count, idle_s=1.5)
    finally:
        sender.wait(60)
    return res


def pct(values: list[int], p: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] / 1000


def rx_packets(ns: str, iface: str) -> int:
    out = netns.run(ns, "cat", f"/sys/class/net/{iface}/statistics/rx_packets")
    return int(out.stdout)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def throughput(t: Topo, size: int, pid: int, seconds: float = 1.5) -> tuple[float, float]:
    """Frames per second arriving on h2 while h1 sends as fast as it can.

    Counted by the kernel (h2's rx_packets), so no receiving process competes
    with the device under test for the CPU; the first 0.3 s are not counted.
    """
    sender = subprocess.Popen(["ip", "netns", "exec", t.h1, *LOAD_CPU, PY, "-c", SENDER,
                               t.h1if, str(int(450_000 * (seconds + 1))), "0", str(size)])
    try:
        time.sleep(0.3)
        r0, t0, c0 = rx_packets(t.h2, t.h2if), time.monotonic(), cpu_seconds(pid)
        time.sleep(seconds)
        r1, t1, c1 = rx_packets(t.h2, t.h2if), time.monotonic(), cpu_seconds(pid)
    finally:
        sender.kill()
        sender.wait(10)
    time.sleep(1.0)  # let the device drain
    # Frames per second of wall time, and per second of the device's own CPU time
    # (what one dedicated core would forward: robust when other work shares the CPU).
    return (r1 - r0) / (t1 - t0), (r1 - r0) / max(c1 - c0, 1e-9)


def pin(pid: int, cpus: str) -> None:
    if DUT_CPU:
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], check=True,
                       capture_output=True)


REPEAT = 3


def measure(name: str, t: Topo, size: int, pid: int,
            kernel_drops: Any = None) -> dict[str, float]:
    """Throughput and 80%-load kernel drops with the DUT pinned to CPU 1; latencies with
    it free to run anywhere, as in real use (pinning costs wake-ups at low load).
    Throughput is the best of REPEAT runs (other work on the machine only lowers it)."""
    both = [throughput(t, size, pid) for _ in range(REPEAT)]
    runs = [w for w, _ in both]
    pps = max(runs)
    # The load points (80%, 50%) use the median run: when other work on the machine
    # takes CPU away, the best run overstates what the device gets meanwhile.
    typical = sorted(runs)[len(runs) // 2]
    per_cpu = sorted(c for _, c in both)[len(both) // 2]
    out: dict[str, float] = {"pps": pps, "pps_runs": runs,  # type: ignore[dict-item]
                             "pps_median": typical, "pps_per_cpu_second": per_cpu}
    rate80 = typical * 0.8
    if kernel_drops is not None:
        before = kernel_drops()
        n80, _, _ = run(t.h1, t.h1if, t.h2, t.h2if, int(rate80 * 2), rate80, size)
        out.update({"kernel_drops_at_80pct": kernel_drops() - before, "rx_at_80pct": n80,
                    "sent_at_80pct": int(rate80 * 2)})
    # Latency: nothing pinned (cross-CPU wake-ups of a pinned device inflate it).
    pin(pid, "0,1")
    if LOAD_CPU:
        os.sched_setaffinity(0, {0, 1})
    try:
        _, _, lat_low = run(t.h1, t.h1if, t.h2, t.h2if, 2000, 1000, size, pinned=False)
        half = max(1000.0, typical * 0.5)
        _, _, lat_half = run(t.h1, t.h1if, t.h2, t.h2if, int(half * 3), half, size,
                             pinned=False)
    finally:
        pin(pid, "1")
        if LOAD_CPU:
            os.sched_setaffinity(0, {0})
    out.update({"lat_low_p50_us": pct(lat_low, 50), "lat_low_p99_us": pct(lat_low, 99),
                "half_rate_pps": half, "lat_half_p50_us": pct(lat_half, 50),
                "lat_half_p99_us": pct(lat_half, 99)})
    print(f"{name:<28} {pps:>10,.0f} pps forwarded under overload (runs: "
          f"{', '.join(f'{r:,.0f}' for r in runs)}; {per_cpu:,.0f} per CPU-second of the "
          f"device, median); latency at 1k pps "
          f"p50 {out['lat_low_p50_us']:.0f} us p99 {out['lat_low_p99_us']:.0f} us; at "
          f"{half:,.0f} pps p50 {out['lat_half_p50_us']:.0f} us p99 "
          f"{out['lat_half_p99_us']:.0f} us", flush=True)
    if kernel_drops is not None:
        print(f"{'':<28} at 80% ({rate80:,.0f} pps, pinned): kernel drops "
              f"{out['kernel_drops_at_80pct']}, delivered {out['rx_at_80pct']}/"
              f"{out['sent_at_80pct']}", flush=True)
    return out


def rss_mb(pid: int) -> tuple[float, float]:
    rss = hwm = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return rss, hwm


def bench_switch(t: Topo, tmp: str, size: int, config: bytes,
                 name: str) -> dict[str, float] | None:
    grpc_addr = f"unix:{tmp}/p4rt-{name}.sock"
    admin_path = f"{tmp}/admin-{name}.sock"
    ready = Path(tmp) / f"ready-{name}.json"
    p = subprocess.Popen([*DUT_CPU, PY, "-m", "emu.switch", "--device-id", "1",
                          "-i", f"1@{t.s1}", "-i", f"2@{t.s2}", "--port-netns", t.sw,
                          "--grpc-addr", grpc_addr, "--admin-socket", admin_path,
                          "--ready-file", str(ready), "--cpu-port", "255",
                          "--no-p4"], cwd=REPO,
                         stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("switch did not start")
            time.sleep(0.05)
        info = p4info_pb2.P4Info()
        text_format.Parse(P4INFO.read_text(), info)
        with P4RuntimeClient(grpc_addr, 1, (0, 1)) as c:
            try:
                c.set_pipeline(info, config)
            except Exception as exc:
                print(f"{name:<28} unavailable: {exc}")
                return None
            prof = "MyIngress.ecmp_selector"
            c.insert_member(prof, 1, "MyIngress.set_nhop", {"dmac": 0x020000000002, "port": 2})
            c.insert_member(prof, 2, "MyIngress.set_nhop", {"dmac": 0x020000000012, "port": 2})
            c.insert_group(prof, 1, [(1, 1), (2, 1)])
            c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000200, 24)},
                           group_id=1)
        with AdminClient(admin_path) as admin:
            def kdrops() -> int:
                return int(admin.stats()["ports"]["1"]["kernel_drops"])

            res = measure(name, t, size, p.pid, kdrops)
            rss, hwm = rss_mb(p.pid)
            res.update({"rss_mb": rss, "hwm_mb": hwm, "kernel_drops_total": kdrops()})
            print(f"{'':<28} kernel drops in total (overload included) "
                  f"{res['kernel_drops_total']}; RSS {rss:.1f} MB (peak {hwm:.1f} MB)",
                  flush=True)
        return res
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def bench_bmv2(t: Topo, tmp: str, size: int) -> dict[str, float] | None:
    """The same program, entries and frames through BMv2's simple_switch_grpc."""
    from emu.targets import SwitchSpec
    from emu.targets.bmv2 import Bmv2Target

    name = "bmv2 simple_switch_grpc"
    target = Bmv2Target()
    missing = target.missing()
    if missing:
        print(f"{name:<28} not measured: {target.unavailable_message(missing)}")
        return None
    pipe = target.compile(P4, Path(tmp) / "bmv2-build")
    spec = SwitchSpec("bench", 1, {1: t.s1, 2: t.s2}, f"unix:{tmp}/p4rt-bmv2.sock",
                      netns=t.sw)
    with target.start(spec, pipe) as p:
        p.wait_ready(60)
        pin(p.pid, "1")  # `ip netns exec` execs the switch: the same pid
        with P4RuntimeClient(spec.grpc_addr, 1, (0, 1)) as c:
            c.set_pipeline(pipe.load_p4info(), pipe.device_config())
            prof = "MyIngress.ecmp_selector"
            c.insert_member(prof, 1, "MyIngress.set_nhop", {"dmac": 0x020000000002, "port": 2})
            c.insert_member(prof, 2, "MyIngress.set_nhop", {"dmac": 0x020000000012, "port": 2})
            c.insert_group(prof, 1, [(1, 1), (2, 1)])
            c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000200, 24)},
                           group_id=1)
        res = measure(name, t, size, p.pid)
        rss, hwm = rss_mb(p.pid)
        res.update({"rss_mb": rss, "hwm_mb": hwm})
        print(f"{'':<28} RSS {rss:.1f} MB (peak {hwm:.1f} MB)", flush=True)
        return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3, help="throughput runs (best counts)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = ap.parse_args()
    global REPEAT
    REPEAT = max(1, args.repeat)
    print(describe())
    if LOAD_CPU:
        os.sched_setaffinity(0, {0})
        print("throughput: CPU 1 device under test, CPU 0 sender + receiver; "
              "latency: nothing pinned")
    if os.geteuid() != 0:
        print("needs root (network namespaces)")
        return 1
    t = Topo()
    results: dict[str, object] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="emu-bench-") as tmp:
            # latency floor: a direct veth
            os.sched_setaffinity(0, {0, 1}) if LOAD_CPU else None
            _, _, lat = run(t.h1, t.d1, t.h2, t.d2, 2000, 1000, args.size, pinned=False)
            os.sched_setaffinity(0, {0}) if LOAD_CPU else None
            print(f"{'direct veth (floor)':<28} latency at 1k pps p50 {pct(lat, 50):.0f} us "
                  f"p99 {pct(lat, 99):.0f} us", flush=True)
            results["direct_lat_p50_us"] = pct(lat, 50)
            bridge = subprocess.Popen(["ip", "netns", "exec", t.sw, *DUT_CPU, PY, "-c", BRIDGE,
                                       t.s1, t.s2], stdout=subprocess.PIPE)
            try:
                assert bridge.stdout is not None
                bridge.stdout.readline()
                results["bridge"] = measure("python AF_PACKET bridge", t, args.size, bridge.pid)
            finally:
                bridge.kill()
                bridge.wait(5)
            results["switch_compiled"] = bench_switch(
                t, tmp, args.size,
                make_source_config(P4.name, {P4.name: P4.read_text()}),
                "switch (compiled ecmp_ecn.p4)")
            results["bmv2"] = bench_bmv2(t, tmp, args.size)
    finally:
        t.close()
    floor = float(results["direct_lat_p50_us"])  # type: ignore[arg-type]
    for key in ("bridge", "switch_compiled"):
        r = results.get(key)
        if isinstance(r, dict):
            print(f"added latency at low load, {key}: {r['lat_low_p50_us'] - floor:.0f} us (p50)")
    emb, bm = results.get("switch_compiled"), results.get("bmv2")
    if isinstance(emb, dict) and isinstance(bm, dict) and bm["pps"]:
        ratio = emb["pps"] / bm["pps"]
        per_cpu = emb["pps_per_cpu_second"] / max(bm["pps_per_cpu_second"], 1e-9)
        results["embedded_over_bmv2"] = ratio
        print(f"embedded daemon vs BMv2, same program and frames: {emb['pps']:,.0f} vs "
              f"{bm['pps']:,.0f} pps = {ratio:.1f}x ({per_cpu:.1f}x per CPU-second)")
    if args.json:
        print(json.dumps(results, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
