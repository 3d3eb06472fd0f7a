"""Generators for regular fabrics: two-tier leaf-spine Clos and the 3-tier k-ary fat-tree.

Both return a FabricSpec (resolve it with `build_fabric`, or use the *_fabric helpers).

Port numbering follows the fabric-wide rule "host ports first, then uplinks":
- Clos leaf: 1..H to its hosts, then for spine s (1-based) and parallel uplink u
  (1-based) port H + (s-1)*U + u. Spine: leaf l, uplink u -> port (l-1)*U + u.
- Fat-tree edge: 1..k/2 to hosts, k/2 + j to aggregation switch j. Aggregation j:
  edge i -> port i, core m of its group -> port k/2 + m. Core: pod p -> port p.

Oversubscription of a leaf = (host-facing capacity) / (uplink capacity). Give either
`uplink_rate_bps` or `oversubscription` (then the uplink rate is derived); with neither,
every link runs at `defaults.rate_bps`.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, TypedDict

from emu.core.wire import MAX_GENERATED_PORT

from . import addressing
from .errors import Mark, TopologyError
from .model import Defaults, Fabric, Role
from .spec import EndpointSpec, FabricSpec, HostSpec, LinkSpec, SwitchSpec

if TYPE_CHECKING:
    from typing_extensions import Unpack


class FabricOptions(TypedDict, total=False):
    """The keyword options every generator takes (rates: the module docstring)."""

    host_rate_bps: int | None
    uplink_rate_bps: int | None
    oversubscription: float | None
    name: str | None
    defaults: Defaults | None
    mark: Mark | None
    marks: Mapping[str, Mark] | None


def _fail(marks: Mapping[str, Mark], default: Mark, param: str, message: str) -> TopologyError:
    return TopologyError.at(marks.get(param, default), message)


def _context(kind: str, opts: FabricOptions) -> tuple[Defaults, Mark, Mapping[str, Mark]]:
    """Defaults, the generator's mark and the parameters' marks, each filled in if absent."""
    unknown = opts.keys() - FabricOptions.__optional_keys__
    if unknown:  # what a plain keyword signature would refuse
        raise TypeError(f"{kind}() got unexpected keyword arguments {sorted(unknown)}")
    return (opts.get("defaults") or Defaults(), opts.get("mark") or Mark(f"<{kind}>"),
            opts.get("marks") or {})


def _rates(
    opts: FabricOptions,
    defaults: Defaults,
    host_capacity: Fraction,
    uplink_count: int,
    marks: Mapping[str, Mark],
    mark: Mark,
) -> tuple[int, int]:
    """(host rate, uplink rate) in bit/s."""
    host_rate_bps = opts.get("host_rate_bps") or defaults.rate_bps
    uplink_rate_bps = opts.get("uplink_rate_bps")
    oversubscription = opts.get("oversubscription")
    if uplink_rate_bps is not None and oversubscription is not None:
        raise _fail(
            marks, mark, "oversubscription", "give either uplink_rate or oversubscription, not both"
        )
    if oversubscription is None:
        up = uplink_rate_bps if uplink_rate_bps is not None else host_rate_bps
        return host_rate_bps, up
    if oversubscription <= 0:
        raise _fail(
            marks,
            mark,
            "oversubscription",
            f"oversubscription must be positive, got {oversubscription}",
        )
    rate = host_capacity * host_rate_bps / (uplink_count * Fraction(oversubscription))
    if rate < 1:
        raise _fail(marks, mark, "oversubscription", "oversubscription leaves uplinks below 1 bps")
    return host_rate_bps, round(rate)


def _new_spec(default_name: str, opts: FabricOptions, defaults: Defaults, mark: Mark,
              params: dict[str, object], host_rate: int, up_rate: int) -> FabricSpec:
    """An empty spec that records the generator's parameters and the rates it derived."""
    return FabricSpec(
        name=opts.get("name") or default_name,
        mark=mark,
        defaults=defaults,
        generator={**params, "host_rate_bps": host_rate, "uplink_rate_bps": up_rate},
    )


