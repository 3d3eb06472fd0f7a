"""Which link rate `emu run` uses: --rate, else this machine's calibration, else built-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.cli import build_parser
from emu.experiments import rates
from emu.experiments.commands import config_from_args
from emu.experiments.config import RunConfig, RunConfigError
from emu.experiments.plan import plan_run
from emu.topo import load_topology


def test_given_rate_wins(tmp_path: Path) -> None:
    c = rates.choose_rate("clos4", "embedded", 7_000_000, path=tmp_path / "none.json")
    assert (c.rate_bps, c.source) == (7_000_000, "--rate")


def test_calibrated_rate_for_this_topology_target_and_cpu_count(tmp_path: Path) -> None:
    path = tmp_path / "emu" / "calibration.json"
    rates.save_calibration(path, "clos4", "embedded", 3_000_000, [{"rate_bps": 3_000_000}],
                           cpus=2)
    c = rates.choose_rate("clos4", "embedded", None, path=path, cpus=2)
    assert (c.rate_bps, c.source) == (3_000_000, "calibrated") and str(path) in c.reason
    # A path to the same topology finds it too (keyed by the name).
    assert rates.choose_rate("topologies/clos4.yaml", "embedded", None, path=path,
                             cpus=2).source == "calibrated"
    # Another target, another topology, another machine size: not this calibration.
    assert rates.choose_rate("clos4", "bmv2", None, path=path, cpus=2).source == "built-in"
    assert rates.choose_rate("fattree4", "embedded", None, path=path, cpus=2).source == "built-in"
    assert rates.choose_rate("clos4", "embedded", None, path=path, cpus=8).source == "built-in"
    # A second topology is added, the first kept.
    rates.save_calibration(path, "fattree4", "embedded", 1_000_000, [], cpus=2)
    assert rates.choose_rate("clos4", "embedded", None, path=path, cpus=2).rate_bps == 3_000_000


def test_builtin_defaults_and_a_broken_file(tmp_path: Path) -> None:
    bad = tmp_path / "c.json"
    bad.write_text("{not json")
    c = rates.choose_rate("clos4", "embedded", None, path=bad)
    assert c.rate_bps == rates.BUILTIN_RATES_BPS["clos4"] and "built-in default" in c.reason
    assert rates.choose_rate("my-own.yaml", "embedded", None, path=bad).rate_bps == \
        rates.FALLBACK_RATE_BPS


def test_calibration_path_follows_the_environment(tmp_path: Path) -> None:
    assert rates.calibration_path({"EMU_CALIBRATION": "/x/c.json"}) == Path("/x/c.json")
    assert rates.calibration_path({"XDG_CACHE_HOME": "/c"}) == Path("/c/emu/calibration.json")
    assert rates.calibration_path({}).parts[-3:] == (".cache", "emu", "calibration.json")


def test_dilation_keeps_the_modelled_network(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("EMU_CALIBRATION", str(tmp_path / "none.json"))
    parse = build_parser().parse_args
    cfg = config_from_args(parse(["run", "clos4"]))  # clos4's YAML: 100 Gbps, 1 us
    assert cfg.rate_bps == rates.BUILTIN_RATES_BPS["clos4"]
    assert "built-in default" in cfg.rate_reason
    plan = plan_run(cfg)
    assert plan.dilation.factor == pytest.approx(100e9 / cfg.rate_bps)
    assert {lk.rate_bps for lk in plan.fabric.links} == {cfg.rate_bps}
    assert {lk.delay_ns for lk in plan.fabric.links} == {plan.dilation.wire_ns(1000)}
    given = plan_run(config_from_args(parse(["run", "clos4", "--rate", "4Mbps"])))
    assert given.dilation.factor == 25_000
    assert {lk.delay_ns for lk in given.fabric.links} == {25_000_000}  # 1 us x 25000
    dil = plan_run(config_from_args(parse(["run", "clos4", "--dilation", "50"])))
    assert {lk.rate_bps for lk in dil.fabric.links} == {2_000_000_000}
    with pytest.raises(RunConfigError, match="not both"):
        config_from_args(parse(["run", "clos4", "--rate", "4Mbps", "--dilation", "50"]))


def test_a_run_rate_keeps_the_topologys_ratios() -> None:
    """#16 item 13: the wire rate scales every link by one ratio (leafspine2's uplinks
    run at half its host links, so its leaves stay oversubscribed)."""
    model = load_topology("leafspine2")
    plan = plan_run(RunConfig(topo="leafspine2", rate_bps=2_000_000), model)
    for lm, lw in zip(model.links, plan.fabric.links, strict=True):
        assert lw.rate_bps * plan.dilation.factor == pytest.approx(lm.rate_bps)
        assert lw.delay_ns == pytest.approx(lm.delay_ns * plan.dilation.factor)
    assert plan.fabric.oversubscription("leaf2") == model.oversubscription("leaf2") == 2
