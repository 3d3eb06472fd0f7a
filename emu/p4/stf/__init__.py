"""p4c-style STF packet tests: the file model, its parser, value parsing, output checks.

`parse_stf(text, filename)` gives a list of command dataclasses (`model`); key values and
action parameters stay strings until `values.parse_key` / `values.parse_number` interpret
them for a known key; `expect.check_outputs` compares captured packets per port.
"""

from emu.p4.stf.expect import ExpectPattern, StfCheckResult, check_outputs, diff_port
from emu.p4.stf.model import StfCommand, StfError, expectations
from emu.p4.stf.parser import parse_stf
from emu.p4.stf.values import KeyMatch, parse_key, parse_lpm, parse_number, parse_ternary

__all__ = [
    "ExpectPattern",
    "KeyMatch",
    "StfCheckResult",
    "StfCommand",
    "StfError",
    "check_outputs",
    "diff_port",
    "expectations",
    "parse_key",
    "parse_lpm",
    "parse_number",
    "parse_stf",
    "parse_ternary",
]
