"""PacketOut on BMv2's server and ours (tests/switch/p4/ecmp_ecn.p4: a packet_out header
of egress_port bit<9> and _pad bit<7>): good and malformed metadata, a missing or unknown
field, a port without an interface, a backup's PacketOut. Each side puts the same frames
on the same ports; ours also answers a StreamError where the spec asks for one and
BMv2's server says nothing. Both take a PacketOut that leaves out a field (as 0) or
names one twice (the last value)."""

from __future__ import annotations

import queue
import socket
from pathlib import Path

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as P

from emu.core import netns
from emu.crosscheck.model import ETH_P_ALL
from emu.crosscheck.sides import SwitchProcess, collect
from emu.runtime.client import P4RuntimeClient

from ..conftest import needs_root
from ..targets.params import requires_bmv2
from .test_p4runtime_agreement import PROGRAMS, compare_with_bmv2

FRAME = bytes.fromhex("020000000002" "020000000001" "88b5") + bytes(range(50))
# label -> packet_out metadata (id, value) pairs
CASES: dict[str, list[tuple[int, bytes]]] = {
    "to port 2": [(1, b"\x02"), (2, b"\x00")],
    "to port 1, padded value": [(1, b"\x00\x01"), (2, b"\x00")],
    "no _pad": [(1, b"\x02")],
    "no metadata": [],
    "unknown metadata id": [(1, b"\x02"), (2, b"\x00"), (9, b"\x01")],
    "a port wider than bit<9>": [(1, b"\x02\x00"), (2, b"\x00")],
    "an empty value": [(1, b""), (2, b"\x00")],
    "a field twice": [(1, b"\x02"), (1, b"\x01"), (2, b"\x00")],
    "a port without interface": [(1, b"\x07"), (2, b"\x00")],
}
# label -> why ours answers otherwise: both drop the frame, BMv2's server says nothing
# (the spec's Stream Error Reporting asks for a StreamError naming the PacketOut)
SILENT = "BMv2's server drops it without a StreamError"
DIFFERENT = {
    "unknown metadata id": f"INVALID_ARGUMENT (spec: metadata not as in P4Info); {SILENT}",
    "a port wider than bit<9>": f"OUT_OF_RANGE (spec, Bytestrings); {SILENT}",
    "an empty value": f"OUT_OF_RANGE (spec, Bytestrings); {SILENT}",
    "from a backup": f"PERMISSION_DENIED (spec); {SILENT}",
}


def _stream_error(c: P4RuntimeClient) -> str:
    try:
        return code_pb2.Code.Name(c.stream_errors.get(timeout=0.5).canonical_code)
    except queue.Empty:
        return "none"


def _outcomes(sw: SwitchProcess) -> list[tuple[str, str]]:
    c = sw.client
    socks: dict[int, socket.socket] = {}
    with netns.inside(sw.ns):
        for port, iface in sw.host_end.items():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((iface, 0))
            socks[port] = s
    try:
        collect(socks, 0.05, 0.5)  # drain start-up traffic
        out = []
        for label, metadata in CASES.items():
            req = P.StreamMessageRequest()
            req.packet.payload = FRAME
            for mid, value in metadata:
                req.packet.metadata.add(metadata_id=mid, value=value)
            c.send_stream(req)
            got = collect(socks, 0.1, 2.0, 0.5)
            ports = sorted(p for p, frame in got if frame == FRAME)
            out.append((label, f"ports {ports}, stream error {_stream_error(c)}"))
        backup = P4RuntimeClient(c.address, 1, (0, 0))
        try:
            backup.packet_out(FRAME, egress_port=2, _pad=0)
            got = collect(socks, 0.1, 2.0, 0.5)
            out.append(("from a backup", f"ports {sorted(p for p, _ in got)}, "
                                          f"stream error {_stream_error(backup)}"))
        finally:
            backup.close()
    finally:
        for s in socks.values():
            s.close()
    return out


@needs_root
@requires_bmv2
def test_packet_out_agrees_with_bmv2(tmp_path: Path) -> None:
    ours = dict(compare_with_bmv2(PROGRAMS["ecmp"][0], tmp_path, _outcomes, DIFFERENT))
    assert ours["to port 2"] == "ports [2], stream error none"
    assert ours["to port 1, padded value"] == "ports [1], stream error none"
