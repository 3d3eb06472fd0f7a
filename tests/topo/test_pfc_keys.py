"""Topology `pfc:` keys (defaults and per link): sizes in bytes or packets, headroom
auto or a size, errors at their line:col, and the switch thresholds they give."""

from __future__ import annotations

import pytest

from emu.core.pfc import FlowControl, PfcThresholds, headroom_bytes
from emu.topo import LinkPfc, TopologyError, loads_topology
from emu.topo.pfc import port_links, switch_flow_control

TOPO = """\
name: t
defaults:
  mtu: 1000
  pfc: {{xoff: 30pkts, xon: 10KB, headroom: auto}}
switches:
  - {{name: s1, role: leaf}}
hosts:
  - {{name: h1}}
  - {{name: h2}}
links:
  - {{a: h1, b: s1:1, pfc: {link1}}}
  - {{a: h2, b: s1:2}}
"""


def load(link1: str):
    return loads_topology(TOPO.format(link1=link1), "t.yaml")


def diagnostics(link1: str) -> list[str]:
    with pytest.raises(TopologyError) as info:
        load(link1)
    return [str(d) for d in info.value.diagnostics]


def test_link_keys_over_the_defaults_and_sizes_in_packets():
    f = load("{headroom: 50KiB, xoff: 40000}")
    # 30 packets of MTU 1000 plus the Ethernet header and FCS
    assert f.defaults.pfc == LinkPfc(30 * 1018, 10_000, None)
    assert f.links[0].pfc == LinkPfc(40_000, 10_000, 50 * 1024)
    assert f.links[1].pfc == LinkPfc(30 * 1018, 10_000, None)
    assert f.links[0].to_dict()["pfc"]["headroom_bytes"] == 51200


def test_switch_thresholds_follow_the_links():
    f = load("{headroom: 50000, xoff: 40000}")
    fc = switch_flow_control(f, "s1", FlowControl(mode="pfc"))
    assert fc.for_port(1) == PfcThresholds(40_000, 10_000, 50_000)
    assert fc.for_port(2) == PfcThresholds(30_540, 10_000, None)  # auto: from the link
    # hosts of MTU 1000, yet the switch's ports are 1500 (EmuNet's floor): such frames
    # can be on the link
    assert port_links(f, "s1")[1] == (100e9, 1000, 1500)


def test_port_links_mtu_covers_the_largest_frame_of_either_end():
    """A jumbo host's frames reach every switch port (its leaf's, and through the
    fabric every other): the headroom budgets two of them, not two default ones."""
    f = loads_topology(TOPO.format(link1="{}").replace("  - {name: h2}",
                                                       "  - {name: h2, mtu: 4200}"), "t.yaml")
    assert f.switch_mtu == 4200
    assert port_links(f, "s1") == {1: (100e9, 1000, 4200), 2: (100e9, 1000, 4200)}
    # 25 000 B in flight + 2 x (4200 + 38) + the PAUSE (84) + 201 728 response bits
    assert headroom_bytes(*port_links(f, "s1")[2]) == 58_776  # 53 376 with 1500


def test_a_lone_xoff_below_the_runs_xon_halves():
    f = loads_topology(TOPO.replace("  pfc: {{xoff: 30pkts, xon: 10KB, headroom: auto}}\n", "")
                       .format(link1="{xoff: 8000}"), "t.yaml")
    fc = switch_flow_control(f, "s1", FlowControl(mode="pfc"))  # run xon 20000
    assert fc.for_port(1) == PfcThresholds(8000, 4000, None)


def test_errors_name_the_place():
    d = diagnostics("{xof: 1, headroom: lots}")
    assert "t.yaml:11:28: unknown key 'xof' in pfc of link (did you mean 'xoff'?)" in d
    assert any(x.startswith("t.yaml:11:46: headroom: bad size 'lots'") and "'auto'" in x
               for x in d)
    assert diagnostics("{xon: 50KB}") == [
        "t.yaml:11:5: pfc: xon (50000 bytes) must not exceed xoff (30540 bytes) "
        "(this link's keys over the defaults')"]
    assert diagnostics("{xoff: 1000, xon: 2000}") == [
        "t.yaml:11:45: xon (2000 bytes) must not exceed xoff (1000 bytes)"]
    assert diagnostics("[1]")[0].startswith("t.yaml:11:27: pfc of link must be a mapping")
    assert diagnostics("{xoff: -5}")[0] == "t.yaml:11:34: xoff: size -5 must not be negative"
