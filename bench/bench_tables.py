"""Per-packet lookup cost of the table engine (prints figures; not a test).

Run: .venv/bin/python bench/bench_tables.py
Targets: exact < 1 us, LPM (a few hundred prefixes /8../32) < 3 us,
ternary (100 entries across 5 masks) < 10 us.
"""

from __future__ import annotations

import random
import sys
import timeit
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._machine import describe  # noqa: E402
from emu.p4.tables import (  # noqa: E402
    ActionCall,
    KeyField,
    Lpm,
    MatchKind,
    Range,
    Table,
    Ternary,
)

N_KEYS = 1000


def per_call_us(fn: Callable[[tuple[int, ...]], object], keys: Sequence[tuple[int, ...]]) -> float:
    def run() -> None:
        for k in keys:
            fn(k)

    best = min(timeit.repeat(run, number=20, repeat=5))
    return best / (20 * len(keys)) * 1e6


def bench_exact(rng: random.Random) -> float:
    t = Table("exact", [KeyField("dmac", MatchKind.EXACT, 48), KeyField("vlan", MatchKind.EXACT, 12)],
              size=100_000)
    present = []
    for i in range(10_000):
        k = (rng.getrandbits(48), rng.getrandbits(12))
        try:
            t.insert(list(k), ActionCall("fwd", (i % 64,)))
            present.append(k)
        except Exception:
            pass
    keys = [rng.choice(present) if i % 2 else (rng.getrandbits(48), 1) for i in range(N_KEYS)]
    return per_call_us(t.apply, keys)


def bench_lpm(rng: random.Random, n: int = 400, under: int | None = None) -> float:
    """Random /8../32 prefixes; with `under`, all inside that /8 (every length in
    one top-8-bit bucket: the worst case, all 25 lengths probed on a miss)."""
    t = Table("lpm", [KeyField("dst", MatchKind.LPM, 32)], size=10_000)
    prefixes = []
    while len(t) < n:
        plen = rng.randint(8, 32)
        v = rng.getrandbits(32)
        if under is not None:
            v = under << 24 | (v & 0xFFFFFF)
        try:
            e = t.insert([Lpm(v, plen)], ActionCall("fwd", (1,)))
            prefixes.append(e.match[0])
        except Exception:
            pass
    keys = []
    for i in range(N_KEYS):
        if i % 2:
            p = rng.choice(prefixes)
            assert isinstance(p, Lpm)
            keys.append((p.value | (rng.getrandbits(32) >> p.prefix_len),))
        else:
            hi = under if under is not None else rng.getrandbits(8)
            keys.append((hi << 24 | rng.getrandbits(24),))  # mostly misses
    return per_call_us(t.apply, keys)


def bench_lpm_fabric(rng: random.Random) -> float:
    """Fabric-like routes: a default, /16 pods, /24 racks, /32 hosts (4 lengths)."""
    t = Table("fabric", [KeyField("dst", MatchKind.LPM, 32)], size=10_000)
    t.insert([Lpm(0, 0)], ActionCall("up", ()))
    for pod in range(4):
        t.insert([Lpm(0x0A000000 | pod << 16, 16)], ActionCall("pod", (pod,)))
        for rack in range(16):
            t.insert([Lpm(0x0A000000 | pod << 16 | rack << 8, 24)], ActionCall("rack", (rack,)))
    for h in range(200):
        t.insert([Lpm(0x0A000000 | h << 2, 32)], ActionCall("host", (h,)))
    keys = [(0x0A000000 | rng.getrandbits(18),) for _ in range(N_KEYS)]
    return per_call_us(t.apply, keys)


def bench_ternary(rng: random.Random, with_range: bool = False) -> float:
    fields = [KeyField("src", MatchKind.TERNARY, 32), KeyField("dst", MatchKind.TERNARY, 32),
              KeyField("proto", MatchKind.TERNARY, 8)]
    if with_range:
        fields.append(KeyField("dport", MatchKind.RANGE, 16))
    t = Table("acl", fields, size=10_000)
    masks = [(0xFFFFFFFF, 0, 0xFF), (0, 0xFFFFFF00, 0), (0xFFFF0000, 0xFFFF0000, 0xFF),
             (0, 0, 0xFF), (0xFF000000, 0xFFFFFFFF, 0)]
    prio = 1
    while len(t) < 100:
        m = masks[len(t) % 5]
        match: list[object] = [Ternary(rng.getrandbits(32) & m[0], m[0]),
                               Ternary(rng.getrandbits(32) & m[1], m[1]),
                               Ternary(rng.getrandbits(8) & m[2], m[2])]
        if with_range:
            lo = rng.randint(0, 60000)
            match.append(Range(lo, lo + rng.randint(0, 5000)))
        t.insert(match, ActionCall("permit"), priority=prio)  # type: ignore[arg-type]
        prio += 1
    n = 4 if with_range else 3
    keys = [tuple(rng.getrandbits(w) for w in (32, 32, 8, 16)[:n]) for _ in range(N_KEYS)]
    return per_call_us(t.apply, keys)


def main() -> None:
    rng = random.Random(1)
    rows = [
        ("exact (2 fields, 10k entries)", bench_exact(rng), 1.0),
        ("lpm (400 random prefixes /8../32)", bench_lpm(rng), 3.0),
        ("lpm worst (400 prefixes /8../32 in 10/8)", bench_lpm(rng, under=10), 3.0),
        ("lpm fabric (269 routes, 4 lengths)", bench_lpm_fabric(rng), 3.0),
        ("ternary (100 entries, 5 masks)", bench_ternary(rng), 10.0),
        ("ternary+range (100 entries, 5 masks)", bench_ternary(rng, True), 10.0),
    ]
    print(describe())
    print(f"{'lookup':44s} {'us/lookup':>10s} {'target':>8s}")
    for name, us, target in rows:
        flag = "ok" if us < target else "SLOW"
        print(f"{name:44s} {us:10.3f} {target:8.1f}  {flag}")


if __name__ == "__main__":
    main()
