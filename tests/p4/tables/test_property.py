"""Property tests: lookups equal a brute-force scan under the documented rule.

Rule: among the entries whose every field matches, exact tables have at most
one; exact+lpm tables pick the longest prefix; priority tables (any ternary,
range or optional field) pick the highest priority, then the lowest handle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu.p4.tables import (
    ActionCall,
    AlreadyExists,
    Exact,
    FieldMatch,
    KeyField,
    Lpm,
    MatchKind,
    Optional,
    Range,
    Table,
    TableEntry,
    Ternary,
    field_matches,
)

KINDS = [MatchKind.EXACT, MatchKind.LPM, MatchKind.TERNARY, MatchKind.RANGE, MatchKind.OPTIONAL]


@st.composite
def key_fields(draw: st.DrawFn) -> list[KeyField]:
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4))
    if not any(k in (MatchKind.TERNARY, MatchKind.RANGE, MatchKind.OPTIONAL) for k in kinds):
        # Without a priority kind a table may have only one lpm field.
        seen = False
        fixed = []
        for k in kinds:
            if k is MatchKind.LPM:
                if seen:
                    k = MatchKind.EXACT
                seen = True
            fixed.append(k)
        kinds = fixed
    return [KeyField(f"f{i}", k, draw(st.integers(1, 4))) for i, k in enumerate(kinds)]


def field_match(draw: Callable[[st.SearchStrategy[Any]], Any], f: KeyField) -> FieldMatch | None:
    w = f.bitwidth
    v = draw(st.integers(0, f.max_value))
    if f.kind is MatchKind.EXACT:
        return Exact(v)
    if f.kind is MatchKind.LPM:
        return Lpm(v, draw(st.integers(0, w)))
    if f.kind is MatchKind.TERNARY:
        return Ternary(v, draw(st.integers(0, f.max_value)))
    if f.kind is MatchKind.RANGE:
        a, b = sorted((v, draw(st.integers(0, f.max_value))))
        return Range(a, b)
    return draw(st.sampled_from([Optional(v), None]))


def reference(t: Table, key: tuple[int, ...]) -> TableEntry | None:
    hits = [e for e in t.entries()
            if all(field_matches(f, m, v) for f, m, v in zip(t.match_fields, e.match, key,
                                                              strict=True))]
    if not hits:
        return None
    if t.needs_priority:
        sign = 1 if t.largest_priority_wins else -1
        return max(hits, key=lambda e: (sign * e.priority, -e.handle))
    lpm = [i for i, f in enumerate(t.match_fields) if f.kind is MatchKind.LPM]
    if lpm:
        i = lpm[0]

        def plen(e: TableEntry) -> int:
            m = e.match[i]
            assert isinstance(m, Lpm)
            return m.prefix_len

        best = max(hits, key=plen)
        assert sum(plen(e) == plen(best) for e in hits) == 1
        return best
    assert len(hits) == 1
    return hits[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_lookup_equals_brute_force(data: st.DataObject) -> None:
    fields = data.draw(key_fields())
    largest = data.draw(st.booleans())
    t = Table("p", fields, size=10_000, largest_priority_wins=largest)
    n_ops = data.draw(st.integers(1, 40))
    for i in range(n_ops):
        live = t.entries()
        if live and data.draw(st.integers(0, 4)) == 0:
            victim = data.draw(st.sampled_from(live))
            t.delete(list(victim.match), victim.priority)
            continue
        match = [field_match(data.draw, f) for f in fields]
        prio = data.draw(st.integers(1, 6)) if t.needs_priority else 0
        try:
            t.insert(match, ActionCall("a", (i,)), priority=prio)
        except AlreadyExists:
            pass
    keys = data.draw(st.lists(
        st.tuples(*[st.integers(0, f.max_value) for f in fields]), min_size=1, max_size=30))
    for key in keys:
        assert t.lookup(key) is reference(t, key), (key, t.entries())


@settings(max_examples=100, deadline=None)
@given(prefixes=st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 32)),
                         min_size=1, max_size=60),
       probes=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=20))
def test_lpm_32bit_equals_brute_force(prefixes: list[tuple[int, int]],
                                      probes: list[int]) -> None:
    t = Table("r", [KeyField("dst", MatchKind.LPM, 32)], size=1000)
    for v, p in prefixes:
        try:
            t.insert([Lpm(v, p)], ActionCall("fwd", (p,)))
        except AlreadyExists:
            pass
    # Probe addresses inside the installed prefixes too, not only random ones.
    keys = probes + [v for v, _ in prefixes]
    for k in keys:
        assert t.lookup((k,)) is reference(t, (k,))
