"""Pure parts of emu.net: no root needed."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from emu.net.addresses import PortAllocator, unix_address
from emu.net.errors import NetError
from emu.net.links import htb_commands, link_ends
from emu.net.sh import run_script, script
from emu.net.switch_node import queue_configs
from emu.topo import load_topology


def test_htb_commands_exact_rate_and_burst() -> None:
    qdisc, cls = htb_commands("h1-eth0", 20_000_000, 1500)
    assert qdisc == ["tc", "qdisc", "replace", "dev", "h1-eth0", "root", "handle", "1:",
                     "htb", "default", "1"]
    assert cls[cls.index("rate") + 1] == "20000000bit"
    assert cls[cls.index("ceil") + 1] == "20000000bit"
    assert int(cls[cls.index("burst") + 1]) == 2 * 1514  # two frames beat 1 ms at 20M
    fast = htb_commands("h1-eth0", 10_000_000_000, 1500)[1]
    assert int(fast[fast.index("burst") + 1]) == 1_250_000  # 1 ms at 10G
    assert htb_commands("h1-eth0", None, 1500) == []


def test_link_ends_put_the_host_first_with_model_names_and_macs() -> None:
    fabric = load_topology("leafspine2")
    for link in fabric.links:
        a, b = link_ends(fabric, link)
        assert {a.intf, b.intf} == {link.a.intf, link.b.intf}
        assert not b.is_host  # hosts only ever at the first end
        if a.is_host:
            assert a.mac == fabric.host(a.node).mac.lower()
        assert b.mac == fabric.switch(b.node).port(b.port).mac.lower()


def test_queue_configs_carry_rate_depth_and_link_delay() -> None:
    fabric = load_topology("leafspine2")
    leaf2 = fabric.switch("leaf2")
    qs = queue_configs(leaf2, {p.number: 50_000 for p in leaf2.ports})
    for p in leaf2.ports:
        assert (qs[p.number].rate_bps, qs[p.number].depth_pkts, qs[p.number].delay_ns) == \
            (p.rate_bps, p.depth_pkts, 50_000)


def test_queue_configs_carry_the_run_priority_queues() -> None:
    leaf1 = load_topology("clos4").switch("leaf1")
    assert {q.priority_queues for q in queue_configs(leaf1, {}).values()} == {1}
    assert {q.priority_queues for q in queue_configs(leaf1, {}, 2).values()} == {2}


def test_port_allocator_skips_busy_ports_and_never_repeats() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        alloc = PortAllocator(port)
        got = [alloc.take(), alloc.take()]
    assert port not in got and len(set(got)) == 2 and all(p > port for p in got)


def test_unix_address_refuses_paths_the_kernel_would_truncate(tmp_path: Path) -> None:
    assert unix_address(Path("/run/emu/r1"), "leaf1") == "unix:/run/emu/r1/leaf1.grpc"
    with pytest.raises(NetError, match="too long"):
        unix_address(Path("/" + "x" * 120), "leaf1")


def test_script_stops_at_the_first_failure_and_names_it() -> None:
    text = script([["true"], ["false", "x y"], ["echo", "never"]])
    r = subprocess.run(["sh", "-c", text], capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip() == "failed: false 'x y'"


def test_a_batch_past_the_kernel_argument_limit_runs(tmp_path: Path) -> None:
    """`make run TOPO=fattree8` stopped with "OSError: [Errno 7] Argument list too long:
    'sh'": its switch-interface batch (512 interfaces) went to `sh -c` as one argument,
    past the kernel's 128 KiB per argument."""
    out = tmp_path / "out"
    cmds = [["true", f"switch-interface-{i:05d}-" + "x" * 40] for i in range(4000)]
    cmds.append(["touch", str(out)])
    text = script(cmds)
    assert len(text.encode()) > 128 * 1024
    run_script(text, "switch interfaces")
    assert out.exists()
    with pytest.raises(NetError, match="big batch: failed: false"):
        run_script(script([*cmds, ["false"]]), "big batch")
