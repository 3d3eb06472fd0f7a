"""Table entries; their direct counters are v1model CounterCells."""

from __future__ import annotations

from dataclasses import dataclass, field

from emu.p4.v1model.stateful import CounterCell  # one counter cell for direct and indirect counters

from .keys import ActionCall, MatchKey

HANDLE_BITS = 32
_HANDLE_MASK = (1 << HANDLE_BITS) - 1


# eq=False: entries are compared by identity (they sit in buckets and are removed
# with list.remove, which must not compare field by field).
@dataclass(slots=True, eq=False)
class TableEntry:
    """One installed entry (or a table's default entry, with is_default=True).

    Exactly one of `action`, `member_id`, `group_id` is set for a match entry
    (`action` for direct tables). `handle` mimics BMv2's entry handle (lowest
    free number); it breaks ties between equal priorities as BMv2 does.
    `meter_config` / `meter_state` are opaque hooks owned by the caller.
    """

    match: MatchKey
    priority: int = 0
    action: ActionCall | None = None
    member_id: int | None = None
    group_id: int | None = None
    idle_timeout_ns: int = 0
    last_hit_ns: int = 0
    counter: CounterCell = field(default_factory=CounterCell)
    meter_config: object | None = None
    meter_state: object | None = None
    metadata: bytes = b""
    controller_metadata: int = 0
    is_const: bool = False
    is_default: bool = False
    handle: int = 0
    # Lookup order key: larger wins. (effective priority << 32) + (2**32-1 - handle),
    # so equal priorities fall back to the lower handle, as in BMv2's ternary list.
    rank: int = 0
    # last_hit_ns at the time of the last idle notification (-1: never notified).
    notified_hit_ns: int = -1

    @property
    def hit(self) -> bool:
        """True for a match entry, False for the default entry (a table miss)."""
        return not self.is_default

    def time_since_last_hit(self, now_ns: int) -> int:
        return max(0, now_ns - self.last_hit_ns)


def make_rank(effective_priority: int, handle: int) -> int:
    return (effective_priority << HANDLE_BITS) + (_HANDLE_MASK - handle)
