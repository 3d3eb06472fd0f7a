"""SwitchHandle over an in-process embedded switch (`emu.p4.api.P4Switch`), by name.

Used by the virtual-time fabric (emu.sim) and tests: no gRPC in between, the same
entries the P4Runtime handle would send.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from emu.p4 import tables as T

from .errors import SouthboundError
from .southbound import MatchValue, TableEntry


def _match(match: Mapping[str, MatchValue]) -> dict[str | int, Any]:
    """The engine's matches: Lpm, Ternary, Range and Optional already are; an int is an
    exact match."""
    return {name: v if isinstance(v, (T.Lpm, T.Ternary, T.Range, T.Optional)) else T.Exact(v)
            for name, v in match.items()}


class InProcessSwitchHandle:
    def __init__(self, name: str, switch: Any) -> None:
        self.name = name
        self.switch = switch  # emu.p4.api.P4Switch

    def _params(self, action: str, params: Mapping[str, int]) -> tuple[int, ...]:
        try:
            order = [p[0] for p in self.switch.program.actions[action]]
        except KeyError:
            raise SouthboundError(f"{self.name}: the program has no action {action!r}") from None
        if set(order) != set(params):
            raise SouthboundError(f"{action}: parameters {order}, got {sorted(params)}")
        return tuple(params[p] for p in order)

    def _call(self, entry: TableEntry) -> T.ActionCall:
        return T.ActionCall(entry.action, self._params(entry.action, entry.params))

    def _table(self, name: str) -> Any:
        try:
            return self.switch.tables[name]
        except KeyError:
            raise SouthboundError(f"{self.name}: the program has no table {name!r}") from None

    def insert_entry(self, entry: TableEntry) -> None:
        t = self._table(entry.table)
        try:
            t.insert(_match(entry.match), self._call(entry), priority=entry.priority or 0)
        except SouthboundError:
            raise
        except Exception as exc:
            raise SouthboundError(f"{self.name}: {entry.table}: insert failed: {exc}") from exc

    def modify_entry(self, entry: TableEntry) -> None:
        t = self._table(entry.table)
        try:
            t.modify(_match(entry.match), entry.priority or 0, action=self._call(entry))
        except SouthboundError:
            raise
        except Exception as exc:
            raise SouthboundError(f"{self.name}: {entry.table}: modify failed: {exc}") from exc

    def delete_entry(self, table: str, match: Mapping[str, MatchValue]) -> None:
        try:
            self._table(table).delete(_match(match), 0)
        except SouthboundError:
            raise
        except Exception as exc:
            raise SouthboundError(f"{self.name}: {table}: delete failed: {exc}") from exc

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None:
        t = self._table(table)
        try:
            t.set_default_action(T.ActionCall(action, self._params(action, params)))
        except SouthboundError:
            raise
        except Exception as exc:
            raise SouthboundError(f"{self.name}: {table}: default failed: {exc}") from exc

    def read_counter(self, counter: str, index: int) -> tuple[int, int]:
        packets, nbytes = self.switch.counter_read(counter, index)
        return int(packets), int(nbytes)

    def read_counters(self, counter: str, indices: Sequence[int]) -> dict[int, tuple[int, int]]:
        return {i: self.read_counter(counter, i) for i in indices}

    def read_register(self, register: str, index: int) -> int:
        return int(self.switch.register_read(register, index))

    def read_registers(self, register: str, indices: Sequence[int]) -> dict[int, int]:
        return {i: self.read_register(register, i) for i in indices}

    def write_register(self, register: str, index: int, value: int) -> None:
        self.switch.register_write(register, index, value)
