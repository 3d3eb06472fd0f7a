import pytest

from emu.topo import units
from emu.topo.units import UnitError, format_delay, format_rate, parse_delay, parse_rate


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("10Mbps", 10_000_000),
        ("1Gbps", 1_000_000_000),
        ("100Kbps", 100_000),
        ("100kbps", 100_000),
        ("2.5Gbps", 2_500_000_000),
        ("500bps", 500),
        (" 20 Mbps ", 20_000_000),
        (1234, 1234),
        ("1234", 1234),
    ],
)
def test_parse_rate(text: object, bps: int) -> None:
    assert parse_rate(text) == bps


@pytest.mark.parametrize(
    "bad", ["10MBps", "10Mb", "fast", "", "-5Mbps", "0Mbps", 0, -3, True, 1.5, "1.5bps", None]
)
def test_parse_rate_rejects(bad: object) -> None:
    with pytest.raises(UnitError):
        parse_rate(bad)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("20us", 20_000),
        ("1ms", 1_000_000),
        ("500ns", 500),
        ("0", 0),
        (0, 0),
        ("2s", 2 * 10**9),
        ("1.5us", 1500),
        ("0us", 0),
        ("3µs", 3000),
    ],
)
def test_parse_delay(text: object, ns: int) -> None:
    assert parse_delay(text) == ns


@pytest.mark.parametrize("bad", ["20", 20, "-1us", "1.5ns", "20 parsecs", "us", True, None])
def test_parse_delay_rejects(bad: object) -> None:
    with pytest.raises(UnitError):
        parse_delay(bad)


def test_negative_messages_are_specific() -> None:
    with pytest.raises(UnitError, match="must be positive"):
        parse_rate("-5Mbps")
    with pytest.raises(UnitError, match="must not be negative"):
        parse_delay("-5us")
    with pytest.raises(UnitError, match="needs a unit"):
        parse_delay(7)


@pytest.mark.parametrize("bps", [1, 999, 20_000_000, 2_500_000_000, 10**12, 1_500])
def test_format_rate_round_trips(bps: int) -> None:
    assert parse_rate(format_rate(bps)) == bps


def test_format_examples() -> None:
    assert format_rate(20_000_000) == "20Mbps"
    assert format_rate(2_500_000_000) == "2.5Gbps"
    assert format_delay(20_000) == "20us"
    assert format_delay(0) == "0"
    assert format_delay(1_500) == "1.5us"
    for ns in (1, 1_500, 20_000, 10**6, 3 * 10**9):
        assert parse_delay(format_delay(ns)) == ns


@pytest.mark.parametrize(("text", "n"), [
    ("4096", 4096), ("64K", 65536), ("1M", 1 << 20), (" 1.5M ", 3 << 19), ("64KB", 65536),
    ("64KiB", 65536), ("1G", 1 << 30), (7, 7), ("2047M", 2047 << 20)])
def test_parse_message_size(text: object, n: int) -> None:
    assert units.parse_message_size(text) == n


@pytest.mark.parametrize("bad", [
    # inf and 1e400K raised OverflowError out of `emu run --size` (a traceback).
    "inf", "nan", "1e400K", "-1", "0", "0.3", "x", "64Q", True, 1.5, "2G", 1 << 31])
def test_parse_message_size_rejects(bad: object) -> None:
    with pytest.raises(UnitError):
        units.parse_message_size(bad)
