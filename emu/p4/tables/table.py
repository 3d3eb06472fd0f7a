"""Match-action tables: control-plane writes/reads and the per-packet lookup.

Identity. An entry is identified by its canonical match key plus its priority
(P4Runtime TableEntry: "match and priority uniquely identify an entry"). Tables
with a ternary, range or optional field need a priority in 1..2**31-1; all
other tables need priority 0 (INVALID_ARGUMENT otherwise).

Lookup (see matchers.py for the structures): exact tables use one dict probe;
exact+single-lpm tables use longest prefix; tables with ternary/range/optional
fields use the priority -- larger wins (P4Runtime convention; set
largest_priority_wins=False for the P4 table property of that name) and among
equal priorities the entry with the lower BMv2-style handle wins, as in BMv2's
ternary entry list (with no deletes in between: the entry added first). An lpm
field in a priority table is just a mask; its prefix length does not matter.

Hot path for generated code:
    entry = table.apply(key)      # key: tuple of the matched fields' values
    entry.hit                     # False when it is the default entry (miss)
    entry.action / member_id / group_id, entry.counter.count(nbytes)
`table.lookup(key)` returns None on a miss instead of the default entry.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .action_profile import ActionProfile
from .entry import CounterCell, TableEntry, make_rank
from .errors import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    TableError,
)
from .keys import (
    NO_ACTION,
    PRIORITY_KINDS,
    PRIORITY_MAX,
    ActionCall,
    ActionSpec,
    FieldMatchInput,
    KeyField,
    MatchKey,
    MatchKind,
    action_specs,
    assign_entry_priorities,
    canonicalize_match,
    check_scope,
    validate_action,
)
from .matchers import Key, make_matcher


class _Keep:
    """Sentinel type: 'leave this field unchanged' in modify()."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = _Keep()

MatchInput = Sequence[FieldMatchInput] | Mapping[str | int, FieldMatchInput]


@dataclass(frozen=True, slots=True)
class InitialEntry:
    """An entry from the program's `entries` / `const entries` table property."""

    match: Sequence[FieldMatchInput]
    action: ActionCall
    priority: int | None = None  # explicit `priority = N:` prefix, if any
    is_const: bool = False  # `const` before an entry in a non-const `entries` list


