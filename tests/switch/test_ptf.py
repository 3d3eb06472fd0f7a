"""The switch daemon under PTF (p4lang/ptf), the packet test framework P4 programs
are tested with against simple_switch_grpc: the `ptf` command sends and checks frames
on veths (its own AF_PACKET data plane) while its tests program the switch with
p4runtime-shell (tests/switch/ptf/portfwd_ptf.py)."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from emu.core import netns

from ..conftest import needs_root
from .conftest import PY, REPO

PTF = Path(sys.executable).parent / "ptf"
PORTFWD = REPO / "tests" / "targets" / "programs" / "portfwd.p4"
PORTS = (1, 2, 3, 4)


@needs_root
@pytest.mark.skipif(not PTF.exists(), reason="ptf is not installed (make setup installs it)")
def test_ptf_tests_pass_against_the_daemon(tmp_path: Path) -> None:
    build = tmp_path / "build"
    subprocess.run([PY, "-m", "emu.p4", "compile", str(PORTFWD), "-o", str(build)],
                   cwd=REPO, check=True, capture_output=True)
    ns = f"emuptf-{uuid.uuid4().hex[:6]}"
    netns.add(ns)
    sw = None
    try:
        for i in PORTS:  # switch end s<i>, PTF end p<i>: both in one namespace
            netns.run(ns, "ip", "link", "add", f"s{i}", "type", "veth", "peer", "name", f"p{i}")
            for ifc in (f"s{i}", f"p{i}"):
                netns.run(ns, "sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1",
                          check=False)
                netns.run(ns, "ip", "link", "set", ifc, "up")
        ready = tmp_path / "ready.json"
        grpc_addr = f"unix:{tmp_path}/p4rt.sock"
        sw = subprocess.Popen(
            [PY, "-m", "emu.switch", "--device-id", "1", "--port-netns", ns,
             "--grpc-addr", grpc_addr, "--ready-file", str(ready), "--no-p4",
             "--log-file", str(tmp_path / "switch.log"),
             *[a for i in PORTS for a in ("-i", f"{i}@s{i}")]],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while not ready.exists():
            assert sw.poll() is None, sw.stderr.read().decode() if sw.stderr else ""
            assert time.monotonic() < deadline, "switch did not become ready"
            time.sleep(0.02)
        params = (f"grpcaddr='{grpc_addr}';p4info='{build / 'portfwd.p4info.txtpb'}';"
                  f"config='{build / 'portfwd.p4src.json'}'")
        res = subprocess.run(
            ["ip", "netns", "exec", ns, str(PTF), "--test-dir", str(Path(__file__).parent / "ptf"),
             "--log-file", str(tmp_path / "ptf.log"), "--default-negative-timeout", "0.5",
             "--test-params", params, *[a for i in PORTS for a in ("-i", f"{i}@p{i}")]],
            cwd=tmp_path, capture_output=True, text=True, timeout=300)
        out = res.stdout + res.stderr
        assert res.returncode == 0, out
        assert out.count("... ok") == 2, out
    finally:
        if sw is not None and sw.poll() is None:
            sw.terminate()
            sw.wait(10)
        netns.delete(ns)
