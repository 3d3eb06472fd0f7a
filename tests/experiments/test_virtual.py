"""Whole runs in virtual time (SimFabric: fabric.p4 on the embedded pipeline, real host
agents): the issue's behaviours, deterministically and without root."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from emu.control import LbMode
from emu.core.flowmode import FlowControlMode
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.summary import RunSummary
from emu.experiments.workloads import WorkloadParams

from ..quiet import QuietConsole

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", autouse=True)
def fabric_p4_compiles() -> None:
    try:
        from emu.sim.fabric import compile_fabric

        compile_fabric()
    except Exception as exc:  # the embedded compiler's message says what it lacks
        pytest.skip(f"fabric.p4 does not compile on the embedded target yet: {exc}")


def run(**kw: Any) -> RunSummary:
    from emu.experiments.virtual import run_virtual

    wl = kw.pop("workload")
    kw.setdefault("flow_control", FlowControlMode.NONE)  # these assume lossy Ethernet
    cfg = RunConfig(virtual=True, workload=wl, **kw)
    return run_virtual(plan_run(cfg), write=False)


def test_permutation_completes_verified_and_deterministic() -> None:
    wl = WorkloadParams("permutation", message_bytes=32 * 1024)
    a, b = run(workload=wl), run(workload=wl)
    assert a.ok and a.flows_verified() == 8
    assert [f.end_s for f in a.flows] == [f.end_s for f in b.flows]
    assert a.fabric.tx_pkts == b.fabric.tx_pkts


def test_spray_with_sr_uses_every_uplink_of_the_leaf() -> None:
    wl = WorkloadParams("incast", message_bytes=128 * 1024, incast_senders=1,
                        incast_target="h8")  # one flow h1 -> h8, leaf1 -> leaf4
    s = run(workload=wl, lb=LbMode.SPRAY, recovery="sr")
    assert s.ok
    (leaf1,) = [u for u in s.uplinks if u.switch == "leaf1"]
    per_uplink = [b for _p, b in leaf1.tx_bytes]
    assert len(per_uplink) == 4 and min(per_uplink) > 0.2 * sum(per_uplink) / 4
    assert leaf1.jain > 0.95
    ecmp = run(workload=wl)
    (e1,) = [u for u in ecmp.uplinks if u.switch == "leaf1"]
    assert sum(1 for _p, b in e1.tx_bytes if b > 10_000) == 1  # one flow, one path


DETOUR = """
name: detour
defaults: {rate: 100Gbps, delay: 1us, queue_depth_pkts: 64, mtu: 1500}
switches:
  - {name: leaf1, role: leaf}
  - {name: leaf2, role: leaf}
  - {name: spine1, role: spine}
  - {name: spine2, role: spine}
  - {name: spine3, role: spine}
  - {name: core1, role: core}
hosts: [{name: h1}, {name: h2}]
links:
  - {a: h1, b: leaf1}
  - {a: h2, b: leaf2}
  - {a: leaf1, b: spine1}
  - {a: leaf1, b: spine2}
  - {a: leaf2, b: spine1}
  - {a: leaf2, b: spine2}
  - {a: leaf1, b: core1}   # a detour: leaf1 - core1 - spine3 - leaf2 is 3 hops, not 2
  - {a: core1, b: spine3}
  - {a: spine3, b: leaf2}
