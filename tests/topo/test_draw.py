"""`emu topo draw`: every node of a small fabric named; a large one's crowded rows left
unnamed (a k = 16 fat tree's 1,024 host names overlapped into a grey band)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.topo import fattree_fabric, load_topology
from emu.topo.draw import MAX_LABELLED, draw_fabric


@pytest.fixture
def labels(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The annotations of each figure drawn, as it is saved."""
    from matplotlib.figure import Figure

    seen: list[list[str]] = []
    save = Figure.savefig

    def spy(self: Figure, *args: object, **kwargs: object) -> None:
        seen.append([t.get_text() for t in self.axes[0].texts])
        save(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Figure, "savefig", spy)
    return seen


def test_small_fabrics_name_every_node_and_large_ones_their_sparse_rows(
        tmp_path: Path, labels: list[list[str]]) -> None:
    clos4 = load_topology("clos4")
    draw_fabric(clos4, tmp_path / "clos4.png")
    assert sorted(t.split("\n")[0] for t in labels[0]) == \
        sorted(n.name for n in clos4.iter_nodes())
    assert "h1\n10.0.1.1" in labels[0] and "leaf1\n#1" in labels[0]

    ft = fattree_fabric(8)  # 128 hosts: more than a row can name; 80 switches, 32 a row
    assert len(ft.hosts) > MAX_LABELLED
    draw_fabric(ft, tmp_path / "ft8.png")
    assert sorted(labels[1]) == sorted(s.name for s in ft.switches)
    assert (tmp_path / "ft8.png").stat().st_size > 10_000
