"""enq_qdepth and deq_qdepth count the packet's own priority queue, as BMv2 does since
1.15.1 (simple_switch.cpp: egress_buffers.size(port, priority)). The embedded target
counted the whole port, so with 2 or 8 priority queues (every run's default, and PFC
runs) ECN marking and adaptive routing read other classes' packets as this one's queue.

The same program runs on both targets: a rate-limited port, five priority-0 packets,
then one of priority 1; egress writes the queue metadata into the packet. The BMv2 half
runs simple_switch on pcap files (no interfaces) and skips without it."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from emu.core.clock import VirtualClock
from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

QUEUE_META_P4 = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> prio; bit<32> enq; bit<32> deq; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; } }
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; sm.priority = (bit<3>) hdr.h.prio; } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { hdr.h.enq = (bit<32>) sm.enq_qdepth; hdr.h.deq = (bit<32>) sm.deq_qdepth; } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

FRAMES = [bytes([0]) + bytes(59)] * 5 + [bytes([1]) + bytes(59)]


def _fields(data: bytes) -> tuple[int, int, int]:
    """(priority, enq_qdepth, deq_qdepth) as egress wrote them."""
    return data[0], int.from_bytes(data[1:5], "big"), int.from_bytes(data[5:9], "big")


def test_the_embedded_target_counts_the_packets_own_priority_queue() -> None:
    sw = P4Switch(compile_source(QUEUE_META_P4, "queue_meta.p4"), VirtualClock(),
                  priority_queues=2)
    sw.set_queue_rate(1, rate_pps=5)
    for f in FRAMES:
        sw.inject(0, f)
    sw.run_until_idle()
    got = [_fields(o.data) for o in sw.outputs()]
    # All six queue in one instant; strict priority sends the priority-1 packet first.
    # It found none of its own class ahead of it (the port held five) and left none.
    assert got == [(1, 0, 0), (0, 0, 4), (0, 1, 3), (0, 2, 2), (0, 3, 1), (0, 4, 0)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read(pcap: Path) -> int:
    """Packets in a pcap BMv2 is still writing (0 until it holds one)."""
    from scapy.all import rdpcap
    from scapy.error import Scapy_Exception

    try:
        return len(rdpcap(str(pcap)))
    except (OSError, Scapy_Exception):
        return 0


BMV2_TOOLS = ("simple_switch", "simple_switch_CLI", "p4c-bm2-ss")


@pytest.mark.skipif(any(shutil.which(t) is None for t in BMV2_TOOLS),
                    reason="needs BMv2 (simple_switch, simple_switch_CLI) and p4c-bm2-ss")
def test_bmv2_counts_the_packets_own_priority_queue(tmp_path: Path) -> None:
    from scapy.all import Raw, rdpcap, wrpcap

    (tmp_path / "q.p4").write_text(QUEUE_META_P4)
    subprocess.run(["p4c-bm2-ss", "--arch", "v1model", "-o", "q.json", "q.p4"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=120)
    wrpcap(str(tmp_path / "0_in.pcap"), [Raw(f) for f in FRAMES], linktype=1)
    wrpcap(str(tmp_path / "1_in.pcap"), [], linktype=1)
    thrift = _free_port()
    # --use-files N: read the input pcaps after N seconds, time to rate-limit port 1
    sw = subprocess.Popen(["simple_switch", "--use-files", "2", "-i", "0@0", "-i", "1@1",
                           "--thrift-port", str(thrift), "q.json", "--",
                           "--priority-queues", "2"],
                          cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            cli = subprocess.run(["simple_switch_CLI", "--thrift-port", str(thrift)],
                                 input="set_queue_rate 5 1\n", capture_output=True,
                                 text=True, timeout=30)
            if "Could not connect" not in cli.stdout + cli.stderr:
                break
            assert time.monotonic() < deadline, "simple_switch did not start"
            time.sleep(0.2)
        out = tmp_path / "1_out.pcap"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _read(out) < len(FRAMES):
            time.sleep(0.2)
        got = [_fields(bytes(p)) for p in rdpcap(str(out))]
    finally:
        sw.terminate()
        sw.wait(timeout=10)
    assert len(got) == len(FRAMES)
    high = [g for g in got if g[0] == 1]
    low = [g for g in got if g[0] == 0]
    # The priority-1 packet, the last to arrive, found priority-0 packets waiting on
    # the port (their own depths show the queue: files are read at BMv2's pace and the
    # rate limiter lets the first ones go, so how many varies) and none of its class.
    assert high == [(1, 0, 0)]
    assert max(e for _p, e, _d in low) >= 2
