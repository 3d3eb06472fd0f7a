"""The host agent: workloads with dependencies in virtual time, and two agents in two
network namespaces exchanging a multi-megabyte message over a veth pair."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emu.core.clock import VirtualClock
from emu.core.port import MemLink
from emu.core.wire import DSCP_CNP, DSCP_ROCE_DATA, OP_ACK
from emu.roce import config
from emu.roce.agent import Agent, flow_imm, flow_payload

ROOT = Path(__file__).resolve().parents[2]


def host_cfg(name: str, ip: str, mac: str, peer_ip: str, peer_mac: str, qpn: int, peer_qpn: int,
             flows: list[dict], expect: list[str], recovery: str = "gbn",
             nic: dict | None = None) -> dict:
    return {
        "host": {"name": name, "ip": ip, "mac": mac},
        "nic": nic or {"line_rate_bps": 10e9},
        "qps": [{"qpn": qpn, "peer": "peer", "peer_ip": peer_ip, "peer_mac": peer_mac,
                 "peer_qpn": peer_qpn, "start_psn": 0xFFFF00, "peer_start_psn": 0xFFFF00,
                 "udp_sport": 49152 + qpn, "recovery": recovery}],
        "flows": flows, "expect": expect,
    }


def two_hosts(recovery="gbn", nic=None):
    h1 = host_cfg("h1", "10.1.0.1", "02:00:00:00:01:01", "10.1.0.2", "02:00:00:00:01:02", 5, 6,
                  [{"id": "a", "qpn": 5, "size_bytes": 300_000},
                   {"id": "c", "qpn": 5, "size_bytes": 1000, "op": "write", "after": ["b"]}],
                  ["b"], recovery, nic)
    h2 = host_cfg("h2", "10.1.0.2", "02:00:00:00:01:02", "10.1.0.1", "02:00:00:00:01:01", 6, 5,
                  [{"id": "b", "qpn": 6, "size_bytes": 200_000, "after": ["a"]}],
                  ["a", "c"], recovery, nic)
    return h1, h2


@pytest.mark.parametrize("recovery", ["gbn", "sr"])
def test_agents_with_dependencies_in_virtual_time(recovery):
    clk = VirtualClock()
    link = MemLink(clk, rate_bps=10_000_000_000, delay_ns=5000, overhead_bytes=24)
    h1, h2 = two_hosts(recovery)
    a1 = Agent(config.load_dict(h1), clk, link.a)
    a2 = Agent(config.load_dict(h2), clk, link.b)
    a1.start()
    a2.start()
    clk.run_until_idle()
    assert a1.done() and a2.done()
    r1 = {r["flow"] + r["role"]: r for r in a1.results() if r["type"] == "flow"}
    r2 = {r["flow"] + r["role"]: r for r in a2.results() if r["type"] == "flow"}
    # ordering: b starts after a arrived at h2, c after b arrived at h1
    assert r2["bsender"]["start_ns"] >= r2["areceiver"]["complete_ns"]
    assert r1["csender"]["start_ns"] >= r1["breceiver"]["complete_ns"]
    for f, rx in (("a", r2), ("b", r1), ("c", r2)):
        tx = r1 if f != "b" else r2
        assert rx[f + "receiver"]["sha256"] == tx[f + "sender"]["sha256"]
        assert rx[f + "receiver"]["size_bytes"] == tx[f + "sender"]["size_bytes"]
    assert r2["creceiver"]["op"] == "write"
    assert r1["asender"]["goodput_bps"] > 1e9 and r1["asender"]["retx_pkts"] == 0
    summary = a1.results()[-1]
    assert summary["type"] == "summary" and summary["done"]
    json.dumps(a1.results())  # all serialisable



def test_flows_start_and_fail_as_their_dependencies_and_start_times_say() -> None:
    """The agent looks only at the flows something happened to; it must act as a scan of
    every flow in workload order would. h1: `late` waits on `first` and starts at its own
    start time after it; f1 waits on a remote flow x, f2 on f1, f0 (listed before them)
    on f2, and `other` on a remote flow y."""
    clk = VirtualClock()
    link = MemLink(clk, rate_bps=10_000_000_000, delay_ns=1000, overhead_bytes=24)
    flows = [{"id": "f0", "qpn": 5, "size_bytes": 1000, "after": ["f2"]},
             {"id": "late", "qpn": 5, "size_bytes": 1000, "after": ["first"],
              "start_us": 50.0},
             {"id": "f1", "qpn": 5, "size_bytes": 1000, "after": ["x"]},
             {"id": "f2", "qpn": 5, "size_bytes": 1000, "after": ["f1", "f1"]},
             {"id": "first", "qpn": 5, "size_bytes": 1000},
             {"id": "other", "qpn": 5, "size_bytes": 1000, "after": ["y"]}]
    h1 = host_cfg("h1", "10.1.0.1", "02:00:00:00:01:01", "10.1.0.2", "02:00:00:00:01:02", 5, 6,
                  flows, ["x", "y"])
    h2 = host_cfg("h2", "10.1.0.2", "02:00:00:00:01:02", "10.1.0.1", "02:00:00:00:01:01", 6, 5,
                  [], [f["id"] for f in flows])
    a1 = Agent(config.load_dict(h1), clk, link.a)
    Agent(config.load_dict(h2), clk, link.b).start()
    a1.start()
    clk.advance_to(100_000)
    rows = {r["flow"]: r for r in a1.results() if r["type"] == "flow"}
    assert rows["first"]["start_ns"] == 0 and rows["first"]["complete_ns"] < 50_000
    assert rows["late"]["start_ns"] == 50_000  # its dependency done long before
    assert a1.failed_flows() == []
    a1.mark_lost({"x"})  # f1 fails, then f2 (after it), then f0 in a second pass
    assert a1.failed_flows() == ["f1", "f2", "f0"]
    assert {f: a1.flows[f].status for f in ("f0", "f1", "f2", "other")} == \
        {"f0": "dependency_failed", "f1": "dependency_failed", "f2": "dependency_failed",
         "other": None}
    a1.mark_lost({"y"})
    assert a1.failed_flows() == ["f1", "f2", "f0", "other"] and a1.done()


def _run_pair(h1: dict, h2: dict, port_a=None, port_b=None) -> tuple[Agent, Agent]:
    clk = VirtualClock()
    link = MemLink(clk, rate_bps=10_000_000_000, delay_ns=5000, overhead_bytes=24)
    a1 = Agent(config.load_dict(h1), clk, port_a(link.a, clk) if port_a else link.a)
    a2 = Agent(config.load_dict(h2), clk, port_b(link.b, clk) if port_b else link.b)
    a1.start()
    a2.start()
    clk.run_until_idle()
    return a1, a2


def test_a_flow_delivered_twice_is_counted_not_overwritten():
    """Issue #13.10: a second delivery of a flow replaced the first record silently. Here
    two flow ids with the same CRC-32 (the immediate data) reach a host expecting one."""
    assert flow_imm("plumless") == flow_imm("buckeroo")
    h1 = host_cfg("h1", "10.1.0.1", "02:00:00:00:01:01", "10.1.0.2", "02:00:00:00:01:02", 5, 6,
                  [{"id": "plumless", "qpn": 5, "size_bytes": 3000},
                   {"id": "buckeroo", "qpn": 5, "size_bytes": 5000}], [])
    h2 = host_cfg("h2", "10.1.0.2", "02:00:00:00:01:02", "10.1.0.1", "02:00:00:00:01:01", 6, 5,
                  [], ["plumless"])
    _a1, a2 = _run_pair(h1, h2)
    rows = a2.results()
    rec = next(r for r in rows if r.get("flow") == "plumless")
    assert rec["completed"] and rec["deliveries"] == 2
    assert rec["size_bytes"] == 3000  # the first delivery's record is kept
    assert rows[-1]["duplicate_deliveries"] == {"plumless": 2}


def test_exactly_once_deliveries_are_reported():
    h1, h2 = two_hosts()
    a1, a2 = _run_pair(h1, h2)
    for a in (a1, a2):
        rows = a.results()
        assert all(r["deliveries"] == 1 for r in rows if r.get("role") == "receiver")
        assert rows[-1]["duplicate_deliveries"] == {}


@pytest.mark.parametrize(("ack_class", "dscp"), [(None, DSCP_ROCE_DATA), ("qp", DSCP_ROCE_DATA), ("cnp", DSCP_CNP)])
def test_ack_class_from_the_nic_config(ack_class, dscp):
    """Issue #13.7: ACK/NAKs carry the QP's class (not ECT) unless ack_class is cnp."""
    from tests.roce.helpers import ShimPort

    seen: list[tuple[int, int]] = []  # (opcode, TOS) of h2's frames

    def tap(inner, clk):
        def fate(frame: bytes) -> list[int]:
            seen.append((frame[42], frame[15]))
            return [0]
        return ShimPort(inner, clk, fate)

    nic = {"line_rate_bps": 10e9, **({"ack_class": ack_class} if ack_class else {})}
    h1, h2 = two_hosts(nic=nic)
    _run_pair(h1, h2, port_b=tap)
    acks = {tos for op, tos in seen if op == OP_ACK}
    data = {tos for op, tos in seen if op < OP_ACK}
    assert acks == {dscp << 2} and data == {(DSCP_ROCE_DATA << 2) | 2}


