"""STF output expectations: pattern matching and a readable per-port diff.

Rules (p4c backends/bmv2/bmv2stf.py comparePacket/checkOutputs):

- `*` matches any one hex digit; a trailing `$` requires the exact length, otherwise the
  pattern only has to match a prefix of the packet.
- `expect <port>` without data stands for one packet of any content.
- Per port, packets are compared in order and their count must equal the number of
  expectations. Every port named by a `packet` or `expect` command is checked (a port that
  only receives input must then emit nothing); other ports are not captured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["ExpectPattern", "StfCheckResult", "check_outputs", "diff_port"]

_HEX = "0123456789ABCDEF"


@dataclass(frozen=True)
class ExpectPattern:
    """Hex digits and `*` (upper case, no spaces); `exact` for a trailing `$`."""

    nibbles: str
    exact: bool = False
    _value: int = field(default=0, init=False, repr=False, compare=False)
    _mask: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        value = mask = 0
        for ch in self.nibbles:
            value <<= 4
            mask <<= 4
            if ch == "*":
                continue
            d = _HEX.find(ch)
            if d < 0:
                raise ValueError(f"bad character {ch!r} in expected packet")
            value |= d
            mask |= 0xF
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_mask", mask)

    @classmethod
    def parse(cls, text: str) -> ExpectPattern:
        """From STF text: whitespace ignored, optional trailing `$`."""
        s = "".join(text.split()).upper()
        exact = s.endswith("$")
        if exact:
            s = s[:-1]
        if not s:
            raise ValueError("empty expected packet")
        return cls(s, exact)

    def matches(self, data: bytes) -> bool:
        n = len(self.nibbles)
        have = len(data) * 2
        if have < n or (self.exact and have != n):
            return False
        nbytes = (n + 1) >> 1
        got = int.from_bytes(data[:nbytes], "big")
        if n & 1:
            got >>= 4
        return (got & self._mask) == self._value

    def first_difference(self, data: bytes) -> int | None:
        """Nibble index of the first difference (length counts), or None if it matches."""
        got = data.hex().upper()
        for i, ch in enumerate(self.nibbles):
            if i >= len(got):
                return i
            if ch != "*" and ch != got[i]:
                return i
        if self.exact and len(got) != len(self.nibbles):
            return len(self.nibbles)
        return None

    def __str__(self) -> str:
        return self.nibbles + ("$" if self.exact else "")


def _grouped(hexstr: str) -> str:
    return " ".join(hexstr[i : i + 8] for i in range(0, len(hexstr), 8))


def _render_one(index: int, pattern: ExpectPattern | None, data: bytes | None) -> list[str]:
    got = data.hex().upper() if data is not None else None
    if pattern is None:
        want = "(any packet)"
    else:
        want = _grouped(str(pattern))
    lines = [f"  #{index}: expected {want}"]
    if got is None:
        lines.append("       got      (nothing)")
        return lines
    lines.append(f"       got      {_grouped(got)}")
    if pattern is not None and data is not None:
        pos = pattern.first_difference(data)
        if pos is not None:
            # Marker under the first differing digit, accounting for the grouping spaces.
            col = pos + pos // 8
            lines.append("                " + " " * col + "^ first difference at byte "
                         f"{pos // 2}" + (" (length)" if pos >= min(len(got), len(pattern.nibbles))
                                          else ""))
    return lines


def diff_port(port: int, expected: Sequence[ExpectPattern | None], got: Sequence[bytes]) -> str:
    """A readable expected-vs-got rendering of one port (every packet, mismatches marked)."""
    ok = len(expected) == len(got) and all(
        p is None or p.matches(d) for p, d in zip(expected, got, strict=False)
    )
    head = f"port {port}: expected {len(expected)} packet(s), got {len(got)}" + (
        "" if ok else "  <-- MISMATCH")
    lines = [head]
    for i in range(max(len(expected), len(got))):
        pattern = expected[i] if i < len(expected) else None
        data = got[i] if i < len(got) else None
        if i >= len(expected):
            lines.append(f"  #{i}: expected (nothing)")
            lines.append(f"       got      {_grouped(data.hex().upper()) if data else ''}")
            continue
        lines.extend(_render_one(i, pattern, data))
    return "\n".join(lines)


@dataclass
class StfCheckResult:
    ok: bool
    problems: list[str]
    report: str


def check_outputs(
    expected: Mapping[int, Sequence[ExpectPattern | None]],
    outputs: Mapping[int, Sequence[bytes]],
    checked_ports: Sequence[int] = (),
) -> StfCheckResult:
    """Compare captured `outputs` with `expected` per port.

    `checked_ports` adds ports that must emit nothing unless expected (the ports named by
    `packet` commands); see `stf.expectations()` to build both from parsed commands.
    """
    ports = sorted(set(expected) | set(checked_ports))
    problems: list[str] = []
    blocks: list[str] = []
    for port in ports:
        want = list(expected.get(port, ()))
        got = list(outputs.get(port, ()))
        if len(want) != len(got):
            problems.append(f"port {port}: expected {len(want)} packet(s), got {len(got)}")
        for i, (p, d) in enumerate(zip(want, got, strict=False)):
            if p is not None and not p.matches(d):
                problems.append(f"port {port}: packet #{i} differs")
        if want or got:
            blocks.append(diff_port(port, want, got))
    return StfCheckResult(not problems, problems, "\n".join(blocks))
