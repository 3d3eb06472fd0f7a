"""Every host reaches every other host through P4 switches running fabric.p4,
programmed by the fabric controller over P4Runtime: the real data path, no stand-in.

Skips, with the reason, while a piece is missing: the target's tools, the target
module, p4src/fabric.p4, or the target's support for a construct fabric.p4 uses.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from emu.topo import load_topology

from .conftest import REPO, Snapshot, needs_mininet
from .helpers import LOCK_WAIT_S

pytestmark = [needs_mininet, pytest.mark.timeout(600), pytest.mark.slow]

FABRIC_P4 = REPO / "p4src" / "fabric.p4"


def compiled_pipeline(target_name: str, build_dir: Path) -> tuple[object, object]:
    """(target, pipeline), or pytest.skip with the precise reason."""
    module = f"emu.targets.{target_name}"
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not in the tree yet")
    if not FABRIC_P4.is_file():
        pytest.skip(f"{FABRIC_P4.relative_to(REPO)} is not in the tree yet")
    from emu.targets import get_target

    target = get_target(target_name)
    missing = target.missing()
    if missing:
        pytest.skip(target.unavailable_message(missing))
    try:
        pipeline = target.compile(FABRIC_P4, build_dir)
    except Exception as exc:
        if "not supported by the embedded v1model target" in str(exc):
            pytest.skip(f"the {target_name} target cannot compile fabric.p4 yet: {exc}")
        raise
    return target, pipeline


@pytest.fixture(scope="module", params=["embedded", "bmv2"])
def target_pipeline(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, object]]:
    yield compiled_pipeline(request.param, tmp_path_factory.mktemp(f"build-{request.param}"))


@pytest.mark.parametrize("topo", ["leafspine2", "clos4", "fattree4"])
def test_all_pairs_reachable_through_p4_switches(topo: str, target_pipeline: tuple[object, object],
                                                 state_dir: Path, tmp_path: Path) -> None:
    from emu.control import FabricController
    from emu.control.p4rt import connect
    from emu.net import EmuNet

    target, pipeline = target_pipeline
    fabric = load_topology(topo)
    if target.link_delay_problem() is not None:  # type: ignore[attr-defined]
        from emu.experiments.config import without_link_delay

        fabric = without_link_delay(fabric)  # BMv2 without netem: as LINK_DELAY=0
    before = Snapshot.take()
    net = EmuNet(fabric, target, tmp_path, pipeline=pipeline, lock_wait_s=LOCK_WAIT_S)  # type: ignore[arg-type]
    with net:
        t0 = time.monotonic()
        handles = connect(fabric, net.grpc_addresses(), pipeline.load_p4info(),  # type: ignore[attr-defined]
                          device_config=pipeline.device_config())  # type: ignore[attr-defined]
        FabricController(fabric, handles).program()
        programmed = time.monotonic() - t0
        t0 = time.monotonic()
        failed = net.check_reachability(timeout_s=2, attempts=3)
        probe = time.monotonic() - t0
        pairs = len(fabric.hosts) * (len(fabric.hosts) - 1)
        assert failed == [], f"{len(failed)}/{pairs} pairs unreachable: {failed}"
        for node in net.switches.values():
            assert node.process is not None and node.process.alive()
    print(f"{topo} on {getattr(target, 'name', '?')}: up {net.timings['start_s']:.1f} s, "
          f"programmed {programmed:.1f} s, {pairs} pairs probed {probe:.1f} s, "
          f"down {net.timings['stop_s']:.1f} s")
    assert net.errors == []
    before.assert_clean()


def test_a_switch_whose_port_is_taken_meanwhile_starts_on_other_ports(
        target_pipeline: tuple[object, object], state_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another program listens on a switch's gRPC port after the allocator's bind test
    chose it and before the switch binds it (a CI run lost fattree4 to that race):
    the switch starts again on other ports, and the fabric works."""
    import socket

    from emu.control import FabricController
    from emu.control.p4rt import connect
    from emu.net import EmuNet, network
    from emu.net.addresses import PortAllocator

    squatters: list[socket.socket] = []

    class Squatted(PortAllocator):
        def take(self) -> int:
            port = super().take()
            if not squatters:  # the first switch's gRPC port
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                s.listen()
                squatters.append(s)
            return port

    monkeypatch.setattr(network, "PortAllocator", Squatted)
    target, pipeline = target_pipeline
    fabric = load_topology("leafspine2")
    if target.link_delay_problem() is not None:  # type: ignore[attr-defined]
        from emu.experiments.config import without_link_delay

        fabric = without_link_delay(fabric)
    before = Snapshot.take()
    net = EmuNet(fabric, target, tmp_path, pipeline=pipeline, lock_wait_s=LOCK_WAIT_S)  # type: ignore[arg-type]
    try:
        with net:
            taken = f"127.0.0.1:{squatters[0].getsockname()[1]}"
            assert taken not in net.grpc_addresses().values()
            handles = connect(fabric, net.grpc_addresses(), pipeline.load_p4info(),  # type: ignore[attr-defined]
                              device_config=pipeline.device_config())  # type: ignore[attr-defined]
            FabricController(fabric, handles).program()
            assert net.check_reachability(timeout_s=2, attempts=3) == []
    finally:
        for s in squatters:
            s.close()
    assert net.errors == []
    before.assert_clean()
