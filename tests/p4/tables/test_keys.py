"""Key model: canonical forms, validation errors, priorities of program entries."""

from __future__ import annotations

import pytest

from emu.p4.tables import (
    ErrorKind,
    Exact,
    InvalidArgument,
    KeyField,
    Lpm,
    MatchKind,
    Optional,
    Range,
    Ternary,
    assign_entry_priorities,
    canonicalize_field,
    canonicalize_match,
    dont_care,
    is_dont_care,
    stf_to_bmv2_cli_priority,
    stf_to_p4rt_priority,
)

E8 = KeyField("e", MatchKind.EXACT, 8, id=1)
L32 = KeyField("l", MatchKind.LPM, 32, id=2)
T16 = KeyField("t", MatchKind.TERNARY, 16, id=3)
R16 = KeyField("r", MatchKind.RANGE, 16, id=4)
O8 = KeyField("o", MatchKind.OPTIONAL, 8, id=5)


def kind_of(exc: pytest.ExceptionInfo[InvalidArgument]) -> ErrorKind:
    return exc.value.kind


def test_exact_canonical_and_width() -> None:
    assert canonicalize_field(E8, Exact(0xff)) == Exact(0xff)
    assert canonicalize_field(E8, 7) == Exact(7)
    with pytest.raises(InvalidArgument) as ei:
        canonicalize_field(E8, Exact(0x100))
    assert kind_of(ei) is ErrorKind.INVALID_ARGUMENT
    with pytest.raises(InvalidArgument):
        canonicalize_field(E8, Exact(-1))
    with pytest.raises(InvalidArgument):
        canonicalize_field(E8, None)  # exact has no don't care
    with pytest.raises(InvalidArgument):
        canonicalize_field(E8, Ternary(1, 1))


def test_lpm_masks_value_to_prefix() -> None:
    assert canonicalize_field(L32, Lpm(0x0a0b0c0d, 16)) == Lpm(0x0a0b0000, 16)
    assert canonicalize_field(L32, Lpm(0x0a000000, 0)) == Lpm(0, 0)
    assert canonicalize_field(L32, None) == Lpm(0, 0)
    assert canonicalize_field(L32, 5) == Lpm(5, 32)
    with pytest.raises(InvalidArgument):
        canonicalize_field(L32, Lpm(0, 33))
    with pytest.raises(InvalidArgument):
        canonicalize_field(L32, Lpm(0, -1))
    with pytest.raises(InvalidArgument):
        canonicalize_field(L32, Lpm(1 << 32, 8))


def test_lpm_strict_rejects_noncanonical() -> None:
    with pytest.raises(InvalidArgument):
        canonicalize_field(L32, Lpm(0x0a0b0c0d, 16), strict=True)
    with pytest.raises(InvalidArgument):
        canonicalize_field(L32, Lpm(0, 0), strict=True)  # don't care must be omitted
    assert canonicalize_field(L32, None, strict=True) == Lpm(0, 0)
    assert canonicalize_field(L32, Lpm(0x0a0b0000, 16), strict=True) == Lpm(0x0a0b0000, 16)


def test_ternary_masks_value() -> None:
    assert canonicalize_field(T16, Ternary(0x1234, 0xff00)) == Ternary(0x1200, 0xff00)
    assert canonicalize_field(T16, Ternary(0x1234, 0)) == Ternary(0, 0)
    assert canonicalize_field(T16, 0x1234) == Ternary(0x1234, 0xffff)
    assert canonicalize_field(T16, Exact(3)) == Ternary(3, 0xffff)
    with pytest.raises(InvalidArgument):
        canonicalize_field(T16, Ternary(0, 0x1ffff))
    with pytest.raises(InvalidArgument):
        canonicalize_field(T16, Ternary(0x1234, 0xff00), strict=True)
    with pytest.raises(InvalidArgument):
        canonicalize_field(T16, Ternary(0, 0), strict=True)


