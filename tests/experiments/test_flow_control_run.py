"""`emu run --flow-control none|pfc|credit --pfc-watchdog ...` (#14): the run
configuration, the CLI's one-line refusals, the virtual run with PFC end to end (switch
PFC, agents' NICs behind HostMac, data in the lossless class) and what it reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emu.core.flowmode import FlowControlMode
from emu.experiments.config import RunConfig, RunConfigError
from emu.experiments.figures import fmt_s
from emu.experiments.plan import plan_run
from emu.experiments.workloads import WorkloadParams

from ..quiet import QuietConsole

pytestmark = pytest.mark.timeout(300)

INCAST = WorkloadParams("incast", message_bytes=128 * 1024, incast_senders=7)


def test_the_default_is_no_flow_control_and_modes_are_checked() -> None:
    assert RunConfig().flow_control is FlowControlMode.NONE
    RunConfig(flow_control=FlowControlMode.CREDIT).validate()
    with pytest.raises(RunConfigError, match="BMv2 has neither PFC nor credit"):
        RunConfig(flow_control=FlowControlMode.PFC, target="bmv2").validate()
    with pytest.raises(RunConfigError, match="pfc_watchdog must be one of"):
        RunConfig(pfc_watchdog="maybe").validate()  # type: ignore[arg-type]


@pytest.mark.parametrize(("argv", "message"), [
    (["--flow-control", "credit", "--target", "bmv2"],
     "emu run: run configuration: BMv2 has neither PFC nor credit flow control; "
     "--flow-control credit needs --target embedded (TARGET=embedded)\n"),
    (["--flow-control", "pfc", "--target", "bmv2"],
     "emu run: run configuration: BMv2 has neither PFC nor credit flow control; "
     "--flow-control pfc needs --target embedded (TARGET=embedded)\n"),
])
def test_cli_refuses_in_one_line(argv: list[str], message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    from emu.cli import main

    assert main(["run", "clos4", "--virtual", "--dry-run", *argv]) == 1
    assert capsys.readouterr().err == message


def test_switch_and_host_settings_follow_the_run() -> None:
    from emu.experiments import pfc

    plan = plan_run(RunConfig(flow_control=FlowControlMode.PFC, pfc_watchdog="forward",
                              pfc_watchdog_ms=10.0, workload=INCAST))
    fc = pfc.flow_control(plan)
    assert fc is not None and fc.enabled and fc.lossless == {3}
    # the watchdog's modelled 10 ms on the wire clock
    assert fc.watchdog.enabled and fc.watchdog.action == "forward"
    assert fc.watchdog.detection_ns == plan.dilation.wire_ns(10e6)
    assert pfc.qos(plan.config).dscp_priority[26] == 3
    assert pfc.host_pfc_json(plan.config) == {"mode": "pfc", "lossless": [3],
                                              "dscp_priority": {"26": 3, "48": 7}}
    off = plan_run(RunConfig(workload=INCAST))
    assert pfc.flow_control(off) is None and pfc.host_pfc_json(off.config) is None



def test_virtual_incast_with_pfc_is_lossless_and_reports_pauses(tmp_path: Path) -> None:
    from emu.experiments.virtual import run_virtual

    lossy = run_virtual(plan_run(RunConfig(virtual=True, cc="none", workload=INCAST)),
                        write=False)
    assert lossy.fabric.queue_drops > 0 and lossy.pfc is None
    s = run_virtual(plan_run(RunConfig(virtual=True, cc="none", workload=INCAST,
                                       flow_control=FlowControlMode.PFC,
                                       results_root=tmp_path, progress=False)),
                    console=QuietConsole())
    assert s.ok and s.fabric.queue_drops == 0 and s.fabric.drops == 0
    assert sum(f.retx_pkts for f in s.flows) == 0
    p = s.pfc
    assert p is not None and p["total"]["pause_tx"] > 0 and p["total"]["lossless_drops"] == 0
    # the senders' NICs were paused: the agents send through HostMac
    hosts = {h["node"]: h for h in p["hosts"]}
    assert len(hosts) == 8
    assert sum(1 for h in hosts.values() if h["pause_rx"].get(3) and h["paused_ns"] > 0) >= 2
    assert all(set(e["pause_tx"]) <= {3} for e in p["ports"])  # only the lossless class
    assert all(h["ok"] for h in p["headroom"])
    assert 0 < max(e["paused_pct"] for e in p["ports"]) <= 100
    run_dir = Path(s.run["results_dir"])
    assert (run_dir / "plots" / "pfc_paused.png").stat().st_size > 10_000
    saved = json.loads((run_dir / "summary.json").read_text())
    assert saved["pfc"]["total"] == p["total"]
    text = (run_dir / "summary.txt").read_text()
    assert "PFC: PAUSE frames per port and priority" in text
    # The table shows where back-pressure starts and how far it spread: the port that
    # sent most PAUSE frames and the most paused one (ranked by paused time alone, the
    # senders, never paused themselves, fell off its 16 rows).
    table = text.split("PFC: PAUSE frames per port and priority")[1]
    every = [*p["ports"], *p["hosts"]]
    assert sum(1 for e in every if e["pause_tx"] or e["pause_rx"] or e["paused_ns"]) > 16
    most_sent = max(sum(e["pause_tx"].values()) for e in every)
    longest = max(e["paused_ns"] for e in every)
    top = [e for e in every if sum(e["pause_tx"].values()) == most_sent or
           e["paused_ns"] == longest]
    assert len(top) >= 3
    for e in top:
        assert f"│ {e['node']}:{e['port']} " in table, e
    paused = next(e for e in top if e["paused_ns"] == longest)
    row = next(ln for ln in table.splitlines()
               if ln.startswith(f"│ {paused['node']}:{paused['port']} "))
    nominal = fmt_s(longest / 1e9 / s.run["dilation"])  # modelled paused time
    assert f"│ {nominal} " in row
    assert json.loads((run_dir / "config.json").read_text())["run"]["flow_control"] == "pfc"


def test_packets_the_pfc_watchdog_drops_are_drops_of_the_run() -> None:
    """A storm-happy watchdog (drop after 10 us paused) flushes lossless queues. The
    run's drop count, metrics.csv's `drops` and the Counters table said 0 (only the
    PFC tables listed them): they counted queue and pipeline drops alone."""
    from emu.experiments.points import point_metrics
    from emu.experiments.summary import render_text
    from emu.experiments.virtual import run_virtual

    s = run_virtual(plan_run(RunConfig(virtual=True, cc="none", workload=INCAST,
                                       flow_control=FlowControlMode.PFC,
                                       pfc_watchdog="drop", pfc_watchdog_ms=0.01,
                                       progress=False)), write=False)
    assert s.ok and s.pfc is not None
    lost = s.pfc["total"]["lossless_drops"]
    assert lost > 0 and s.fabric.queue_drops == 0 and s.fabric.pipeline_drops == 0
    assert s.fabric.drops == lost
    assert s.fabric.flow_control_drops == lost
    flat = point_metrics(s).flat
    assert flat["drops"] == flat["flow_control_drops"] == lost
    row = next(ln for ln in render_text(s, width=200).splitlines() if "flow-control drops" in ln)
    assert row.rstrip().endswith(str(lost))


def test_switch_daemon_takes_pfc_settings_on_its_command_line() -> None:
    from emu.switch.commands import build_parser, options_from_args
    from emu.targets.base import SwitchSpec
    from emu.targets.embedded import daemon_command

    fc = {"mode": "pfc", "lossless": [3], "thresholds": {"xoff_bytes": 30000,
                                                          "xon_bytes": 15000, "headroom": None},
          "links": {"1": [1e9, 1000, 1500]}}
    spec = SwitchSpec("s1", 1, {1: "s1-eth1"}, "127.0.0.1:1", flow_control=fc)
    cmd = daemon_command(spec)
    args = build_parser().parse_args(cmd[3:])
    opts = options_from_args(args)
    assert opts.flow_control is not None and opts.flow_control.enabled
    assert opts.flow_control.thresholds.xoff_bytes == 30000
    assert opts.pfc_links == {1: (1e9, 1000, 1500)}
    bad = build_parser().parse_args(["--no-p4", "--pfc-config", '{"mode": "sometimes"}'])
    with pytest.raises(SystemExit, match="--pfc-config: flow control mode must be off, pfc or"):
        options_from_args(bad)


def test_host_agent_refuses_bad_pfc_settings_in_one_line(tmp_path: Path) -> None:
    from emu.roce.pfc import host_pfc_params

    p = host_pfc_params({"lossless": [3], "dscp_priority": {"26": 3}}, "02:00:00:00:00:01",
                        1e6)
    assert p.lossless == {3} and p.dscp_priority == {26: 3}
    with pytest.raises(ValueError, match="bad host PFC settings"):
        host_pfc_params({"nonsense": 1}, "02:00:00:00:00:01", 1e6)


def test_virtual_incast_in_credit_mode_is_lossless_without_pause(tmp_path: Path) -> None:
    """`--flow-control credit` (#14 item 5): switches and hosts exchange credit updates;
    the same incast that drops without flow control is lossless and sends no PAUSE."""
    from emu.experiments import pfc
    from emu.experiments.virtual import run_virtual

    plan = plan_run(RunConfig(virtual=True, cc="none", workload=INCAST,
                              flow_control=FlowControlMode.CREDIT))
    fc = pfc.flow_control(plan)
    assert fc is not None and fc.mode == "credit"
    assert pfc.host_pfc_json(plan.config) == {"mode": "credit", "lossless": [3],
                                              "dscp_priority": {"26": 3, "48": 7}}
    s = run_virtual(plan, write=False)
    assert s.ok and s.fabric.queue_drops == 0 and s.fabric.drops == 0
    assert sum(f.retx_pkts for f in s.flows) == 0
    assert not s.pfc or s.pfc["total"]["pause_tx"] == 0


@pytest.mark.parametrize("mode", [FlowControlMode.PFC, FlowControlMode.CREDIT])
def test_port_counters_count_flow_control_frames_both_ways(tmp_path: Path,
                                                            mode: FlowControlMode) -> None:
    """A virtual run's port counters took tx from the link (PAUSE and credit frames
    included) but rx from fabric.p4's counter (after flow control consumed them), so a
    link's two ends disagreed: leaf1 sent 36 frames more than spine1 received. Both now
    count every frame on the wire, as a real run's switch daemons do."""
    import csv

    from emu.experiments.virtual import run_virtual

    plan = plan_run(RunConfig(virtual=True, flow_control=mode, workload=INCAST,
                              results_root=tmp_path, progress=False))
    s = run_virtual(plan, console=QuietConsole())
    assert s.ok
    with (Path(s.run["results_dir"]) / "ports.csv").open() as fh:
        by = {(r["switch"], int(r["port"])): r for r in csv.DictReader(fh)}
    switches = {sw.name for sw in plan.fabric.switches}
    links = [ln for ln in plan.fabric.links if {ln.a.node, ln.b.node} <= switches]
    # (counters are deltas over the workload: a frame in flight when it started or ended,
    # such as a credit announcement, counts at one end only)
    for ln in links:
        for a, b in ((ln.a, ln.b), (ln.b, ln.a)):
            sent, got = by[(a.node, a.port)], by[(b.node, b.port)]
            pkts = int(sent["tx_pkts"]) - int(got["rx_pkts"])
            nbytes = int(sent["tx_bytes"]) - int(got["rx_bytes"])
            assert abs(pkts) <= 2 and abs(nbytes) <= 2 * 64, (a, b, sent, got)