def _positive(
    value: int, param: str, marks: Mapping[str, Mark], mark: Mark, minimum: int = 1
) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(marks, mark, param, f"{param} must be an integer >= {minimum}, got {value!r}")


# A generated fabric's hosts at most: the model of a larger one takes gigabytes before
# anything runs (a k = 48 fat tree's 27,648 hosts: 0.2 GB, 4 s).
MAX_GENERATED_HOSTS = 1 << 16
# The largest even k whose k^3/4 hosts that allows (its 5k^2/4 switches have device ids).
_MAX_K = max(k for k in range(2, 1024, 2) if k ** 3 // 4 <= MAX_GENERATED_HOSTS
             and 5 * k * k // 4 <= addressing.MAX_DEVICE_ID)


def _clos_fits(leaves: int, spines: int, hosts_per_leaf: int, uplinks: int,
               marks: Mapping[str, Mark], mark: Mark) -> None:
    """Bounds checked before the fabric is generated: a million leaves would take
    gigabytes and minutes only to be refused."""
    if leaves > addressing.MAX_LEAVES:
        raise _fail(marks, mark, "leaves", f"{leaves} leaves exceed the addressing plan's "
                    f"{addressing.MAX_LEAVES}")
    if hosts_per_leaf > addressing.MAX_HOSTS_PER_LEAF:
        raise _fail(marks, mark, "hosts_per_leaf", f"{hosts_per_leaf} hosts per leaf exceed "
                    f"the addressing plan's {addressing.MAX_HOSTS_PER_LEAF}")
    if hosts_per_leaf + spines * uplinks > MAX_GENERATED_PORT:
        raise _fail(marks, mark, "spines", f"a leaf would have {hosts_per_leaf} host ports "
                    f"and {spines * uplinks} uplinks; a generated switch has ports "
                    f"1..{MAX_GENERATED_PORT} (the next is the CPU port)")
    if leaves * uplinks > MAX_GENERATED_PORT:
        raise _fail(marks, mark, "leaves", f"a spine would have {leaves * uplinks} ports; a "
                    f"generated switch has ports 1..{MAX_GENERATED_PORT} (the next is the "
                    "CPU port)")


def _add_link(spec: FabricSpec, a: str, a_port: int, b: str, b_port: int, rate_bps: int,
              mark: Mark) -> None:
    spec.links.append(LinkSpec(EndpointSpec(a, a_port, mark), EndpointSpec(b, b_port, mark),
                               mark, rate_bps=rate_bps))


def _add_host(spec: FabricSpec, number: int, switch: str, port: int, rate_bps: int,
              mark: Mark) -> None:
    """Host h<number>, cabled to `switch`:`port`."""
    spec.hosts.append(HostSpec(f"h{number}", mark))
    _add_link(spec, f"h{number}", 0, switch, port, rate_bps, mark)


def clos(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    uplinks_per_spine: int = 1,
    **opts: Unpack[FabricOptions],
) -> FabricSpec:
    """Leaf-spine: every leaf has `uplinks_per_spine` parallel links to every spine."""
    defaults, mark, marks = _context("clos", opts)
    _positive(leaves, "leaves", marks, mark)
    _positive(spines, "spines", marks, mark)
    _positive(hosts_per_leaf, "hosts_per_leaf", marks, mark, minimum=0)
    _positive(uplinks_per_spine, "uplinks_per_spine", marks, mark)
    _clos_fits(leaves, spines, hosts_per_leaf, uplinks_per_spine, marks, mark)
    host_rate, up_rate = _rates(
        opts, defaults, Fraction(hosts_per_leaf), spines * uplinks_per_spine, marks, mark
    )
    spec = _new_spec(
        f"clos-{leaves}x{spines}", opts, defaults, mark,
        {"type": "clos", "leaves": leaves, "spines": spines, "hosts_per_leaf": hosts_per_leaf,
         "uplinks_per_spine": uplinks_per_spine},
        host_rate, up_rate,
    )
    spec.switches += [SwitchSpec(f"leaf{i}", Role.LEAF, mark) for i in range(1, leaves + 1)]
    spec.switches += [SwitchSpec(f"spine{s}", Role.SPINE, mark) for s in range(1, spines + 1)]
    host_no = 0
    for i in range(1, leaves + 1):
        for j in range(1, hosts_per_leaf + 1):
            host_no += 1
            _add_host(spec, host_no, f"leaf{i}", j, host_rate, mark)
    for i in range(1, leaves + 1):
        for s in range(1, spines + 1):
            for u in range(1, uplinks_per_spine + 1):
                leaf_port = hosts_per_leaf + (s - 1) * uplinks_per_spine + u
                spine_port = (i - 1) * uplinks_per_spine + u
                _add_link(spec, f"leaf{i}", leaf_port, f"spine{s}", spine_port, up_rate, mark)
    return spec


def fattree(
    k: int,
    **opts: Unpack[FabricOptions],
) -> FabricSpec:
    """k-ary fat-tree: k pods of k/2 edge (leaf) + k/2 aggregation (spine) switches,
    (k/2)^2 cores, k^3/4 hosts. Names: edge `p<pod>e<i>`, aggregation `p<pod>a<j>`,
    core `c<m>` (all 1-based), hosts `h1`.. numbered pod by pod."""
    defaults, mark, marks = _context("fattree", opts)
    _positive(k, "k", marks, mark, minimum=2)
    if k % 2:
        raise _fail(marks, mark, "k", f"k must be even, got {k}")
    if k > _MAX_K:
        raise _fail(marks, mark, "k", f"k={k} makes {k ** 3 // 4} hosts; a generated fabric "
                    f"has at most {MAX_GENERATED_HOSTS} (k <= {_MAX_K})")
    half = k // 2
    host_rate, up_rate = _rates(opts, defaults, Fraction(half), half, marks, mark)
    spec = _new_spec(
        f"fattree-k{k}", opts, defaults, mark, {"type": "fattree", "k": k}, host_rate, up_rate
    )

    def edge(p: int, i: int) -> str:
        return f"p{p}e{i}"

    def agg(p: int, j: int) -> str:
        return f"p{p}a{j}"

    spec.switches += [
        SwitchSpec(edge(p, i), Role.LEAF, mark) for p in range(1, k + 1) for i in range(1, half + 1)
    ]
    spec.switches += [
        SwitchSpec(agg(p, j), Role.SPINE, mark) for p in range(1, k + 1) for j in range(1, half + 1)
    ]
    spec.switches += [SwitchSpec(f"c{m}", Role.CORE, mark) for m in range(1, half * half + 1)]
    host_no = 0
    for p in range(1, k + 1):
        for i in range(1, half + 1):
            for port in range(1, half + 1):
                host_no += 1
                _add_host(spec, host_no, edge(p, i), port, host_rate, mark)
    for p in range(1, k + 1):
        for i in range(1, half + 1):
            for j in range(1, half + 1):
                _add_link(spec, edge(p, i), half + j, agg(p, j), i, up_rate, mark)
    for p in range(1, k + 1):
        for j in range(1, half + 1):
            for m in range(1, half + 1):
                core = (j - 1) * half + m  # aggregation j of every pod serves core group j
                _add_link(spec, agg(p, j), half + m, f"c{core}", p, up_rate, mark)
    return spec


def clos_fabric(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    uplinks_per_spine: int = 1,
    **opts: Unpack[FabricOptions],
) -> Fabric:
    from .validate import build_fabric

    return build_fabric(clos(leaves, spines, hosts_per_leaf, uplinks_per_spine, **opts))


def fattree_fabric(k: int, **opts: Unpack[FabricOptions]) -> Fabric:
    from .validate import build_fabric

    return build_fabric(fattree(k, **opts))


GENERATORS = {"clos": clos, "fattree": fattree}
