"""Experiment files: grid expansion, options, and every error at its position at once."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from emu.cli import main
from emu.control.params import LbMode
from emu.experiments.experiment import load_experiment, loads_experiment, options
from emu.topo import available_topologies
from emu.topo.errors import TopologyError

REPO = Path(__file__).resolve().parents[2]


def load(text: str, tmp_path: Path, name: str = "exp.yaml"):
    f = tmp_path / name
    f.write_text(textwrap.dedent(text))
    return load_experiment(f)


def errors(text: str, tmp_path: Path) -> list[str]:
    with pytest.raises(TopologyError) as ei:
        load(text, tmp_path)
    return [str(d) for d in ei.value.diagnostics]


def test_shipped_example_expands_to_modes_times_seeds() -> None:
    exp = load_experiment(REPO / "experiments" / "lb-modes.yaml")
    assert exp.name == "lb-modes"
    assert [p.id for p in exp.points][:3] == ["lb=ecmp,seed=1", "lb=ecmp,seed=2",
                                               "lb=flowlet,seed=1"]
    assert len(exp.points) == 8
    cfgs = [p.config for p in exp.points]
    assert {c.lb for c in cfgs} == {LbMode.ECMP, LbMode.FLOWLET, LbMode.ADAPTIVE, LbMode.SPRAY}
    assert all(c.virtual and c.recovery == "sr" and c.workload.kind == "permutation"
               and c.workload.message_bytes == 64 * 1024 for c in cfgs)
    assert [c.workload.seed for c in cfgs[:2]] == [1, 2]


def test_grid_is_the_product_with_set_axes_and_seed_count(tmp_path: Path) -> None:
    exp = load("""
        base: {topology: clos4, workload: permutation, size: 8K}
        grid:
          lb: [ecmp, spray]
          transport:
            - {cc: dcqcn, recovery: gbn}
            - {cc: none, recovery: sr, window: 16}
        seeds: 2
        timeout: 30
        """, tmp_path)
    assert exp.seeds == (1, 2) and exp.timeout_s == 30.0 and exp.name == "exp"
    assert len(exp.points) == 8
    p = exp.points[3]
    assert p.id == "lb=ecmp,cc=none,recovery=sr,window=16,seed=2"
    assert p.configuration == "lb=ecmp,cc=none,recovery=sr,window=16"
    assert (p.config.cc, p.config.recovery, p.config.window_pkts) == ("none", "sr", 16)
    assert p.options() == {"lb": "ecmp", "cc": "none", "recovery": "sr", "window": "16",
                           "seed": "2"}
    assert "/" not in p.dir_name


def test_a_set_axis_empty_mapping_is_named_base(tmp_path: Path) -> None:
    """experiments/link-failure.yaml's `failure: [{fail_link: ...}, {}]`: the run
    without a failure was `lb=ecmp,,seed=3` (folder too) and `lb=ecmp,` in the report."""
    exp = load("""
        base: {topology: clos4, workload: permutation, size: 8K}
        grid:
          lb: [ecmp]
          failure:
            - {fail_link: "leaf4:spine4"}
            - {}
        seeds: [3]
        """, tmp_path)
    assert [p.id for p in exp.points] == ["lb=ecmp,fail_link=leaf4:spine4,seed=3",
                                          "lb=ecmp,failure=base,seed=3"]
    assert exp.points[1].configuration == "lb=ecmp,failure=base"
    assert exp.points[1].dir_name == "lb=ecmp,failure=base,seed=3"
    assert exp.points[1].options() == {"lb": "ecmp", "seed": "3"}


def test_a_null_value_is_shown_as_the_file_spells_it() -> None:
    """ecmp-polarization's `lb_seed: null` (per-switch seeds) read `lb_seed=None`."""
    exp = load_experiment(REPO / "experiments" / "ecmp-polarization.yaml")
    ids = [p.id for p in exp.points]
    assert "lb_seed=null,seed=1" in ids and not any("None" in i for i in ids)
    p = next(p for p in exp.points if p.id == "lb_seed=null,seed=1")
    assert p.config.lb_seed is None and p.options()["lb_seed"] == "null"


