"""Table entries drawn at random from a P4Info, so that crosscheck compares the actions a
controller installs: with no entries every table misses and runs its default action, and
the action code behind the entries is never run on either side.

For each table a controller may write (not const): up to `per_table` entries with keys
drawn so that packets hit them, actions from the table's entry actions with random
parameters, distinct priorities where the key needs them; and a default action from the
table's default actions unless the P4Info makes it const. A table behind an action
profile gets members of that profile instead (up to four, random actions) and, behind a
selector, two groups of them; its entries name a member or a group, and its default
action is left alone. Keys:
an exact field gets 0, 1, all ones or a random value (metadata a program never set is 0,
so 0 hits); a ternary, LPM, range or optional field is often a wildcard (omitted, as
P4Runtime requires), else a mask, prefix or range around such a value. A 9-bit parameter
is a port: mostly one of the switch's ports, so the packet comes out where it can be seen.
With the keys a dry run saw packets look up (`observed`), half the entries of a table
move onto one of them. The same seed and packets give the same entries, and both sides
get the same ones.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from p4.config.v1 import p4info_pb2

from emu.control import Lpm, ProfileGroup, ProfileMember, TableEntry, Ternary
from emu.p4.tables import OptionalMatch, Range

from .programming import DefaultAction, Programming

_M = p4info_pb2.MatchField
_EXACT, _TERNARY, _LPM, _RANGE, _OPTIONAL = _M.EXACT, _M.TERNARY, _M.LPM, _M.RANGE, _M.OPTIONAL
_TABLE_ONLY, _DEFAULT_ONLY = p4info_pb2.ActionRef.TABLE_ONLY, p4info_pb2.ActionRef.DEFAULT_ONLY
PORT_WIDTH = 9  # v1model's PortId_t


def _value(rng: random.Random, width: int) -> int:
    """A value a packet or a program is likely to carry: 0, 1, all ones, or any."""
    top = (1 << width) - 1
    return rng.choice((0, 1, top, rng.getrandbits(width))) & top


def _field_match(rng: random.Random, kind: int, width: int) -> Any:
    """One field's match, or None for a wildcard (the field is omitted)."""
    top = (1 << width) - 1
    if kind == _EXACT:
        return _value(rng, width)
    if rng.random() < 0.4:
        return None
    if kind == _TERNARY:
        mask = rng.choice((top, rng.getrandbits(width)))
        return Ternary(_value(rng, width) & mask, mask) if mask else None
    if kind == _LPM:
        plen = rng.randint(1, width)
        return Lpm(_value(rng, width) & (top ^ (top >> plen)), plen)
    if kind == _RANGE:
        low, high = sorted((_value(rng, width), _value(rng, width)))
        return None if (low, high) == (0, top) else Range(low, high)
    if kind == _OPTIONAL:
        return OptionalMatch(_value(rng, width))
    raise ValueError(f"match kind {kind} has no random form")


def _around(rng: random.Random, m: Any, value: int, width: int) -> Any:
    """Field match `m` (not a wildcard) moved onto `value`, a key a packet looked up: the
    same kind, mask and prefix length, so that the packet hits it."""
    top = (1 << width) - 1
    value &= top
    if isinstance(m, Ternary):
        return Ternary(value & m.mask, m.mask)
    if isinstance(m, Lpm):
        return Lpm(value & (top ^ (top >> m.prefix_len)), m.prefix_len)
    if isinstance(m, Range):
        low, high = rng.randint(0, value), rng.randint(value, top)
        return Range(value, value) if (low, high) == (0, top) else Range(low, high)
    if isinstance(m, OptionalMatch):
        return OptionalMatch(value)
    return value  # exact


def _params(rng: random.Random, action: Any, ports: Sequence[int]) -> dict[str, int]:
    out = {}
    for p in action.params:
        if p.bitwidth == PORT_WIDTH and ports and rng.random() < 0.8:
            out[p.name] = rng.choice(list(ports))
        else:
            out[p.name] = _value(rng, p.bitwidth) if p.bitwidth else 0
    return out


def _translated(p4info: Any) -> set[str]:
    """User types with @p4runtime_translation: a controller writes them in the SDN value
    space, which needs the switch's translation table; random values are left out."""
    return {name for name, t in p4info.type_info.new_types.items()
            if t.HasField("translated_type")}


def writable(table: Any, translated: set[str]) -> bool:
    """Whether a controller may insert entries: not const, with a key, and every key
    field a width P4Runtime can encode (an `error` field has none in P4Info: BMv2 refuses
    any value) and not a translated type."""
    return (not table.is_const_table and len(table.match_fields) > 0
            and all(f.bitwidth > 0 and f.type_name.name not in translated
                    for f in table.match_fields))


def _profile_writes(rng: random.Random, profile: Any, actions: Sequence[Any],
                    ports: Sequence[int]) -> tuple[list[Any], list[int], list[int]]:
    """Members (and, behind a selector, groups) of an action profile: (writes, member
    ids, group ids). A group lists its members in the order they were made, the order
    BMv2 picks from (see emu.p4.tables.action_profile)."""
    name = profile.preamble.name
    n = min(4, profile.size or 4)
    writes: list[Any] = []
    for mid in range(1, n + 1):
        a = rng.choice(actions)
        writes.append(ProfileMember(name, mid, a.preamble.name, _params(rng, a, ports)))
    members = list(range(1, n + 1))
    groups: list[int] = []
    if profile.with_selector:
        limit = profile.max_group_size
        for gid, pick in ((1, members), (2, sorted(rng.sample(members, rng.randint(1, n))))):
            chosen = tuple(pick[:limit] if limit else pick)
            writes.append(ProfileGroup(name, gid, chosen, max_size=limit))
            groups.append(gid)
    return writes, members, groups


