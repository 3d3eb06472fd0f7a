"""RoCE host-stack benchmark: packets per second sent and received (1 KB payloads).

    .venv/bin/python bench/bench_roce.py [--packets N] [--skip-netns]

Figures:
- send, raw socket: one NIC with one QP (go-back-N, pacing off, full requester
  bookkeeping: segmentation, PSNs, templates + ICRC, RTO state) sending on an AF_PACKET
  socket bound to a veth inside a network namespace (needs root; skipped otherwise);
- receive, in-process: pre-built frames fed to the NIC's receive path (parse, ICRC check,
  QP demux, PSN/reorder logic, reassembly, ACK generation into a sink port), in order
  (go-back-N and selective repeat) and permuted within the reorder window (selective repeat);
- receive, raw socket: a blaster process in one namespace sends pre-built frames, the NIC
  in the other namespace reads them from its AF_PACKET socket (frames processed per
  second, with kernel drops reported).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import describe  # noqa: E402
from emu.core.clock import VirtualClock  # noqa: E402
from emu.core.port import FramePort  # noqa: E402
from emu.roce import wire  # noqa: E402
from emu.roce.dcqcn import DcqcnParams  # noqa: E402
from emu.roce.nic import Nic, NicParams  # noqa: E402
from emu.roce.qp import QpParams  # noqa: E402

MAC_A, MAC_B = "02:00:00:bb:00:01", "02:00:00:bb:00:02"
IP_A, IP_B = "10.88.0.1", "10.88.0.2"
PAYLOAD = 1024
TARGETS = {"send_raw": 120_000, "recv_inorder": 100_000, "recv_permuted": 80_000}


class SinkPort(FramePort):
    def __init__(self) -> None:
        super().__init__("sink")
        self.count = 0

    def send(self, frame: bytes) -> bool:
        self.count += 1
        return True


def _nic(clock, port, mac: str, ip: str) -> Nic:
    return Nic(clock, port, NicParams(mac=mac, ip=ip, line_rate_bps=None,
                                      dcqcn=DcqcnParams(enabled=False), tx_batch=256))


def _qp_params(qpn: int, peer_qpn: int, src: tuple[str, str], dst: tuple[str, str], mode: str,
               window: int, reorder: int) -> QpParams:
    path = wire.Path(src[0], dst[0], src[1], dst[1], 49152 + qpn, peer_qpn)
    return QpParams(qpn, path, start_psn=0xFFFF00, peer_start_psn=0xFFFF00, mtu=PAYLOAD,
                    recovery=mode, max_outstanding_pkts=window, reorder_window_pkts=reorder,
                    rto_ns=10**15, rto_max_ns=10**15, deliver="none", ack_every_pkts=16)


def build_frames(n: int) -> list[bytes]:
    """The frames a requester sends for one n-packet message (built by the stack itself)."""
    clk = VirtualClock()
    sink = SinkPort()
    frames: list[bytes] = []
    sink.send = lambda f: frames.append(f) or True  # type: ignore[method-assign]
    nic = _nic(clk, sink, MAC_A, IP_A)
    qp = nic.add_qp(_qp_params(1, 2, (MAC_A, IP_A), (MAC_B, IP_B), "gbn", n + 1, 256))
    qp.post_send(bytes(PAYLOAD * n))
    clk.advance(1)
    return frames


def permute(frames: list[bytes], block: int, seed: int = 1) -> list[bytes]:
    """Shuffle within consecutive blocks: reorder distance < block (<= the reorder buffer)."""
    rnd = random.Random(seed)
    out: list[bytes] = []
    for i in range(0, len(frames), block):
        b = frames[i:i + block]
        rnd.shuffle(b)
        out += b
    return out


def recv_in_process(frames: list[bytes], mode: str, reorder: int) -> tuple[float, dict]:
    clk = VirtualClock()
    sink = SinkPort()
    nic = _nic(clk, sink, MAC_B, IP_B)
    qp = nic.add_qp(_qp_params(2, 1, (MAC_B, IP_B), (MAC_A, IP_A), mode, 256, reorder))
    on_frame = nic.on_frame
    t0 = time.perf_counter()
    for f in frames:
        on_frame(f)
    dt = time.perf_counter() - t0
    st = qp.responder.stats
    assert st.msgs_delivered == 1 and st.payload_bytes_delivered == PAYLOAD * len(frames), st
    return len(frames) / dt, {"acks+naks": sink.count, "reorder_hwm": st.reorder_hwm}


# -- raw-socket figures (children run inside network namespaces) --------------------------
def child_send(iface: str, n: int) -> None:
    from emu.core.clock import RealClock
    from emu.core.port import AfPacketPort

    clock = RealClock()
    port = AfPacketPort(iface, clock, promisc=False)
    nic = _nic(clock, port, MAC_A, IP_A)
    qp = nic.add_qp(_qp_params(1, 2, (MAC_A, IP_A), (MAC_B, IP_B), "gbn", n + 1, 256))
    req = qp.requester
    t0 = time.perf_counter()
    qp.post_send(bytes(PAYLOAD * n))
    clock.run(until=lambda: req.s.snd_max >= n, timeout_s=120)
    dt = time.perf_counter() - t0
    print(f"RESULT {req.stats.data_pkts_sent / dt:.0f} {nic.tx_stalls} {port.stats.tx_frames}")


def child_recv(iface: str, n: int) -> None:
    from emu.core.clock import RealClock
    from emu.core.port import AfPacketPort

    clock = RealClock()
    port = AfPacketPort(iface, clock, rcvbuf_bytes=64 << 20)
    nic = _nic(clock, port, MAC_B, IP_B)
    qp = nic.add_qp(_qp_params(2, 1, (MAC_B, IP_B), (MAC_A, IP_A), "sr", 256, 256))
    st = qp.responder.stats
    first: list[float] = []
    orig = nic.on_frame

    def on_frame(f: bytes) -> None:
        if not first and len(f) > 1000:  # the first data frame (not IPv6 chatter)
            first.append(time.perf_counter())
        orig(f)

    port.set_receiver(on_frame)
    print("READY", flush=True)
    last = [0, time.perf_counter()]

    def idle() -> bool:  # done when all arrived, or nothing new for 1 s after the start
        now = time.perf_counter()
        if st.data_pkts_rcvd != last[0]:
            last[0], last[1] = st.data_pkts_rcvd, now
        return st.data_pkts_rcvd >= n or (bool(first) and now - last[1] > 1.0)

    clock.run(until=idle, timeout_s=120)
    dt = last[1] - first[0] if first else float("nan")
    print(f"RESULT {st.data_pkts_rcvd / dt:.0f} {st.data_pkts_rcvd} {port.kernel_drops()}",
          flush=True)


def child_blast(iface: str, n: int) -> None:
    import socket

    frames = build_frames(n)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, 32, 16 << 20)
    send = s.send
    for f in frames:
        while True:
            try:
                send(f)
                break
            except OSError:
                time.sleep(0.0001)


def run_netns(n: int) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    ns = (f"rbench-{tag}-1", f"rbench-{tag}-2")
    veth = (f"rb{tag}a", f"rb{tag}b")
    me = [sys.executable, str(Path(__file__).resolve())]
    out: dict[str, str] = {}

    def sh(*a: str) -> None:
        subprocess.run(a, check=True, capture_output=True, timeout=30)

    try:
        for x in ns:
            sh("ip", "netns", "add", x)
        sh("ip", "link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
        for i in range(2):
            sh("ip", "link", "set", veth[i], "netns", ns[i])
            sh("ip", "netns", "exec", ns[i], "ip", "link", "set", veth[i], "up")
        # send: the peer namespace has no reader, the kernel drops the frames cheaply.
        # Best of three runs: the machine is shared, a single run is noisy.
        runs: list[tuple[int, str, str]] = []
        for _ in range(3):
            r = subprocess.run(["ip", "netns", "exec", ns[0], *me, "--child", "send", "--iface",
                                veth[0], "--packets", str(n)], capture_output=True, text=True,
                               timeout=300)
            line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT")), None)
            if line is None:
                out["send_raw"] = f"failed: {r.stderr.strip()[-300:]}"
                break
            pps, stalls, tx = line.split()[1:]
            runs.append((int(pps), stalls, tx))
        if runs:
            best = max(runs)
            out["send_raw"] = (f"{best[0]:,} pps best of {len(runs)} "
                               f"({', '.join(f'{r[0]:,}' for r in runs)}; {best[2]} frames, "
                               f"{best[1]} send stalls)")
            out["_send_raw_pps"] = str(best[0])
        rx = subprocess.Popen(["ip", "netns", "exec", ns[1], *me, "--child", "recv", "--iface",
                               veth[1], "--packets", str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        assert rx.stdout is not None
        rx.stdout.readline()  # READY
        subprocess.run(["ip", "netns", "exec", ns[0], *me, "--child", "blast", "--iface",
                        veth[0], "--packets", str(n)], capture_output=True, timeout=300)
        so, se = rx.communicate(timeout=300)
        line = next((x for x in so.splitlines() if x.startswith("RESULT")), None)
        if line is None:
            out["recv_raw"] = f"failed: {se.strip()[-300:]}"
        else:
            pps, got, drops = line.split()[1:]
            out["recv_raw"] = f"{int(pps):,} pps processed ({got}/{n} frames, {drops} kernel drops)"
    finally:
        for x in ns:
            subprocess.run(["ip", "netns", "del", x], capture_output=True, timeout=30)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packets", type=int, default=200_000)
    ap.add_argument("--skip-netns", action="store_true")
    ap.add_argument("--child", choices=["send", "recv", "blast"])
    ap.add_argument("--iface")
    a = ap.parse_args()
    if a.child:
        {"send": child_send, "recv": child_recv, "blast": child_blast}[a.child](a.iface, a.packets)
        return 0
    print(describe())
    print(f"{platform.platform()}; {a.packets:,} packets of {PAYLOAD} B payload per figure")
    frames = build_frames(a.packets)
    results: dict[str, float] = {}
    for label, key, mode, fr in (
        ("receive in order, go-back-N", "recv_inorder", "gbn", frames),
        ("receive in order, selective repeat", "recv_inorder_sr", "sr", frames),
        ("receive permuted (blocks of 128), selective repeat", "recv_permuted", "sr",
         permute(frames, 128)),
    ):
        best = 0.0
        for _ in range(3):
            pps, info = recv_in_process(fr, mode, 256)
            best = max(best, pps)
        results[key] = best
        print(f"{label:55s} {best:>10,.0f} pps   {info}")
    if a.skip_netns:
        print("raw-socket figures skipped (--skip-netns)")
    elif os.geteuid() != 0 or shutil.which("ip") is None:
        print("raw-socket figures skipped: needs root and iproute2")
    else:
        out = run_netns(a.packets)
        print(f"{'send on AF_PACKET/veth, go-back-N, pacing off':55s} {out['send_raw']}")
        print(f"{'receive on AF_PACKET/veth, selective repeat':55s} {out['recv_raw']}")
        if "_send_raw_pps" in out:
            results["send_raw"] = float(out["_send_raw_pps"])
    ok = True
    for k, target in TARGETS.items():
        if k in results:
            good = results[k] >= target
            ok &= good
            print(f"target {k}: >= {target:,} pps: {'met' if good else 'NOT met'} "
                  f"({results[k]:,.0f})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
