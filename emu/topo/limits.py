"""What fabric.p4 can program of a topology, checked by `emu topo check` with the
position in the file to change. A topology beyond it still loads (`emu topo show` and
`draw` work); `emu run` refuses it before anything starts (the controller's
check_group_sizes, with the same words)."""

from __future__ import annotations

from emu.core.wire import MAX_GROUP_MEMBERS

from .errors import Diagnostic, Mark
from .model import Fabric
from .paths import WidestGroup, widest_group
from .yamlpos import YList, YMap, parse_yaml


def too_wide(g: WidestGroup) -> str:
    return (f"{g.switch} has {g.members} equal-cost next hops towards {g.towards}, and "
            f"fabric.p4's next-hop groups hold at most {MAX_GROUP_MEMBERS}: give no switch "
            f"more than {MAX_GROUP_MEMBERS} equal-cost uplinks (spines, parallel links; a "
            f"fat tree: k <= {2 * MAX_GROUP_MEMBERS})")


def program_limits(fabric: Fabric, text: str, file: str) -> list[Diagnostic]:
    """The problems fabric.p4 has with `fabric`, loaded from `text` (file `file`)."""
    g = widest_group(fabric)
    if g is None or g.members <= MAX_GROUP_MEMBERS:
        return []
    return [Diagnostic(_where_set(fabric, g, parse_yaml(text, file), file), too_wide(g))]


def _where_set(fabric: Fabric, g: WidestGroup, doc: object, file: str) -> Mark:
    """Where the file sets the group's width: the generator's parameter (a fat tree's k;
    a Clos's spines or parallel links per spine), else the switch's own entry."""
    if not isinstance(doc, YMap):
        return Mark(file)
    params = doc.get("params")
    if isinstance(params, YMap):
        if (fabric.generator or {}).get("type") == "fattree":
            key = "k"
        else:  # a leaf's group is spines x uplinks_per_spine: the larger factor
            key = "uplinks_per_spine" if _int(params, "uplinks_per_spine") > \
                _int(params, "spines") else "spines"
        return params.value_mark(key) if key in params else doc.key_mark("params")
    switches = doc.get("switches")
    if isinstance(switches, YList):
        for i, entry in enumerate(switches):
            if isinstance(entry, YMap) and entry.get("name") == g.switch:
                return switches.item_mark(i)
    return doc.mark


def _int(params: YMap, key: str) -> int:
    value = params.get(key, 1)
    return value if isinstance(value, int) else 1