def test_range_checks() -> None:
    assert canonicalize_field(R16, Range(3, 9)) == Range(3, 9)
    assert canonicalize_field(R16, 4) == Range(4, 4)
    assert canonicalize_field(R16, None) == Range(0, 0xffff)
    with pytest.raises(InvalidArgument):
        canonicalize_field(R16, Range(9, 3))
    with pytest.raises(InvalidArgument):
        canonicalize_field(R16, Range(0, 0x10000))
    with pytest.raises(InvalidArgument):
        canonicalize_field(R16, Range(0, 0xffff), strict=True)


def test_optional() -> None:
    assert canonicalize_field(O8, 3) == Optional(3)
    assert canonicalize_field(O8, None) == Optional(None)
    assert canonicalize_field(O8, Exact(3)) == Optional(3)
    with pytest.raises(InvalidArgument):
        canonicalize_field(O8, Optional(256))
    with pytest.raises(InvalidArgument):
        canonicalize_field(O8, Optional(None), strict=True)


def test_selector_field_is_not_matched() -> None:
    with pytest.raises(InvalidArgument):
        canonicalize_field(KeyField("s", MatchKind.SELECTOR, 8), 1)


def test_dont_care_helpers() -> None:
    for f in (L32, T16, R16, O8):
        assert is_dont_care(f, dont_care(f))
    assert not is_dont_care(E8, Exact(0))
    assert not is_dont_care(R16, Range(0, 5))


def test_match_sequence_and_mapping() -> None:
    fields = [E8, T16]
    assert canonicalize_match(fields, [1, None]) == (Exact(1), Ternary(0, 0))
    # By name or by P4Info id; omitted non-exact fields are don't care.
    assert canonicalize_match(fields, {"e": 1}) == (Exact(1), Ternary(0, 0))
    assert canonicalize_match(fields, {1: 1, 3: Ternary(2, 3)}) == (Exact(1), Ternary(2, 3))
    with pytest.raises(InvalidArgument):
        canonicalize_match(fields, {"t": 1})  # exact field missing
    with pytest.raises(InvalidArgument):
        canonicalize_match(fields, {"zz": 1, "e": 1})
    with pytest.raises(InvalidArgument):
        canonicalize_match(fields, {"e": 1, 1: 2})  # same field twice
    with pytest.raises(InvalidArgument):
        canonicalize_match(fields, [1])


def test_const_entries_priorities_first_wins() -> None:
    # P4Runtime "Constant Tables": lowest entry gets 1, each earlier one more.
    assert assign_entry_priorities([None] * 4, is_const=True) == [4, 3, 2, 1]
    assert assign_entry_priorities([None] * 3, is_const=False,
                                   largest_priority_wins=False) == [1, 2, 3]
    assert assign_entry_priorities([None] * 3, is_const=False, priority_delta=10) == [21, 11, 1]
    with pytest.raises(InvalidArgument):
        assign_entry_priorities([5, None], is_const=True)


def test_explicit_entry_priorities() -> None:
    # As in p4c's entryPriorities: missing ones continue from the previous by delta.
    assert assign_entry_priorities([100, None, 50, None], is_const=False) == [100, 99, 50, 49]
    assert assign_entry_priorities([10, None, None], is_const=False,
                                   largest_priority_wins=False, priority_delta=10) == [10, 20, 30]
    with pytest.raises(InvalidArgument):
        assign_entry_priorities([None, 5], is_const=False)
    with pytest.raises(InvalidArgument):
        assign_entry_priorities([1, None], is_const=False)  # would reach 0


def test_stf_priority_direction() -> None:
    # bmv2stf.py sends 10000 - prio and BMv2 picks the smallest: larger STF prio wins.
    assert stf_to_bmv2_cli_priority(10) < stf_to_bmv2_cli_priority(1)
    assert stf_to_p4rt_priority(10) > stf_to_p4rt_priority(1)