def random_entries(p4info: Any, ports: Sequence[int], seed: int, per_table: int = 4,
                   observed: Mapping[str, Sequence[tuple[int, ...]]] | None = None
                   ) -> list[Any]:
    """The writes for every table of `p4info` a controller may write, in the order to
    make them: default actions, action profile members and groups, entries.

    `observed`: keys packets looked up, per table (a dry run: sides.observed_keys).
    Half the entries of such a table move their key onto one of them (wildcards stay
    wildcards; not onto a key an entry has already), so that exact keys on header fields
    hit too. Those choices come from a stream of their own: everything else is what the
    seed gives without `observed`, but for an entry whose key as drawn is one an entry
    before it moved onto (it is left out)."""
    rng = random.Random(seed)
    orng = random.Random(f"observed keys {seed}")
    translated = _translated(p4info)
    actions = {a.preamble.id: a for a in p4info.actions
               if not any(p.type_name.name in translated for p in a.params)}
    profiles = {p.preamble.id: p for p in p4info.action_profiles}
    defaults: list[Any] = []
    profile_writes: list[Any] = []
    made: dict[int, tuple[list[int], list[int]]] = {}  # profile id -> members, groups
    entries: list[Any] = []
    for t in p4info.tables:
        name = t.preamble.name
        refs = [actions[r.id] for r in t.action_refs if r.id in actions]
        scopes = {r.id: r.scope for r in t.action_refs}
        if not t.const_default_action_id and not t.implementation_id:
            choice = [a for a in refs if scopes[a.preamble.id] != _TABLE_ONLY]
            if choice:
                a = rng.choice(choice)
                defaults.append(DefaultAction(name, a.preamble.name, _params(rng, a, ports)))
        in_entries = [a for a in refs if scopes[a.preamble.id] != _DEFAULT_ONLY]
        if not writable(t, translated) or not in_entries:
            continue
        if t.implementation_id:
            profile = profiles.get(t.implementation_id)
            if profile is None:
                continue
            if profile.preamble.id not in made:
                writes, members, groups = _profile_writes(rng, profile, in_entries, ports)
                profile_writes += writes
                made[profile.preamble.id] = (members, groups)
        kinds = {f.match_type for f in t.match_fields}
        prioritised = bool(kinds & {_TERNARY, _RANGE, _OPTIONAL})
        priorities = rng.sample(range(1, 1000), per_table)
        seen: set[tuple[Any, ...]] = set()  # keys as drawn
        taken: set[tuple[Any, ...]] = set()  # keys as written
        looked_up = [k for k in (observed or {}).get(name, ()) if len(k) == len(t.match_fields)]
        for n in range(min(per_table, t.size or per_table)):
            match = {f.name: m for f in t.match_fields
                     if (m := _field_match(rng, f.match_type, f.bitwidth)) is not None}
            if _key(match) in seen:
                continue  # the same key twice is ALREADY_EXISTS; one fewer entry instead
            seen.add(_key(match))
            if looked_up and match and orng.random() < 0.5:
                moved = _moved(orng, t, match, orng.choice(looked_up))
                if _key(moved) not in taken:
                    match = moved
            entry = _entry(rng, name, match, priorities[n] if prioritised else None,
                           made.get(t.implementation_id), in_entries, ports)
            if _key(match) not in taken:  # else as drawn, it is one moved before it
                taken.add(_key(match))
                entries.append(entry)
    return [*defaults, *profile_writes, *entries]


def _key(match: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted(match.items(), key=lambda kv: kv[0]))


def _moved(rng: random.Random, table: Any, match: Mapping[str, Any],
           key_values: tuple[int, ...]) -> dict[str, Any]:
    """`match` moved onto a key a packet looked up (its wildcards kept)."""
    return {f.name: _around(rng, match[f.name], int(v), f.bitwidth)
            for f, v in zip(table.match_fields, key_values, strict=True) if f.name in match}


def _entry(rng: random.Random, table: str, match: dict[str, Any], prio: int | None,
           profile: tuple[list[int], list[int]] | None, actions: Sequence[Any],
           ports: Sequence[int]) -> TableEntry:
    """An entry with `match`: a member or group of the table's `profile` (members,
    groups), or one of `actions` with random parameters."""
    if profile is not None:
        members, groups = profile
        if groups and rng.random() < 0.5:
            return TableEntry(table, match, "", priority=prio, group_id=rng.choice(groups))
        return TableEntry(table, match, "", priority=prio, member_id=rng.choice(members))
    a = rng.choice(actions)
    return TableEntry(table, match, a.preamble.name, _params(rng, a, ports), prio)


def with_random_entries(setup: Programming, p4info: Any, seed: int, per_table: int = 4,
                        observed: Mapping[str, Sequence[tuple[int, ...]]] | None = None
                        ) -> Programming:
    """`setup` with random writes as trial writes, after its own: a switch may refuse
    some (BMv2 refuses writes to a table p4c optimised away)."""
    return replace(setup, trial=[*setup.trial, *random_entries(p4info, setup.ports, seed,
                                                                per_table, observed)])
