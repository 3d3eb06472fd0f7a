"""The extra Mininet CLI commands, against a controller over in-memory switch handles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emu.control import FabricController, MemorySwitchHandle
from emu.experiments import cli_ext
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.topo import load_topology


class FakeExperiment:
    """What the commands use of an Experiment: controller, link_down/up."""

    def __init__(self, recovery: str = "gbn") -> None:
        self.plan = plan_run(RunConfig(recovery=recovery))  # type: ignore[arg-type]
        self.fabric = load_topology("clos4")
        self.handles = {s.name: MemorySwitchHandle(s.name) for s in self.fabric.switches}
        self.controller = FabricController(self.fabric, self.handles)
        self.controller.program()
        self.link_calls: list[tuple[str, str, str]] = []

    def link_down(self, a: str, b: str) -> None:
        self.controller.link_down(a, b)
        self.link_calls.append(("down", a, b))

    def link_up(self, a: str, b: str) -> None:
        self.controller.link_up(a, b)
        self.link_calls.append(("up", a, b))


@pytest.fixture
def exp() -> Any:
    return FakeExperiment()


def test_tables_show_lb_and_entries(exp: Any) -> None:
    out = cli_ext.show_tables(exp, ["leaf1"])
    assert out.splitlines()[0].startswith("leaf1: lb ")
    assert "ipv4_lpm" in out and "ecmp_group" in out


def test_counters_list_ports_and_groups(exp: Any) -> None:
    out = cli_ext.show_counters(exp, ["leaf1"])
    ports = [p.number for p in exp.fabric.switch("leaf1").ports]
    assert all(f"\n  {p:>4} " in out for p in ports)
    assert "group " in out


def test_lb_mode_changes_the_switch(exp: Any) -> None:
    assert "every switch" in cli_ext.set_lb_mode(exp, ["spray"])
    assert str(exp.controller.lb("spine2").mode) == "spray"
    cli_ext.set_lb_mode(exp, ["flowlet", "leaf1"])
    assert str(exp.controller.lb("leaf1").mode) == "flowlet"
    assert str(exp.controller.lb("leaf2").mode) == "spray"
    with pytest.raises(cli_ext.CommandError, match="unknown load-balancing mode"):
        cli_ext.set_lb_mode(exp, ["bogus"])


def test_lb_mode_spray_warns_with_go_back_n() -> None:
    gbn = cli_ext.set_lb_mode(FakeExperiment("gbn"), ["spray"])
    assert "warning:" in gbn and "livelock" in gbn and "--recovery sr" in gbn
    assert "warning" not in cli_ext.set_lb_mode(FakeExperiment("sr"), ["spray"])
    assert "warning" not in cli_ext.set_lb_mode(FakeExperiment("gbn"), ["ecmp"])


def test_fail_and_restore_reroute(exp: Any) -> None:
    before = {e.key: e for e in exp.controller.installed("leaf1")}
    assert "down" in cli_ext.fail_link(exp, ["leaf1", "spine1"])
    after = {e.key: e for e in exp.controller.installed("leaf1")}
    assert before != after  # the groups lost the failed uplink
    cli_ext.restore_link(exp, ["leaf1", "spine1"])
    assert exp.link_calls == [("down", "leaf1", "spine1"), ("up", "leaf1", "spine1")]
    with pytest.raises(cli_ext.CommandError):
        cli_ext.fail_link(exp, ["leaf1"])
    with pytest.raises(cli_ext.CommandError):
        cli_ext.fail_link(exp, ["leaf1", "leaf2"])  # no such link


def test_tables_show_macs_and_ips_as_addresses(exp: Any) -> None:
    out = cli_ext.show_tables(exp, ["leaf1"])
    h1 = exp.fabric.host("h1")
    leaf1 = exp.fabric.switch("leaf1")
    assert f"hdr.ipv4.dstAddr={h1.ip}/32 -> FabricIngress.routing.route_to_port(port=1)" in out
    assert f"hdr.ipv4.dstAddr={exp.fabric.switch('leaf2').subnet} ->" in out
    assert f"set_macs(smac={leaf1.mac}, dmac={h1.mac})" in out
    assert "2199" not in out  # no MAC as a 48-bit integer


def test_tables_and_counters_without_a_switch_cover_every_switch(exp: Any) -> None:
    names = [s.name for s in exp.fabric.switches]
    tables = cli_ext.show_tables(exp, [])
    assert [ln.split(":")[0] for ln in tables.splitlines() if not ln.startswith(" ")] == names
    counters = cli_ext.show_counters(exp, [])
    assert [ln.split(":")[0] for ln in counters.splitlines() if not ln.startswith(" ")] == names
    assert cli_ext.show_tables(exp, ["spine1", "leaf2"]).count(": lb ") == 2
    with pytest.raises(cli_ext.CommandError, match="unknown switch leaf9"):
        cli_ext.show_tables(exp, ["leaf9"])


@pytest.mark.parametrize("cmd", ["lbmode", "workload"])
def test_usage_errors(exp: Any, cmd: str) -> None:
    with pytest.raises(cli_ext.CommandError, match="usage"):
        cli_ext.COMMANDS[cmd](exp, [])


def test_pfc_command_shows_each_ports_state() -> None:
    """`pfc`: a leaf paused by its host and pausing the spine, read from the switches'
    own flow-control counters (a SimFabric stands in for the daemons' admin `stats`)."""
    from emu.core.pfc import FlowControl, pfc_frame
    from emu.experiments.pfc import switch_counters
    from emu.sim.fabric import SimFabric

    exp = FakeExperiment()
    sim = SimFabric(exp.fabric, flow_control=FlowControl(mode="pfc"))
    exp.pfc_counters = lambda sw: switch_counters(sim).get(sw)  # type: ignore[attr-defined]
    h1 = exp.fabric.host("h1")
    sim.port("h1", 0).send(pfc_frame(h1.mac, {3: 0xFFFF}))  # h1 pauses its leaf
    sim.run_for(10_000)
    text = cli_ext.show_pfc(exp, ["leaf1"])
    lines = text.splitlines()
    assert lines[0] == "leaf1:" and "paused by peer" in lines[1]
    (row,) = [ln for ln in lines[2:] if ln.split()[0] == str(h1.switch_port)]
    assert row.split()[1:3] == ["-", "p3"]  # not pausing h1; paused by it on priority 3
    assert "0/1" in row
    off = FakeExperiment()
    off.pfc_counters = lambda sw: None  # type: ignore[attr-defined]
    assert cli_ext.show_pfc(off, ["spine1"]) == \
        "spine1: flow control off (emu run --flow-control pfc)"
    with pytest.raises(cli_ext.CommandError, match="unknown switch"):
        cli_ext.show_pfc(exp, ["nope"])


def test_credit_command_shows_a_port_waiting_for_credit() -> None:
    """`credit`: in credit mode `pfc` said "flow control off"; now `pfc` points at
    `credit`, which shows a leaf port holding a lossless packet for a host that never
    granted credit (a plain port: no credit MAC), from the switches' own counters."""
    from emu.control import QosSettings
    from emu.core.pfc import FlowControl
    from emu.experiments.pfc import switch_counters
    from emu.sim.fabric import SimFabric

    exp = FakeExperiment()
    sim = SimFabric(exp.fabric, qos=QosSettings.lossless(8),
                    flow_control=FlowControl(mode="credit", lossless={3}))
    exp.pfc_counters = lambda sw: switch_counters(sim).get(sw)  # type: ignore[attr-defined]
    h1, h2 = exp.fabric.host("h1"), exp.fabric.host("h2")
    sim.run_for(1_000_000)
    sim.hosts[h2.name].send_udp(h1.name, 50000, dscp=26, size=1000)
    sim.run_for(1_000_000)
    assert cli_ext.show_pfc(exp, ["leaf1"]) == \
        "leaf1: link-level credit, not PFC (the `credit` command)"
    lines = cli_ext.show_credit(exp, ["leaf1"]).splitlines()
    assert lines[0] == "leaf1:" and "waiting now" in lines[1]
    (row,) = [ln for ln in lines[2:] if ln.split()[0] == str(h1.switch_port)]
    cells = row.split()
    assert cells[1] == "p3" and int(cells[3]) >= 1 and float(cells[4]) > 0
    off = FakeExperiment()
    off.pfc_counters = lambda sw: None  # type: ignore[attr-defined]
    assert cli_ext.show_credit(off, ["spine1"]) == \
        "spine1: credit flow control off; emu run --flow-control credit"


def test_a_workload_whose_results_cannot_be_written_still_shows_its_summary(
        tmp_path: Path) -> None:
    """The `workload` command on a full disk said only `OSError: ...`: what the workload
    measured was gone."""
    from emu.experiments.report import RunRecords
    from emu.experiments.sampler import Snapshot

    exp = FakeExperiment()
    (tmp_path / "file").write_text("")
    exp.run_dir, exp.runs = tmp_path / "file", 0  # type: ignore[attr-defined]
    flows = {f.src for f in exp.plan.workload.flows} | {f.dst for f in exp.plan.workload.flows}
    exp.run_workload = lambda plan, tag: RunRecords(  # type: ignore[attr-defined]
        {h: [] for h in flows}, {}, [Snapshot(0.0, {}), Snapshot(1.0, {})], 1.0)
    out = cli_ext.run_workload(exp, ["permutation", "4096"])
    assert "flows verified" in out  # the summary
    assert out.splitlines()[-1] == (
        f"*** cannot write the results in {tmp_path / 'file' / 'workload1-permutation'}: "
        "Not a directory (the summary above is what the run measured)")
    # SIZE as `emu run --size` takes it (the command took bytes only)
    sizes = []
    exp.run_workload = lambda plan, tag: sizes.append(  # type: ignore[attr-defined]
        plan.config.workload.message_bytes) or RunRecords({}, {}, [], 0.0)
    cli_ext.run_workload(exp, ["alltoall", "64K"])
    assert sizes == [65536]
    with pytest.raises(cli_ext.CommandError, match="64Q"):
        cli_ext.run_workload(exp, ["alltoall", "64Q"])
