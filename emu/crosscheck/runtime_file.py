"""A runtime file in the p4lang tutorials' format as writes for both sides of a crosscheck.

The tutorials' controller (`utils/p4runtime_lib`) reads each match field by the kind
the program's P4Info gives it: exact `value`, lpm `[value, prefix_len]`, ternary
`[value, mask]`, range `[low, high]` (and here optional `value`). A value, and an
action parameter, is an int (a negative one is its two's complement in the field's
width) or a string: a MAC (`08:00:00:00:01:11`), IPv4 (`10.0.1.1`) or IPv6 address,
whose bytes must be as many as the field's. Names are P4Info names; a unique dot-suffix
is taken too (the tutorials' helper takes P4Info aliases). So the file needs its
program: `runtime_programming` compiles it, as `stf_programming` does.

The values its entries match on 32-bit fields become the hosts generated packets are
addressed from and to (`Programming.hosts`), with two addresses no entry names, so
that `--generate` frames hit a tutorial's IPv4 routes as well as miss them.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from emu.control import CloneSession, Lpm, MulticastGroup, TableEntry, Ternary
from emu.control.southbound import MatchValue
from emu.core.wire import mac_bytes
from emu.p4.api import resolve_name
from emu.p4.tables import OptionalMatch, Range

from .programming import DefaultAction, Programming

_MAC = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
_IPV4 = re.compile(r"^(\d{1,3}\.){3}\d{1,3}$")
# P4Runtime: a table with one of these match kinds orders its entries by priority.
_PRIORITY_KINDS = ("ternary", "range", "optional")


def runtime_programming(path: Path, program: Path, include_dirs: Sequence[Path],
                        ports: list[int]) -> Programming:
    """The table entries, default actions, multicast groups and clone sessions of the
    runtime file `path` for `program`. A bad item is a ValueError naming it."""
    from emu.p4.target.program import compile_file

    try:
        doc = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # JSONDecodeError: a ValueError
        raise ValueError(f"{path}: not a runtime JSON file: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object with table_entries, got "
                         f"{type(doc).__name__}")
    names = _Names(compile_file(str(program), [str(d) for d in include_dirs]).info)
    prog = Programming.entries_only(ports)
    for key in ("table_entries", "multicast_group_entries", "clone_session_entries"):
        items = doc.get(key) or []
        if not isinstance(items, list):
            raise ValueError(f"{path}: {key} must be a list, got {type(items).__name__}")
        for i, item in enumerate(items):
            try:
                if key == "table_entries":
                    names.add_entry(prog, item)
                elif key == "multicast_group_entries":
                    prog.replication.append(MulticastGroup(
                        _uint(item, "multicast_group_id"), _replicas(item)))
                else:
                    prog.replication.append(CloneSession(
                        _uint(item, "clone_session_id"), _replicas(item),
                        _uint(item, "class_of_service", 0),
                        _uint(item, "packet_length_bytes", 0, bits=31)))
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
                why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
                raise ValueError(f"{path}: {key}[{i}]: {why}") from None
    prog.hosts = _hosts(prog.entries, names)
    return prog


# Addresses no entry is likely to name (TEST-NET-1, and the top of 10/8): misses.
_MISSES = ("192.0.2.1", "10.255.255.254")


def _hosts(entries: Sequence[TableEntry], names: _Names) -> list[tuple[str, str, int | None]]:
    """(ip, mac, None) for each value the entries match on a 32-bit field (an LPM
    prefix: its first host address), and two misses; none if fewer than two values."""
    values: list[int] = []
    for e in entries:
        widths = {k["name"]: k["bitwidth"] for k in names.tables[e.table]["keys"]}
        for field_name, m in e.match.items():
            if widths.get(field_name) != 32:
                continue
            v = _address(m)
            if v is not None and v not in values:
                values.append(v)
    if len(values) < 2:
        return []
    ips = [str(ipaddress.IPv4Address(v)) for v in values] + list(_MISSES)
    return [(ip, f"02:00:00:00:{i >> 8:02x}:{i & 0xFF:02x}", None) for i, ip in enumerate(ips)]


class _Names:
    """The program's tables (match fields: kind and width) and actions (parameter widths)."""

    def __init__(self, info: Any) -> None:
        self.tables = {t["name"]: t for t in info.tables}
        self.actions: Mapping[str, list[list[Any]]] = info.actions

    def add_entry(self, prog: Programming, e: Mapping[str, Any]) -> None:
        table = self.tables[_resolve(e["table"], self.tables, "table")]
        action = _resolve(e["action_name"], self.actions, "action")
        widths = dict(self.actions[action])
        params = {}
        for name, v in dict(e.get("action_params") or {}).items():
            if name not in widths:
                raise ValueError(f"action {action} has no parameter {name!r}")
            params[name] = encode(v, widths[name], f"parameter {name}")
        if missing := sorted(set(widths) - set(params)):
            raise ValueError(f"action {action}: no value for {', '.join(missing)}")
        if e.get("default_action"):
            prog.defaults.append(DefaultAction(table["name"], action, params))
            return
        keys = {k["name"]: k for k in table["keys"] if k["match_kind"] != "selector"}
        match: dict[str, MatchValue] = {}
        for name, v in dict(e.get("match") or {}).items():
            if name not in keys:
                raise ValueError(f"table {table['name']} has no match field {name!r}")
            match[name] = _field(keys[name], v)
        priority = None if e.get("priority") is None else _uint(e, "priority", bits=31)
        if not priority and any(k["match_kind"] in _PRIORITY_KINDS for k in keys.values()):
            raise ValueError(f"table {table['name']} has ternary, range or optional fields: "
                             "its entries need a non-zero priority")
        prog.entries.append(TableEntry(table["name"], match, action, params, priority))


