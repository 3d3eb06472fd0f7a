"""The BMv2 target's process handling against stand-in tools (tests/targets/fakes.py):
p4c invocation and errors, start, readiness, simple_switch_CLI queue commands and
register reads, stop, and death with the parent. Real BMv2 runs in the VM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from emu.targets import PortQueueConfig, SpecError, SwitchSpec, Unsupported
from emu.targets.bmv2 import Bmv2Target
from emu.targets.proc import free_tcp_port

from . import fakes
from .conftest import pid_gone


@pytest.fixture
def fake(tmp_path, monkeypatch):
    tools = fakes.install(tmp_path)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_PID", str(tmp_path / "switch.pid"))
    # netem=False: this fixture checks the no-netem refusal; netem itself is real-only.
    target = Bmv2Target(p4c=tools["p4c"], switch=tools["simple_switch_grpc"],
                        cli=tools["simple_switch_CLI"], netem=False)

    def calls(tool: str) -> list[list]:
        if not log.exists():
            return []
        return [c[1:] for c in map(json.loads, log.read_text().splitlines()) if c[0] == tool]

    target.calls = calls  # type: ignore[attr-defined]
    return target


def lo_spec(**kw) -> SwitchSpec:
    base = dict(name="s1", device_id=1, ports={1: "lo"},
                grpc_addr=f"127.0.0.1:{free_tcp_port()}", thrift_port=free_tcp_port())
    base.update(kw)
    return SwitchSpec(**base)  # type: ignore[arg-type]


def test_compile_runs_p4c_and_finds_its_outputs(fake, tmp_path):
    prog = tmp_path / "prog.p4"
    prog.write_text("/* a program */\n")
    pipe = fake.compile(prog, tmp_path / "build", (tmp_path / "inc",))
    assert fake.calls("p4c") == [["--target", "bmv2", "--arch", "v1model", "--p4runtime-files",
                                  str(tmp_path / "build/prog.p4info.txtpb"), "-o",
                                  str(tmp_path / "build"), "-I", str(tmp_path / "inc"),
                                  str(prog)]]
    assert pipe.device_config_path == tmp_path / "build/prog.json"
    assert pipe.program_name == "prog"
    assert [t.preamble.name for t in pipe.load_p4info().tables] == ["Ing.t"]
    assert pipe.device_config() == b'{"header_types": []}'


def test_compile_errors_carry_p4c_output(fake, tmp_path):
    prog = tmp_path / "bad.p4"
    prog.write_text("syntax error\n")
    with pytest.raises(RuntimeError, match="(?s)p4c failed .*unexpected IDENTIFIER"):
        fake.compile(prog, tmp_path / "build")
    with pytest.raises(FileNotFoundError):
        fake.compile(tmp_path / "absent.p4", tmp_path / "build")


def test_start_wait_ready_queues_registers_stop(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_BMV2_MODE", "embedded")
    spec = lo_spec(queues={1: PortQueueConfig(rate_bps=10_000_000, depth_pkts=30)},
                   pcap_dir=tmp_path / "pcap")
    p = fake.start(spec, None)  # type: ignore[arg-type]
    try:
        p.wait_ready(30)
        assert p.alive()
        argv = fake.calls("simple_switch_grpc")[0]
        assert argv[:3] == ["--no-p4", "--device-id", "1"]
        assert ["-i", "1@lo"] == argv[3:5]
        assert argv[argv.index("--thrift-port") + 1] == str(spec.thrift_port)
        assert (tmp_path / "pcap").is_dir()
        # initial queues went through the Thrift CLI at readiness
        cli = fake.calls("simple_switch_CLI")
        assert cli[0][:2] == ["--thrift-port", str(spec.thrift_port)]
        assert cli[0][2]["stdin"] == ["set_queue_rate 1155 1", "set_queue_depth 30 1"]
        p.set_queue(None, PortQueueConfig(depth_pkts=8))
        assert fake.calls("simple_switch_CLI")[1][2]["stdin"] == ["set_queue_rate 0",
                                                                  "set_queue_depth 8"]
        p.apply_queues()  # re-issues the current settings in one CLI call
        assert fake.calls("simple_switch_CLI")[2][2]["stdin"] == ["set_queue_rate 0 1",
                                                                  "set_queue_depth 8 1"]
        with pytest.raises(Unsupported, match="no netem.*LINK_DELAY=0"):
            p.set_queue(1, PortQueueConfig(delay_ns=1))
        with pytest.raises(SpecError, match="no port 5"):
            p.set_queue(5, PortQueueConfig())
        with pytest.raises(SpecError, match="depth_pkts 0"):
            p.set_queue(1, PortQueueConfig(depth_pkts=0))
        with pytest.raises(Unsupported, match="fixed at start"):
            p.set_queue(1, PortQueueConfig(priority_queues=4))
        assert len(fake.calls("simple_switch_CLI")) == 3  # nothing sent for the refused ones
        assert p.read_register("Ing.rx_packets", 3) == 42
        with pytest.raises(RuntimeError, match="Invalid register name"):
            p.read_register("nosuch", 0)
    finally:
        p.stop()
    assert not p.alive()
    assert pid_gone(p.pid)
    p.stop()  # idempotent


def test_wait_ready_times_out_naming_what_is_missing(fake, monkeypatch):
    monkeypatch.setenv("FAKE_BMV2_MODE", "sleep")
    p = fake.start(lo_spec(), None)  # type: ignore[arg-type]
    try:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match="not ready after 1 s: Thrift port"):
            p.wait_ready(1)
        assert time.monotonic() - t0 < 5
    finally:
        p.stop()
    assert pid_gone(p.pid)


def test_wait_ready_reports_missing_interfaces(fake, monkeypatch):
    monkeypatch.setenv("FAKE_BMV2_MODE", "sleep")
    p = fake.start(lo_spec(ports={1: "nosuchif0"}), None)  # type: ignore[arg-type]
    try:
        with pytest.raises(TimeoutError, match="interfaces nosuchif0 do not exist"):
            p.wait_ready(0.5)
    finally:
        p.stop()


def test_a_switch_that_exits_is_reported_with_its_output(fake, monkeypatch):
    monkeypatch.setenv("FAKE_BMV2_MODE", "exit")
    p = fake.start(lo_spec(), None)  # type: ignore[arg-type]
    try:
        with pytest.raises(RuntimeError, match=r"(?s)exited during start-up \(exit 3\).*"
                                               r"interface does not exist"):
            p.wait_ready(10)
    finally:
        p.stop()


def test_switch_dies_with_its_parent(fake, tmp_path):
    """PR_SET_PDEATHSIG: kill the process that started the switch; the switch goes too."""
    script = textwrap.dedent(f"""
        import sys, time
        from emu.targets.bmv2 import Bmv2Target
        from emu.targets import SwitchSpec
        t = Bmv2Target(p4c={fake.p4c!r}, switch={fake.switch!r}, cli={fake.cli!r})
        p = t.start(SwitchSpec("s1", 1, {{1: "lo"}}, "127.0.0.1:1", thrift_port=1), None)
        print(p.pid, flush=True)
        time.sleep(60)
    """)
    env = dict(os.environ, FAKE_BMV2_MODE="sleep")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env=env, cwd=str(Path(__file__).resolve().parents[2]))
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        pidfile = tmp_path / "switch.pid"
        deadline = time.monotonic() + 10
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_gone(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(5)
        deadline = time.monotonic() + 5
        while not pid_gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid_gone(child), "the switch outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child and not pid_gone(child):
            os.kill(child, signal.SIGKILL)
