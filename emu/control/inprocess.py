"""SwitchHandle over an in-process embedded switch (`emu.p4.api.P4Switch`), by name.

Used by the virtual-time fabric (emu.sim) and tests: no gRPC in between, the same
entries the P4Runtime handle would send.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from emu.p4 import tables as T

from .errors import SouthboundError
from .southbound import (
    CloneSession,
    MatchValue,
    MulticastGroup,
    ProfileGroup,
    ProfileMember,
    TableEntry,
)


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

    @contextlib.contextmanager
    def _refusal(self, where: str) -> Iterator[None]:
        """The engine's refusal of a write (a TableError...) as a SouthboundError."""
        try:
            yield
        except SouthboundError:
            raise
        except Exception as exc:
            raise SouthboundError(f"{self.name}: {where} failed: {exc}") from exc

    def insert_entry(self, entry: TableEntry) -> None:
        t = self._table(entry.table)
        with self._refusal(f"{entry.table}: insert"):
            if entry.member_id is not None or entry.group_id is not None:
                t.insert(_match(entry.match), member_id=entry.member_id,
                         group_id=entry.group_id, priority=entry.priority or 0)
            else:
                t.insert(_match(entry.match), self._call(entry), priority=entry.priority or 0)

    def _profile(self, name: str) -> Any:
        try:
            return self.switch.sw.action_profiles[name]
        except KeyError:
            raise SouthboundError(f"{self.name}: the program has no action profile "
                                  f"{name!r}") from None

    def insert_member(self, member: ProfileMember) -> None:
        prof = self._profile(member.profile)
        call = T.ActionCall(member.action, self._params(member.action, member.params))
        with self._refusal(f"{member.profile}: member insert"):
            prof.insert_member(member.member_id, call)

    def insert_group(self, group: ProfileGroup) -> None:
        prof = self._profile(group.profile)
        with self._refusal(f"{group.profile}: group insert"):
            prof.insert_group(group.group_id, list(group.members), max_size=group.max_size)

    def insert_multicast_group(self, group: MulticastGroup) -> None:
        with self._refusal(f"multicast group {group.group_id}"):
            self.switch.sw.pre.insert_multicast_group(group.group_id, group.replicas)

    def insert_clone_session(self, session: CloneSession) -> None:
        with self._refusal(f"clone session {session.session_id}"):
            self.switch.sw.pre.insert_clone_session(
                session.session_id, session.replicas, class_of_service=session.class_of_service,
                packet_length_bytes=session.packet_length_bytes)

    def modify_entry(self, entry: TableEntry) -> None:
        t = self._table(entry.table)
        with self._refusal(f"{entry.table}: modify"):
            t.modify(_match(entry.match), entry.priority or 0, action=self._call(entry))

    def delete_entry(self, table: str, match: Mapping[str, MatchValue]) -> None:
        with self._refusal(f"{table}: delete"):
            self._table(table).delete(_match(match), 0)

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None:
        t = self._table(table)
        with self._refusal(f"{table}: default"):
            t.set_default_action(T.ActionCall(action, self._params(action, params)))

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
