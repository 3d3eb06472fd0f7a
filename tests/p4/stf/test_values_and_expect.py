"""STF value parsing and output expectations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emu.p4.stf import (
    ExpectPattern,
    KeyMatch,
    check_outputs,
    diff_port,
    expectations,
    parse_key,
    parse_lpm,
    parse_number,
    parse_stf,
    parse_ternary,
)


def test_parse_number_forms() -> None:
    assert parse_number("42") == 42
    assert parse_number("0x0A") == 10
    assert parse_number("0B101") == 5
    assert parse_number("0o17") == 15
    assert parse_number("10.0.0.1") == 0x0A000001
    assert parse_number("00:11:22:33:44:55") == 0x001122334455
    assert parse_number("a:b:c:d:e:f") == 0x0A0B0C0D0E0F
    assert parse_number("::1") == 1
    for bad in ("", "0x", "ten", "1.2.3", "0xZZ"):
        with pytest.raises(ValueError):
            parse_number(bad)


def test_parse_ternary() -> None:
    assert parse_ternary("0x**01") == (0x0001, 0x00FF)
    assert parse_ternary("0b1*0") == (0b100, 0b101)
    assert parse_ternary("0x****0101", 32) == (0x0101, 0x0000FFFF)
    assert parse_ternary("0x0A&&&0xF0") == (0x00, 0xF0)
    # The mask covers the written digits only (bmv2stf.py): high bits are don't-care.
    assert parse_ternary("0x0A", width=16) == (0x0A, 0xFF)
    assert parse_ternary("5", width=8) == (5, 0xFF)
    assert parse_ternary("0xFFFF", width=8) == (0xFF, 0xFF)
    with pytest.raises(ValueError):
        parse_ternary("5")  # decimal needs the width
    with pytest.raises(ValueError):
        parse_ternary("0b12")


def test_parse_lpm() -> None:
    assert parse_lpm("10.0.0.0/8", 32) == (0x0A000000, 8)
    assert parse_lpm("10.1.2.3/8", 32) == (0x0A000000, 8)  # host bits cleared
    assert parse_lpm("0x0A000001", 32) == (0x0A000001, 32)
    assert parse_lpm("0x0A00****", 32) == (0x0A000000, 16)
    assert parse_lpm("7", 16) == (7, 16)
    # Digit forms count their non-`*` digits, as ternary masks cover them.
    assert parse_lpm("0o7**") == (0o700, 3)
    assert parse_lpm("0B10**", 4) == (0b1000, 2)
    assert parse_lpm("0x0A**", 16) == (0x0A00, 8)
    with pytest.raises(ValueError):
        parse_lpm("1/33", 32)
    with pytest.raises(ValueError, match="bad digit 'g'"):
        parse_lpm("0x0g**", 16)


def test_parse_key() -> None:
    assert parse_key("0x0800", "exact", 16) == KeyMatch(0x0800, 0xFFFF)
    assert parse_key("0x**01", "ternary", 16) == KeyMatch(0x0001, 0x00FF)
    assert parse_key("10.0.0.0/8", "lpm", 32) == KeyMatch(0x0A000000, 0xFF000000, 8)
    assert parse_key("0/0", "lpm", 32) == KeyMatch(0, 0, 0)
    with pytest.raises(ValueError):
        parse_key("1", "range", 8)


def test_expect_pattern_matching() -> None:
    p = ExpectPattern.parse("0000 00**")
    assert p.matches(bytes.fromhex("000000ab"))
    assert p.matches(bytes.fromhex("000000abcdef"))  # prefix match
    assert not p.matches(bytes.fromhex("000001ab"))
    assert not p.matches(bytes.fromhex("0000"))  # too short
    exact = ExpectPattern.parse("000000**$")
    assert exact.exact and exact.matches(bytes.fromhex("000000ff"))
    assert not exact.matches(bytes.fromhex("000000ff00"))
    odd = ExpectPattern.parse("abc")  # odd number of digits: a nibble prefix
    assert odd.matches(bytes.fromhex("abcd")) and not odd.matches(bytes.fromhex("abdd"))
    assert ExpectPattern.parse("aB").matches(b"\xab")
    with pytest.raises(ValueError):
        ExpectPattern.parse("$")
    assert str(exact) == "000000**$"


@given(st.binary(min_size=1, max_size=32), st.data())
def test_expect_pattern_agrees_with_hex_string_rule(data: bytes, draw: st.DataObject) -> None:
    """matches() equals the bmv2stf rule: per-digit compare, '*' skips, prefix unless '$'."""
    got = data.hex().upper()
    n = draw.draw(st.integers(1, len(got) + 2))
    stars = draw.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    flip = draw.draw(st.integers(-1, n - 1))
    exact = draw.draw(st.booleans())
    chars = []
    for i in range(n):
        c = got[i] if i < len(got) else "0"
        if i == flip:
            c = "F" if c != "F" else "E"
        chars.append("*" if stars[i] else c)
    pattern = ExpectPattern("".join(chars), exact)
    want = len(got) >= n and all(c == "*" or c == got[i] for i, c in enumerate(chars))
    if exact:
        want = want and len(got) == n
    assert pattern.matches(data) == want
    assert (pattern.first_difference(data) is None) == want


STF = """\
packet 0 01020304
expect 1 0102****
expect 1 ff$
expect 2
packet 3 00
"""


def test_check_outputs_pass_and_fail() -> None:
    expected, ports = expectations(parse_stf(STF))
    assert ports == [0, 1, 2, 3]
    good = {1: [bytes.fromhex("01020304"), b"\xff"], 2: [b"anything"], 9: [b"ignored"]}
    res = check_outputs(expected, good, ports)
    assert res.ok and res.problems == []

    bad = {1: [bytes.fromhex("01030304")], 0: [b"\x01"]}
    res = check_outputs(expected, bad, ports)
    assert not res.ok
    assert "port 0: expected 0 packet(s), got 1" in res.problems
    assert "port 1: expected 2 packet(s), got 1" in res.problems
    assert "port 1: packet #0 differs" in res.problems
    assert "port 2: expected 1 packet(s), got 0" in res.problems
    assert "port 1: expected 2 packet(s), got 1  <-- MISMATCH" in res.report


def test_diff_port_marks_first_difference() -> None:
    text = diff_port(1, [ExpectPattern.parse("0102 0304 0506$")], [bytes.fromhex("0102030405FF")])
    lines = text.splitlines()
    assert lines[0].endswith("<-- MISMATCH")
    assert "expected 01020304 0506$" in lines[1]
    assert "got      01020304 05FF" in lines[2]
    # The caret sits under the first differing digit (index 10, after one group space).
    assert lines[3].index("^") == lines[2].index("05FF") + 2
    assert "byte 5" in lines[3]
    ok = diff_port(2, [None], [b"\x00"])
    assert "MISMATCH" not in ok and "(any packet)" in ok