def test_bad_ack_class_names_the_key():
    h1, _ = two_hosts(nic={"ack_class": "high"})
    with pytest.raises(config.ConfigError, match="nic.ack_class: must be one of 'qp', 'cnp'"):
        config.load_dict(h1)


needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 for network namespaces")


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


@pytest.fixture
def netns_pair():
    tag = uuid.uuid4().hex[:6]
    ns = (f"roce-{tag}-1", f"roce-{tag}-2")
    veth = (f"rv{tag}a", f"rv{tag}b")
    macs = ("02:00:00:aa:00:01", "02:00:00:aa:00:02")
    ips = ("10.77.0.1", "10.77.0.2")
    try:
        for n in ns:
            sh("ip", "netns", "add", n)
        sh("ip", "link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
        for i in range(2):
            sh("ip", "link", "set", veth[i], "netns", ns[i])
            ex = ("ip", "netns", "exec", ns[i])
            sh(*ex, "ip", "link", "set", veth[i], "address", macs[i])
            sh(*ex, "ip", "addr", "add", f"{ips[i]}/24", "dev", veth[i])
            sh(*ex, "ip", "link", "set", veth[i], "up")
            sh(*ex, "ip", "neigh", "replace", ips[1 - i], "lladdr", macs[1 - i], "dev", veth[i],
               "nud", "permanent")
        yield ns, veth, macs, ips
    finally:
        for n in ns:
            subprocess.run(["ip", "netns", "del", n], capture_output=True, timeout=30)


@needs_root
@pytest.mark.root
@pytest.mark.parametrize("recovery", ["gbn", "sr"])
def test_two_agents_in_namespaces_move_multi_megabyte_message(netns_pair, tmp_path, recovery):
    ns, veth, macs, ips = netns_pair
    size = 4 * 1024 * 1024
    nic = {"line_rate_bps": 300e6, "min_rto_ns": 20_000_000}
    cfgs = [
        host_cfg("h1", ips[0], macs[0], ips[1], macs[1], 5, 6,
                 [{"id": "big", "qpn": 5, "size_bytes": size}], ["back"], recovery, nic),
        host_cfg("h2", ips[1], macs[1], ips[0], macs[0], 6, 5,
                 [{"id": "back", "qpn": 6, "size_bytes": 1000, "after": ["big"]}], ["big"],
                 recovery, nic),
    ]
    with _agents(ns, veth, cfgs, tmp_path) as procs:
        outs = [p.communicate(timeout=90) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.splitlines()[0] == "READY" and out.splitlines()[-1] == "DONE"
    rows = [[json.loads(x) for x in (tmp_path / f"h{i + 1}.jsonl").read_text().splitlines()]
            for i in range(2)]
    sent = next(r for r in rows[0] if r.get("flow") == "big" and r["role"] == "sender")
    got = next(r for r in rows[1] if r.get("flow") == "big" and r["role"] == "receiver")
    import hashlib

    assert sent["completed"] and got["completed"] and got["size_bytes"] == size
    assert got["sha256"] == sent["sha256"] == hashlib.sha256(flow_payload("big", size)).hexdigest()
    assert (tmp_path / "h1.st").read_text().strip() == "done"
    summary = rows[1][-1]
    assert summary["type"] == "summary" and summary["qps"]["6"]["responder"]["msgs_delivered"] == 1


def _stopped_waiting_agent(netns_pair, tmp_path, results: str, status: str,
                           on_ready=lambda: None) -> tuple[int, str, str]:
    """An agent waiting for a flow that never comes, sent SIGTERM once READY: its exit
    code, stdout and stderr."""
    import signal

    ns, veth, macs, ips = netns_pair
    cfg = host_cfg("h1", ips[0], macs[0], ips[1], macs[1], 5, 6,
                   [{"id": "never", "qpn": 5, "size_bytes": 10_000, "after": ["x"]}], ["x"])
    cf = tmp_path / "h1.json"
    cf.write_text(json.dumps(cfg))
    p = subprocess.Popen(["ip", "netns", "exec", ns[0], sys.executable, "-m", "emu.roce", "agent",
                          "--iface", veth[0], "--config", str(cf), "--results", results,
                          "--status-file", status],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "READY"  # blocks until the agent is up
        on_ready()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err


@needs_root
@pytest.mark.root
def test_agent_sigterm_writes_partial_results(netns_pair, tmp_path):
    """An agent waiting for a flow that never comes: SIGTERM ends it with partial results."""
    st = tmp_path / "h1.st"

    def is_ready() -> None:
        assert st.read_text().strip() == "ready"

    rc, out, err = _stopped_waiting_agent(netns_pair, tmp_path, str(tmp_path / "r.jsonl"),
                                          str(st), is_ready)
    assert rc == 2, err
    assert out.strip().splitlines()[-1] == "PARTIAL"
    rows = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    flows = {r["flow"]: r for r in rows if r["type"] == "flow"}
    assert flows["never"]["completed"] is False and flows["x"]["completed"] is False
    assert rows[-1]["type"] == "summary" and rows[-1]["done"] is False
    assert st.read_text().strip() == "partial"


@needs_root
@pytest.mark.root
def test_results_that_cannot_be_written_come_on_stdout(netns_pair, tmp_path):
    """A full disk at the end of a run: writing the results file raised, the agent died
    with a traceback (exit 1) and its flows were reported as never delivered."""
    rc, out, err = _stopped_waiting_agent(netns_pair, tmp_path, "/dev/full",
                                          "/dev/full/h1.st")  # ENOSPC, ENOTDIR
    assert rc == 2, err
    lines = out.strip().splitlines()
    assert lines[-1] == "PARTIAL"
    sent = json.loads(lines[-2])
    assert sent["type"] == "results"
    assert sent["error"] == "cannot write /dev/full: No space left on device"
    flows = {r["flow"]: r for r in sent["rows"] if r["type"] == "flow"}
    assert set(flows) == {"never", "x"} and sent["rows"][-1]["type"] == "summary"
    assert "Traceback" not in err and "results sent on stdout" in err
    assert Path("/dev/full").is_char_device()  # a failed write removes a file, not this


def test_a_results_file_cut_short_by_a_full_disk_is_removed(tmp_path, capsys):
    """The disk filled half way through the results file: the rows went on stdout, and
    the first half of them stayed in the run folder as if it were the agent's results."""
    from emu.roce.agent import deliver_results
    from tests.small_disk import small_disk

    rows = [{"type": "flow", "flow": f"f{i}", "pad": "x" * 200} for i in range(100)]
    with small_disk(tmp_path / "disk", "8k") as disk:
        deliver_results(rows, str(disk / "h1.jsonl"))
        assert not (disk / "h1.jsonl").exists()
    sent = json.loads(capsys.readouterr().out)
    assert sent["rows"] == rows and "No space left on device" in sent["error"]


def test_agent_bad_config_exit_code(tmp_path):
    cf = tmp_path / "bad.json"
    cf.write_text(json.dumps({"host": {"name": "h"}}))
    r = subprocess.run([sys.executable, "-m", "emu.roce", "agent", "--iface", "lo", "--config",
                        str(cf)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "host: missing required key 'ip'" in r.stderr


@pytest.mark.parametrize("extra, says", [
    # a traceback from the AF_PACKET bind
    (("--iface", "nosuch0"), "error: --iface nosuch0: No such device"),
    # each of these started the agent: it sent its workload on lo, then lingered
    (("--iface", "lo", "--linger-s", "nan"), "argument --linger-s: must be a finite number"),
    (("--iface", "lo", "--progress-s", "-1"), "argument --progress-s: must be a finite number"),
    (("--iface", "lo", "--pfc", '{"lossless": [9]}'), "error: --pfc: priorities are 0..7, got 9"),
    (("--iface", "lo", "--pfc", '{"dscp_priority": {"99": 3}}'),
     "error: --pfc: DSCP values are 0..63, got 99"),
])
def test_bad_agent_options_are_one_line_errors_before_any_traffic(tmp_path, extra, says):
    if os.geteuid() != 0 and extra[1] == "nosuch0":
        pytest.skip("an AF_PACKET socket needs root")
    cf = ROOT / "emu" / "roce" / "example_agent.yaml"
    st = tmp_path / "status"
    r = subprocess.run([sys.executable, "-m", "emu.roce", "agent", "--config", str(cf),
                        "--status-file", str(st), *extra], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode in (1, 2) and says in r.stderr and "Traceback" not in r.stderr
    assert "READY" not in r.stdout


def _agent_cmd(ns: str, iface: str, cf: Path, res: Path, st: Path,
               start_on_stdin: bool = True) -> list[str]:
    return ["ip", "netns", "exec", ns, sys.executable, "-m", "emu.roce", "agent", "--iface",
            iface, "--config", str(cf), "--results", str(res), "--status-file", str(st),
            *(["--start-on-stdin"] if start_on_stdin else [])]


@contextlib.contextmanager
def _agents(ns: list[str], veth: list[str], cfgs: list[dict[str, Any]], tmp_path: Path,
            start_on_stdin: bool = False) -> Iterator[list[subprocess.Popen[str]]]:
    """One agent per host config (DCQCN off, 60 s timeout) in its namespace, results in
    h<i>.jsonl; killed on the way out if still running."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for i, c in enumerate(cfgs):
            c["dcqcn"] = {"enabled": False}
            c["timeout_s"] = 60
            cf = tmp_path / f"h{i + 1}.json"
            cf.write_text(json.dumps(c))
            procs.append(subprocess.Popen(
                _agent_cmd(ns[i], veth[i], cf, tmp_path / f"h{i + 1}.jsonl",
                           tmp_path / f"h{i + 1}.st", start_on_stdin),
                cwd=ROOT, stdin=subprocess.PIPE if start_on_stdin else None,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


@needs_root
@pytest.mark.root
def test_agents_count_from_the_start_instant_on_stdin(netns_pair, tmp_path):
    """Both agents wait after READY for the START line and count from the instant it
    names (one epoch for a run's agents): a flow at start_us 0 is posted at that instant,
    not at READY, and the message still arrives."""
    import time

    ns, veth, macs, ips = netns_pair
    cfgs = [host_cfg("h1", ips[0], macs[0], ips[1], macs[1], 5, 6,
                     [{"id": "f", "qpn": 5, "size_bytes": 100_000}], []),
            host_cfg("h2", ips[1], macs[1], ips[0], macs[0], 6, 5, [], ["f"])]
    with _agents(ns, veth, cfgs, tmp_path, start_on_stdin=True) as procs:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "READY"
        at = time.monotonic_ns() + 1_000_000_000  # a second after both are READY
        outs = [p.communicate(f"START {at}\n", timeout=90) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.splitlines()[-1] == "DONE"
    sent = next(json.loads(x) for x in (tmp_path / "h1.jsonl").read_text().splitlines()
                if '"sender"' in x)
    assert sent["completed"] and 0 <= sent["start_ns"] < 1_000_000_000


@needs_root
@pytest.mark.root
def test_lost_lines_end_the_wait_for_flows_that_failed_elsewhere(netns_pair, tmp_path):
    """A receiver whose sender's flow failed (its QP out of retries) is told so on stdin,
    `LOST [ids]` after START, and ends then, partial (the flow never came), instead of
    at its 60 s timeout; a bad LOST line is a warning and changes nothing."""
    import time

    ns, veth, macs, ips = netns_pair
    cfg = host_cfg("h2", ips[1], macs[1], ips[0], macs[0], 6, 5, [], ["f"])
    with _agents([ns[1]], [veth[1]], [cfg], tmp_path, start_on_stdin=True) as (p,):
        assert p.stdout is not None and p.stdout.readline().strip() == "READY"
        lines = f'START {time.monotonic_ns()}\nLOST f\nLOST ["f"]\n'
        out, err = p.communicate(lines, timeout=30)  # its own timeout is 60 s
    assert p.returncode == 2 and out.splitlines()[-1] == "PARTIAL", err
    assert "warning: expected 'LOST [\"flow id\", ...]' on stdin, got 'LOST f'" in err
    row = next(json.loads(x) for x in (tmp_path / "h1.jsonl").read_text().splitlines()
               if '"receiver"' in x)
    assert row["flow"] == "f" and row["lost"] and not row["completed"]


def test_lost_lines_parse() -> None:
    from emu.roce.agent import parse_lost

    assert parse_lost('LOST ["a", "b-1"]') == {"a", "b-1"}
    assert parse_lost("LOST []\n") == set()
    for bad in ("LOST", "LOST a", 'LOST {"a": 1}', "LOST [1]", 'GONE ["a"]'):
        with pytest.raises(ValueError, match="expected 'LOST"):
            parse_lost(bad)


@needs_root
@pytest.mark.root
@pytest.mark.parametrize("line, why", [
    ("GO\n", "expected 'START <time.monotonic_ns()>' on stdin, got 'GO'"),
    ("START soon\n", "got 'START soon'"),
    ("", "stdin closed before the START line"),
])
def test_a_bad_start_line_is_a_clear_error(netns_pair, tmp_path, line, why):
    ns, veth, macs, ips = netns_pair
    cf = tmp_path / "h1.json"
    cf.write_text(json.dumps(host_cfg("h1", ips[0], macs[0], ips[1], macs[1], 5, 6,
                                      [{"id": "f", "qpn": 5, "size_bytes": 1000}], [])))
    st = tmp_path / "h1.st"
    p = subprocess.Popen(_agent_cmd(ns[0], veth[0], cf, tmp_path / "r.jsonl", st), cwd=ROOT,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        out, err = p.communicate(line, timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 1 and why in err and "Traceback" not in err
    assert st.read_text().strip() == "error"
