"""Registers, counters and meters."""

from __future__ import annotations

import pytest

from emu.core.clock import VirtualClock
from emu.p4.v1model.stateful import (
    GREEN,
    RED,
    YELLOW,
    CounterArray,
    CounterCell,
    CounterKind,
    Meter,
    MeterArray,
    MeterRates,
    RegisterArray,
)

US = 1000  # ns


def test_register_read_write_truncate_and_out_of_range() -> None:
    r = RegisterArray("MyIngress.r", 4, 8)
    assert r.read(0) == 0
    assert r.write(1, 0x1FF)
    assert r.read(1) == 0xFF  # truncated to 8 bits
    # Out of range: no write, and a read leaves the destination's value (the default).
    assert not r.write(4, 5)
    assert r.read(4, default=123) == 123
    assert r.read(-1, default=7) == 7
    assert r.values() == [0, 0xFF, 0, 0]
    r.set(3, 9)
    assert r.get(3) == 9
    with pytest.raises(IndexError):
        r.get(4)
    with pytest.raises(IndexError):
        r.set(4, 1)
    r.reset()
    assert r.values() == [0] * 4


def test_counter_array() -> None:
    c = CounterArray("c", 2, "packets_and_bytes")
    assert c.kind is CounterKind.packets_and_bytes
    assert c.count(0, 100) and c.count(0, 60)
    assert not c.count(2, 10)  # out of range: ignored
    assert c.read(0) == (2, 160)
    assert c.read(1) == (0, 0)
    c.write(1, 5, 500)
    assert c.read(1) == (5, 500)
    c.reset(1)
    assert c.read(1) == (0, 0)
    c.reset()
    assert c.read(0) == (0, 0)
    with pytest.raises(IndexError):
        c.read(2)
    with pytest.raises(ValueError):
        CounterArray("bad", 1, "frames")


def test_counter_cell() -> None:
    cell = CounterCell()
    cell.count(64)
    cell.count(1500)
    assert cell.read() == (2, 1564)
    cell.write(1, 1)
    assert cell.read() == (1, 1)
    cell.reset()
    assert cell.read() == (0, 0)


def test_unconfigured_meter_is_green() -> None:
    clock = VirtualClock()
    m = MeterArray("m", 2, "packets", clock)
    assert [m.execute(0) for _ in range(100)] == [GREEN] * 100
    assert m.get_rates(0) is None
    assert m.execute(5, default=RED) == RED  # out of range: destination unchanged


def test_packet_meter_colors_for_known_arrivals() -> None:
    clock = VirtualClock()
    m = MeterArray("m", 1, "packets", clock)
    # CIR 1 packet/ms (0.001 per us), CBS 1; PIR 2 packets/ms, PBS 2.
    m.set_rates(0.001, 1, 0.002, 2)
    # Full buckets (P=2, C=1): green, then C is empty -> yellow, then P is empty -> red.
    assert [m.execute(0) for _ in range(3)] == [GREEN, YELLOW, RED]
    clock.advance(500 * US)  # P earns 1 token, C earns none
    assert m.execute(0) == YELLOW
    assert m.execute(0) == RED
    clock.advance(500 * US)  # t = 1 ms: P +1, C +1
    assert m.execute(0) == GREEN
    clock.advance(100_000 * US)  # long idle: buckets refill only up to their bursts
    assert [m.execute(0) for _ in range(3)] == [GREEN, YELLOW, RED]


def test_byte_meter_red_leaves_cir_untouched() -> None:
    clock = VirtualClock()
    m = Meter("bytes", clock)
    m.set_rates(MeterRates(cir=0.0, cbs=1000, pir=0.0, pbs=1500))
    assert m.execute(1000) == GREEN  # P 1500->500, C 1000->0
    assert m.execute(600) == RED  # P short: C not consulted
    assert m.execute(500) == YELLOW  # P 500->0, C 0 < 500
    assert m.execute(1) == RED


def test_a_meter_array_colours_as_one_meter_per_cell_made_at_its_creation() -> None:
    """Cells are made on first use, and must colour exactly as meters made with the
    array (BMv2: the time origin is the meter's creation, configuring fills the
    buckets): rates set for all, for one cell, reset, invalid rates refused with the
    old state kept, at irregular times."""
    import random

    clock = VirtualClock()
    clock.advance(123 * US)
    arr = MeterArray("m", 4, "bytes", clock)
    eager = [Meter("bytes", clock) for _ in range(4)]
    rnd = random.Random(5)
    for step in range(3000):
        clock.advance(rnd.randrange(1, 700) * US // 7)
        op = rnd.random()
        if step % 500 == 0 or op < 0.002:
            r = MeterRates(rnd.uniform(0.5, 2), rnd.randrange(500, 3000),
                           rnd.uniform(2, 4), rnd.randrange(3000, 6000))
            arr.configure(r)
            for m in eager:
                m.set_rates(r)
        elif op < 0.01:
            i = rnd.randrange(4)
            r = MeterRates(rnd.uniform(0.1, 1), rnd.randrange(100, 2000),
                           rnd.uniform(1, 3), rnd.randrange(2000, 4000))
            arr.configure(r, i)
            eager[i].set_rates(r)
        elif op < 0.012:
            i = rnd.choice([None, rnd.randrange(4)])
            arr.reset_rates(i)
            for m in eager if i is None else [eager[i]]:
                m.set_rates(None)
        elif op < 0.014:
            with pytest.raises(ValueError):
                arr.set_rates(2.0, 1, 1.0, 1, index=rnd.choice([None, 1]))
        else:
            i, n = rnd.randrange(4), rnd.randrange(64, 1500)
            assert arr.execute(i, n) == eager[i].execute(n), step
        assert [arr.get_rates(i) for i in range(4)] == [m.rates for m in eager]


def test_a_large_meter_array_costs_nothing_until_used() -> None:
    """meter(1 << 20, ...) is the largest the target takes: it used to build a million
    meters (three objects each) when the switch started."""
    import tracemalloc

    clock = VirtualClock()
    tracemalloc.start()
    try:
        arr = MeterArray("m", 1 << 20, "packets", clock)
        arr.set_rates(0.001, 1, 0.002, 2)
        assert [arr.execute(7) for _ in range(3)] == [GREEN, YELLOW, RED]
        assert arr.execute((1 << 20) - 1) == GREEN
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


def test_meter_per_second_rates_and_reset() -> None:
    clock = VirtualClock()
    m = MeterArray("m", 3, "packets", clock)
    m.set_rates_per_second(1000, 1, 2000, 2, index=1)  # same as 0.001 / 0.002 per us
    assert m.get_rates(1) == MeterRates(0.001, 1, 0.002, 2)
    assert m.get_rates(0) is None
    assert [m.execute(1) for _ in range(3)] == [GREEN, YELLOW, RED]
    m.reset_rates()
    assert m.execute(1) == GREEN
    with pytest.raises(ValueError):
        m.set_rates(0.002, 1, 0.001, 1)  # CIR above PIR
    with pytest.raises(IndexError):
        m.set_rates(0.001, 1, 0.002, 1, index=3)
