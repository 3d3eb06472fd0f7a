"""Layered picture of a fabric: hosts at the bottom, then leaves, spines, cores."""

from __future__ import annotations

import os
from collections import defaultdict
from typing import TYPE_CHECKING

from .model import Fabric, Host, Role, Switch
from .units import format_rate

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_COLORS = {0: "#9ecae1", 1: "#31a354", 2: "#e6550d", 3: "#756bb1"}
_LAYER_NAMES = {0: "hosts", 1: "leaves", 2: "spines", 3: "cores"}


def _positions(fabric: Fabric) -> dict[str, tuple[float, float]]:
    """x in [0, width], y = layer. Hosts sit under their leaf, leaves spread evenly and
    upper layers are spread over the same width so the picture stays balanced."""
    pos: dict[str, tuple[float, float]] = {}
    hosts_per_leaf = {leaf.name: fabric.hosts_on(leaf.name) for leaf in fabric.leaves}
    # Width is driven by the widest row: hosts (usually) or the leaves themselves.
    slots = max(sum(max(len(h), 1) for h in hosts_per_leaf.values()), 1)
    x = 0.0
    for leaf in fabric.leaves:
        hosts = hosts_per_leaf[leaf.name]
        n = max(len(hosts), 1)
        for i, h in enumerate(hosts):
            pos[h.name] = (x + i, 0.0)
        pos[leaf.name] = (x + (n - 1) / 2, 1.0)
        x += n
    width = max(slots - 1, 1)
    by_layer: dict[int, list[Switch]] = defaultdict(list)
    for sw in fabric.switches:
        if sw.role is not Role.LEAF:
            by_layer[sw.role.layer].append(sw)
    for layer, switches in by_layer.items():
        n = len(switches)
        for i, sw in enumerate(switches):
            pos[sw.name] = ((i + 0.5) * (width + 1) / n - 0.5, float(layer))
    return pos


# Beyond this many nodes in a row their names overlap: the row goes unlabelled (`emu topo
# show` lists them), and its markers shrink to fit.
MAX_LABELLED = 96


def draw_fabric(fabric: Fabric, out: str | os.PathLike[str], dpi: int = 120) -> None:
    """Write a PNG (or any format matplotlib infers from the suffix) of `fabric`."""
    import matplotlib

    matplotlib.use("Agg")  # headless: no display in namespaces or CI
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    pos = _positions(fabric)
    n_bottom = max(len(fabric.hosts), len(fabric.leaves), 4)
    # Wide enough for one label per host, but capped so big fabrics stay viewable.
    fig_w = min(max(8.0, 0.55 * n_bottom), 32.0)
    fig, ax = plt.subplots(figsize=(fig_w, 6.5 if fig_w < 20 else 9.0))
    small = len(fabric.hosts) <= 24

    # Parallel links are bowed apart so each one stays visible. One collection: a line
    # per link took a k = 24 fat tree's drawing minutes.
    groups: dict[frozenset[str], list[int]] = defaultdict(list)
    for link in fabric.links:
        groups[frozenset((link.a.node, link.b.node))].append(link.index)
    rates = sorted({link.rate_bps for link in fabric.links})
    thin = min(1.0, max(0.15, (200 / max(len(fabric.links), 1)) ** 0.5))  # dense: thinner
    segments, widths = [], []
    for link in fabric.links:
        (x1, y1), (x2, y2) = pos[link.a.node], pos[link.b.node]
        members = groups[frozenset((link.a.node, link.b.node))]
        k = members.index(link.index)
        bend = (k - (len(members) - 1) / 2) * 0.12
        segments.append([(x1, y1), ((x1 + x2) / 2 + bend, (y1 + y2) / 2), (x2, y2)])
        widths.append(thin * (0.8 + 1.6 * rates.index(link.rate_bps) / max(len(rates) - 1, 1)))
    ax.add_collection(LineCollection(segments, colors="#888888", linewidths=widths, zorder=1))

    rows: dict[int, list[Switch | Host]] = defaultdict(list)
    for node in fabric.iter_nodes():
        rows[fabric.layer(node.name)].append(node)
    for layer, nodes in rows.items():
        # a marker at most 80% of its share of the width (area in points^2)
        side = min(20.5 if layer else 14.1, 0.8 * fig_w * 72 / len(nodes))
        ax.scatter([pos[n.name][0] for n in nodes], [pos[n.name][1] for n in nodes],
                   s=side * side, color=_COLORS[layer], edgecolors="black",
                   linewidths=min(1.0, side / 10), zorder=2, marker="s" if layer else "o")
        if len(nodes) <= MAX_LABELLED:
            for node in nodes:
                _label(ax, node, pos[node.name], small)

    layers = sorted(rows)
    ax.set_yticks(layers, [_LAYER_NAMES[i] for i in layers])
    ax.set_xticks([])
    ax.set_ylim(-0.6, max(layers) + 0.5)
    xs = [p[0] for p in pos.values()]
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    for side_name in ("top", "right", "bottom"):
        ax.spines[side_name].set_visible(False)
    rate_text = ", ".join(format_rate(r) for r in rates)
    ax.set_title(f"{fabric.name}: {fabric.summary()} (link rates: {rate_text})")
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    plt.close(fig)


def _label(ax: Axes, node: Switch | Host, at: tuple[float, float], small: bool) -> None:
    """A switch's name above it (its device id too in a small fabric); a host's below
    it (its address too)."""
    if isinstance(node, Switch):
        ax.annotate(node.name if not small else f"{node.name}\n#{node.device_id}", at,
                    xytext=(0, 14), textcoords="offset points", ha="center", va="bottom",
                    fontsize=8 if small else 6, zorder=3,
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5})
    else:
        ax.annotate(f"{node.name}\n{node.ip}" if small else node.name, at, xytext=(0, -12),
                    textcoords="offset points", ha="center", va="top",
                    fontsize=7 if small else 5, zorder=3)