def _address(m: MatchValue) -> int | None:
    """The address a match value names: an LPM prefix's first host, a ternary's value."""
    if isinstance(m, int):
        return m
    if isinstance(m, Lpm):
        return m.value | 1 if m.prefix_len < 31 else m.value
    if isinstance(m, (Ternary, OptionalMatch)):
        return m.value
    return None


def _resolve(name: Any, names: Any, what: str) -> str:
    if not isinstance(name, str):
        raise ValueError(f"{what} name {name!r} is not a string")
    try:
        return resolve_name(name, names, what)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None


def _field(key: Mapping[str, Any], v: Any) -> MatchValue:
    """One match field's value by its kind, as the tutorials' helper reads it."""
    kind, width, name = key["match_kind"], key["bitwidth"], key["name"]
    if kind in ("exact", "optional"):
        value = encode(v, width, name)
        return value if kind == "exact" else OptionalMatch(value)
    if not (isinstance(v, (list, tuple)) and len(v) == 2):
        shape = {"lpm": "[value, prefix_len]", "ternary": "[value, mask]",
                 "range": "[low, high]"}.get(kind, "a value")
        raise ValueError(f"{name} ({kind}): expected {shape}, got {v!r}")
    a = encode(v[0], width, name)
    if kind == "lpm":
        plen = v[1]
        if isinstance(plen, bool) or not isinstance(plen, int) or not 0 <= plen <= width:
            raise ValueError(f"{name} (lpm): prefix length {plen!r} is not in 0..{width}")
        return Lpm(a, plen)
    b = encode(v[1], width, name)
    if kind == "ternary":
        return Ternary(a, b)
    if kind == "range":
        return Range(a, b)
    raise ValueError(f"{name}: match kind {kind!r} is not one a runtime file can write")


def encode(x: Any, width: int, what: str) -> int:
    """A runtime file's value for a `width`-bit field, by the tutorials' rules: an int
    (negative: two's complement), or a MAC, IPv4 or IPv6 address string whose bytes are
    as many as the field's. A list of one value is that value."""
    if isinstance(x, (list, tuple)) and len(x) == 1:
        x = x[0]
    if isinstance(x, bool) or not isinstance(x, (int, str)):
        raise ValueError(f"{what}: {x!r} is not an integer or an address string")
    if isinstance(x, str):
        try:
            if _MAC.match(x):
                raw = mac_bytes(x)
            elif _IPV4.match(x):
                raw = ipaddress.IPv4Address(x).packed
            else:
                raw = ipaddress.IPv6Address(x).packed
        except ValueError:
            raise ValueError(f"{what}: {x!r} is not an integer, MAC, IPv4 or IPv6 "
                             "address") from None
        if len(raw) != (width + 7) // 8:
            raise ValueError(f"{what}: {x!r} is {len(raw)} bytes; the field is {width} bits")
        x = int.from_bytes(raw, "big")
    elif x < 0:
        if x < -(1 << max(width - 1, 0)):
            raise ValueError(f"{what}: {x} does not fit in {width} bits")
        x += 1 << width
    if x >> width:
        raise ValueError(f"{what}: {x:#x} does not fit in {width} bits")
    return x


def _uint(doc: Mapping[str, Any], key: str, default: int | None = None, *,
          bits: int = 32) -> int:
    """`doc[key]` as the P4Runtime field it becomes: an integer (or its decimal digits)
    of `bits` bits (uint32; 31 for an int32 that must not be negative). Not `int()`:
    that took 1.5 for 1, true for 1, and 1e400 (infinity) raised OverflowError."""
    v = doc[key] if default is None else doc.get(key, default)
    if isinstance(v, str) and v.isascii() and v.isdigit():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << bits:
        raise ValueError(f"{key} {v!r} is not an integer in 0..{(1 << bits) - 1}")
    return v


def _replicas(doc: Mapping[str, Any]) -> tuple[tuple[int, int], ...]:
    replicas = doc.get("replicas", [])
    if not isinstance(replicas, list) or not all(isinstance(r, dict) for r in replicas):
        raise ValueError(f"replicas must be a list of objects, got {replicas!r}")
    return tuple((_uint(r, "egress_port"), _uint(r, "instance", 0)) for r in replicas)
