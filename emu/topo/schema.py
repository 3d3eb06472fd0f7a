"""Turn the parsed YAML (YMap/YList with marks) into a FabricSpec.

This layer knows the file format: which keys exist, their types and units. It
reports unknown keys (with the closest valid key), missing keys, wrong types and bad
units against the exact line:col of the offending key or value.

File format (see topologies/*.yaml):

    name: str                      # optional, defaults to the file's stem
    description: str               # optional, free text
    defaults: {rate, delay, queue_depth_pkts, mtu, pfc}
    # either a generator ...
    generator: clos | fattree
    params: {...}                  # generator parameters
    # ... or explicit nodes and links
    switches: [{name, role: leaf|spine|core}]
    hosts:    [{name, mtu?}]
    links:    [{a: node[:port], b: node[:port], rate?, delay?, queue_depth_pkts?, pfc?}]
    pfc: {xoff, xon, headroom: auto|size}  # sizes: bytes, "40KB", "20pkts" (of the MTU)
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from . import generators
from .errors import Collector, Mark, TopologyError
from .model import Defaults, LinkPfc, Role
from .spec import EndpointSpec, FabricSpec, HostSpec, LinkSpec, SwitchSpec
from .units import UnitError, parse_bytes, parse_delay, parse_rate
from .yamlpos import YList, YMap

TOP_KEYS = ("name", "description", "defaults", "generator", "params", "switches", "hosts", "links")
DEFAULT_KEYS = ("rate", "delay", "queue_depth_pkts", "mtu", "pfc")
# BMv2 takes a queue depth as a 32-bit integer (Thrift i32)
MAX_QUEUE_DEPTH_PKTS = 2**31 - 1
SWITCH_KEYS = ("name", "role")
HOST_KEYS = ("name", "mtu")
LINK_KEYS = ("a", "b", "rate", "delay", "queue_depth_pkts", "pfc")
PFC_KEYS = ("xoff", "xon", "headroom")
GENERATOR_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # generator -> (required, optional)
    "clos": (
        ("leaves", "spines", "hosts_per_leaf"),
        ("uplinks_per_spine", "host_rate", "uplink_rate", "oversubscription"),
    ),
    "fattree": (("k",), ("host_rate", "uplink_rate", "oversubscription")),
}

T = TypeVar("T")
_MISSING = object()


class _Reader:
    def __init__(self) -> None:
        self.errs = Collector()

    def mapping(self, value: Any, mark: Mark, what: str) -> YMap | None:
        if isinstance(value, YMap):
            return value
        self.errs.error(mark, f"{what} must be a mapping, got {_kind(value)}")
        return None

    def sequence(self, value: Any, mark: Mark, what: str) -> YList | None:
        if isinstance(value, YList):
            return value
        self.errs.error(mark, f"{what} must be a list, got {_kind(value)}")
        return None

    def keys(self, m: YMap, allowed: Sequence[str], required: Sequence[str], what: str) -> bool:
        ok = True
        for key in m:
            if key not in allowed:
                close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.5)
                hint = (
                    f" (did you mean '{close[0]}'?)"
                    if close
                    else f" (valid keys: {', '.join(allowed)})"
                )
                self.errs.error(m.key_mark(key), f"unknown key '{key}' in {what}{hint}")
                ok = False
        for key in required:
            if key not in m:
                self.errs.error(m.mark, f"missing required key '{key}' in {what}")
                ok = False
        return ok

    def field(self, m: YMap, key: str, convert: Callable[[Any], T]) -> T | None:
        if key not in m:
            return None
        try:
            return convert(m[key])
        except (UnitError, ValueError, TypeError) as exc:
            self.errs.error(m.value_mark(key), f"{key}: {exc}")
            return None


def _kind(value: Any) -> str:
    if isinstance(value, YMap):
        return "a mapping"
    if isinstance(value, YList):
        return "a list"
    if value is None:
        return "nothing"
    text = repr(value)  # a whole file read as one scalar must not flood the message
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:56] + ' ...'}"


def _int(minimum: int, maximum: int | None = None) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {_kind(value)}")
        if value < minimum:
            raise ValueError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be <= {maximum:,}, got {value:,}")
        return value

    return convert


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {_kind(value)}")
    return value


def _ratio(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number such as 2 or 1.5, got {_kind(value)}")
    if not (math.isfinite(value) and value > 0):  # nan compares false: it passed `<= 0`
        raise ValueError(f"must be positive and finite, got {value}")
    return float(value)


def _role(value: Any) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise ValueError(f"expected one of leaf, spine, core, got {value!r}") from None


def _mtu(value: Any) -> int:
    mtu = _int(0)(value)
    if not 576 <= mtu <= 9216:
        raise ValueError(f"must be between 576 and 9216, got {mtu}")
    return mtu


def _endpoint(value: Any, mark: Mark) -> EndpointSpec:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected 'node' or 'node:port', got {_kind(value)}")
    node, sep, port = value.partition(":")
    if not sep:
        return EndpointSpec(node.strip(), None, mark)
    port = port.strip()
    if not port.isdigit():
        raise ValueError(f"port in {value!r} must be a non-negative integer")
    return EndpointSpec(node.strip(), int(port), mark)


def spec_from_yaml(doc: Any, file: str) -> FabricSpec:
    """Check the document's shape and build a FabricSpec (raises TopologyError)."""
    spec, errs = read_spec(doc, file)
    errs.raise_if_any()
    assert spec is not None
    return spec


