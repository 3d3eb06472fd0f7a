"""Agent configuration loading and its error messages."""

from __future__ import annotations

import json

import pytest

from emu.roce import config
from emu.roce.config import ConfigError


def base() -> dict:
    return {
        "host": {"name": "h1", "ip": "10.0.0.1", "mac": "02:00:00:00:00:01"},
        "nic": {"line_rate_bps": "100e9", "time_dilation": 5000, "mtu": 1024},
        "dcqcn": {"profile": "hpcc", "g": 0.01},
        "plb": {"enabled": True},
        "qps": [{"qpn": 17, "peer": "h2", "peer_ip": "10.0.0.2", "peer_mac": "02:00:00:00:00:02",
                 "peer_qpn": 18, "recovery": "sr"}],
        "flows": [{"id": "f1", "qpn": 17, "size_bytes": 1000, "after": ["f0"]}],
        "expect": ["f0"],
    }


def test_loads_and_merges_profile(tmp_path):
    cfg = config.load_dict(base())
    assert cfg.nic.line_rate_bps == 100e9 and cfg.nic.time_dilation == 5000.0
    assert cfg.dcqcn.g == 0.01 and cfg.dcqcn.byte_reset_bytes == 0  # hpcc profile + override
    assert cfg.plb.enabled and cfg.qps[0].recovery == "sr" and cfg.flows[0].op == "send"
    p = tmp_path / "c.json"
    p.write_text(json.dumps(base()))
    assert config.load(p).flows[0].id == "f1"
    c = base()
    c["flows"][0] = {"id": "f1", "peer": "h2", "size_bytes": 5, "after": ["f0"]}
    assert config.load_dict(c).flows[0].qpn == 17
    y = tmp_path / "c.yaml"
    y.write_text("host: {name: h, ip: 10.0.0.1, mac: '02:00:00:00:00:01'}\nqps: []\n")
    assert config.load(y).host.name == "h"


@pytest.mark.parametrize("mutate,match", [
    (lambda c: c["nic"].update(mtu=9000), "nic.mtu"),
    (lambda c: c["nic"].update(speed=1), "unknown key"),
    (lambda c: c["qps"][0].update(qpn="x"), r"qps\[0\].qpn: expected an integer"),
    (lambda c: c["qps"][0].update(recovery="tcp"), "must be one of"),
    (lambda c: c["qps"][0].update(max_outstanding_pkts=1000), "reorder_window_pkts"),
    (lambda c: c["flows"][0].update(qpn=99), "not one of the configured QPs"),
    (lambda c: c["flows"][0].update(after=["nope"]), "neither a local flow"),
    (lambda c: c["dcqcn"].update(profile="x"), "dcqcn.profile"),
    (lambda c: c["dcqcn"].update(g=2), "dcqcn.g"),
    (lambda c: c.pop("host"), "missing required key 'host'"),
    (lambda c: c["plb"].update(congested_rounds=0), "plb"),
    (lambda c: c["flows"][0].update(qpn=0, peer="zz"), r"flows\[0\].peer"),
    (lambda c: c["flows"][0].update(qpn=0), "give the sending QP"),
    # Each of these passed validation, then failed in the agent with a traceback (found by
    # fuzzing the config): bad addresses, a TTL past a byte, non-finite or overflowing
    # numbers, a negative line rate raised a plain ValueError.
    (lambda c: c["host"].update(ip="10.0.0.999"), "host: '10.0.0.999' is not an IPv4"),
    (lambda c: c["qps"][0].update(peer_mac="02:00:00:00:00"), r"qps\[0\]: .* is not a MAC"),
    (lambda c: c["qps"][0].update(peer_ip="::1"), r"qps\[0\]: '::1' is not an IPv4"),
    (lambda c: c["nic"].update(ttl=300), "nic.ttl: must be 1..255"),
    (lambda c: c["nic"].update(line_rate_bps="nan"), "nic.line_rate_bps: expected a finite"),
    (lambda c: c["nic"].update(line_rate_bps=1e308), "nic.line_rate_bps: must be positive"),
    (lambda c: c["nic"].update(line_rate_bps=-1), "nic.line_rate_bps: must be positive"),
    (lambda c: c["nic"].update(time_dilation="inf"), "nic.time_dilation: expected a finite"),
    (lambda c: c["dcqcn"].update(rate_reduce_period_ns=1e308), "dcqcn.rate_reduce_period_ns"),
    (lambda c: c["qps"][0].update(rto_ns=10**18), r"qps\[0\].rto_ns: must be 0.."),
    # a wire 1e30 times faster than the modelled fabric: its DCQCN timers rounded to 0
    # and the agent ended in a traceback building its QPs
    (lambda c: c["nic"].update(time_dilation=1e-30), "nic.time_dilation: puts the line rate"),
    # 2 GiB passed and crashed the agent when it posted the message.
    (lambda c: c["flows"][0].update(size_bytes=1 << 31), r"flows\[0\]: size_bytes must be"),
])
def test_bad_input_names_the_key(mutate, match):
    c = base()
    mutate(c)
    with pytest.raises(ConfigError, match=match):
        config.load_dict(c)


def test_flows_waiting_on_each_other_are_refused() -> None:
    """f1 after f2 after f3 after f1 was accepted: none could ever start, and the agent
    waited out its budget. The error names the cycle (a flow only waiting on a flow of a
    cycle, f4 here, is not part of it)."""
    c = base()
    c["flows"] = [{"id": "f4", "qpn": 17, "size_bytes": 1, "after": ["f2"]},
                  {"id": "f1", "qpn": 17, "size_bytes": 1, "after": ["f0", "f2"]},
                  {"id": "f2", "qpn": 17, "size_bytes": 1, "after": ["f3"]},
                  {"id": "f3", "qpn": 17, "size_bytes": 1, "after": ["f1"]}]
    with pytest.raises(ConfigError) as info:
        config.load_dict(c)
    assert str(info.value) == ("flows[2].after: these flows wait on each other, so none of "
                               "them can ever start: f2 -> f3 -> f1 -> f2")
    c["flows"][3]["after"] = ["f0"]  # a chain, not a cycle
    assert [f.id for f in config.load_dict(c).flows] == ["f4", "f1", "f2", "f3"]


def test_unparseable_file(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{nope")
    with pytest.raises(ConfigError, match="cannot parse"):
        config.load(p)


def test_shipped_example_loads():
    from pathlib import Path

    import emu.roce

    cfg = config.load(Path(emu.roce.__file__).parent / "example_agent.yaml")
    assert cfg.nic.line_rate_bps == 100e9 and cfg.flows[1].qpn == 17
    assert cfg.dcqcn == config.profile("nvidia")


def test_an_agent_config_without_a_profile_takes_the_runs_default() -> None:
    """`dcqcn:` without `profile:` gave nvidia's values while `emu run`, `emu incast`
    and the docs default to hpcc: one default now, emu.roce.dcqcn.DEFAULT_PROFILE."""
    from emu.experiments.config import RunConfig
    from emu.experiments.incast import IncastSpec
    from emu.roce.dcqcn import DEFAULT_PROFILE

    c = base()
    c["dcqcn"] = {}
    cfg = config.load_dict(c)
    assert DEFAULT_PROFILE == "hpcc"
    assert cfg.dcqcn == config.profile("hpcc", cfg.nic.line_rate_bps)
    assert RunConfig().dcqcn_profile == IncastSpec(2, 1).profile == DEFAULT_PROFILE
