"""Numbers in STF files: key values (exact, ternary, lpm) and action parameters.

STF passes values through to BMv2's CLI, so the accepted forms are the union of p4c's STF
lexer and what simple_switch_CLI understands:

- integers: decimal, 0x hex, 0b binary, 0o octal; IPv4 dotted quads; MAC addresses with
  colons; IPv6 addresses.
- ternary: hex/binary/octal digits with `*` as don't-care digits (`0x**01`). As p4c's
  bmv2stf.py builds the mask, it covers only the digits written: `0x0A` on a 16-bit field
  is mask 0x00FF, leaving the high byte don't-care. `value&&&mask` is accepted too.
  Decimal (and address) forms mean an exact match over the whole field.
- lpm: `value/prefix_len`; without `/`, as bmv2stf.py does, the prefix length is the
  number of non-`*` digits times bits per digit (`0x0A00****` on 32 bits is 0x0A000000/16)
  and the value is the literal with `*` read as 0; other forms mean the whole field.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

__all__ = ["KeyMatch", "parse_key", "parse_lpm", "parse_number", "parse_ternary"]

_MAC = re.compile(r"^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_BITS_PER_DIGIT = {"x": 4, "b": 1, "o": 3}
_DIGITS = {"x": "0123456789abcdef", "b": "01", "o": "01234567"}


def parse_number(text: str) -> int:
    """An integer in any STF/CLI form; ValueError if it is none of them."""
    s = text.strip()
    if not s:
        raise ValueError("empty number")
    if len(s) > 2 and s[0] == "0" and s[1] in "xXbBoO":
        return int(s[2:], {"x": 16, "b": 2, "o": 8}[s[1].lower()])
    if s.isdigit():
        return int(s)
    if _IPV4.match(s):
        return int(ipaddress.IPv4Address(s))
    if _MAC.match(s):
        return int("".join(p.zfill(2) for p in s.split(":")), 16)
    if ":" in s:
        try:
            return int(ipaddress.IPv6Address(s))
        except ipaddress.AddressValueError:
            pass
    raise ValueError(f"not a number: {text!r}")


def _masked_digits(s: str) -> tuple[int, int] | None:
    """(value, mask) of a 0x/0b/0o literal whose `*` digits are don't-care: the value
    with them read as 0, the mask over the other digits; None for any other form."""
    if not (len(s) > 2 and s[0] == "0" and s[1].lower() in _BITS_PER_DIGIT):
        return None
    base = s[1].lower()
    nbits = _BITS_PER_DIGIT[base]
    allowed = _DIGITS[base]
    value = mask = 0
    for d in s[2:].lower():
        value <<= nbits
        mask <<= nbits
        if d == "*":
            continue
        if d not in allowed:
            raise ValueError(f"bad digit {d!r} in {s!r}")
        value |= allowed.index(d)
        mask |= (1 << nbits) - 1
    return value, mask


def _value_mask(s: str, width: int | None, what: str) -> tuple[int, int]:
    """A digit form's (value, mask); any other number is exact: the whole field's mask."""
    masked = _masked_digits(s)
    if masked is not None:
        return masked
    value = parse_number(s)
    if width is None:
        raise ValueError(f"{what} {s!r} needs the key's width")
    return value, (1 << width) - 1


def parse_ternary(text: str, width: int | None = None) -> tuple[int, int]:
    """(value, mask) of a ternary key; value bits outside the mask are cleared."""
    s = text.strip()
    if "&&&" in s:
        v, m = s.split("&&&", 1)
        value, mask = parse_number(v), parse_number(m)
    else:
        value, mask = _value_mask(s, width, "ternary value")
    if width is not None:
        mask &= (1 << width) - 1
    return value & mask, mask


def parse_lpm(text: str, width: int | None = None) -> tuple[int, int]:
    """(value, prefix_len) of an lpm key."""
    s = text.strip()
    if "/" in s:
        v, plen = s.split("/", 1)
        value, prefix = parse_number(v), int(plen)
    else:
        # bmv2stf.py: the value with `*` digits zeroed, over (non-`*` digits x bits
        # per digit); the literal is a number, so short literals sit at the bottom.
        value, mask = _value_mask(s, width, "lpm value")
        prefix = mask.bit_count() if width is None else min(mask.bit_count(), width)
    if width is not None:
        if not 0 <= prefix <= width:
            raise ValueError(f"prefix length {prefix} out of range for {width} bits")
        keep = ((1 << prefix) - 1) << (width - prefix)
        value &= keep
    return value, prefix


@dataclass(frozen=True)
class KeyMatch:
    """A parsed key field: value and mask, plus the prefix length for lpm."""

    value: int
    mask: int
    prefix_len: int | None = None


def parse_key(text: str, match_kind: str, width: int) -> KeyMatch:
    """Parse one `field:value` value for a key of `match_kind` and `width` bits."""
    full = (1 << width) - 1
    kind = match_kind.lower()
    if kind in ("exact", "valid"):
        return KeyMatch(parse_number(text) & full, full)
    if kind in ("ternary", "optional"):
        value, mask = parse_ternary(text, width)
        return KeyMatch(value, mask)
    if kind == "lpm":
        value, prefix = parse_lpm(text, width)
        return KeyMatch(value, ((1 << prefix) - 1) << (width - prefix), prefix)
    raise ValueError(f"unsupported match kind {match_kind!r}")