def read_spec(doc: Any, file: str) -> tuple[FabricSpec | None, Collector]:
    """The FabricSpec of what the document states correctly, and every problem found.

    Entries with errors are left out (their node names go to `spec.unresolved`), so
    resolution can still check the rest and report its problems in the same pass.
    The spec is None when nothing can be resolved (no mapping, a broken generator).
    """
    r = _Reader()
    top_mark = Mark(file, 1, 1)
    top = r.mapping(doc, getattr(doc, "mark", top_mark), "the topology file")
    if top is None:
        return None, r.errs
    r.keys(top, TOP_KEYS, (), "the topology")
    name = r.field(top, "name", _str) or Path(file).stem
    if "description" in top:
        r.field(top, "description", _str)

    defaults = Defaults()
    if "defaults" in top:
        dm = r.mapping(top["defaults"], top.value_mark("defaults"), "defaults")
        if dm is not None:
            r.keys(dm, DEFAULT_KEYS, (), "defaults")
            defaults = Defaults(
                rate_bps=_or(r.field(dm, "rate", parse_rate), defaults.rate_bps),
                delay_ns=_or(r.field(dm, "delay", parse_delay), defaults.delay_ns),
                depth_pkts=_or(r.field(dm, "queue_depth_pkts", _int(1, MAX_QUEUE_DEPTH_PKTS)), defaults.depth_pkts),
                mtu=_or(r.field(dm, "mtu", _mtu), defaults.mtu),
            )
            if "pfc" in dm:
                defaults = dataclasses.replace(
                    defaults, pfc=_pfc(r, dm, defaults.mtu, "defaults"))

    if "generator" in top:
        for key in ("switches", "hosts", "links"):
            if key in top:
                r.errs.error(
                    top.key_mark(key),
                    f"'{key}' cannot be combined with 'generator' (a generated fabric lists no nodes)",
                )
        spec = _generated(r, top, name, defaults, file)
        if spec is not None:
            spec.partial = bool(r.errs)
        return spec, r.errs
    if "params" in top:
        r.errs.error(top.key_mark("params"), "'params' is only valid together with 'generator'")
    if "switches" not in top:
        r.errs.error(top.mark, "missing required key 'switches' (or use 'generator: clos|fattree')")
    spec = FabricSpec(name=name, mark=top.mark, defaults=defaults)
    _explicit(r, top, spec)
    spec.partial = bool(r.errs)
    return spec, r.errs


def _pfc(r: _Reader, parent: YMap, mtu: int, what: str) -> LinkPfc | None:
    """A `pfc:` mapping (xoff, xon, headroom: auto or a size); xon must not exceed xoff.
    The defaults' keys fill a link's unset ones when the fabric is resolved."""
    m = r.mapping(parent["pfc"], parent.value_mark("pfc"), f"pfc of {what}")
    if m is None:
        return None
    r.keys(m, PFC_KEYS, (), f"pfc of {what}")

    def size(value: Any) -> int:
        return parse_bytes(value, mtu)

    def headroom(value: Any) -> int | None:
        if value == "auto":
            return None
        try:
            return size(value)
        except UnitError as exc:
            raise UnitError(f"{exc} (or 'auto': computed from the link)") from None

    xoff = r.field(m, "xoff", size)
    xon = r.field(m, "xon", size)
    head = r.field(m, "headroom", headroom)
    if xoff is not None and xoff <= 0:
        r.errs.error(m.value_mark("xoff"), "xoff: must be positive")
    if xoff is not None and xon is not None and xon > xoff:
        r.errs.error(m.value_mark("xon"), f"xon ({xon} bytes) must not exceed xoff "
                                          f"({xoff} bytes)")
    return LinkPfc(xoff, xon, head)


