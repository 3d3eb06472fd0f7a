"""Option types: bad values are one-line argparse errors, good ones convert."""

import argparse

import pytest

from emu.core import argtypes


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "0", "-1", "1e400", "x", ""])
def test_positive_refuses_what_is_not_a_finite_positive_number(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        argtypes.positive(text)


def test_positive_and_integer_convert() -> None:
    assert argtypes.positive("2.5") == 2.5 and argtypes.positive("1e-3") == 0.001
    within = argtypes.integer(1, 8, "queues")
    assert within("8") == 8
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be 1..8 \(queues\), got 9"):
        within("9")
    with pytest.raises(argparse.ArgumentTypeError, match="not an integer"):
        within("2.0")


def test_lists() -> None:
    ports = argtypes.integers(0, 510)
    assert ports("1, 2,3") == [1, 2, 3]
    for bad in ("", ",", "1,1", "1,511", "1,a"):
        with pytest.raises(argparse.ArgumentTypeError):
            ports(bad)
    names = argtypes.one_of_each(("paper", "hpcc"))
    assert names("hpcc,paper") == ["hpcc", "paper"]
    for bad in ("", "hpcc,nvidia"):
        with pytest.raises(argparse.ArgumentTypeError):
            names(bad)
