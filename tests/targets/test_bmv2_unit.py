"""BMv2 target pieces that run without BMv2: command lines, unit conversion, CLI
text and output parsing, spec validation, the missing-tools message."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from emu.targets import (
    PortQueueConfig,
    SpecError,
    SwitchSpec,
    TargetUnavailable,
    Unsupported,
    get_target,
)
from emu.targets import bmv2 as B
from emu.targets.embedded import EmbeddedTarget


def spec(**kw: object) -> SwitchSpec:
    base: dict[str, object] = dict(name="leaf1", device_id=3, ports={2: "leaf1-eth2", 1: "leaf1-eth1"},
                                   grpc_addr="127.0.0.1:50003", thrift_port=9093)
    base.update(kw)
    return SwitchSpec(**base)  # type: ignore[arg-type]


def test_p4c_command_is_the_documented_one():
    cmd = B.p4c_command(Path("p4src/fabric.p4"), Path("build"))
    assert cmd == ["p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files",
                   "build/fabric.p4info.txtpb", "-o", "build", "p4src/fabric.p4"]
    cmd = B.p4c_command(Path("x/prog.p4"), Path("out"), (Path("inc"),), p4c="/opt/p4c")
    assert cmd[0] == "/opt/p4c" and cmd[-3:] == ["-I", "inc", "x/prog.p4"]


def test_switch_command_minimal():
    cmd = B.switch_command(spec(cpu_port=None), 9093)
    assert cmd == ["simple_switch_grpc", "--no-p4", "--device-id", "3",
                   "-i", "1@leaf1-eth1", "-i", "2@leaf1-eth2", "--thrift-port", "9093",
                   "--", "--grpc-server-addr", "127.0.0.1:50003"]


def test_switch_command_full(tmp_path):
    s = spec(pcap_dir=tmp_path / "pcap", log_path=tmp_path / "leaf1.log",
             queues={1: PortQueueConfig(priority_queues=4)}, netns="ns1",
             grpc_addr="unix:/tmp/leaf1.sock")
    cmd = B.switch_command(s, 9100)
    assert cmd[:4] == ["ip", "netns", "exec", "ns1"]
    sep = cmd.index("--")
    bm, grpc = cmd[4:sep], cmd[sep + 1:]
    assert bm[bm.index("--pcap") + 1] == str(tmp_path / "pcap")
    assert bm[bm.index("--log-file") + 1] == str(tmp_path / "leaf1.log")
    assert "--log-flush" in bm and "--log-console" not in bm
    assert grpc == ["--grpc-server-addr", "unix:/tmp/leaf1.sock", "--cpu-port", "255",
                    "--priority-queues", "4"]
    assert "--log-console" in B.switch_command(spec(), 1, log_console=True)


@pytest.mark.parametrize(("bps", "frame", "pps"), [
    (100e9, 1082, 11552680),       # a 100G link in 1082-byte RoCE frames
    (10_000_000, 1082, 1155),
    (10_000_000, 1250, 1000),
    (1, 1082, 1),                  # never below 1 packet per second
    (8 * 1082 * 2.5, 1082, 2),     # rounded (banker's rounding of 2.5)
])
def test_pps_from_bps(bps, frame, pps):
    assert B.pps_from_bps(bps, frame) == pps


@pytest.mark.parametrize(("bps", "frame"), [(0, 1082), (-5, 1082), (1e9, 0)])
def test_pps_from_bps_rejects_nonsense(bps, frame):
    with pytest.raises(ValueError):
        B.pps_from_bps(bps, frame)


def test_queue_cli_commands():
    q = PortQueueConfig(rate_bps=10_000_000, depth_pkts=32)
    assert B.queue_cli_commands(2, q) == ["set_queue_rate 1155 2", "set_queue_depth 32 2"]
    assert B.queue_cli_commands(None, q, avg_frame_bytes=1250) == [
        "set_queue_rate 1000", "set_queue_depth 32"]
    # unlimited is rate 0 to BMv2
    assert B.queue_cli_commands(7, PortQueueConfig())[0] == "set_queue_rate 0 7"


def test_queue_cli_commands_refuses_what_bmv2_lacks():
    # The delay is netem's, not BMv2's: the queue lines carry only rate and depth.
    assert B.queue_cli_commands(1, PortQueueConfig(delay_ns=1000)) == [
        "set_queue_rate 0 1", "set_queue_depth 64 1"]
    with pytest.raises(SpecError, match="depth_pkts"):
        B.queue_cli_commands(1, PortQueueConfig(depth_pkts=0))
    with pytest.raises(SpecError, match="rate_bps"):
        B.queue_cli_commands(1, PortQueueConfig(rate_bps=0))


def test_parse_register_read():
    out = "Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation\n" \
          "RuntimeCmd: Ing.rx_packets[3]= 17\nRuntimeCmd: \n"
    assert B.parse_register_read(out, "Ing.rx_packets", 3) == 17
    assert B.parse_register_read("RuntimeCmd: port_qdepth[0]=  4\n", "port_qdepth", 0) == 4
    with pytest.raises(RuntimeError, match="unexpected CLI output"):
        B.parse_register_read("RuntimeCmd: Ing.rx_packets[3]= 17\n", "Ing.rx_packets", 4)


def test_cli_errors_are_raised():
    B.check_cli_output("RuntimeCmd: \nRuntimeCmd: \n", ["set_queue_depth 3 1"])
    with pytest.raises(RuntimeError, match="rejected"):
        B.check_cli_output("RuntimeCmd: Error: Invalid register name (foo)\n",
                           ["register_read foo 1"])


def test_capabilities_are_declared():
    caps = B.Bmv2Target(netem=False).capabilities
    assert caps.as_dict() == {"p4runtime_registers": False, "thrift_registers": True,
                              "bit_rate_queues": False, "packet_rate_queues": True,
                              "link_delay": False, "runtime_queue_config": True, "pcap": True}
    assert caps["link_delay"] is False
    assert B.Bmv2Target(netem=True).capabilities["link_delay"] is True
    # Unforced, the kernel decides: the same answer as trying netem here.
    assert get_target("bmv2").capabilities["link_delay"] is (B.netem_problem() is None)
    emb = EmbeddedTarget().capabilities
    assert emb["p4runtime_registers"] and emb["bit_rate_queues"] and emb["link_delay"]
    with pytest.raises(KeyError):
        caps["warp_drive"]


def test_missing_tools_message(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    t = get_target("bmv2")
    assert t.missing() == ["p4c", "simple_switch_grpc", "simple_switch_CLI"]
    with pytest.raises(TargetUnavailable) as exc:
        t.check_available()
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("target bmv2: p4c, simple_switch_grpc and simple_switch_CLI not found;")
    assert "make vm" in msg and "home:p4lang" in msg and "p4lang-bmv2" in msg
    with pytest.raises(TargetUnavailable):
        t.compile(Path("p4src/fabric.p4"), Path("/nonexistent"))
    with pytest.raises(TargetUnavailable):
        t.start(spec(), None)  # type: ignore[arg-type]


def test_missing_two_tools_message(monkeypatch):
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: "/usr/bin/x" if name == "simple_switch_CLI" else None)
    msg = get_target("bmv2").unavailable_message(get_target("bmv2").missing())
    assert msg.startswith("target bmv2: p4c and simple_switch_grpc not found; run inside the VM")


def test_unknown_target():
    with pytest.raises(ValueError, match="unknown switch target 'tofino'"):
        get_target("tofino")


@pytest.mark.parametrize(("kw", "problem"), [
    (dict(ports={}), "no ports"),
    (dict(ports={600: "x"}), "port 600 outside"),
    (dict(ports={1: "a-very-long-interface-name"}), "bad interface name"),
    (dict(ports={1: "eth1", 2: "eth1"}), "used by ports 1 and 2"),
    (dict(cpu_port=1), "cpu port 1 is also a data port"),
    (dict(device_id=-1), "negative"),
    (dict(grpc_addr="localhost"), "not HOST:PORT"),
    (dict(thrift_port=70000), "thrift port"),
    (dict(queues={9: PortQueueConfig()}), "port 9, which the switch does not have"),
    (dict(queues={1: PortQueueConfig(priority_queues=9)}), "priority_queues"),
])
def test_bad_specs(kw, problem):
    with pytest.raises(SpecError, match=problem):
        spec(**kw).validate()
    with pytest.raises(SpecError, match=problem):
        B.Bmv2Target().prepare(spec(**kw))


def test_good_specs_pass():
    spec().validate()
    spec(grpc_addr="unix:/run/emu/s1.sock", cpu_port=None).validate()
    spec(grpc_addr="[::1]:9559").validate()


def test_prepare_bmv2_specifics():
    t = B.Bmv2Target()
    s = t.prepare(spec(thrift_port=None))
    assert s.thrift_port is not None and 1024 <= s.thrift_port <= 65535
    with pytest.raises(SpecError, match="unix:PATH"):
        t.prepare(spec(netns="ns1"))
    t.prepare(spec(netns="ns1", grpc_addr="unix:/tmp/x.sock"))
    delayed = spec(queues={1: PortQueueConfig(delay_ns=10_000)})
    with pytest.raises(Unsupported) as ei:
        B.Bmv2Target(netem=False).prepare(delayed)
    msg = str(ei.value)
    assert "\n" not in msg and "netem" in msg and "port 1 has 10 us" in msg
    assert "LINK_DELAY=0" in msg and "--no-link-delay" in msg
    assert B.Bmv2Target(netem=True).prepare(delayed).queues[1].delay_ns == 10_000


def test_netem_command():
    assert B.netem_command("s1-eth1", 20_000) == [
        "tc", "qdisc", "replace", "dev", "s1-eth1", "root", "netem", "delay", "20us",
        "limit", str(B.NETEM_LIMIT)]
    assert B.netem_command("x", 1_500, "ns1")[:3] == ["tc", "-n", "ns1"]
    assert "1.5us" in B.netem_command("x", 1_500)
    assert B.netem_command("x", 0) == ["tc", "qdisc", "del", "dev", "x", "root"]


def test_describe_gives_both_command_sets():
    d = B.describe(spec(queues={1: PortQueueConfig(rate_bps=10_000_000, depth_pkts=20)}))
    assert d["switch"][0] == "simple_switch_grpc"
    assert d["queues"] == {1: ["set_queue_rate 1155 1", "set_queue_depth 20 1"]}


def test_spec_from_topology():
    from emu.targets.base import spec_from_topology
    from emu.topo import load_topology

    fabric = load_topology("clos4")
    s = spec_from_topology(fabric, "leaf1", "127.0.0.1:50001", cpu_port=255)
    s.validate()
    sw = fabric.switch("leaf1")
    assert s.device_id == sw.device_id
    assert s.ports == {p.number: p.intf for p in sw.ports}
    q = s.queues[sw.ports[0].number]
    assert q.rate_bps == sw.ports[0].rate_bps and q.depth_pkts == sw.ports[0].depth_pkts
    assert q.delay_ns == 1_000  # the fabric it is given: clos4 as written, 1 us links
    no_netem = B.Bmv2Target(netem=False).capabilities
    with pytest.raises(Unsupported, match="link_delay=False"):
        spec_from_topology(fabric, "leaf1", "127.0.0.1:1", capabilities=no_netem)
    s = spec_from_topology(fabric, "leaf1", "127.0.0.1:1", link_delay=False,
                           capabilities=no_netem)
    assert all(q.delay_ns == 0 for q in s.queues.values())
    B.Bmv2Target().prepare(s)


def test_embedded_daemon_command():
    from emu.targets.embedded import daemon_command

    s = spec(netns="ns1", pcap_dir=Path("/tmp/pc"),
             queues={1: PortQueueConfig(rate_bps=10_000_000, depth_pkts=30, delay_ns=20_000,
                                        priority_queues=2)})
    cmd = daemon_command(s, python="py", admin_socket="/tmp/a.sock", ready_fd=7)
    assert cmd[:7] == ["py", "-m", "emu.switch", "--no-p4", "--device-id", "3", "-i"]
    text = " ".join(cmd)
    for part in ("-i 1@leaf1-eth1 -i 2@leaf1-eth2", "--grpc-addr 127.0.0.1:50003",
                 "--cpu-port 255", "--pcap /tmp/pc", "--port-netns ns1", "--priority-queues 2",
                 "--admin-socket /tmp/a.sock", "--ready-fd 7", "--queue-depth 1=30",
                 "--queue-rate-bps 1=10000000", "--link-delay-us 1=20"):
        assert part in text, part


def test_require_target(monkeypatch):
    from emu.targets import require_target

    assert require_target("embedded").name == "embedded"
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(TargetUnavailable, match="^target bmv2: .* not found; run inside the VM"):
        require_target("bmv2")


def test_timer_spin_reaches_the_daemon_options():
    from emu.switch.commands import build_parser, options_from_args
    from emu.targets.embedded import daemon_command

    cmd = daemon_command(spec(timer_spin_us=0.0), python="py")
    assert "--timer-spin-us 0" in " ".join(cmd)
    assert "--timer-spin-us" not in daemon_command(spec(), python="py")  # the daemon's default
    args = build_parser().parse_args(cmd[3:])
    assert options_from_args(args).timer_spin_ns == 0
    args = build_parser().parse_args(["--no-p4", "--timer-spin-us", "25"])
    assert options_from_args(args).timer_spin_ns == 25_000
    args = build_parser().parse_args(["--no-p4"])
    assert options_from_args(args).timer_spin_ns == 100_000


# Holds the probe open: the window in which a kill left the probe's namespace behind.
SLOW_TC = "#!/bin/sh\necho started > \"$EMU_TEST_MARK\"\nexec sleep 60\n"
PROBE = ("import sys; from emu.targets.bmv2 import netem_problem; "
         "print(netem_problem(), flush=True)")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                    reason="needs root and iproute2")
def test_a_netem_probe_killed_half_way_leaves_no_namespace(tmp_path: Path) -> None:
    """The probe tried netem in a named namespace (emunetem-PID) and deleted it after;
    killed in between (`kill -9` of `emu run --target bmv2`), the namespace stayed."""
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "tc").write_text(SLOW_TC)
    (tmp_path / "tc").chmod(0o755)
    mark = tmp_path / "mark"
    before = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "EMU_TEST_MARK": str(mark),
           "PYTHONPATH": str(Path(B.__file__).resolve().parents[2])}
    p = subprocess.Popen([sys.executable, "-c", PROBE], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not mark.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert mark.exists(), "the probe never ran tc"
        p.kill()
        p.wait(timeout=10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)  # the stand-in tc too
    after = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    assert not {n for n in after - before if n.startswith("emunetem")}, after - before