def _or(value: T | None, default: T) -> T:
    return default if value is None else value


def _items(r: _Reader, top: YMap, key: str) -> list[tuple[YMap, Mark]]:
    if key not in top:
        return []
    seq = r.sequence(top[key], top.value_mark(key), key)
    if seq is None:
        return []
    out = []
    for i, item in enumerate(seq):
        m = r.mapping(item, seq.item_mark(i), f"each entry of '{key}'")
        if m is not None:
            out.append((m, seq.item_mark(i)))
    return out


def _explicit(r: _Reader, top: YMap, spec: FabricSpec) -> None:
    # Every field of every entry is checked (so one pass reports all); an entry is kept
    # when what resolution needs from it is valid, else its node names are remembered.
    for m, _ in _items(r, top, "switches"):
        r.keys(m, SWITCH_KEYS, ("name", "role"), "switch")
        name, role = r.field(m, "name", _str), r.field(m, "role", _role)
        if name is not None and role is not None:
            spec.switches.append(SwitchSpec(name, role, m.value_mark("name")))
        elif isinstance(m.get("name"), str):
            spec.unresolved.add(m["name"])
    for m, _ in _items(r, top, "hosts"):
        r.keys(m, HOST_KEYS, ("name",), "host")
        name = r.field(m, "name", _str)
        if name is not None:
            spec.hosts.append(HostSpec(name, m.value_mark("name"), r.field(m, "mtu", _mtu)))
    for m, mark in _items(r, top, "links"):
        r.keys(m, LINK_KEYS, ("a", "b"), "link")
        a = r.field(m, "a", functools.partial(_endpoint, mark=m.value_mark("a")))
        b = r.field(m, "b", functools.partial(_endpoint, mark=m.value_mark("b")))
        rate = r.field(m, "rate", parse_rate)
        delay = r.field(m, "delay", parse_delay)
        depth = r.field(m, "queue_depth_pkts", _int(1, MAX_QUEUE_DEPTH_PKTS))
        pfc = _pfc(r, m, spec.defaults.mtu, "link") if "pfc" in m else None
        if a is not None and b is not None:
            spec.links.append(LinkSpec(a, b, mark, rate, delay, depth, pfc))
        else:
            for key in ("a", "b"):
                if isinstance(m.get(key), str):
                    spec.unresolved.add(m[key].partition(":")[0].strip())


def _generated(
    r: _Reader, top: YMap, name: str, defaults: Defaults, file: str
) -> FabricSpec | None:
    gen = top["generator"]
    gmark = top.value_mark("generator")
    if not isinstance(gen, str) or gen not in GENERATOR_PARAMS:
        close = difflib.get_close_matches(str(gen), list(GENERATOR_PARAMS), n=1, cutoff=0.5)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        r.errs.error(
            gmark, f"unknown generator {gen!r}{hint}; valid: {', '.join(GENERATOR_PARAMS)}"
        )
        return None
    required, optional = GENERATOR_PARAMS[gen]
    if "params" not in top:
        r.errs.error(
            top.key_mark("generator"),
            f"generator '{gen}' needs a 'params' mapping ({', '.join(required)})",
        )
        return None
    pm = r.mapping(top["params"], top.value_mark("params"), "params")
    if pm is None or not r.keys(
        pm, (*required, *optional), required, f"params of generator '{gen}'"
    ):
        return None
    kw: dict[str, Any] = {}
    for key in (*required, *optional):
        if key in pm:
            convert: Callable[[Any], Any]
            if key.endswith("_rate"):
                convert = parse_rate
            elif key == "oversubscription":
                convert = _ratio
            else:
                # k and counts are checked by the generator itself, with positions.
                convert = _int(-(2**31))
            value = r.field(pm, key, convert)
            if value is None:
                return None
            kw[key + "_bps" if key.endswith("_rate") else key] = value
    if r.errs:
        return None
    marks = {k: pm.value_mark(k) for k in pm}
    try:
        if gen == "clos":
            return generators.clos(name=name, defaults=defaults, mark=gmark, marks=marks, **kw)
        return generators.fattree(name=name, defaults=defaults, mark=gmark, marks=marks, **kw)
    except TopologyError as exc:
        r.errs.diagnostics.extend(exc.diagnostics)
        return None
