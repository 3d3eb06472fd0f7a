"""An STF file's packets as crosscheck input, for the tests that crosscheck STF programs."""

from __future__ import annotations

from pathlib import Path

from emu import crosscheck as X
from emu.p4.stf.model import Expect
from emu.p4.stf.model import Packet as StfPacket
from emu.p4.stf.parser import parse_stf


def stf_packets(stf: Path, *, strict: bool = True) -> tuple[list[X.Packet], list[int]]:
    """The STF file's packets, each padded to an Ethernet frame's least 60 bytes (both
    sides get the same frame), and the ports 0 to 3 with those its packets and
    expectations name (ports from 64 up, such as a CPU port, left out)."""
    cmds = parse_stf(stf.read_text(), str(stf), strict=strict)
    packets = [X.Packet(c.port, c.data.ljust(60, b"\0")) for c in cmds
               if isinstance(c, StfPacket) and c.port < 64]
    ports = {c.port for c in cmds if isinstance(c, StfPacket | Expect) and c.port < 64}
    return packets, sorted(ports | {0, 1, 2, 3})
