"""`emu run` / `emu calibrate` front ends: flags -> RunConfig, dry runs, one-line errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from emu.cli import build_parser, main
from emu.control import LbMode
from emu.experiments.calibrate import CalibrationPoint, suggest
from emu.experiments.commands import config_from_args
from emu.experiments.config import RunConfig, RunConfigError
from emu.experiments.workloads import WorkloadParams
from tests.conftest import needs_root


def test_flags_map_onto_run_config() -> None:
    args = build_parser().parse_args([
        "run", "clos4", "--lb", "spray", "--cc", "none", "--recovery", "sr", "--workload",
        "incast", "--size", "64K", "--iterations", "2", "--incast-senders", "3",
        "--dilation", "500", "--fail-link", "leaf1:spine2", "--no-progress"])
    cfg = config_from_args(args)
    assert isinstance(cfg, RunConfig)
    assert (cfg.lb, cfg.cc, cfg.recovery, cfg.target) == ("spray", "none", "sr", "embedded")
    assert cfg.workload.kind == "incast" and cfg.workload.message_bytes == 65536
    assert cfg.workload.iterations == 2 and cfg.workload.incast_senders == 3
    assert cfg.rate_bps is None and cfg.dilation == 500
    assert cfg.fail_link == ("leaf1", "spine2") and not cfg.progress


def test_defaults_match_the_issue() -> None:
    cfg = config_from_args(build_parser().parse_args(["run", "clos4"]))
    assert isinstance(cfg, RunConfig)
    assert (cfg.target, cfg.lb, cfg.cc, cfg.workload.kind) == ("embedded", "ecmp", "dcqcn",
                                                               "allreduce")
    assert not cfg.cli


def test_flag_defaults_are_the_library_defaults() -> None:
    """`emu run TOPO` with no flags is the run RunConfig() describes: the flags take their
    defaults and choices from the library (one spelling), so the two cannot drift."""
    import dataclasses

    from emu.experiments.workloads import WORKLOAD_KINDS
    from emu.roce.dcqcn import PROFILES

    cfg = config_from_args(build_parser().parse_args(["run", "clos4", "--virtual"]))
    lib = RunConfig()
    differ = {f.name for f in dataclasses.fields(RunConfig)
              if getattr(cfg, f.name) != getattr(lib, f.name)}
    assert differ == {"virtual", "rate_reason"}, differ
    actions = {a.dest: a for a in _run_parser()._actions}
    assert tuple(actions["workload"].choices) == WORKLOAD_KINDS
    assert tuple(actions["dcqcn_profile"].choices) == PROFILES


def test_no_link_delay_zeroes_every_link_delay() -> None:
    from emu.experiments.plan import plan_run
    from emu.experiments.rates import rate_line

    cfg = config_from_args(build_parser().parse_args(["run", "clos4", "--no-link-delay"]))
    assert cfg.link_delay is False and cfg.to_dict()["link_delay"] is False
    plan = plan_run(cfg)
    assert plan.fabric.links and all(link.delay_ns == 0 for link in plan.fabric.links)
    # the modelled network too: ideal FCTs were those of 1 us links (a 1-packet flow's
    # slowdown 0.13), and the rate line said "1 us modelled = 100 ms on the wire"
    assert all(link.delay_ns == 0 for link in plan.model.links)
    assert "link delay 0 us modelled = 0 ms on the wire" in rate_line(plan, "")
    default = plan_run(config_from_args(build_parser().parse_args(["run", "clos4"])))
    assert all(link.delay_ns == default.dilation.wire_ns(1_000) for link in default.fabric.links)
    assert [link.rate_bps for link in plan.fabric.links] == [
        link.rate_bps for link in default.fabric.links]


def test_make_run_passes_link_delay_0() -> None:
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    dry = subprocess.run(["make", "-n", "run", "TARGET=bmv2", "LINK_DELAY=0"], cwd=repo,
                         capture_output=True, text=True, check=True).stdout
    assert "--target bmv2" in dry and "--no-link-delay" in dry
    dry = subprocess.run(["make", "-n", "run"], cwd=repo, capture_output=True, text=True,
                         check=True).stdout
    assert "--no-link-delay" not in dry


def test_dry_run_shows_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "clos4", "--workload", "permutation", "--size", "1K", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "clos4: 8 switches, 8 hosts" in out and "8 flows, 8192 bytes, 8 agents" in out


def test_dry_run_warns_of_what_bends_the_results(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "clos4", "--rate", "50000000", "--lb", "spray", "--dry-run"]) == 0
    warnings = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 2
    assert "go-back-N" in warnings[0] and "wire-time floor" in warnings[1]


@pytest.mark.parametrize("argv", [["run", "clos4", "--size", "12Q"],
                                  # inf raised OverflowError through argparse (a traceback)
                                  ["run", "clos4", "--size", "inf"],
                                  ["run", "clos4", "--size", "1e400K"],
                                  ["run", "clos4", "--size", "3G"],
                                  ["run", "clos4", "--fail-link", "leaf1"],
                                  ["run", "clos4", "--lb", "random"]])
def test_bad_flags_are_rejected(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_impossible_workload_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "clos4", "--workload", "incast", "--incast-senders", "9"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("emu run:") and "only 7 other hosts" in err and "\n" not in err


def test_virtual_time_refuses_the_bmv2_target(capsys: pytest.CaptureFixture[str]) -> None:
    """`--virtual --target bmv2` ran the embedded pipeline and printed its figures as a
    run's results: a comparison of the two targets in virtual time compared one with
    itself."""
    assert main(["run", "clos4", "--virtual", "--target", "bmv2", "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert err == ("emu run: run configuration: virtual time runs the embedded target in "
                   "this process; target bmv2 needs a real-time run (emu run without "
                   "--virtual, emu experiment --real)\n")
    with pytest.raises(RunConfigError, match="virtual time runs the embedded target"):
        RunConfig(virtual=True, target="bmv2").validate()
    RunConfig(virtual=False, target="bmv2").validate()


def test_virtual_time_refuses_what_it_would_ignore(capsys: pytest.CaptureFixture[str]) -> None:
    """--cli with --virtual ran the workload instead of opening a prompt; --sample-interval
    was ignored (virtual runs sampled every 5 ms of the wire clock whatever it said)."""
    assert main(["run", "clos4", "--virtual", "--cli", "--dry-run"]) == 1
    assert "virtual time has no Mininet" in capsys.readouterr().err
    assert RunConfig().sample_interval() == 0.05
    assert RunConfig(virtual=True).sample_interval() == 0.005
    assert RunConfig(virtual=True, sample_interval_s=0.02).sample_interval() == 0.02
    from emu.experiments.plan import plan_run
    from emu.experiments.virtual import run_virtual

    samples = {}
    for interval in (0.001, 0.005):
        cfg = RunConfig(virtual=True, progress=False, sample_interval_s=interval,
                        workload=WorkloadParams("incast", message_bytes=64 * 1024))
        samples[interval] = run_virtual(plan_run(cfg), write=False).queues[0].samples
    assert 4 * samples[0.005] < samples[0.001] < 6 * samples[0.005]


def test_not_root_is_one_line(monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main(["run", "clos4", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert "needs root" in err and "\n" not in err


def test_missing_dependency_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    real = shutil.which
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda t, *a, **k: None if t == "mnexec" else real(t))
    assert main(["run", "clos4", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert "missing mnexec" in err and "apt-get install mininet" in err and "\n" not in err


def test_run_config_validation() -> None:
    RunConfig().validate()
    with pytest.raises(RunConfigError, match="dilation"):
        RunConfig(dilation=0).validate()
    with pytest.raises(RunConfigError, match="lb must be"):
        RunConfig(lb="nope").validate()  # type: ignore[arg-type]
    assert any("go-back-N" in n for n in RunConfig(lb=LbMode.SPRAY).notes())
    assert RunConfig(lb=LbMode.SPRAY, recovery="sr").notes() == []
    # adaptive routing reorders too (a clos4 permutation of 1 MB: 2,861 resent packets)
    assert any("out of order" in n for n in RunConfig(lb=LbMode.ADAPTIVE).notes())
    assert RunConfig(lb=LbMode.ADAPTIVE, recovery="sr").notes() == []
    assert RunConfig(lb=LbMode.FLOWLET).notes() == []


@pytest.mark.parametrize("flag, value, setting", [
    ("--timeout", "nan", "timeout_s"), ("--timeout", "inf", "timeout_s"),
    ("--sample-interval", "nan", "sample_interval_s"), ("--dilation", "inf", "dilation"),
    ("--lock-wait", "-1", "lock_wait_s"), ("--lock-wait", "nan", "lock_wait_s"),
    ("--pfc-watchdog-ms", "inf", "pfc_watchdog_ms"), ("--fail-after", "nan", "fail_after_s"),
    # a dilation past the NIC's bound, or one that puts the wire rate at infinity:
    # tracebacks (ConfigError, OverflowError) from deep in the plan
    ("--rate", "1bps", "dilation 1e+11"), ("--dilation", "1e-300", "dilation 1e-300"),
    ("--dilation", "2e9", "dilation 2e+09"),
    # a link the topology does not have: UnknownLinkError from the controller mid-run
    ("--fail-link", "leaf1:nosuch", "fail_link: topology clos4 has no link between leaf1 "
                                    "and nosuch"),
])
def test_non_finite_and_negative_numbers_are_refused(
        flag: str, value: str, setting: str, capsys: pytest.CaptureFixture[str]) -> None:
    # NaN passed `x <= 0` checks and ran; an infinite dilation crashed with a traceback.
    assert main(["run", "clos4", flag, value, "--dry-run"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("emu run: run configuration:") and setting in err
    assert "Traceback" not in err and "\n" not in err


@pytest.mark.parametrize("args, says", [
    (["--senders", "0"], "--senders: must be 1..252"),
    (["--senders", "600"], "--senders: must be 1..252"),
    (["--rate", "bogus"], "--rate: bad rate 'bogus'"),
    (["--ms", "nan"], "--ms: must be a finite number > 0"),
    (["--ms", "-5"], "--ms: must be a finite number > 0"),
    (["--mtu", "100"], "--mtu: must be 256..4096"),
    (["--profiles", "hpcc,nope"], "--profiles: expected a comma-separated list"),
])
def test_incast_options_are_checked(args: list[str], says: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    # Each of these ended in a traceback (ZeroDivisionError, UnitError, ValueError) or
    # ran with a negative flow size.
    with pytest.raises(SystemExit) as ei:
        main(["incast", *args])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_incast_too_short_a_flow_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["incast", "--ms", "1e-12"]) == 1
    assert capsys.readouterr().err.strip() == "emu incast: --ms 1e-12 gives each flow 0 bytes; raise it"


def test_incast_without_a_steady_state_says_so_not_zero_rates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run too short for one steady window printed "rates 0.00-0.00 Gb/s,
    utilisation 0.0%, Jain 1.000": a starved bottleneck, shown with confidence."""
    plot = tmp_path / "i.png"
    assert main(["incast", "--senders", "2", "--ms", "0.05", "--profiles", "nvidia",
                 "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "nvidia  no steady state: the first flow ended" in out and "(raise --ms)" in out
    assert "rates 0.00" not in out and "utilisation" not in out
    assert plot.is_file()


def test_incast_plot_that_cannot_be_written_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The figures were printed, then a traceback for the picture."""
    (tmp_path / "f").write_text("")
    assert main(["incast", "--senders", "2", "--ms", "1", "--profiles", "nvidia",
                 "--plot", str(tmp_path / "f" / "i.png")]) == 1
    out, err = capsys.readouterr()
    assert "nvidia  rates " in out
    assert err.startswith(f"emu incast: cannot write {tmp_path / 'f' / 'i.png'}: ")
    assert "Traceback" not in err


def test_calibration_suggests_the_last_faithful_rate() -> None:
    def pt(rate: int, eff: float, cpu: bool = False) -> CalibrationPoint:
        return CalibrationPoint(rate, True, cpu, eff, eff / 2, 1000.0, 0, None, None, ())

    assert suggest([pt(5, 0.9), pt(10, 0.8), pt(20, 0.9, cpu=True), pt(40, 0.9)]) == 10
    assert suggest([pt(5, 0.3)]) is None
    assert suggest([pt(20, 0.9), pt(5, 0.9), pt(10, 0.2)]) == 5


def test_calibration_judges_link_use_against_the_exact_run() -> None:
    """fattree4's 128 KB permutation keeps its busiest link 16% busy even in virtual time
    (collisions, losses, retransmission timeouts): held to 60%, every rate was "too
    slow", and the advice was to try "lower rates (--rates 1Mbps,2Mbps)" after 0.5 and 1."""
    from emu.experiments.calibrate import no_faithful_rate

    def pt(rate: int, eff: float, reference: float) -> CalibrationPoint:
        return CalibrationPoint(rate, True, False, eff, 0.3, 300.0, 0, None, None, (),
                                reference)

    low = [pt(500_000, 0.16, 0.16), pt(1_000_000, 0.73, 0.16), pt(2_000_000, 0.11, 0.16)]
    assert [p.faithful for p in low] == [True, True, False]
    assert suggest(low) == 1_000_000
    assert low[2].verdict() == ("too fast: links idle (busiest 0.11 < 0.13, the exact "
                                "run's 0.16)")
    # where the exact run keeps links busy, the bar stays at 60%
    assert not pt(1_000_000, 0.55, 0.95).faithful and pt(1_000_000, 0.6, 0.95).faithful
    assert no_faithful_rate([pt(500_000, 0.01, 0.9), pt(1_000_000, 0.01, 0.9)]) == (
        "no rate tried was faithful: try rates below 0.5 Mb/s (--rates 0.125Mbps,0.25Mbps)")


def test_a_calibration_that_cannot_be_saved_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """After minutes of measuring, a cache that cannot be written ended in a traceback."""
    from emu.experiments.calibrate import save_suggestion

    pts = [CalibrationPoint(2_000_000, True, False, 0.9, 0.5, 1000.0, 0, None, None, ())]
    (tmp_path / "f").write_text("")
    monkeypatch.setenv("EMU_CALIBRATION", str(tmp_path / "f" / "calibration.json"))
    assert save_suggestion("clos4", "embedded", 2_000_000, pts) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"emu calibrate: cannot save to {tmp_path / 'f' / 'calibration.json'}")
    assert "give emu run --rate 2Mbps" in err
    monkeypatch.setenv("EMU_CALIBRATION", str(tmp_path / "ok" / "calibration.json"))
    assert save_suggestion("clos4", "embedded", 2_000_000, pts) == 0
    assert (tmp_path / "ok" / "calibration.json").is_file()


@needs_root
def test_a_calibration_whose_results_cannot_be_written_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A results folder that cannot be made ended `emu calibrate` in a traceback."""
    (tmp_path / "f").write_text("")
    assert main(["calibrate", "--rates", "1Mbps", "--no-save",
                 "--results", str(tmp_path / "f")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"emu calibrate: cannot make a run folder under {tmp_path / 'f'}: " \
                      "not a folder"


def _run_parser() -> Any:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "group")
    return sub.choices["run"]


def test_run_help_explains_every_option_and_its_default(
        capsys: pytest.CaptureFixture[str]) -> None:
    for action in _run_parser()._actions:
        if action.dest == "help":
            continue
        text = action.help or ""
        assert len(text) > 20, f"{action.option_strings or action.dest}: no explanation"
        if action.option_strings:
            assert "default" in text, f"{action.option_strings}: no default shown"
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "%(default)" not in out and "(default ecmp)" in out
    assert ("(default 120 s of wall time; virtual runs: 600 s of virtual time; longer for a "
            "workload that needs more than a quarter of that on the wire: four times what "
            "it needs; virtual runs add the longest a QP retries before it fails)") in out


def test_incast_senders_help_means_all_other_hosts() -> None:
    # It said "every other host" (every second one?) for what is all hosts but the receiver.
    (action,) = [a for a in _run_parser()._actions if a.dest == "incast_senders"]
    assert "every other" not in action.help and "all the other hosts" in action.help


def test_virtual_runs_take_no_calibrated_rate() -> None:
    """A virtual run needs no rate this machine sustains: it uses the library's default
    wire rate (a calibrated 0.5 Mb/s on fattree4 would stretch its clock 200000 times)."""
    from emu.experiments.config import DEFAULT_WIRE_RATE_BPS
    from emu.experiments.plan import plan_run

    cfg = config_from_args(build_parser().parse_args(["run", "fattree4", "--virtual"]))
    assert cfg.rate_bps is None and cfg.dilation is None
    plan = plan_run(cfg)
    assert max(lk.rate_bps for lk in plan.fabric.links) == DEFAULT_WIRE_RATE_BPS


@pytest.mark.parametrize("option, value, field, most", [
    ("--timeout", "1e300", "timeout_s", "1e+09"), ("--fail-after", "2e9", "fail_after_s", "1e+09"),
    ("--sample-interval", "1e10", "sample_interval_s", "1e+09")])
def test_a_time_past_the_clocks_range_is_an_error(option: str, value: str, field: str,
                                                   most: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--timeout 1e300 passed the checks and a virtual run then died in an OverflowError
    (the virtual clock counts whole nanoseconds: 1e309 ns is a float infinity)."""
    argv = ["run", "clos4", "--virtual", "--no-progress", "--size", "4K", "--results",
            str(tmp_path), option, value]
    if option == "--fail-after":
        argv += ["--fail-link", "leaf1:spine1"]
    assert main(argv) == 1
    assert capsys.readouterr().err.strip() == (
        f"emu run: run configuration: {field} must be at most {most}, got {float(value)!r}")
    assert not any(tmp_path.iterdir())


def test_plb_flag_turns_plb_on_and_the_summary_counts_repaths(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PLB existed in the host stack and experiment files but `emu run` had no flag for it,
    and no summary said whether it was on or how often QPs moved. Two ECMP collisions on
    clos4 (seed 1: each pair of flows shares an uplink) time out and re-path."""
    import json

    args = ["run", "clos4", "--virtual", "--no-progress", "--workload", "permutation",
            "--size", "256K", "--recovery", "sr", "--results", str(tmp_path)]
    assert not config_from_args(build_parser().parse_args(args)).plb
    assert main([*args, "--plb"]) == 0
    out = capsys.readouterr().out
    assert "lb=ecmp+plb cc=dcqcn" in out
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    per_flow = sum(f["repaths"] for f in summary["flows"])
    assert summary["run"]["plb"] is True and summary["hosts"]["repaths"] == per_flow > 0
    assert re.search(rf"PLB re-paths \(new UDP source port\)\s+│\s+{per_flow}\n", out)
    assert main(args) == 0  # off: neither the heading nor the counter mention it
    out = capsys.readouterr().out
    assert "lb=ecmp cc=dcqcn" in out and "PLB" not in out


@pytest.mark.parametrize("spines, ok", [(16, True), (18, False)])
def test_a_fabric_wider_than_fabric_p4s_groups_is_refused_before_it_starts(
        spines: int, ok: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 10-spine Clos passed the checks and the dry run; the run then died in a traceback
    from the controller (groups held at most 8 members, 16 since), in real time with
    Mininet up."""
    topo = tmp_path / f"clos{spines}.yaml"
    topo.write_text(f"name: wide\ndefaults: {{rate: 100Gbps}}\ngenerator: clos\n"
                    f"params: {{leaves: 2, spines: {spines}, hosts_per_leaf: 1}}\n")
    argv = ["run", str(topo), "--virtual", "--no-progress", "--size", "4K",
            "--results", str(tmp_path / "results")]
    assert main([*argv, "--dry-run"]) == (0 if ok else 1)
    err = capsys.readouterr().err
    if ok:
        assert main(argv) == 0
        return
    assert err == (f"emu run: topology wide: leaf2 has {spines} equal-cost next hops towards "
                   "leaf1, and fabric.p4's next-hop groups hold at most 16: give no switch more "
                   "than 16 equal-cost uplinks (spines, parallel links; a fat tree: k <= 32)\n")
    assert main(argv) == 1
    assert "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_te_pins_past_the_table_are_a_one_line_configuration_error(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--lb te` on a k=12 fat tree's all-to-all died in a traceback (RESOURCE_EXHAUSTED
    from one switch's te_flow table, with others already pinned). Here: 4,097 QPs out of
    h1 on clos4, in virtual time; no results folder is left behind."""
    from emu.control import Flow
    from emu.experiments.plan import RunPlan

    many = [Flow("h1", "h3", sport=1 + i, demand_bps=1e6) for i in range(4097)]
    monkeypatch.setattr(RunPlan, "te_flows", lambda self: many)
    argv = ["run", "clos4", "--virtual", "--no-progress", "--lb", "te", "--size", "4K",
            "--results", str(tmp_path)]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        "emu run: run configuration: lb te: TE would pin 4097 flows on leaf1, and fabric.p4's "
        "te_flow table holds 4096: fewer flows (hosts, workload) or another load balancing "
        "mode\n")
    assert not any(tmp_path.iterdir())
