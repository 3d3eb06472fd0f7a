"""Equal-cost paths over the switch graph.

A path is "up-down" (valley-free): once it has gone down a layer (spine -> leaf,
core -> spine) it never climbs again. Among such paths we keep the shortest ones.
In Clos and fat-tree fabrics every shortest path already is up-down, so these are
exactly the ECMP paths a shortest-path router spreads traffic over. Parallel links
are distinct paths because the load balancer picks among them separately.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

from .model import Fabric, Link, Port, SwitchPath

T = TypeVar("T")
W = TypeVar("W", float, tuple[float, ...])  # a path weight: a number, or compared in order


def _memo(fabric: Fabric, compute: Callable[..., T], *args: str) -> T:
    """`compute(fabric, *args)` once per fabric: a plan asks per host or leaf pair for
    what depends on one leaf or two alone (a Fabric never changes)."""
    key = (compute.__name__, *args)
    try:
        value: T = fabric.derived[key]
    except KeyError:
        value = fabric.derived[key] = compute(fabric, *args)
    return value


def _plain_distances(fabric: Fabric, dst: str) -> dict[str, int]:
    return _memo(fabric, _compute_plain_distances, dst)


def _compute_plain_distances(fabric: Fabric, dst: str) -> dict[str, int]:
    """Hop count from every switch to dst, ignoring the up-down rule (a lower bound)."""
    adj = fabric.adjacency(switches_only=True)
    dist = {dst: 0}
    queue = deque([dst])
    while queue:
        node = queue.popleft()
        for edge in adj[node]:
            if edge.peer not in dist:
                dist[edge.peer] = dist[node] + 1
                queue.append(edge.peer)
    return dist


def _updown_distances(fabric: Fabric, dst: str) -> dict[tuple[str, bool], int]:
    return _memo(fabric, _compute_updown_distances, dst)


def _compute_updown_distances(fabric: Fabric, dst: str) -> dict[tuple[str, bool], int]:
    """Length of the shortest up-down path to dst from every state (switch, has gone
    down) that has one: one breadth-first search backwards from dst."""
    adj = fabric.adjacency(switches_only=True)
    layer = fabric.layers()
    dist = {(dst, False): 0, (dst, True): 0}
    queue = deque(dist)
    while queue:
        node, down = queue.popleft()
        for edge in adj[node]:  # the step edge.peer -> node, taken backwards
            delta = layer[node] - layer[edge.peer]
            for before in (False, True):
                # no climbing once down; the step lands in (node, down)
                if (delta > 0 and before) or (before or delta < 0) != down:
                    continue
                state = (edge.peer, before)
                if state not in dist:
                    dist[state] = dist[(node, down)] + 1
                    queue.append(state)
    return dist


def equal_cost_paths(fabric: Fabric, src: str, dst: str) -> list[SwitchPath]:
    """All shortest up-down paths from switch src to switch dst (usually two leaves)."""
    return list(_memo(fabric, _equal_cost_paths, src, dst))


def _equal_cost_paths(fabric: Fabric, src: str, dst: str) -> tuple[SwitchPath, ...]:
    fabric.switch(src)
    fabric.switch(dst)
    if src == dst:
        return (SwitchPath((src,), ()),)
    length = _updown_distances(fabric, dst).get((src, False))
    if length is None:
        return ()
    bound = _plain_distances(fabric, dst)
    adj = fabric.adjacency(switches_only=True)
    layer = fabric.layers()
    found: list[SwitchPath] = []

    def walk(node: str, down: bool, switches: list[str], links: list[Link]) -> None:
        if node == dst:
            found.append(SwitchPath(tuple(switches), tuple(links)))
            return
        for edge in adj[node]:
            nxt = edge.peer
            if len(links) + 1 + bound.get(nxt, length + 1) > length:
                continue  # cannot reach dst within the shortest length
            delta = layer[nxt] - layer[node]
            if delta > 0 and down:
                continue
            switches.append(nxt)
            links.append(edge.link)
            walk(nxt, down or delta < 0, switches, links)
            switches.pop()
            links.pop()

    walk(src, False, [src], [])
    return tuple(found)


def equal_cost_path_count(fabric: Fabric, src: str, dst: str) -> int:
    """len(equal_cost_paths(fabric, src, dst)), without listing them: a k = 24 fat tree
    has 144 paths for each of 79,488 leaf pairs."""
    fabric.switch(src)
    fabric.switch(dst)
    return 1 if src == dst else _memo(fabric, _compute_path_counts, dst).get((src, False), 0)


def _compute_path_counts(fabric: Fabric, dst: str) -> dict[tuple[str, bool], int]:
    """Shortest up-down paths to dst from every state (switch, has gone down): a step
    leads from a state at distance d to one at d - 1, so count them nearest first."""
    dist = _updown_distances(fabric, dst)
    count = {(dst, False): 1, (dst, True): 1}
    for state, d in sorted(dist.items(), key=lambda item: item[1]):
        if d:
            count[state] = sum(count[after] for _port, after in _steps(fabric, dst, state))
    return count


def heaviest_path_ports(fabric: Fabric, src: str, dst: str, weight: Callable[[Port], W],
                        key: Hashable) -> tuple[Port, ...] | None:
    """The egress ports, in order, of the equal-cost path from switch src to switch dst
    whose ports' `weight`s (numbers, or tuples compared in order) sum highest; () when
    src is dst, None when there is no path. `key` names the weight for the memo. No
    path is listed: each switch state on the way is weighed once per destination (a
    k = 24 fat tree has 144 paths for each leaf pair)."""
    fabric.switch(src)
    fabric.switch(dst)
    if src == dst:
        return ()
    if (src, False) not in _updown_distances(fabric, dst):
        return None
    memo_key = ("heaviest_path_ports", dst, key)
    best: dict[tuple[str, bool], tuple[W, tuple[Port, ...]]] | None = \
        fabric.derived.get(memo_key)
    if best is None:
        best = fabric.derived[memo_key] = {}
    found = best.get((src, False)) or _heaviest(fabric, dst, (src, False), weight, best)
    return found[1]


Step = tuple[Port, tuple[str, bool]]  # an egress port and the state it leads to


def _steps(fabric: Fabric, dst: str, state: tuple[str, bool]) -> tuple[Step, ...]:
    """The steps from `state` (switch, has gone down) onto a shortest up-down path to
    dst: to a state one hop nearer. Kept per destination for every weight."""
    steps: dict[tuple[str, bool], tuple[Step, ...]] = _memo(fabric, _no_steps, dst)
    found = steps.get(state)
    if found is None:
        dist = _updown_distances(fabric, dst)
        layer = fabric.layers()
        node, down = state
        d = dist[state]
        here = fabric.switch(node)
        out = []
        for edge in fabric.adjacency(switches_only=True)[node]:
            delta = layer[edge.peer] - layer[node]
            if delta > 0 and down:
                continue
            after = (edge.peer, down or delta < 0)
            if dist.get(after) == d - 1:
                out.append((here.port(edge.port), after))
        found = steps[state] = tuple(out)
    return found


def _no_steps(fabric: Fabric, dst: str) -> dict[tuple[str, bool], tuple[Step, ...]]:
    return {}


def _heaviest(fabric: Fabric, dst: str, state: tuple[str, bool], weight: Callable[[Port], W],
              best: dict[tuple[str, bool], tuple[W, tuple[Port, ...]]]
              ) -> tuple[W, tuple[Port, ...]]:
    """(weight sum, ports) of the heaviest shortest up-down path from `state` to dst
    (which has one)."""
    top: tuple[W, tuple[Port, ...]] | None = None
    for port, after in _steps(fabric, dst, state):
        total = weight(port)
        rest: tuple[Port, ...] = ()
        if after[0] != dst:
            below = best.get(after) or _heaviest(fabric, dst, after, weight, best)
            total, rest = _add(total, below[0]), below[1]
        if top is None or total > top[0]:
            top = (total, (port, *rest))
    assert top is not None  # the distances say a path leaves this state
    best[state] = top
    return top


def _add(a: W, b: W) -> W:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return tuple(x + y for x, y in zip(a, b, strict=True))
    return a + b  # type: ignore[operator]


def first_hop_ports(fabric: Fabric, dst: str) -> dict[str, list[int]]:
    """For every switch with a path to switch `dst`, its egress ports that start a
    shortest up-down path there (sorted): the members of its next-hop group."""
    ports = _memo(fabric, _compute_first_hop_ports, dst)
    return {node: list(p) for node, p in ports.items()}  # the caller's to change


def _compute_first_hop_ports(fabric: Fabric, dst: str) -> dict[str, list[int]]:
    dist = _updown_distances(fabric, dst)
    out: dict[str, list[int]] = {}
    layer = fabric.layers()
    for node, edges in fabric.adjacency(switches_only=True).items():
        here = dist.get((node, False))
        if node == dst or here is None:
            continue
        ports = []
        for edge in edges:
            after = (edge.peer, layer[edge.peer] < layer[node])
            if dist.get(after) == here - 1:
                ports.append(edge.port)
        out[node] = sorted(ports)
    return out


@dataclass(frozen=True)
class WidestGroup:
    """The switch with the most equal-cost next hops towards one leaf."""

    members: int
    switch: str
    towards: str


def widest_group(fabric: Fabric) -> WidestGroup | None:
    """The widest next-hop group any switch needs (the first found of the widest);
    None for a fabric without one (a single leaf)."""
    worst: WidestGroup | None = None
    for dst in fabric.leaves:
        for name, ports in _memo(fabric, _compute_first_hop_ports, dst.name).items():
            if worst is None or len(ports) > worst.members:
                worst = WidestGroup(len(ports), name, dst.name)
    return worst


def next_hop_ports(fabric: Fabric, switch: str, dst_leaf: str) -> list[int]:
    """Egress ports of `switch` that start a shortest up-down path to dst_leaf (sorted)."""
    fabric.switch(switch)
    fabric.switch(dst_leaf)
    return first_hop_ports(fabric, dst_leaf).get(switch, [])


def host_path_ports(fabric: Fabric, src: str, dst: str) -> list[list[Port]]:
    """Each equal-cost path from host src to host dst as the switch egress ports it
    leaves by, the one towards dst last (the sender's own link comes before them)."""
    a, b = fabric.host(src), fabric.host(dst)
    last = fabric.switch(b.switch).port(b.switch_port)
    return [[*ports, last] for ports in _memo(fabric, _switch_path_ports, a.switch, b.switch)]


def _switch_path_ports(fabric: Fabric, src: str, dst: str) -> tuple[tuple[Port, ...], ...]:
    """The egress ports of each equal-cost path between two leaves (the same for every
    host pair under them)."""
    return tuple(tuple(fabric.switch(sw).port(port) for sw, port in path.hops)
                 for path in equal_cost_paths(fabric, src, dst))