def test_real_time_points_run_at_the_rate_emu_run_would_choose(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`emu experiment --real` ran clos4's points at the library's default wire rate
    (20 Mb/s, dilation 5000), where this 2-core machine is CPU-bound, while `emu run
    clos4` takes the calibrated or built-in rate (1 Mb/s): every lb-modes point was
    flagged CPU-bound."""
    from emu.experiments.rates import BUILTIN_RATES_BPS, save_calibration

    cal = tmp_path / "calibration.json"
    monkeypatch.setenv("EMU_CALIBRATION", str(cal))
    f = tmp_path / "exp.yaml"
    f.write_text(textwrap.dedent("""
        base: {topology: clos4, workload: permutation, size: 8K}
        grid:
          pace:
            - {}
            - {rate: 5Mbps}
            - {dilation: 2000}
        """))
    built_in, given, dilated = [p.config for p in load_experiment(f, real=True).points]
    assert (built_in.rate_bps, built_in.dilation) == (BUILTIN_RATES_BPS["clos4"], None)
    assert "built-in default for clos4" in built_in.rate_reason
    assert given.rate_bps == 5_000_000 and (dilated.rate_bps, dilated.dilation) == (None, 2000)
    save_calibration(cal, "clos4", "embedded", 3_000_000, [])
    assert load_experiment(f, real=True).points[0].config.rate_bps == 3_000_000
    # virtual time keeps the library's rate: no CPU to respect
    assert load_experiment(f).points[0].config.rate_bps is None


def test_every_runconfig_and_workload_field_is_an_option(tmp_path: Path) -> None:
    opts = options()
    # fields later layers add (flow control, load) need no change here
    for name in ("ecn_kmin_pkts", "mtu_bytes", "plb", "dcqcn_profile", "priority_queues",
                 "incast_senders", "iterations", "hosts", "size", "rate", "topology"):
        assert name in opts
    assert "results_root" not in opts and "seed" not in opts
    exp = load("""
        base: {topology: clos4, ecn_kmin_pkts: 8, plb: true, rate: 10Mbps, size: 1M,
               hosts: [h1, h2, h5], fail_link: "leaf1:spine1", fail_after: 0.5}
        """, tmp_path)
    c = exp.points[0].config
    assert (c.ecn_kmin_pkts, c.plb, c.rate_bps, c.workload.message_bytes) == \
        (8, True, 10_000_000, 1 << 20)
    assert c.workload.hosts == ("h1", "h2", "h5")
    assert c.fail_link == ("leaf1", "spine1") and c.fail_after_s == 0.5


def test_bad_file_reports_every_problem_at_its_position(tmp_path: Path) -> None:
    errs = errors("""\
        name: bad
        base:
          topology: clos4
          sise: 64K
        grid:
          lb: [ecmp, flowlett]
          cc: [dcqcn, 3]
          transport:
            - {recovery: sr}
            - {recovery: xx, window: -1}
          lbb: [a, b]
        seeds: [1, 1]
        timout: 4
        """, tmp_path)
    f = str(tmp_path / "exp.yaml")
    assert errs == [
        f"{f}:4:3: unknown option 'sise' (did you mean 'size'?)",
        f"{f}:6:14: lb: expected one of ecmp, flowlet, adaptive, spray, te, got 'flowlett'",
        f"{f}:7:15: cc: expected one of dcqcn, none, got 3",
        f"{f}:10:18: recovery: expected one of gbn, sr, got 'xx'",
        f"{f}:10:30: window: window_pkts must be 1..4194303 (packets in flight: under a "
        "quarter of the 24-bit PSN space), got -1",
        f"{f}:11:3: unknown option 'lbb' (did you mean 'lb'?); an axis that is not an "
        "option takes mappings of options as its values",
        f"{f}:12:8: seeds repeat a value",
        f"{f}:13:1: unknown key 'timout' (did you mean 'timeout'?)",
    ]


def test_a_window_past_the_psn_space_is_an_error_at_its_place(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """window: 40964096 passed the file's checks, and planning the points then failed
    in the hosts' configuration with a traceback (ConfigError: max_outstanding_pkts);
    `emu run --window 40964096` the same."""
    errs = errors("""\
        base: {topology: clos4, window: 40964096}
        seeds: [1]
        """, tmp_path)
    f = str(tmp_path / "exp.yaml")
    assert errs == [f"{f}:1:33: window: window_pkts must be 1..4194303 (packets in flight: "
                    "under a quarter of the 24-bit PSN space), got 40964096"]
    from emu.cli import main

    assert main(["run", "clos4", "--virtual", "--window", "40964096", "--dry-run"]) == 1
    assert capsys.readouterr().err.strip() == (
        "emu run: run configuration: window_pkts must be 1..4194303 (packets in flight: "
        "under a quarter of the 24-bit PSN space), got 40964096")


def test_an_unknown_dcqcn_profile_is_an_error_at_its_place(tmp_path: Path) -> None:
    """It passed the file's checks; planning the points then failed with a traceback
    from the hosts' configuration (ConfigError: dcqcn.profile)."""
    errs = errors("""\
        base: {topology: clos4, dcqcn_profile: hpcchpcc}
        seeds: [1]
        """, tmp_path)
    assert errs == [f"{tmp_path / 'exp.yaml'}:1:40: dcqcn_profile: dcqcn_profile must be "
                    "one of paper, nvidia, hpcc, got 'hpcchpcc'"]


@pytest.mark.parametrize("path", sorted((REPO / "experiments").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_every_shipped_experiment_file_loads(path: Path) -> None:
    # oversubscription.yaml did not: `workload: background` was checked alone, without
    # the grid's background_load, and refused.
    exp = load_experiment(path)
    assert exp.points and all(p.config.workload.kind for p in exp.points)


def test_a_rule_of_two_options_is_judged_on_whole_points(tmp_path: Path) -> None:
    exp = load("""\
        base: {topology: clos4, workload: background, size_dist: websearch}
        grid:
          background_load: [0.3, 0.5]
        """, tmp_path)
    assert [p.config.workload.background_load for p in exp.points] == [0.3, 0.5]
    f = str(tmp_path / "exp.yaml")
    # both sides of a broken rule in the grid: the point that breaks it is named
    assert errors("""\
        base: {topology: clos4, ecn_kmax_pkts: 30}
        grid:
          ecn_kmin_pkts: [10, 40]
        """, tmp_path) == [f"{f}:2:1: point ecn_kmin_pkts=40,seed=1: ECN needs kmin < "
                           "kmax, got kmin=40 kmax=30"]
    # a value that breaks a rule by itself is named where it stands, with other errors
    assert errors("""\
        base: {topology: clos4, ecn_pmax: 2}
        grid:
          timeout_s: [.nan, 5]
          lb: [ecmp, bogus]
        """, tmp_path) == [
        f"{f}:1:35: ecn_pmax: ECN pmax must be in [0, 1], got 2.0",
        f"{f}:3:15: timeout_s: timeout_s must be a finite number > 0, got nan",
        f"{f}:4:14: lb: expected one of ecmp, flowlet, adaptive, spray, te, got 'bogus'",
    ]


def test_the_bmv2_target_needs_real_time_points(tmp_path: Path) -> None:
    """A file with `target: bmv2` ran its points in virtual time on the embedded target,
    and the report named BMv2."""
    text = "base: {topology: clos4, target: bmv2, size: 4K}\ngrid:\n  lb: [ecmp, spray]\n"
    f = str(tmp_path / "exp.yaml")
    assert errors(text, tmp_path) == [
        f"{f}:1:33: target: virtual time runs the embedded target in this process; target "
        "bmv2 needs a real-time run (emu run without --virtual, emu experiment --real)"]
    (tmp_path / "exp.yaml").write_text(text)
    exp = load_experiment(tmp_path / "exp.yaml", real=True)
    assert all(p.config.target == "bmv2" and not p.config.virtual for p in exp.points)


def test_impossible_points_are_reported_before_anything_runs(tmp_path: Path) -> None:
    errs = errors("""\
        base: {workload: incast, incast_senders: 12, size: 4K}
        grid:
          topology: [clos4, nosuch]
          fail_link: ["leaf1:spine1", "leaf1:leaf2"]
        """, tmp_path)
    f = str(tmp_path / "exp.yaml")
    assert errs == [
        f"{f}:2:1: point topology=clos4,fail_link=leaf1:spine1,seed=1: incast_senders=12 "
        "but only 7 other hosts",
        f"{f}:3:21: no such topology file or name (known names: "
        f"{', '.join(available_topologies())})",
        f"{f}:4:31: fail_link: topology clos4 has no link between leaf1 and leaf2",
    ]


def test_too_many_runs_are_refused_at_their_place(tmp_path: Path) -> None:
    """A seed count with extra digits raised OverflowError (or would build billions of
    points); the count and the grid's product are bounded and reported where they are."""
    from emu.experiments.experiment import MAX_POINTS

    f = str(tmp_path / "exp.yaml")
    assert errors("seeds: 99999999999999999999\n", tmp_path) == [
        f"{f}:1:8: seeds: a count must be 1..{MAX_POINTS}, got 99999999999999999999"]
    assert errors("grid:\n  lb: [ecmp, spray]\nseeds: 6000\n", tmp_path) == [
        f"{f}:1:1: the grid and seeds make 12000 runs; at most {MAX_POINTS} in one "
        "experiment file"]
    assert len(load("grid:\n  lb: [ecmp, spray]\nseeds: 2\n", tmp_path).points) == 4


def test_yaml_syntax_error_and_non_mapping(tmp_path: Path) -> None:
    assert errors("base: {lb: ecmp\n", tmp_path)[0].startswith(
        f"{tmp_path / 'exp.yaml'}:2:1: YAML syntax error")
    assert "an experiment file is a mapping" in errors("- 1\n", tmp_path)[0]


def test_topology_path_relative_to_the_experiment_file(tmp_path: Path) -> None:
    (tmp_path / "topo").mkdir()
    (tmp_path / "topo" / "mine.yaml").write_text(
        (REPO / "topologies" / "leafspine2.yaml").read_text())
    exp = loads_experiment("base: {topology: topo/mine.yaml, size: 4K}\n",
                           tmp_path / "e.yaml")
    assert exp.points[0].config.topo == str(tmp_path / "topo" / "mine.yaml")


def test_cli_check_lists_points_and_bad_file_exits_1_without_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("base: {size: 4K}\ngrid: {lb: [ecmp, spray]}\nseeds: 2\n")
    assert main(["experiment", str(good), "--check", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "4 points (2 configurations x 2 seeds)" in out and "lb=spray,seed=2" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: {lb: sprya}\n")
    assert main(["experiment", str(bad), "--results", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == f"{bad}:1:12: lb: expected one of ecmp, flowlet, adaptive, spray, te, " \
                  "got 'sprya'\n1 error\n"
    assert not (tmp_path / "experiments").exists()  # nothing ran


def test_ray_missing_or_bad_flags_are_one_line_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "e.yaml"
    f.write_text("base: {size: 4K}\n")
    assert main(["experiment", str(f), "--jobs", "0"]) == 2
    assert capsys.readouterr().err == "emu experiment: --jobs must be >= 1\n"
    assert main(["experiment", str(f), "--real", "--ray", "local"]) == 2
    assert "cannot go with --ray" in capsys.readouterr().err
    try:
        import ray  # noqa: F401
    except ImportError:
        assert main(["experiment", str(f), "--ray", "local", "--results", str(tmp_path)]) == 1
        assert capsys.readouterr().err == (
            "emu experiment: --ray needs Ray, an optional extra: pip install -e '.[ray]' "
            "(make setup tries it)\n")
        assert not list((tmp_path / "experiments" / "e").glob("points/*"))
