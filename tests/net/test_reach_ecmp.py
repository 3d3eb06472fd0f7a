"""Every host reaches every other host through the embedded switch daemon, forwarding
for real: tests/switch/p4/ecmp_ecn.p4 (an IPv4 LPM router), routes written here over
P4Runtime. This exercises EmuNet's data path (addresses, gateway neighbour, offloads,
veths, switch ports, gRPC addresses) independently of fabric.p4 and its controller,
which test_reach_p4.py covers once they compile on the target.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import time
from pathlib import Path

import pytest

from emu.topo import Fabric, load_topology
from emu.topo.paths import next_hop_ports

from .conftest import REPO, Snapshot, needs_mininet
from .helpers import LOCK_WAIT_S

pytestmark = [needs_mininet, pytest.mark.timeout(600), pytest.mark.slow]

ECMP_P4 = REPO / "tests" / "switch" / "p4" / "ecmp_ecn.p4"


def program_routes(fabric: Fabric, addresses: dict[str, str], pipeline: object) -> None:
    """A /32 route per host on every switch: towards the host's port on its leaf, else
    along the first shortest path towards its leaf."""
    from emu.runtime.client import P4RuntimeClient

    p4info = pipeline.load_p4info()  # type: ignore[attr-defined]
    config = pipeline.device_config()  # type: ignore[attr-defined]
    for sw in fabric.switches:
        client = P4RuntimeClient(addresses[sw.name], sw.device_id)
        try:
            client.set_pipeline(p4info, config)
            for member, h in enumerate(fabric.hosts, start=1):
                if h.switch == sw.name:
                    port, dmac = h.switch_port, h.mac
                else:
                    port = next_hop_ports(fabric, sw.name, h.switch)[0]
                    peer = sw.port(port).peer
                    dmac = fabric.switch(peer.node).port(peer.port).mac
                client.insert_member("MyIngress.ecmp_selector", member, "MyIngress.set_nhop",
                                     {"dmac": int(dmac.replace(":", ""), 16), "port": port})
                client.insert_entry("MyIngress.ipv4_lpm",
                                    {"hdr.ipv4.dstAddr": (int(ipaddress.IPv4Address(h.ip)), 32)},
                                    member_id=member)
        finally:
            client.close()


@pytest.mark.parametrize("topo", ["leafspine2", "clos4"])
def test_all_pairs_reachable_through_the_embedded_switch(topo: str, state_dir: Path,
                                                         tmp_path: Path) -> None:
    if importlib.util.find_spec("emu.targets.embedded") is None:
        pytest.skip("emu.targets.embedded is not in the tree yet")
    from emu.net import EmuNet
    from emu.targets import get_target

    target = get_target("embedded")
    if target.missing():
        pytest.skip(target.unavailable_message(target.missing()))
    pipeline = target.compile(ECMP_P4, tmp_path / "build")
    fabric = load_topology(topo)
    before = Snapshot.take()
    net = EmuNet(fabric, target, tmp_path, pipeline=pipeline, lock_wait_s=LOCK_WAIT_S)
    with net:
        t0 = time.monotonic()
        program_routes(fabric, net.grpc_addresses(), pipeline)
        programmed = time.monotonic() - t0
        t0 = time.monotonic()
        failed = net.check_reachability(timeout_s=2, attempts=3)
        probe = time.monotonic() - t0
        pairs = len(fabric.hosts) * (len(fabric.hosts) - 1)
        assert failed == [], f"{len(failed)}/{pairs} pairs unreachable: {failed}"
    print(f"{topo} on embedded/ecmp_ecn: up {net.timings['start_s']:.1f} s "
          f"(switches ready at {net.timings['switches_s']:.1f} s), programmed "
          f"{programmed:.1f} s, {pairs} pairs probed {probe:.1f} s, "
          f"down {net.timings['stop_s']:.1f} s")
    assert net.errors == []
    before.assert_clean()