def test_host_agent_reads_credit_settings() -> None:
    from emu.roce.credit import HostCreditParams, host_credit_params

    p = host_credit_params({"mode": "credit", "lossless": [3], "dscp_priority": {"26": 3}},
                           "02:00:00:00:00:01", 1e6)
    assert isinstance(p, HostCreditParams) and p.lossless == {3} and p.dscp_priority == {26: 3}
    with pytest.raises(ValueError, match="bad host credit settings"):
        host_credit_params({"lossless": 3}, "02:00:00:00:00:01", 1e6)


def test_pause_and_resume_frames_agree_at_both_ends_of_every_link() -> None:
    """A link's PAUSE frames sent at one end are those received at the other, resumes
    alike (the receive side counted resumes as PAUSE frames: a leaf that sent 2 showed
    4 received at its spine), and paused % is of the traffic window, which real and
    virtual time share (it was of the agents' whole run: 24% in virtual time, 45% in
    real time, for the same 26 us paused of a 42 us incast)."""
    from emu.experiments.virtual import run_virtual

    plan = plan_run(RunConfig(virtual=True, flow_control=FlowControlMode.PFC,
                              workload=WorkloadParams("incast", message_bytes=64 * 1024),
                              progress=False))
    s = run_virtual(plan, write=False)
    p = s.pfc
    assert s.ok and p is not None and p["total"]["pause_tx"] > 0
    rows = {(e["node"], e["port"]): e for e in [*p["ports"], *p["hosts"]]}

    def count(end: Any, key: str) -> int:
        e = rows.get((end.node, end.port))
        return sum(e[key].values()) if e else 0

    for link in plan.fabric.links:
        for x, y in ((link.a, link.b), (link.b, link.a)):
            assert count(x, "pause_tx") == count(y, "pause_rx"), (x, y)
            assert count(x, "resume_tx") == count(y, "resume_rx"), (x, y)
    assert p["total"]["pause_tx"] == p["total"]["pause_rx"]
    assert p["total"]["resume_tx"] == p["total"]["resume_rx"] > 0
    window_ns = s.traffic_s * 1e9
    paused = [e for e in rows.values() if e["paused_ns"]]
    assert paused
    for e in paused:
        assert e["paused_pct"] == pytest.approx(100 * e["paused_ns"] / window_ns)
    # an experiment's metrics (metrics.csv, report.md) carry both
    from emu.experiments.points import point_metrics

    flat = point_metrics(s).flat
    assert flat["pause_frames"] == p["total"]["pause_tx"]
    assert flat["paused_max_pct"] == max(e["paused_pct"] for e in paused)
    assert flat["credit_waited_max_pct"] is None


