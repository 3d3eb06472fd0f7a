"""Lookup structures: the per-packet half of a table.

Each matcher indexes `TableEntry`s by their canonical match and exposes
`lookup(key) -> TableEntry | None`, where `key` is the tuple of the packet's
values of the matched fields, in key order. `lookup` is a closure over the
matcher's containers (mutated in place by add/remove), so a call costs one
Python function call plus the dict probes, without attribute lookups; an lpm
table's results are also kept by key until the next write (_Memo), so the
packets of a flow after the first cost one dict probe.

Semantics follow BMv2 (src/bm_sim/lookup_structures.cpp, match_units.cpp):
- exact: one hash lookup.
- lpm (exact fields + one lpm field): longest prefix among the entries whose
  exact fields match. BMv2 uses a trie over exact-bytes+prefix; we keep one
  dict per prefix length and probe the lengths present, longest first, after
  narrowing them by the address's top 8 bits (see _LpmSet).
- anything with ternary/range/optional (lpm fields then act as masks): the
  matching entry with the highest rank wins (priority first, then the lower
  BMv2-style handle, like BMv2's handle-ordered ternary entry list). We use
  tuple-space search: entries are grouped by their mask tuple, each group is a
  dict from masked key to a rank-sorted bucket, and groups are scanned in
  decreasing order of their best rank with an early exit. Range fields are not
  part of the dict key; they are checked on the bucket's candidates.

Concurrency: under the GIL a lookup that runs while another thread writes does
not raise and returns an entry that was installed at some point during the
call (containers are replaced or mutated by single C-level operations, and the
data a lookup needs travels with the bucket item, not in side tables). Writers
must still be serialised among themselves.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

from .entry import TableEntry
from .keys import Exact, KeyField, Lpm, MatchKind, Range, value_mask

Key = tuple[int, ...]
LookupFn = Callable[[Key], "TableEntry | None"]


def _compile(expr: str) -> Callable[[Key], Any]:
    # Generated from integer masks and indices only (no user strings): a
    # specialised key function is several times faster than a generic loop.
    fn: Callable[[Key], Any] = eval(f"lambda k: {expr}", {"__builtins__": {}})
    return fn


def _tuple_expr(parts: Sequence[str]) -> str:
    """A single part stays a bare int (cheaper to build and hash than a 1-tuple)."""
    if len(parts) == 1:
        return parts[0]
    return "(" + "".join(p + ", " for p in parts) + ")"


class Matcher:
    """Interface of the lookup structures."""

    lookup: LookupFn

    def add(self, entry: TableEntry) -> None:
        raise NotImplementedError

    def remove(self, entry: TableEntry) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError


class EmptyKeyMatcher(Matcher):
    """Keyless table: every lookup misses (P4Runtime forbids match entries)."""

    def __init__(self) -> None:
        self.lookup = lambda key: None

    def add(self, entry: TableEntry) -> None:
        raise AssertionError("keyless tables hold no entries")

    def remove(self, entry: TableEntry) -> None:
        raise AssertionError("keyless tables hold no entries")

    def clear(self) -> None:
        pass


class ExactMatcher(Matcher):
    """All fields exact: the key tuple itself indexes a dict."""

    def __init__(self, fields: Sequence[KeyField]) -> None:
        self._map: dict[Key, TableEntry] = {}
        self.lookup = self._map.get  # bound dict.get: no Python frame at all

    def add(self, entry: TableEntry) -> None:
        self._map[tuple(m.value for m in entry.match if isinstance(m, Exact))] = entry

    def remove(self, entry: TableEntry) -> None:
        del self._map[tuple(m.value for m in entry.match if isinstance(m, Exact))]

    def clear(self) -> None:
        self._map.clear()


class _Memo(dict[Key, "TableEntry | None"]):
    """Results of a slower lookup by key, kept until the table changes: a repeated key
    (every packet of a flow) costs one C-level dict probe, no Python frame.

    A lookup racing a write from another thread must not keep a result computed
    from the old contents: `version` moves after each write, and a result stored
    while it moved is dropped again. Bounded: full, it starts over."""

    __slots__ = ("_find", "version")
    MAX_KEYS = 4096  # a few hundred kB per table at most

    def __init__(self, find: LookupFn) -> None:
        super().__init__()
        self._find = find
        self.version = 0

    def __missing__(self, key: Key) -> TableEntry | None:
        v = self.version
        e = self._find(key)
        if len(self) >= self.MAX_KEYS:
            self.clear()
        self[key] = e
        if self.version != v:
            self.pop(key, None)
        return e

    def invalidate(self) -> None:
        """After a write (the write itself is complete)."""
        self.version += 1
        self.clear()


class _LpmLevels:
    """Prefixes of one bucket, one dict per prefix length."""

    __slots__ = ("by_len", "levels")

    def __init__(self) -> None:
        self.by_len: dict[int, tuple[int, dict[int, TableEntry]]] = {}
        # [(mask, dict)] longest prefix first; rebuilt in place when lengths change.
        self.levels: list[tuple[int, dict[int, TableEntry]]] = []

    def rebuild(self) -> None:
        self.levels[:] = [self.by_len[p] for p in sorted(self.by_len, reverse=True)]


class _LpmSet:
    """All prefixes that share the exact fields.

    Prefixes at least `top` bits long are bucketed by their top `top` bits, so a
    lookup probes only the prefix lengths present under its own top bits; the
    shorter ones sit in `short`, probed last (they are shorter than any bucketed
    prefix, so longest-first order holds).
    """

    __slots__ = ("buckets", "short")

    def __init__(self) -> None:
        self.buckets: dict[int, _LpmLevels] = {}
        self.short = _LpmLevels()

    def empty(self) -> bool:
        return not self.buckets and not self.short.by_len


class LpmMatcher(Matcher):
    """Exact fields plus exactly one lpm field: longest matching prefix wins."""

    TOP_BITS = 8

    def __init__(self, fields: Sequence[KeyField]) -> None:
        lpm = [i for i, f in enumerate(fields) if f.kind is MatchKind.LPM]
        assert len(lpm) == 1
        self._lpm_idx = li = lpm[0]
        self._width = fields[li].bitwidth
        self._top = min(self.TOP_BITS, self._width)
        self._shift = shift = self._width - self._top
        self._exact_idx = [i for i, f in enumerate(fields) if f.kind is MatchKind.EXACT]
        self._by_exact: dict[Any, _LpmSet] = {}
        if not self._exact_idx:
            # Pure LPM table: one set, no exact-part probe.
            only = self._by_exact[()] = _LpmSet()
            buckets = only.buckets
            short = only.short.levels

            def lookup(key: Key) -> TableEntry | None:
                v = key[li]
                ls = buckets.get(v >> shift)
                if ls is not None:
                    for mask, d in ls.levels:
                        e = d.get(v & mask)
                        if e is not None:
                            return e
                for mask, d in short:
                    e = d.get(v & mask)
                    if e is not None:
                        return e
                return None
        else:
            exact_part = _compile(_tuple_expr([f"k[{i}]" for i in self._exact_idx]))
            by_exact = self._by_exact

            def lookup(key: Key) -> TableEntry | None:
                s = by_exact.get(exact_part(key))
                if s is None:
                    return None
                v = key[li]
                ls = s.buckets.get(v >> shift)
                if ls is not None:
                    for mask, d in ls.levels:
                        e = d.get(v & mask)
                        if e is not None:
                            return e
                for mask, d in s.short.levels:
                    e = d.get(v & mask)
                    if e is not None:
                        return e
                return None

        self._memo = _Memo(lookup)
        self.lookup = self._memo.__getitem__

    def _exact_key(self, entry: TableEntry) -> Any:
        if not self._exact_idx:
            return ()
        vals = [m.value for m in entry.match if isinstance(m, Exact)]
        return vals[0] if len(vals) == 1 else tuple(vals)

    def _levels_for(self, s: _LpmSet, m: Lpm, create: bool) -> tuple[_LpmLevels, int | None]:
        if m.prefix_len < self._top:
            return s.short, None
        top = m.value >> self._shift
        ls = s.buckets.get(top)
        if ls is None:
            assert create
            ls = s.buckets[top] = _LpmLevels()
        return ls, top

    def add(self, entry: TableEntry) -> None:
        m = entry.match[self._lpm_idx]
        assert isinstance(m, Lpm)
        ek = self._exact_key(entry)
        s = self._by_exact.get(ek)
        if s is None:
            s = self._by_exact[ek] = _LpmSet()
        ls, _ = self._levels_for(s, m, create=True)
        level = ls.by_len.get(m.prefix_len)
        if level is None:
            full = (1 << self._width) - 1
            mask = full ^ (full >> m.prefix_len)
            level = (mask, {m.value: entry})
            ls.by_len[m.prefix_len] = level
            ls.rebuild()
        else:
            level[1][m.value] = entry
        self._memo.invalidate()

    def remove(self, entry: TableEntry) -> None:
        m = entry.match[self._lpm_idx]
        assert isinstance(m, Lpm)
        ek = self._exact_key(entry)
        s = self._by_exact[ek]
        ls, top = self._levels_for(s, m, create=False)
        d = ls.by_len[m.prefix_len][1]
        del d[m.value]
        if not d:
            del ls.by_len[m.prefix_len]
            ls.rebuild()
            if top is not None and not ls.by_len:
                del s.buckets[top]
            if self._exact_idx and s.empty():
                del self._by_exact[ek]
        self._memo.invalidate()

    def clear(self) -> None:
        for s in self._by_exact.values():
            s.buckets.clear()
            s.short.by_len.clear()
            s.short.rebuild()
        if self._exact_idx:
            self._by_exact.clear()
        self._memo.invalidate()


# A bucket item: (entry, range checks that can fail [(field index, low, high)]).
RangeChecks = tuple[tuple[int, int, int], ...]
Item = tuple[TableEntry, RangeChecks]


class _MaskGroup:
    """Entries sharing one mask tuple: masked key -> bucket sorted by rank (desc)."""

    __slots__ = ("masks", "keyfn", "buckets", "max_rank", "count")

    def __init__(self, masks: tuple[int, ...], keyfn: Callable[[Key], Any]) -> None:
        self.masks = masks
        self.keyfn = keyfn
        self.buckets: dict[Any, list[Item]] = {}
        self.max_rank = 0
        self.count = 0


def _neg_rank(item: Item) -> int:
    return -item[0].rank


class TernaryMatcher(Matcher):
    """Priority tables (ternary/range/optional, maybe lpm and exact): tuple-space search."""

    def __init__(self, fields: Sequence[KeyField]) -> None:
        self._fields = list(fields)
        self._range_idx = [i for i, f in enumerate(fields) if f.kind is MatchKind.RANGE]
        self._hash_idx = [i for i, f in enumerate(fields) if f.kind is not MatchKind.RANGE]
        self._groups: dict[tuple[int, ...], _MaskGroup] = {}
        # Scan order: (max_rank, keyfn, buckets) by decreasing max_rank; updated in place.
        self._order: list[tuple[int, Callable[[Key], Any], dict[Any, list[Item]]]] = []
        order = self._order

        if not self._range_idx:
            def lookup(key: Key) -> TableEntry | None:
                best: TableEntry | None = None
                best_rank = 0
                for max_rank, keyfn, buckets in order:
                    if best is not None and max_rank < best_rank:
                        break  # groups are sorted: nothing later can win
                    bucket = buckets.get(keyfn(key))
                    if bucket is not None:
                        e = bucket[0][0]
                        if best is None or e.rank > best_rank:
                            best = e
                            best_rank = e.rank
                return best
        else:
            def lookup(key: Key) -> TableEntry | None:
                best: TableEntry | None = None
                best_rank = 0
                for max_rank, keyfn, buckets in order:
                    if best is not None and max_rank < best_rank:
                        break
                    bucket = buckets.get(keyfn(key))
                    if bucket is None:
                        continue
                    for e, checks in bucket:
                        if best is not None and e.rank < best_rank:
                            break
                        for i, lo, hi in checks:
                            v = key[i]
                            if v < lo or v > hi:
                                break
                        else:
                            best = e
                            best_rank = e.rank
                            break
                return best

        self.lookup = lookup

    def _masks_and_key(self, entry: TableEntry) -> tuple[tuple[int, ...], Any]:
        masks: list[int] = []
        vals: list[int] = []
        for i in self._hash_idx:
            v, m = value_mask(self._fields[i], entry.match[i])
            masks.append(m)
            if m:
                vals.append(v)
        key: Any = vals[0] if len(vals) == 1 else tuple(vals)
        return tuple(masks), key

    def _keyfn(self, masks: tuple[int, ...]) -> Callable[[Key], Any]:
        parts = []
        for i, m in zip(self._hash_idx, masks, strict=True):
            if m == 0:
                continue  # wildcard: not part of the dict key
            if m == self._fields[i].max_value:
                parts.append(f"k[{i}]")
            else:
                parts.append(f"(k[{i}] & {m})")
        return _compile(_tuple_expr(parts) if parts else "()")

    def _reorder(self) -> None:
        gs = sorted(self._groups.values(), key=lambda g: g.max_rank, reverse=True)
        self._order[:] = [(g.max_rank, g.keyfn, g.buckets) for g in gs]

    def add(self, entry: TableEntry) -> None:
        masks, key = self._masks_and_key(entry)
        g = self._groups.get(masks)
        if g is None:
            g = self._groups[masks] = _MaskGroup(masks, self._keyfn(masks))
        checks = []
        for i in self._range_idx:
            r = entry.match[i]
            assert isinstance(r, Range)
            if r.low != 0 or r.high != self._fields[i].max_value:
                checks.append((i, r.low, r.high))
        item: Item = (entry, tuple(checks))
        bucket = g.buckets.get(key)
        if bucket is None:
            g.buckets[key] = [item]
        else:
            bisect.insort(bucket, item, key=_neg_rank)
        g.count += 1
        if g.count == 1 or entry.rank > g.max_rank:
            g.max_rank = entry.rank
            self._reorder()

    def remove(self, entry: TableEntry) -> None:
        masks, key = self._masks_and_key(entry)
        g = self._groups[masks]
        bucket = g.buckets[key]
        idx = next(i for i, it in enumerate(bucket) if it[0] is entry)
        if len(bucket) == 1:
            del g.buckets[key]
        else:
            del bucket[idx]
        g.count -= 1
        if g.count == 0:
            del self._groups[masks]
            self._reorder()
        elif entry.rank == g.max_rank:
            g.max_rank = max(b[0][0].rank for b in g.buckets.values())
            self._reorder()

    def clear(self) -> None:
        self._groups.clear()
        self._order.clear()


def make_matcher(fields: Sequence[KeyField]) -> Matcher:
    """Pick the lookup structure for a key (selector fields already removed)."""
    kinds = [f.kind for f in fields]
    if not fields:
        return EmptyKeyMatcher()
    if any(k in (MatchKind.TERNARY, MatchKind.RANGE, MatchKind.OPTIONAL) for k in kinds):
        return TernaryMatcher(fields)
    n_lpm = kinds.count(MatchKind.LPM)
    if n_lpm == 0:
        return ExactMatcher(fields)
    if n_lpm == 1:
        return LpmMatcher(fields)
    # The table layer rejects this (BMv2 allows one lpm field per table).
    raise ValueError("a table without ternary/range/optional fields may have one lpm field")
