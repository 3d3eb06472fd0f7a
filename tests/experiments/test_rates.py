"""Which link rate `emu run` uses: --rate, else this machine's calibration, else built-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.cli import build_parser
from emu.experiments import rates
from emu.experiments.commands import config_from_args


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
    cfg = config_from_args(parse(["run", "clos4"]))  # clos4's YAML: 20 Mbps
    assert cfg.rate_bps == rates.BUILTIN_RATES_BPS["clos4"]
    assert cfg.rate_bps * cfg.dilation == pytest.approx(20e6 * 1000)
    assert "built-in default" in cfg.rate_reason
    given = config_from_args(parse(["run", "clos4", "--rate", "4Mbps", "--dilation", "50"]))
    assert (given.rate_bps, given.dilation) == (4_000_000, 50)
    yaml = config_from_args(parse(["run", "clos4", "--rate", "topology"]))
    assert yaml.rate_bps is None and yaml.dilation == 1000
