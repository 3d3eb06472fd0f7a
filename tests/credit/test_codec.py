"""The credit update frame (EtherType 0x88B5): byte layout, validation, and IBA's
modulo-4096 fit rule."""

from __future__ import annotations

import pytest

from emu.core.credit import (
    FLAG_REQUEST,
    CreditSettings,
    CreditUpdate,
    blocks,
    credit_frame,
    fits,
    parse_credit,
)
from emu.core.pfc import FlowControl

SRC = "02:00:00:00:00:01"


def test_byte_layout():
    f = credit_frame(SRC, 3, 0x123, 0xABC)
    assert len(f) == 60
    assert f[:22] == bytes.fromhex("0180c200000e" "020000000001" "88b5" "01" "00" "03" "00"
                                   "0123" "0abc")
    assert f[22:] == bytes(38)
    r = credit_frame(SRC, 7, 4095, 0, FLAG_REQUEST)
    assert r[14:22] == bytes.fromhex("01" "01" "07" "00" "0fff" "0000")
    assert parse_credit(f) == CreditUpdate(3, 0x123, 0xABC, 0)
    assert parse_credit(r) == CreditUpdate(7, 4095, 0, FLAG_REQUEST)


@pytest.mark.parametrize(("offset", "value", "why"), [
    (14, 2, "bad_version"), (15, 0x80, "bad_flags"), (16, 8, "bad_priority"),
    (18, 0x10, "bad_value"), (20, 0xF0, "bad_value"), (12, 0x08, "not_credit")])
def test_malformed_frames_are_named(offset, value, why):
    f = bytearray(credit_frame(SRC, 3, 1, 2))
    f[offset] = value
    assert parse_credit(bytes(f)) == why
    assert parse_credit(credit_frame(SRC, 3, 1, 2)[:59]) == "short"


def test_bad_values_are_refused_clearly():
    with pytest.raises(ValueError, match="priority"):
        credit_frame(SRC, 8, 0, 0)
    with pytest.raises(ValueError, match="12-bit"):
        credit_frame(SRC, 3, 4096, 0)
    with pytest.raises(ValueError, match="flags"):
        credit_frame(SRC, 3, 0, 0, 2)
    with pytest.raises(ValueError, match="two maximum frames"):
        CreditSettings(buffer_bytes=1000)
    with pytest.raises(ValueError, match="off, pfc or credit"):
        FlowControl(mode="credits")  # type: ignore[arg-type]


def test_blocks_round_up_to_64_bytes():
    assert [blocks(n) for n in (1, 64, 65, 1500, 9000)] == [1, 1, 2, 24, 141]


def test_fit_rule_modulo_4096():
    assert fits(100, 0, 100) and not fits(100, 0, 101)
    # the limit has wrapped past 4095 while the count has not
    assert fits(10, 4090, 16) and not fits(10, 4090, 17)
    # both wrapped
    assert fits(4, 4000, 100) and not fits(4, 4000, 101)
    # the limit 2048 blocks ahead is the most: "ahead" by more reads as "behind"
    assert fits(2048, 0, 0) and not fits(2049, 0, 0)
    # a limit behind the count (the peer's view is older) never lets anything out
    assert not fits(0, 10, 1)


def test_credit_mode_is_enabled_and_pfc_stays_default_off():
    assert FlowControl(mode="credit").enabled
    assert not FlowControl().enabled


def test_credit_settings_survive_the_daemon_config_round_trip():
    """The run hands a switch its flow control as FlowControl.to_dict (the daemon's
    --pfc-config file); credit settings other than the defaults used to be dropped
    there, so a Mininet switch ran with the default 64 KiB buffer whatever was asked."""
    fc = FlowControl(mode="credit", credit=CreditSettings(buffer_bytes=32 * 1024,
                                                          update_blocks=8,
                                                          refresh_bytes=4096))
    assert FlowControl.from_dict(fc.to_dict()) == fc


def test_bad_credit_settings_in_a_config_are_named():
    d = FlowControl(mode="credit").to_dict()
    d["credit"]["buffer_bytes"] = 100
    with pytest.raises(ValueError, match="buffer_bytes"):
        FlowControl.from_dict(d)
    d["credit"] = {"bufer_bytes": 65536}
    with pytest.raises(ValueError, match="bufer_bytes"):
        FlowControl.from_dict(d)
