"""STF commands as data: one dataclass per command kind, plus StfError.

Values that depend on the program (key values, action parameters) stay strings; parse them
with `emu.p4.stf.values` once the key's match kind and width are known.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from emu.p4.stf.expect import ExpectPattern

__all__ = [
    "Add",
    "CheckCounter",
    "CounterRead",
    "CounterReset",
    "CounterWrite",
    "Expect",
    "McMgrpCreate",
    "McMgrpDestroy",
    "McNodeAssociate",
    "McNodeCreate",
    "McNodeDestroy",
    "McNodeDissociate",
    "MeterSetRates",
    "MirroringAdd",
    "MirroringDelete",
    "NoPacket",
    "Packet",
    "PvsAdd",
    "PvsClear",
    "PvsRemove",
    "RegisterRead",
    "RegisterReset",
    "RegisterWrite",
    "RemoveAll",
    "SetDefault",
    "SetQueueDepth",
    "SetQueueRate",
    "StfCommand",
    "StfError",
    "Unknown",
    "Wait",
    "expectations",
]


class StfError(Exception):
    """A syntax error in an STF file, located as filename:line."""

    def __init__(self, filename: str, line: int, message: str) -> None:
        super().__init__(f"{filename}:{line}: {message}")
        self.filename = filename
        self.line = line
        self.message = message


@dataclass(frozen=True)
class StfCommand:
    """Base of all commands; `line` is the 1-based source line."""

    line: int = field(default=0, kw_only=True, compare=False)


@dataclass(frozen=True)
class Packet(StfCommand):
    """`packet <port> <hex>`: inject a frame."""

    port: int
    data: bytes


@dataclass(frozen=True)
class Expect(StfCommand):
    """`expect <port> [<hex with *>[$]]`; pattern None = one packet of any content."""

    port: int
    pattern: ExpectPattern | None


@dataclass(frozen=True)
class NoPacket(StfCommand):
    """`no_packet` (p4c's STF grammar): no further output is expected."""


@dataclass(frozen=True)
class Add(StfCommand):
    """`add <table> [prio] field:value ... action(param:value, ...) [= handle]`.

    Among matching ternary entries the larger STF priority wins (bmv2stf.py hands BMv2
    10000 - prio, and BMv2 prefers the smaller number).
    """

    table: str
    priority: int | None
    keys: tuple[tuple[str, str], ...]
    action: str
    params: tuple[tuple[str, str], ...]
    handle: str | None = None


@dataclass(frozen=True)
class SetDefault(StfCommand):
    """`setdefault <table> action(param:value, ...)`."""

    table: str
    action: str
    params: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RemoveAll(StfCommand):
    """`remove all`: delete every table entry."""


@dataclass(frozen=True)
class CheckCounter(StfCommand):
    """`check_counter <name>(<index or $handle>) [packets|bytes <op> <value>]`."""

    counter: str
    index: str
    kind: str | None = None  # "packets" or "bytes"
    op: str | None = None  # ==, !=, <, <=, >, >=
    value: int | None = None


@dataclass(frozen=True)
class Wait(StfCommand):
    """`wait`: let queued packets drain before going on."""


@dataclass(frozen=True)
class McMgrpCreate(StfCommand):
    group: int


@dataclass(frozen=True)
class McMgrpDestroy(StfCommand):
    group: int


@dataclass(frozen=True)
class McNodeCreate(StfCommand):
    """`mc_node_create <rid> <port> ...`; handles are 0, 1, 2, ... in creation order."""

    rid: int
    ports: tuple[int, ...]


@dataclass(frozen=True)
class McNodeAssociate(StfCommand):
    group: int
    handle: int


@dataclass(frozen=True)
class McNodeDissociate(StfCommand):
    group: int
    handle: int


@dataclass(frozen=True)
class McNodeDestroy(StfCommand):
    handle: int


@dataclass(frozen=True)
class MirroringAdd(StfCommand):
    """`mirroring_add <session> <port>` (BMv2 CLI)."""

    session: int
    port: int


@dataclass(frozen=True)
class MirroringDelete(StfCommand):
    session: int


@dataclass(frozen=True)
class RegisterRead(StfCommand):
    register: str
    index: int


@dataclass(frozen=True)
class RegisterWrite(StfCommand):
    register: str
    index: int
    value: int


@dataclass(frozen=True)
class RegisterReset(StfCommand):
    register: str


@dataclass(frozen=True)
class CounterRead(StfCommand):
    counter: str
    index: int


@dataclass(frozen=True)
class CounterWrite(StfCommand):
    counter: str
    index: int
    packets: int
    bytes: int


@dataclass(frozen=True)
class CounterReset(StfCommand):
    counter: str


@dataclass(frozen=True)
class MeterSetRates(StfCommand):
    """`meter_set_rates <name> <index> <rate>:<burst> ...` (rates per microsecond)."""

    meter: str
    index: int
    rates: tuple[tuple[float, int], ...]


@dataclass(frozen=True)
class SetQueueDepth(StfCommand):
    """`set_queue_depth <packets> [<port>]` (BMv2 CLI); port None = all ports."""

    depth_pkts: int
    port: int | None = None


@dataclass(frozen=True)
class SetQueueRate(StfCommand):
    """`set_queue_rate <packets per second> [<port>]` (BMv2 CLI); port None = all ports."""

    rate_pps: int
    port: int | None = None


@dataclass(frozen=True)
class PvsAdd(StfCommand):
    """BMv2 CLI `pvs_add <value_set> <value>`: one member (struct members as one
    concatenated value, first field most significant)."""

    value_set: str
    value: int


@dataclass(frozen=True)
class PvsRemove(StfCommand):
    """`pvs_remove <value_set> <value>`."""

    value_set: str
    value: int


@dataclass(frozen=True)
class PvsClear(StfCommand):
    """`pvs_clear <value_set>`."""

    value_set: str


@dataclass(frozen=True)
class Unknown(StfCommand):
    """A command this parser does not know (only with strict=False)."""

    keyword: str
    text: str


def expectations(
    commands: Iterable[StfCommand],
) -> tuple[dict[int, list[ExpectPattern | None]], list[int]]:
    """Expected patterns per port, in order, and every port named by packet/expect.

    The pair feeds `expect.check_outputs(expected, outputs, checked_ports)`.
    """
    expected: dict[int, list[ExpectPattern | None]] = {}
    named: set[int] = set()
    for cmd in commands:
        if isinstance(cmd, Expect):
            expected.setdefault(cmd.port, []).append(cmd.pattern)
            named.add(cmd.port)
        elif isinstance(cmd, Packet):
            named.add(cmd.port)
    return expected, sorted(named)
