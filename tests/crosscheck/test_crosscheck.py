"""`emu crosscheck`: comparison logic, packet files, the missing-tools exit, and a real
run of the machinery (veths in a namespace, a switch process, P4Runtime, raw sockets)
with the embedded daemon standing in for BMv2, which cannot be installed here."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter

import pytest

from emu import crosscheck as X
from emu.cli import main

from ..conftest import needs_root
from ..targets.conftest import PROGRAMS
from ..targets.params import requires_bmv2


def test_identical_outputs_have_no_differences():
    pkt = X.Packet(1, bytes(64))
    assert X.compare_outputs(0, pkt, [(2, b"a"), (3, b"b")], [(3, b"b"), (2, b"a")],
                             ("embedded", "bmv2")) == []


def test_port_differences_are_reported():
    pkt = X.Packet(1, bytes(64))
    d = X.compare_outputs(7, pkt, [(2, b"x")], [], ("embedded", "bmv2"))
    assert d == ["packet 7 (in port 1, 64 B): output ports embedded [2] vs bmv2 dropped"]
    d = X.compare_outputs(7, pkt, [(2, b"x")], [(3, b"x")], ("embedded", "bmv2"))
    assert d == ["packet 7 (in port 1, 64 B): output ports embedded [2] vs bmv2 [3]"]


def test_byte_differences_name_the_field():
    a = bytearray(64)
    b = bytearray(64)
    b[22] = 63  # TTL
    b[24] = 0x12  # checksum
    d = X.compare_outputs(0, X.Packet(1, bytes(a)), [(2, bytes(a))], [(2, bytes(b))],
                          ("embedded", "bmv2"))
    assert len(d) == 1
    assert "2 bytes differ (ipv4.ttl, ipv4.checksum); first at 22: 0x00 vs 0x3f" in d[0]
    d = X.compare_outputs(0, X.Packet(1, bytes(a)), [(2, bytes(a))], [(2, bytes(a[:60]))],
                          ("embedded", "bmv2"))
    assert "lengths 64 vs 60 B" in d[0]


def test_packet_files(tmp_path):
    f = tmp_path / "p.txt"
    f.write_text("# comment\npacket 1 0011 2233\n\n{\"port\": 2, \"frame\": \"aabb\"}\n")
    assert X.read_packets(f) == [X.Packet(1, bytes.fromhex("00112233")),
                                 X.Packet(2, bytes.fromhex("aabb"))]
    f.write_text("packet one 00\n")
    with pytest.raises(ValueError, match="p.txt:1"):
        X.read_packets(f)
    f.write_text("# nothing\n")
    with pytest.raises(ValueError, match="no packets"):
        X.read_packets(f)


def test_generated_packets_are_reproducible_and_varied():
    a = X.generate_packets(200, [1, 2, 3], seed=5)
    assert a == X.generate_packets(200, [1, 2, 3], seed=5)
    assert a != X.generate_packets(200, [1, 2, 3], seed=6)
    assert {p.port for p in a} == {1, 2, 3}
    types = Counter(p.frame[12:14] for p in a)
    assert types[b"\x08\x00"] > 150 and types[b"\x08\x06"] > 0
    assert any(p.frame[22] == 1 for p in a if p.frame[12:14] == b"\x08\x00")  # TTL 1


def test_fabric_programming_picks_a_leaf_and_its_hosts():
    setup = X.fabric_programming("clos4", None, "ecmp")
    assert setup.switch_name.startswith("leaf")
    local = [h for h in setup.hosts if h[2] is not None]
    assert local and all(p in setup.ports for _, _, p in local)
    with pytest.raises(ValueError, match="no switch"):
        X.fabric_programming("clos4", "nosuch", "ecmp")


def test_runtime_entries(tmp_path):
    setup = X.runtime_programming(PROGRAMS / "portfwd-runtime.json", [1, 2, 3])
    assert setup.defaults == [("Ing.port_map", "Ing.drop", {})]
    assert [(e.match["sm.ingress_port"], e.params["port"]) for e in setup.entries] == [
        (1, 2), (2, 3), (3, 1)]


@pytest.mark.skipif(shutil.which("p4c") is not None and shutil.which("simple_switch_grpc")
                    is not None, reason="BMv2 is installed")
def test_without_bmv2_one_line_message(capsys):
    assert main(["crosscheck", "--generate", "3"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("target bmv2: ") and "not found; run inside the VM (make vm" in err


@needs_root
def test_machinery_against_the_embedded_daemon(tmp_path):
    report = tmp_path / "report.json"
    rc = subprocess.run(
        [X.sys.executable, "-m", "emu", "crosscheck", "--program", str(PROGRAMS / "portfwd.p4"),
         "--entries", str(PROGRAMS / "portfwd-runtime.json"), "--ports", "1,2,3,4",
         "--generate", "30", "--against", "embedded", "--registers", "Ing.rx_packets",
         "--build-dir", str(tmp_path / "build"), "--settle-ms", "30", "--report", str(report)],
        capture_output=True, text=True, timeout=180, cwd=str(X.ROOT))
    assert rc.returncode == 0, rc.stdout + rc.stderr
    doc = json.loads(report.read_text())
    assert doc["packets"] == 30 and doc["differences"] == []
    # ports 1-3 forward, port 4 drops: some frames out, fewer than in
    out = int(doc["notes"][0].split(" frames out")[0].split(", ")[1])
    assert 0 < out < 30
    assert "0 difference(s)" in rc.stdout
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "emuxc-" not in ns


@needs_root
@requires_bmv2
def test_fabric_p4_embedded_vs_bmv2(tmp_path):
    rc = subprocess.run([X.sys.executable, "-m", "emu", "crosscheck", "--generate", "200",
                         "--build-dir", str(tmp_path / "build"),
                         "--report", str(tmp_path / "r.json")],
                        capture_output=True, text=True, timeout=900, cwd=str(X.ROOT))
    assert rc.returncode == 0, rc.stdout + rc.stderr