class Table:
    """One P4 table instance. See the module docstring for the semantics."""

    lookup: Callable[[Key], TableEntry | None]
    apply: Callable[[Key], TableEntry]

    def __init__(self, name: str, key: Sequence[KeyField], *, table_id: int = 0,
                 size: int = 1024, actions: Sequence[ActionSpec] | None = None,
                 default_action: ActionCall | None = None,
                 const_default_action: bool = False, is_const: bool = False,
                 implementation: ActionProfile | None = None,
                 support_timeout: bool = False, largest_priority_wins: bool = True,
                 priority_delta: int = 1, clock: Callable[[], int] | None = None,
                 direct_counter: bool = True, direct_meter: bool = True) -> None:
        self.name = name
        self.table_id = table_id
        self.key_fields: tuple[KeyField, ...] = tuple(key)
        self.match_fields = tuple(f for f in self.key_fields if f.kind is not MatchKind.SELECTOR)
        self.selector_fields = tuple(f for f in self.key_fields if f.kind is MatchKind.SELECTOR)
        kinds = [f.kind for f in self.match_fields]
        self.needs_priority = any(k in PRIORITY_KINDS for k in kinds)
        if not self.needs_priority and kinds.count(MatchKind.LPM) > 1:
            raise InvalidArgument(f"{name}: at most one lpm field without ternary/range/optional")
        if size < 0:
            raise InvalidArgument(f"{name}: size must be >= 0")
        self.size = size
        self.is_const = is_const
        self.const_default_action = const_default_action
        self.implementation = implementation
        self.support_timeout = support_timeout
        # Whether entries may carry counter data / a meter config (P4Runtime: only with
        # a direct counter / meter; the default takes them, for STF and the target).
        self.direct_counter = direct_counter
        self.direct_meter = direct_meter
        self.largest_priority_wins = largest_priority_wins
        self.priority_delta = priority_delta
        self._clock = clock or time.monotonic_ns
        self._specs = action_specs(actions)
        self.actions: tuple[ActionSpec, ...] = tuple(actions or ())

        self._entries: dict[tuple[MatchKey, int], TableEntry] = {}  # insertion order
        self._free_handles: list[int] = []
        self._next_handle = 0
        self._matcher = make_matcher(self.match_fields)

        initial = self._check_default(
            default_action if default_action is not None else NO_ACTION)
        self._initial_default = initial
        self.default_entry = TableEntry(match=(), action=initial, is_default=True,
                                        is_const=const_default_action)
        self._bind_lookup()

    # -- hot path ----------------------------------------------------------

    def _bind_lookup(self) -> None:
        inner = self._matcher.lookup
        lookup: Callable[[Key], TableEntry | None]
        if self.support_timeout:
            clock = self._clock

            def timed_lookup(key: Key) -> TableEntry | None:
                e = inner(key)
                if e is not None:
                    e.last_hit_ns = clock()
                return e
            lookup = timed_lookup
        else:
            lookup = inner
        default = self.default_entry

        def apply(key: Key) -> TableEntry:
            # Entries are always truthy, so `or` selects the default only on a miss.
            return lookup(key) or default

        self.lookup = lookup
        self.apply = apply

    # -- helpers -----------------------------------------------------------

    def _canon(self, match: MatchInput, strict: bool) -> MatchKey:
        return canonicalize_match(self.match_fields, match, strict=strict)

    def _check_priority(self, priority: int) -> None:
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise InvalidArgument(f"{self.name}: priority must be an int")
        if self.needs_priority:
            if not 0 < priority <= PRIORITY_MAX:
                raise InvalidArgument(
                    f"{self.name}: priority must be in 1..{PRIORITY_MAX} for a table with "
                    f"ternary/range/optional fields, got {priority}")
        elif priority != 0:
            raise InvalidArgument(
                f"{self.name}: priority must be 0 for a table without ternary/range/optional "
                f"fields, got {priority}")

    def _check_default(self, action: ActionCall) -> ActionCall:
        specs = self._specs
        if specs is not None and action == NO_ACTION and NO_ACTION.action not in specs:
            specs = None  # NoAction is always a valid default, listed or not
        return validate_action(specs, action, for_default=True, where=self.name)

    def _new_handle(self) -> int:
        if self._free_handles:
            return heapq.heappop(self._free_handles)
        h = self._next_handle
        self._next_handle += 1
        return h

    def _check_target(self, action: ActionCall | None, member_id: int | None,
                      group_id: int | None) -> None:
        """The entry's action / member / group suits the table (no state consulted, so
        a malformed entry is INVALID_ARGUMENT whether or not its key is taken)."""
        given = sum(x is not None for x in (action, member_id, group_id))
        if given != 1:
            raise InvalidArgument(
                f"{self.name}: give exactly one of action, member_id, group_id")
        prof = self.implementation
        if prof is None:
            if action is None:
                raise InvalidArgument(f"{self.name}: direct table entries need an action")
        elif action is not None:
            raise InvalidArgument(
                f"{self.name}: entries of a table with an action profile need a member or group")
        elif group_id is not None and not prof.with_selector:
            raise InvalidArgument(f"{self.name}: groups need an action selector")

    def _ref_target(self, member_id: int | None, group_id: int | None) -> None:
        """Reference the entry's member or group (its target passed _check_target)."""
        prof = self.implementation
        if prof is None:
            return
        if member_id is not None:
            prof.ref_member(member_id)
        elif group_id is not None:
            prof.ref_group(group_id)

    def _untarget(self, e: TableEntry) -> None:
        prof = self.implementation
        if prof is None:
            return
        if e.member_id is not None:
            prof.unref_member(e.member_id)
        elif e.group_id is not None:
            prof.unref_group(e.group_id)

    def _find(self, match: MatchInput, priority: int, strict: bool) -> TableEntry:
        mk = self._canon(match, strict)
        self._check_priority(priority)
        e = self._entries.get((mk, priority))
        if e is None:
            raise NotFound(f"{self.name}: no entry with that match and priority {priority}")
        return e

    # -- writes ------------------------------------------------------------

    def insert(self, match: MatchInput, action: ActionCall | None = None, *,
               member_id: int | None = None, group_id: int | None = None,
               priority: int = 0, idle_timeout_ns: int = 0, metadata: bytes = b"",
               controller_metadata: int = 0,
               counter: CounterCell | tuple[int, int] | None = None,
               meter_config: object | None = None, strict: bool = False) -> TableEntry:
        """Insert a match entry (P4Runtime INSERT / STF `add`).

        Errors: PERMISSION_DENIED (const table), INVALID_ARGUMENT (bad match,
        priority, action, keyless table, idle timeout on a table without
        support), ALREADY_EXISTS (same match and priority), NOT_FOUND (unknown
        member/group), RESOURCE_EXHAUSTED (table holds `size` entries).
        """
        if self.is_const:
            raise PermissionDenied(f"{self.name}: table has const entries")
        return self._insert(match, action, member_id=member_id, group_id=group_id,
                            priority=priority, idle_timeout_ns=idle_timeout_ns,
                            metadata=metadata, controller_metadata=controller_metadata,
                            counter=counter, meter_config=meter_config, strict=strict,
                            is_const=False)

    def _insert(self, match: MatchInput, action: ActionCall | None, *,
                member_id: int | None, group_id: int | None, priority: int,
                idle_timeout_ns: int, metadata: bytes, controller_metadata: int,
                counter: CounterCell | tuple[int, int] | None, meter_config: object | None,
                strict: bool, is_const: bool) -> TableEntry:
        if not self.match_fields:
            raise InvalidArgument(f"{self.name}: keyless table takes no match entries")
        mk = self._canon(match, strict)
        self._check_priority(priority)
        if idle_timeout_ns:
            if not self.support_timeout:
                raise InvalidArgument(f"{self.name}: table does not support idle timeout")
            if idle_timeout_ns < 0:
                raise InvalidArgument(f"{self.name}: idle timeout must be >= 0")
        if action is not None:
            action = validate_action(self._specs, action, for_default=False, where=self.name)
        self._check_direct(counter, meter_config)  # after the action's scope, as BMv2
        self._check_target(action, member_id, group_id)
        prof = self.implementation
        if prof is not None:  # a missing member or group before a taken key, as BMv2
            if member_id is not None:
                prof.get_member(member_id)
            elif group_id is not None:
                prof.get_group(group_id)
        ident = (mk, priority)
        if ident in self._entries:
            raise AlreadyExists(f"{self.name}: an entry with that match and priority exists")
        if len(self._entries) >= self.size:
            raise ResourceExhausted(f"{self.name}: table full ({self.size} entries)")
        self._ref_target(member_id, group_id)
        if counter is None:
            cell = CounterCell()
        elif isinstance(counter, CounterCell):
            cell = CounterCell(counter.packets, counter.bytes)
        else:
            cell = CounterCell(counter[0], counter[1])
        handle = self._new_handle()
        eff = priority if self.largest_priority_wins else -priority
        e = TableEntry(match=mk, priority=priority, action=action, member_id=member_id,
                       group_id=group_id, idle_timeout_ns=idle_timeout_ns,
                       last_hit_ns=self._clock() if self.support_timeout else 0,
                       counter=cell, meter_config=meter_config, metadata=bytes(metadata),
                       controller_metadata=controller_metadata, is_const=is_const,
                       handle=handle, rank=make_rank(eff, handle))
        self._entries[ident] = e
        self._matcher.add(e)
        return e

    def check_scope(self, action: str | int, *, for_default: bool) -> None:
        """PERMISSION_DENIED for one of this table's actions used out of its scope (an
        action it does not have is left to the full check)."""
        spec = self._specs.get(action) if self._specs is not None else None
        if spec is not None:
            check_scope(spec, for_default=for_default, where=self.name)

    def _check_direct(self, counter: object, meter_config: object) -> None:
        """INVALID_ARGUMENT for counter data or a meter config where the table has no
        direct counter or meter (None and KEEP carry neither)."""
        if counter is not None and not isinstance(counter, _Keep) and not self.direct_counter:
            raise InvalidArgument(f"{self.name}: table has no direct counter")
        if (meter_config is not None and not isinstance(meter_config, _Keep)
                and not self.direct_meter):
            raise InvalidArgument(f"{self.name}: table has no direct meter")

    def modify(self, match: MatchInput, priority: int = 0, *,
               action: ActionCall | None | _Keep = KEEP,
               member_id: int | None | _Keep = KEEP, group_id: int | None | _Keep = KEEP,
               idle_timeout_ns: int | _Keep = KEEP, metadata: bytes | _Keep = KEEP,
               controller_metadata: int | _Keep = KEEP,
               counter: CounterCell | tuple[int, int] | _Keep = KEEP,
               meter_config: object | None | _Keep = KEEP,
               strict: bool = False) -> TableEntry:
        """Change an entry in place (P4Runtime MODIFY); KEEP leaves a field as is.

        To change the table action pass exactly one of action / member_id /
        group_id. Const entries (and entries of const tables) accept only
        counter / meter_config changes: PERMISSION_DENIED otherwise.
        """
        retarget = not (action is KEEP and member_id is KEEP and group_id is KEEP)
        a = None if isinstance(action, _Keep) else action
        m = None if isinstance(member_id, _Keep) else member_id
        g = None if isinstance(group_id, _Keep) else group_id
        if retarget:  # a malformed target before a missing entry, as for INSERT
            if a is not None:
                a = validate_action(self._specs, a, for_default=False, where=self.name)
        self._check_direct(counter, meter_config)
        if retarget:
            self._check_target(a, m, g)
        e = self._find(match, priority, strict)
        other = not (idle_timeout_ns is KEEP and metadata is KEEP
                     and controller_metadata is KEEP)
        if (e.is_const or self.is_const) and (retarget or other):
            raise PermissionDenied(
                f"{self.name}: const entries allow only direct-resource changes")
        if not isinstance(idle_timeout_ns, _Keep) and idle_timeout_ns:
            if not self.support_timeout:
                raise InvalidArgument(f"{self.name}: table does not support idle timeout")
            if idle_timeout_ns < 0:
                raise InvalidArgument(f"{self.name}: idle timeout must be >= 0")
        if retarget:
            self._ref_target(m, g)  # reference the new target before dropping the old
            self._untarget(e)
            e.action, e.member_id, e.group_id = a, m, g
        if not isinstance(idle_timeout_ns, _Keep):
            e.idle_timeout_ns = idle_timeout_ns
        if not isinstance(metadata, _Keep):
            e.metadata = bytes(metadata)
        if not isinstance(controller_metadata, _Keep):
            e.controller_metadata = controller_metadata
        if not isinstance(counter, _Keep):
            if isinstance(counter, CounterCell):
                e.counter.packets, e.counter.bytes = counter.packets, counter.bytes
            else:
                e.counter.packets, e.counter.bytes = counter
        if not isinstance(meter_config, _Keep):
            e.meter_config = meter_config
        return e

    def delete(self, match: MatchInput, priority: int = 0, *,
               strict: bool = False) -> TableEntry:
        """Remove an entry (P4Runtime DELETE). NOT_FOUND / PERMISSION_DENIED."""
        if self.is_const:
            raise PermissionDenied(f"{self.name}: table has const entries")
        e = self._find(match, priority, strict)
        if e.is_const:
            raise PermissionDenied(f"{self.name}: entry is const")
        self._remove(e)
        return e

    def _remove(self, e: TableEntry) -> None:
        del self._entries[(e.match, e.priority)]
        self._matcher.remove(e)
        self._untarget(e)
        heapq.heappush(self._free_handles, e.handle)

    def clear(self, *, include_const: bool = False) -> None:
        """Delete all entries (the const ones too if include_const), e.g. on reload."""
        for e in list(self._entries.values()):
            if include_const or not e.is_const:
                self._remove(e)

    # -- default entry -----------------------------------------------------

    def set_default_action(self, action: ActionCall, *, metadata: bytes = b"",
                           controller_metadata: int = 0,
                           meter_config: object | None = None) -> TableEntry:
        """MODIFY of the default entry / STF `setdefault`. PERMISSION_DENIED if const."""
        if self.const_default_action:
            raise PermissionDenied(f"{self.name}: default action is const")
        action = self._check_default(action)
        d = self.default_entry
        d.action = action
        d.metadata = bytes(metadata)
        d.controller_metadata = controller_metadata
        d.meter_config = meter_config
        return d

    def reset_default_action(self) -> TableEntry:
        """Back to the program's default (MODIFY with the action unset)."""
        if self.const_default_action:
            raise PermissionDenied(f"{self.name}: default action is const")
        d = self.default_entry
        d.action = self._initial_default
        d.metadata = b""
        d.controller_metadata = 0
        d.meter_config = None
        d.meter_state = None
        return d

    # -- program entries ---------------------------------------------------

    def add_initial_entries(self, entries: Sequence[InitialEntry], *,
                            const_entries: bool) -> list[TableEntry]:
        """Install the program's `const entries` / `entries`, in source order.

        Priorities follow p4c (see keys.assign_entry_priorities): earlier entries
        win unless explicit priorities say otherwise. Works on const tables.
        """
        if self.needs_priority:
            prios = assign_entry_priorities(
                [e.priority for e in entries], is_const=const_entries,
                largest_priority_wins=self.largest_priority_wins,
                priority_delta=self.priority_delta)
        else:
            if any(e.priority is not None for e in entries):
                raise InvalidArgument(f"{self.name}: key needs no priorities, but some are given")
            prios = [0] * len(entries)
        out = []
        for i, (ie, prio) in enumerate(zip(entries, prios, strict=True)):
            try:
                out.append(self._insert(ie.match, ie.action, member_id=None, group_id=None,
                                        priority=prio, idle_timeout_ns=0, metadata=b"",
                                        controller_metadata=0, counter=None,
                                        meter_config=None, strict=False,
                                        is_const=const_entries or ie.is_const))
            except TableError as exc:
                exc.entry_index = i
                raise
        return out

    # -- reads -------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[TableEntry]:
        return iter(list(self._entries.values()))

    def entries(self) -> list[TableEntry]:
        """All match entries in insertion order (a modify keeps the position)."""
        return list(self._entries.values())

    def get(self, match: MatchInput, priority: int = 0, *, strict: bool = False) -> TableEntry:
        """The entry with this match and priority; NOT_FOUND otherwise."""
        return self._find(match, priority, strict)

    def read(self, match: MatchInput | None = None, *, priority: int = 0,
             action: str | int | None = None, metadata: bytes = b"",
             controller_metadata: int = 0, strict: bool = False) -> list[TableEntry]:
        """P4Runtime wildcard read: each filter left at its default matches all.

        match: exact identity (at most one entry per priority), which with `strict` must
        be a key an entry could have (P4Runtime's "valid match key"); priority 0: any;
        action: the action name/id of direct entries; metadata / cookie: equality.
        Result in insertion order. The default entry is `default_entry`.
        """
        if match is not None:
            mk = self._canon(match, strict)
            cands: list[TableEntry] = [e for e in self._entries.values() if e.match == mk]
        else:
            cands = list(self._entries.values())
        if priority:
            cands = [e for e in cands if e.priority == priority]
        if action is not None:
            name: Any = action
            if self._specs is not None and action in self._specs:
                name = self._specs[action].name
            cands = [e for e in cands if e.action is not None and e.action.action == name]
        if metadata:
            cands = [e for e in cands if e.metadata == metadata]
        if controller_metadata:
            cands = [e for e in cands if e.controller_metadata == controller_metadata]
        return cands

    def reset_counters(self) -> None:
        for e in self._entries.values():
            e.counter.reset()
        self.default_entry.counter.reset()

    # -- idle timeout ------------------------------------------------------

    def expired(self, now_ns: int) -> list[TableEntry]:
        """Entries idle for at least their timeout, each idle period reported once.

        For P4Runtime IdleTimeoutNotification: an entry is returned when
        `now_ns - last_hit_ns >= idle_timeout_ns`; it is not returned again
        until it is hit (which moves last_hit_ns) and then idles out again.
        Insertion counts as a hit. Only tables with support_timeout track hits.
        """
        out: list[TableEntry] = []
        if not self.support_timeout:
            return out
        for e in self._entries.values():
            ttl = e.idle_timeout_ns
            if ttl and now_ns - e.last_hit_ns >= ttl and e.notified_hit_ns != e.last_hit_ns:
                e.notified_hit_ns = e.last_hit_ns
                out.append(e)
        return out

    def __repr__(self) -> str:
        kinds = ",".join(f.kind.value for f in self.key_fields)
        return f"Table({self.name!r}, key=[{kinds}], entries={len(self)}/{self.size})"