"""


def test_uplink_balance_counts_the_uplinks_load_balancing_chooses_among(
        tmp_path: Path) -> None:
    """leaf1's uplink to core1 is on no shortest path, so no LB mode sends on it; it was
    counted as an idle uplink, and spraying over the two real ones read Jain 0.67."""
    (tmp_path / "detour.yaml").write_text(DETOUR)
    wl = WorkloadParams("incast", message_bytes=128 * 1024, incast_senders=1,
                        incast_target="h2")
    s = run(topo=str(tmp_path / "detour.yaml"), workload=wl, lb=LbMode.SPRAY,
            recovery="sr")
    assert s.ok
    (leaf1,) = [u for u in s.uplinks if u.switch == "leaf1"]
    plan = plan_run(RunConfig(topo=str(tmp_path / "detour.yaml"), workload=wl))
    to = {p.number: p.peer.node for p in plan.fabric.switch("leaf1").ports}
    assert sorted(to[p] for p, _b in leaf1.tx_bytes) == ["spine1", "spine2"]
    assert leaf1.jain > 0.95, leaf1


def test_dcqcn_cuts_incast_drops() -> None:
    # Large enough that the steady state, not DCQCN's first RTT (the same ~260 drops
    # whatever the size with the hpcc profile, which decreases at the first 4 us check
    # after a CNP and keeps Rt until a timer increase), sets the ratio; with ACKs and CNPs
    # on their own queue, go-back-N without DCQCN recovers faster and drops less than it
    # did on one shared queue. DCQCN's drops are that transient alone (1,779 at 2 MB
    # and at 4 MB); without CC they grow with the size (8,275 at 2 MB, 14,876 at 4 MB
    # once switch ports serialise the wire overhead too), so 4 MB.
    wl = WorkloadParams("incast", message_bytes=4096 * 1024)
    none = run(workload=wl, cc="none")
    dcqcn = run(workload=wl, cc="dcqcn")
    assert none.ok and dcqcn.ok
    assert none.fabric.queue_drops > 500
    assert dcqcn.hosts.cnps_rcvd > 0 and dcqcn.fabric.ecn_marks > 0
    assert dcqcn.fabric.queue_drops <= 0.2 * none.fabric.queue_drops


def test_failed_link_is_routed_around() -> None:
    wl = WorkloadParams("permutation", message_bytes=256 * 1024)
    base = run(workload=wl)
    # fail an uplink the ecmp run actually used, a quarter of the way through
    (leaf1,) = [u for u in base.uplinks if u.switch == "leaf1"]
    port = max(leaf1.tx_bytes, key=lambda pb: pb[1])[0]
    plan = plan_run(RunConfig(workload=wl))
    spine = plan.fabric.switch("leaf1").port(port).peer.node
    # while leaf1's flows still run (fail_after_s counts from the workload's start, which
    # comes start_delay_s into the run)
    start = plan.config.start_delay_s
    leaf1_end = min(f.end_s for f in base.flows if f.src in ("h1", "h2"))
    s = run(workload=wl, fail_link=("leaf1", spine), fail_after_s=(leaf1_end - start) / 4)
    assert s.ok and s.flows_verified() == 8
    assert any("failed" in n for n in s.notes)
    assert [e for _t, e in s.events] == [f"link_down leaf1 {spine}", "rerouted"]
    assert dataclasses.asdict(s.fabric) != dataclasses.asdict(base.fabric)


def test_what_a_dead_port_refused_is_in_the_counters_table() -> None:
    """Packets sent to the failed link's port were lost without a line in the summary
    (only summary.json's fabric.link_drops had them)."""
    from emu.experiments.summary import render_text

    wl = WorkloadParams("permutation", message_bytes=256 * 1024, seed=3)
    s = run(workload=wl, recovery="sr", fail_link=("leaf4", "spine4"), fail_after_s=0.05)
    assert s.ok and s.fabric.link_drops > 0
    text = render_text(s, width=200)
    row = next(ln for ln in text.splitlines() if "sent to a port that was down" in ln)
    assert row.rstrip().endswith(f" {s.fabric.link_drops}")
    assert "flow-control drops" not in text  # a lossy run has no such row
    assert "port that was down" not in render_text(run(workload=wl, recovery="sr"), width=200)


def test_te_pins_the_permutation_on_distinct_uplinks() -> None:
    wl = WorkloadParams("permutation", message_bytes=64 * 1024)
    s = run(workload=wl, lb=LbMode.TE)
    assert s.ok
    # two flows leave each leaf; TE puts them on different uplinks
    for u in s.uplinks:
        assert sum(1 for _p, b in u.tx_bytes if b > 30_000) == 2, u


def test_virtual_pcap_writes_every_switch_port(tmp_path: Path) -> None:
    """#13 item 11: `emu run --virtual --pcap` writes the per-port pcaps a real run
    writes (<iface>_in.pcap / <iface>_out.pcap), with every frame the port carried."""
    from emu.experiments.virtual import run_virtual
    from emu.switch.pcap import read_pcap

    wl = WorkloadParams("permutation", message_bytes=16 * 1024)
    plan = plan_run(RunConfig(virtual=True, workload=wl, pcap=True, results_root=tmp_path,
                              progress=False))
    s = run_virtual(plan, console=QuietConsole())
    assert s.ok
    pcap = Path(s.run["results_dir"]) / "pcap"
    names = {p.name for p in pcap.iterdir()}
    for sw in plan.fabric.switches:
        for p in sw.ports:
            assert {f"{p.intf}_in.pcap", f"{p.intf}_out.pcap"} <= names
    # h1's data enters leaf1 on its host port: RoCEv2 (UDP 4791) frames, all of them
    frames = read_pcap(str(pcap / "leaf1-eth1_in.pcap"))
    roce = [f for f in frames if f[12:14] == b"\x08\x00" and f[36:38] == b"\x12\xb7"]
    assert len(roce) >= 16  # 16 KB in 1 KB packets, plus any ACKs for h1's receive side
    out = read_pcap(str(pcap / "leaf1-eth1_out.pcap"))
    assert out and all(f[12:14] == b"\x08\x00" for f in out)
    if shutil.which("tshark"):
        text = subprocess.run(["tshark", "-r", str(pcap / "leaf1-eth1_in.pcap"), "-c", "3",
                               "-d", "udp.port==4791,infiniband"],
                              capture_output=True, text=True, timeout=60).stdout
        assert "RoCE" in text or "InfiniBand" in text or "RRoCE" in text, text


def test_virtual_pcap_stamps_are_modelled_time(tmp_path: Path) -> None:
    """The captures were stamped in the slowed wire's time, in microseconds: at the
    virtual default dilation (5000) h1's back-to-back 1 KB frames were 443 us apart on a
    100 Gbit/s link, and every interval or rate read from a pcap was the dilation off.
    Stamps are now modelled nanoseconds: consecutive frames of the message reach leaf1
    one modelled serialisation time apart."""
    from emu.core.wire import WIRE_OVERHEAD_BYTES
    from emu.experiments.virtual import run_virtual
    from emu.switch.pcap import PcapReader

    wl = WorkloadParams("incast", message_bytes=16 * 1024, incast_senders=1,
                        incast_target="h8")
    plan = plan_run(RunConfig(virtual=True, workload=wl, pcap=True, results_root=tmp_path,
                              progress=False))
    assert plan.dilation.factor > 100
    s = run_virtual(plan, console=QuietConsole())
    assert s.ok
    with PcapReader(str(Path(s.run["results_dir"]) / "pcap" / "leaf1-eth1_in.pcap")) as r:
        assert r.nanosecond
        data = [(rec.ts_ns, len(rec.data)) for rec in r
                if rec.data[36:38] == b"\x12\xb7" and len(rec.data) > 1000]
    assert len(data) == 16
    rate = plan.model.links[plan.model.host("h1").link].rate_bps
    gaps = [t1 - t0 for (t0, _), (t1, _) in zip(data, data[1:], strict=False)]
    # DCQCN starts at line rate: each frame arrives its own serialisation time after the
    # one before it (the sub-ns rounding of modelled stamps aside)
    want = [(n + WIRE_OVERHEAD_BYTES) * 8e9 / rate for _t, n in data[1:]]
    assert all(abs(g - w) <= 1.5 for g, w in zip(gaps, want, strict=True)), (gaps, want)
    # the whole message, in modelled time, took less than its flow completion time
    (flow,) = s.flows
    assert data[-1][0] - data[0][0] < flow.fct_nominal_s * 1e9


def test_results_record_the_effective_values(tmp_path: Path) -> None:
    """#13: config.json records DCQCN/ECN/queue values as modelled and on the wire, the
    clamped ones and why, the seed, the dilation and the project version."""
    import json

    from emu.experiments.virtual import run_virtual

    wl = WorkloadParams("permutation", message_bytes=8 * 1024, seed=7)
    plan = plan_run(RunConfig(virtual=True, workload=wl, results_root=tmp_path,
                              progress=False, dilation=2000))
    s = run_virtual(plan, console=QuietConsole())
    eff = json.loads((Path(s.run["results_dir"]) / "config.json").read_text())["effective"]
    assert eff["seed"] == 7 and eff["dilation"] == 2000 and eff["version"]
    dc = eff["dcqcn"]
    assert dc["profile"] == "hpcc"
    m, w = dc["modelled"], dc["wire"]
    for name in ("time_reset_ns", "rate_reduce_period_ns", "alpha_period_ns"):
        if name not in dc["clamped"]:
            assert w[name] == m[name] * 2000
        else:
            assert w[name] == dc["timer_floor_ns"] > m[name] * 2000 and dc["clamp_reason"]
    assert w["min_rate_bps"] == pytest.approx(m["min_rate_bps"] / 2000)
    assert eff["ecn"]["kmin_pkts"] == plan.config.ecn_kmin_pkts
    link = eff["links"][0]
    assert link["wire_delay_ns"] == link["modelled_delay_ns"] * 2000
    assert link["wire_rate_bps"] * 2000 == link["modelled_rate_bps"]
    assert [round(us * 2000e3) for us in eff["rto_us_modelled"]] == eff["rto_wire_ns"]


@pytest.mark.usefixtures("ctrl_c")
def test_results_path_is_printed_last_and_an_interrupted_run_writes_partial_results(
        tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import signal

    from emu.experiments.commands import _run
    from emu.experiments.sampler import ChangeSampler

    # Ctrl-C lands in the workload, 50 sample ticks in (8 MB flows are far from done):
    # a SIGINT sent after a wall-clock delay fired during set-up on a loaded machine.
    cfg = RunConfig(virtual=True, results_root=tmp_path, progress=False, rate_bps=1_000_000,
                    workload=WorkloadParams("permutation", message_bytes=1 << 23))
    plan = plan_run(cfg)
    tick = ChangeSampler.tick

    def tick_then_ctrl_c(self: ChangeSampler, n: int) -> None:
        tick(self, n)
        if self.ticks_read == 50:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(ChangeSampler, "tick", tick_then_ctrl_c)
    assert _run(cfg, plan) == 130
    (run_dir,) = tmp_path.iterdir()
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == f"emu run: results in {run_dir} (partial: the run was interrupted)"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["run"]["interrupted"] is True and summary["ok"] is False
    assert "interrupted (Ctrl-C)" in (run_dir / "summary.txt").read_text()
    assert (run_dir / "flows.jsonl").exists() and (run_dir / "plots").is_dir()

    # A run that finishes says where its results are last, too.
    monkeypatch.setattr(ChangeSampler, "tick", tick)
    small = dataclasses.replace(cfg, workload=WorkloadParams("permutation", message_bytes=4096))
    assert _run(small, plan_run(small)) == 0
    out = capsys.readouterr().out.strip().splitlines()
    newest = max(tmp_path.iterdir(), key=lambda p: p.stat().st_mtime)
    assert out[-1] == f"emu run: results in {newest}"


# Run in a process of its own: before the fix SIGTERM killed that process outright.
SIGNAL_MID_TICK = """
import json, signal, sys
from emu.experiments.commands import _run
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.sampler import ChangeSampler
from emu.experiments.workloads import WorkloadParams

sig = signal.Signals[sys.argv[2]]
tick = ChangeSampler.tick
state = {"signalled": 0, "finished": 0}

def tick_with_signal(self, n):
    if self.ticks_read == 50:
        state["signalled"] += 1
        signal.raise_signal(sig)
    tick(self, n)  # the rest of the tick
    if self.ticks_read == 51:
        state["finished"] += 1

ChangeSampler.tick = tick_with_signal
cfg = RunConfig(virtual=True, results_root=sys.argv[1], progress=False, rate_bps=1_000_000,
                workload=WorkloadParams("permutation", message_bytes=1 << 23))
rc = _run(cfg, plan_run(cfg))
print(json.dumps({"rc": rc, **state}))
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_ends_a_virtual_run_between_ticks_with_partial_results(
        tmp_path: Path, sig: str) -> None:
    """Ctrl-C raised inside the tick under way (a packet half through a switch, then 50
    more virtual ms for the last ACKs on that state); SIGTERM and SIGHUP killed the
    run outright, results unwritten. Now each ends it after the tick."""
    import json
    import signal
    import sys

    p = subprocess.run([sys.executable, "-c", SIGNAL_MID_TICK, str(tmp_path), sig],
                       capture_output=True, text=True, timeout=240,
                       # as in a terminal, also when pytest runs with SIGINT ignored
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"rc": 130, "signalled": 1, "finished": 1}, out
    (run_dir,) = tmp_path.iterdir()
    how = "Ctrl-C" if sig == "SIGINT" else f"signal {sig}"
    assert f"interrupted ({how})" in (run_dir / "summary.txt").read_text()
    assert json.loads((run_dir / "summary.json").read_text())["run"]["interrupted"] is True


SIGNAL_IN_SET_UP = """
import signal, sys
from emu.experiments.commands import _run
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.workloads import WorkloadParams
from emu.roce.agent import Agent

init = Agent.__init__

def signal_in_set_up(self, *a, **kw):
    init(self, *a, **kw)
    signal.raise_signal(signal.Signals[sys.argv[2]])

Agent.__init__ = signal_in_set_up
cfg = RunConfig(virtual=True, results_root=sys.argv[1], progress=False,
                workload=WorkloadParams("permutation", message_bytes=4096))
print("rc", _run(cfg, plan_run(cfg)))
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_termination_signal_while_a_virtual_run_sets_up_leaves_no_results_folder(
        tmp_path: Path, sig: str) -> None:
    """SIGTERM or SIGHUP before the workload killed the process with the default action
    and left its empty results folder behind; now they unwind like Ctrl-C does."""
    import sys

    results = tmp_path / "results"
    p = subprocess.run([sys.executable, "-c", SIGNAL_IN_SET_UP, str(results), sig],
                       capture_output=True, text=True, timeout=240)
    assert (p.returncode, p.stdout.split()) == (0, ["rc", "130"]), p.stderr[-2000:]
    assert "emu run: interrupted" in p.stderr
    assert list(results.iterdir()) == []


@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_while_a_virtual_run_sets_up_leaves_no_results_folder(
        tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted before its workload, a virtual run measured nothing: it said "nothing
    written" yet left an empty folder under results/ (a Mininet run removes its own)."""
    import signal

    from emu.experiments.commands import _run
    from emu.roce.agent import Agent

    init = Agent.__init__

    def ctrl_c_in_set_up(self: Agent, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(Agent, "__init__", ctrl_c_in_set_up)
    cfg = RunConfig(virtual=True, results_root=tmp_path / "results", progress=False,
                    pcap=True, workload=WorkloadParams("permutation", message_bytes=4096))
    assert _run(cfg, plan_run(cfg)) == 130
    assert "interrupted" in capsys.readouterr().err
    assert list((tmp_path / "results").iterdir()) == []


def test_a_virtual_run_keeps_its_timeout_and_says_it_stopped() -> None:
    """--timeout was ignored in virtual time (every run had 600 virtual seconds) and a run
    cut there said only INCOMPLETE, not why."""
    from emu.experiments.virtual import run_virtual

    assert RunConfig().timeout() == 120.0 and RunConfig(virtual=True).timeout() == 600.0
    cfg = RunConfig(virtual=True, progress=False, timeout_s=0.5, rate_bps=1_000_000,
                    workload=WorkloadParams("permutation", message_bytes=1 << 20))
    s = run_virtual(plan_run(cfg), write=False)
    assert not s.ok and not any(f.delivered for f in s.flows)
    assert "agents still running after 0.5 s (virtual): stopped (--timeout)" in s.notes
    assert s.duration_s == pytest.approx(0.5)


def test_a_virtual_runs_timeout_and_link_failure_fall_inside_a_sample_interval() -> None:
    """Both were rounded up to the next sample tick (5 ms by default): --timeout 0.0001
    ran 2 ms, a link asked to fail 1.1 ms in failed at 5 ms."""
    from emu.experiments.virtual import run_virtual

    wl = WorkloadParams("permutation", message_bytes=1 << 20)
    cfg = RunConfig(virtual=True, progress=False, timeout_s=0.0123, rate_bps=1_000_000,
                    workload=wl, fail_link=("leaf1", "spine1"), fail_after_s=0.0011,
                    start_delay_s=0.0)
    assert cfg.sample_interval() == 0.005
    s = run_virtual(plan_run(cfg), write=False)
    assert s.duration_s == pytest.approx(0.0123, abs=1e-9)
    assert s.events == [(pytest.approx(0.0011, abs=1e-9), "link_down leaf1 spine1"),
                        (pytest.approx(0.0011, abs=1e-9), "rerouted")]
    assert "link leaf1-spine1 failed at 0.001100 s (virtual)" in s.notes


def test_a_latency_bound_virtual_run_is_exact_not_cpu_bound() -> None:
    """One packet in flight per QP leaves every link mostly idle. In virtual time no CPU
    paces anything, yet the summary called such runs CPU-BOUND and told the user to
    lower the link rate; with a window of one packet the senders also timed out on
    every packet, waiting for an ACK the responder coalesced (no resend now: the packet
    that fills the window asks for one)."""
    from emu.experiments.summary import fidelity_text

    s = run(workload=WorkloadParams("permutation", message_bytes=16 * 1024), window_pkts=1)
    assert s.ok
    fd = s.fidelity
    assert fd.virtual and not fd.cpu_bound and fd.reasons == ()
    assert fd.efficiency is not None and fd.efficiency < 0.2
    assert fidelity_text(fd).startswith("fidelity: exact (virtual time")
    assert s.hosts.timeouts == 0 and s.hosts.retx_pkts == 0


def test_without_link_delay_the_ideal_fct_has_none_either() -> None:
    """`--no-link-delay` zeroed the delays of the links that ran but not of the modelled
    network the ideal FCT is computed on: slowdowns came out far below 1."""
    s = run(workload=WorkloadParams("permutation", message_bytes=4 * 1024), link_delay=False)
    assert s.ok
    slow = [f.slowdown for f in s.flows]
    assert slow and all(x is not None and 1.0 <= x < 3.0 for x in slow), slow


def test_a_full_disk_costs_the_results_files_not_the_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ENOSPC while writing the results folder ended the run with a traceback and no
    summary: what the run measured was lost. Now the summary is printed, then one line."""
    from emu.experiments.commands import _run

    from ..small_disk import small_disk

    with small_disk(tmp_path / "full", "96k") as full:
        cfg = RunConfig(virtual=True, results_root=full, progress=False,
                        workload=WorkloadParams("permutation", message_bytes=65536))
        assert _run(cfg, plan_run(cfg)) == 1
        out, err = capsys.readouterr()
        assert "OK: 8/8 flows verified" in out
        assert "cannot write the results in" in err and "No space left on device" in err
        assert "Traceback" not in err
        assert not list(full.rglob("*.tmp"))  # no half-written file
