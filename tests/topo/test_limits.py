"""`emu topo check` answers whether fabric.p4 can run a topology: a switch with more
equal-cost next hops than its groups hold (16) was "ok" there and refused only by
`emu run`. The check names the file position that sets the width."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.cli import main
from emu.topo import TopologyError, limits, load_topology
from emu.topo.loader import check_topology

HEAD = "name: wide\ndefaults: {rate: 100Gbps}\n"


def write(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "wide.yaml"
    f.write_text(HEAD + body)
    return f


def problem(f: Path) -> str:
    with pytest.raises(TopologyError) as info:
        check_topology(f)
    assert len(info.value.diagnostics) == 1
    return str(info.value)


def test_too_many_spines_points_at_spines(tmp_path: Path) -> None:
    f = write(tmp_path, "generator: clos\nparams:\n  leaves: 2\n  spines: 18\n"
                        "  hosts_per_leaf: 1\n")
    assert problem(f) == (
        f"{f}:6:11: leaf2 has 18 equal-cost next hops towards leaf1, and fabric.p4's "
        "next-hop groups hold at most 16: give no switch more than 16 equal-cost uplinks "
        "(spines, parallel links; a fat tree: k <= 32)")
    assert len(load_topology(f).switches) == 20  # show and draw still load it


def test_parallel_links_point_at_uplinks_per_spine(tmp_path: Path) -> None:
    f = write(tmp_path, "generator: clos\nparams: {leaves: 2, spines: 3, hosts_per_leaf: 1, "
                        "uplinks_per_spine: 6}\n")
    assert problem(f).startswith(f"{f}:4:70: leaf2 has 18 equal-cost next hops")


def test_a_fat_tree_points_at_k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # k = 34 is the first fat tree past 16 (k/2 uplinks per switch); its routes take
    # seconds to compute, so the same rule is shown with groups of at most 2
    monkeypatch.setattr(limits, "MAX_GROUP_MEMBERS", 2)
    f = write(tmp_path, "generator: fattree\nparams: {k: 6}\n")
    assert problem(f).startswith(f"{f}:4:13: p1e2 has 3 equal-cost next hops towards p1e1, "
                                 "and fabric.p4's next-hop groups hold at most 2:")
    assert check_topology(write(tmp_path, "generator: fattree\nparams: {k: 4}\n"))


def test_an_explicit_topology_points_at_the_switch(tmp_path: Path) -> None:
    spines = [f"s{i}" for i in range(1, 18)]
    f = write(tmp_path, "switches:\n  - {name: l1, role: leaf}\n  - {name: l2, role: leaf}\n"
              + "".join(f"  - {{name: {s}, role: spine}}\n" for s in spines)
              + "hosts: [{name: h1}, {name: h2}]\nlinks:\n  - {a: h1, b: l1}\n"
              "  - {a: h2, b: l2}\n"
              + "".join(f"  - {{a: {leaf}, b: {s}}}\n" for leaf in ("l1", "l2")
                        for s in spines))
    assert problem(f).startswith(f"{f}:5:5: l2 has 17 equal-cost next hops towards l1")


@pytest.mark.parametrize("spines, rc", [(16, 0), (17, 1)])
def test_the_command_exits_1_with_the_position(spines: int, rc: int, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, f"generator: clos\nparams: {{leaves: 2, spines: {spines}, "
                        "hosts_per_leaf: 1}\n")
    assert main(["topo", "check", str(f)]) == rc
    out, err = capsys.readouterr()
    if rc == 0:
        assert out.startswith("ok: ") and not err
    else:
        assert not out and err.startswith(f"{f}:4:29: leaf2 has 17 equal-cost next hops")
        assert err.endswith("\n1 error\n")