def test_a_credit_run_reports_credit_waits_and_updates_agreeing_across_links(
        tmp_path: Path) -> None:
    """`--flow-control credit` reported no flow-control figures at all (the PFC run's
    PAUSE table had no credit counterpart). Now: per port the updates sent and received
    (one end's sent are the other's received: a virtual run built a throw-away host MAC
    for its settings, which announced credit to the leaf once more than the host's own
    counted) and how long a lossless queue waited for credit, as % of the traffic
    window."""
    from emu.experiments.virtual import run_virtual

    plan = plan_run(RunConfig(virtual=True, flow_control=FlowControlMode.CREDIT,
                              workload=WorkloadParams("incast", message_bytes=64 * 1024),
                              results_root=tmp_path, progress=False))
    s = run_virtual(plan, console=QuietConsole())
    c = s.credit
    assert s.ok and s.pfc is None and c is not None
    assert c["total"]["lossless_drops"] == 0 and c["total"]["overrun"] == 0
    rows = {(e["node"], e["port"]): e for e in [*c["ports"], *c["hosts"]]}
    assert len(c["hosts"]) == 8

    def count(end: Any, key: str) -> int:
        e = rows.get((end.node, end.port))
        return sum(e[key].values()) if e else 0

    for link in plan.fabric.links:
        for x, y in ((link.a, link.b), (link.b, link.a)):
            assert count(x, "updates_tx") == count(y, "updates_rx") > 0, (x, y)
    waited = [e for e in rows.values() if e["waited_ns"]]
    assert waited and all(e["waits"] for e in waited)
    window_ns = s.traffic_s * 1e9
    for e in waited:
        assert 0 < e["waited_pct"] < 100
        assert e["waited_pct"] == pytest.approx(100 * e["waited_ns"] / window_ns)
    from emu.experiments.points import point_metrics

    flat = point_metrics(s).flat
    assert flat["credit_waited_max_pct"] == max(e["waited_pct"] for e in waited)
    assert flat["pause_frames"] is None and flat["paused_max_pct"] is None
    run_dir = Path(s.run["results_dir"])
    assert json.loads((run_dir / "summary.json").read_text())["credit"]["total"] == c["total"]
    text = (run_dir / "summary.txt").read_text()
    longest = max(waited, key=lambda e: e["waited_ns"])
    table = text.split("Credit: ports that waited for credit")[1]
    row = next(ln for ln in table.splitlines()
               if ln.startswith(f"│ {longest['node']}:{longest['port']} "))
    assert f"│ {fmt_s(longest['waited_ns'] / 1e9 / s.run['dilation'])} " in row
    assert "flow-control drops" in text
