"""Virtual runs sample on change (ChangeSampler): the recorded points, weighted, are the
same statistics as reading every tick, and rates between points stay exact."""

from __future__ import annotations

import random

from emu.experiments import metrics as M
from emu.experiments.sampler import ChangeSampler, FabricSampler
from emu.sim.fabric import SimFabric
from emu.topo import load_topology

TICK = 1_000  # ns: a few 1000-byte frames at 100 Gb/s


def test_weighted_percentile_equals_the_expanded_one():
    rng = random.Random(3)
    for _ in range(200):
        pairs = [(float(rng.randint(0, 9)), rng.randint(1, 5)) for _ in range(rng.randint(1, 9))]
        flat = [v for v, w in pairs for _ in range(w)]
        for q in (0, 50, 90, 99, 100):
            assert M.weighted_percentile(pairs, q) == M.percentile(flat, q)


def test_change_points_weighted_equal_every_tick_and_hold_before_changes():
    sim = SimFabric(load_topology("clos4"))
    fab = sim.fabric
    ports = {(s.name, p.number): (sim.port(s.name, p.number).stats,
                                  sim.switches[s.name].sw.tm, sim.switches[s.name].drops)
             for s in fab.switches for p in s.ports}
    p4 = FabricSampler([s.name for s in fab.switches], lambda _s: None, sim.controller,
                       t0=0.0, clock=lambda: sim.clock.now_ns() / 1e9)
    p4.read_p4()
    cs = ChangeSampler(ports, p4, TICK)
    every: list[tuple[float, str, int, float]] = []  # what reading every tick gives
    tx_every: dict[tuple[str, int], list[tuple[float, int]]] = {}
    rx_every: dict[tuple[str, int], list[tuple[float, int]]] = {}

    def read_all(tick: int) -> None:
        for (sw, p), (stats, tm, _d) in ports.items():
            every.append((tick * TICK / 1e9, sw, p, float(tm.occupancy(p)[0])))
            tx_every.setdefault((sw, p), []).append((tick * TICK / 1e9, stats.tx_bytes))
            rx_every.setdefault((sw, p), []).append((tick * TICK / 1e9, stats.rx_bytes))

    from emu.experiments.sampler import Snapshot

    first = Snapshot(0.0, {k: M.PortCount() for k in ports},
                     [(0.0, sw, p, 0.0) for sw, p in ports])
    cs.start(first)
    read_all(0)
    hosts = [h.name for h in fab.hosts]
    # Bursts from every host to one, then silence, then again: queues build and drain.
    last = 0
    for burst in range(2):
        for i in range(60):
            for h in hosts[:-1]:
                sim.hosts[h].send_udp(hosts[-1], sport=49152 + i, size=1000)
        for _ in range(400):
            last += 1
            sim.clock.advance_to(last * TICK)
            cs.tick(last)
            read_all(last)
        assert burst or any(d > 0 for _t, _s, _p, d in every)
    snaps = [first, *cs.finish(last)]
    got = [q for s in snaps for q in s.queues]
    weights = [w for s in snaps
               for w in (s.queue_weights if s.queue_weights is not None else [1] * len(s.queues))]
    assert len(got) < len(every) // 5  # on change: far fewer points
    assert sum(weights) == len(every)
    assert M.queue_stats(got, top=50, weights=weights) == M.queue_stats(every, top=50)
    # Cumulative tx and rx bytes: each port's points are a subset of the every-tick series
    # that keeps every change and the value just before it, so rates between points are
    # exact. (rx came from fabric.p4's counter, read every 20 ticks with traffic: a
    # port's points lagged what it had received.)
    for field, series in (("tx_bytes", tx_every), ("rx_bytes", rx_every)):
        for key, full in series.items():
            pts = [(s.t_s, getattr(s.ports[key], field)) for s in snaps if key in s.ports]
            assert set(pts) <= set(full), (field, key)
            for (t1, b1), (t2, b2) in zip(full, full[1:], strict=False):
                if b2 != b1:
                    assert (t1, b1) in pts and (t2, b2) in pts, (field, key)


def test_a_tick_the_run_ends_inside_is_stamped_with_the_runs_end():
    """A virtual run cut by --timeout inside a tick: its last point is at the timeout,
    not at the end of a tick the clock never reached."""
    sim = SimFabric(load_topology("clos4"))
    ports = {("leaf1", p.number): (sim.port("leaf1", p.number).stats,
                                   sim.switches["leaf1"].sw.tm, sim.switches["leaf1"].drops)
             for p in sim.fabric.switch("leaf1").ports}
    p4 = FabricSampler(["leaf1"], lambda _s: None, sim.controller, t0=0.0,
                       clock=lambda: sim.clock.now_ns() / 1e9)
    cs = ChangeSampler(ports, p4, TICK)
    from emu.experiments.sampler import Snapshot

    cs.start(Snapshot(0.0, {k: M.PortCount() for k in ports},
                      [(0.0, sw, p, 0.0) for sw, p in ports]))
    sim.hosts["h1"].send_udp("h3", sport=49152, size=1000)
    sim.clock.advance_to(2 * TICK + 250)
    cs.end_ns = 2 * TICK + 250
    cs.tick(3)
    *held, snap = cs.finish(3)
    assert snap.t_s == (2 * TICK + 250) / 1e9
    assert [h.t_s for h in held] == [2 * TICK / 1e9]  # the values before the change
    assert all(t == snap.t_s for t, *_ in snap.queues)
