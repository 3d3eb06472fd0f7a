"""Key model: match kinds, key fields, per-field matches and their canonical form.

A table key is an ordered list of `KeyField`s. An entry gives one `FieldMatch`
per *matched* field (every kind except `selector`, whose fields are only hashed
by an action selector). Canonical forms, which are also the entry identity:

- exact:    Exact(value)
- lpm:      Lpm(value with bits past the prefix cleared, prefix_len); don't care = Lpm(0, 0)
- ternary:  Ternary(value & mask, mask); don't care = Ternary(0, 0)
- range:    Range(low, high) inclusive; don't care = Range(0, 2**width - 1)
- optional: Optional(value) or Optional(None) for the wildcard

Non-strict canonicalisation (program entries, STF) clears masked-off bits.
Strict canonicalisation (P4Runtime writes) rejects them, and rejects an
explicit don't-care match, as the P4Runtime "Match Format" section requires:
the client must omit the field instead (pass None here).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import InvalidArgument, PermissionDenied

# What `emu.p4.tables` re-exports; the other helpers are imported from here by name.
__all__ = [
    "NO_ACTION", "PRIORITY_MAX",
    "ActionCall", "ActionScope", "ActionSpec", "Exact", "FieldMatch", "KeyField", "Lpm",
    "MatchKey", "MatchKind", "Optional", "OptionalMatch", "Range", "Ternary",
    "assign_entry_priorities", "canonicalize_field", "canonicalize_match", "dont_care",
    "field_matches", "is_dont_care", "stf_to_bmv2_cli_priority", "stf_to_p4rt_priority",
]

PRIORITY_MAX = 2**31 - 1  # P4Runtime priority is an int32 that must be > 0 when used


class MatchKind(str, enum.Enum):
    EXACT = "exact"
    LPM = "lpm"
    TERNARY = "ternary"
    RANGE = "range"
    OPTIONAL = "optional"
    SELECTOR = "selector"


# Kinds whose presence makes a table priority-ordered (P4Runtime TableEntry.priority).
PRIORITY_KINDS = frozenset({MatchKind.TERNARY, MatchKind.RANGE, MatchKind.OPTIONAL})


@dataclass(frozen=True, slots=True)
class KeyField:
    """One element of a table key. `id` is the P4Info match-field id (1-based)."""

    name: str
    kind: MatchKind
    bitwidth: int
    id: int = 0

    def __post_init__(self) -> None:
        if self.bitwidth < 0:  # bit<0> is a key p4c and BMv2 take: it only holds 0
            raise ValueError(f"key field {self.name}: bitwidth must be >= 0")
        if not isinstance(self.kind, MatchKind):
            object.__setattr__(self, "kind", MatchKind(self.kind))

    @property
    def max_value(self) -> int:
        return (1 << self.bitwidth) - 1


@dataclass(frozen=True, slots=True)
class Exact:
    value: int


@dataclass(frozen=True, slots=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True, slots=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True, slots=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class Optional:
    """Optional match: a value, or None for the wildcard."""

    value: int | None


OptionalMatch = Optional  # alias for callers that import typing.Optional too

FieldMatch = Exact | Lpm | Ternary | Range | Optional
# What callers may pass for one field: a FieldMatch, a bare int (exact/optional value,
# or a full-width match for lpm/ternary), or None (don't care; not allowed for exact).
FieldMatchInput = FieldMatch | int | None
MatchKey = tuple[FieldMatch, ...]


def _check_value(field: KeyField, value: int, what: str = "value") -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{field.name}: {what} must be an int, got {value!r}")
    if value < 0 or value >> field.bitwidth:
        raise InvalidArgument(
            f"{field.name}: {what} {value:#x} does not fit in {field.bitwidth} bits")


def lpm_mask(bitwidth: int, prefix_len: int) -> int:
    """Mask with the top `prefix_len` bits of a `bitwidth`-bit field set."""
    full = (1 << bitwidth) - 1
    return full ^ (full >> prefix_len)


def dont_care(field: KeyField) -> FieldMatch:
    """The canonical don't-care match for a non-exact field."""
    kind = field.kind
    if kind is MatchKind.LPM:
        return Lpm(0, 0)
    if kind is MatchKind.TERNARY:
        return Ternary(0, 0)
    if kind is MatchKind.RANGE:
        return Range(0, field.max_value)
    if kind is MatchKind.OPTIONAL:
        return Optional(None)
    raise InvalidArgument(f"{field.name}: an {kind.value} field has no don't-care match")


def is_dont_care(field: KeyField, match: FieldMatch) -> bool:
    """True if `match` matches every value (P4Runtime omits such fields on read)."""
    if isinstance(match, Lpm):
        return match.prefix_len == 0
    if isinstance(match, Ternary):
        return match.mask == 0
    if isinstance(match, Range):
        return match.low == 0 and match.high == field.max_value
    if isinstance(match, Optional):
        return match.value is None
    return False


def canonicalize_field(field: KeyField, match: FieldMatchInput, *,
                       strict: bool = False) -> FieldMatch:
    """Validate one field match and return its canonical form.

    Raises InvalidArgument for a value wider than the field, a prefix longer
    than the field, low > high, a kind that does not fit the field, and (strict
    only) masked-off bits set or an explicit don't-care.
    """
    kind = field.kind
    name = field.name
    if kind is MatchKind.SELECTOR:
        raise InvalidArgument(f"{name}: selector fields are hashed, not matched")
    if match is None:
        return dont_care(field)
    if isinstance(match, bool):
        raise InvalidArgument(f"{name}: bool is not a match value")
    if isinstance(match, int):
        # A bare value: exact for exact/optional, a full-width match otherwise.
        _check_value(field, match)
        if kind is MatchKind.EXACT:
            return Exact(match)
        if kind is MatchKind.OPTIONAL:
            return Optional(match)
        if kind is MatchKind.LPM:
            return Lpm(match, field.bitwidth)
        if kind is MatchKind.TERNARY:
            return Ternary(match, field.max_value)
        return Range(match, match)

    if kind is MatchKind.EXACT:
        if not isinstance(match, Exact):
            raise InvalidArgument(f"{name}: exact field needs an exact match, got {match!r}")
        _check_value(field, match.value)
        return match

    if kind is MatchKind.LPM:
        if not isinstance(match, Lpm):
            raise InvalidArgument(f"{name}: lpm field needs an lpm match, got {match!r}")
        plen = match.prefix_len
        if not isinstance(plen, int) or plen < 0 or plen > field.bitwidth:
            raise InvalidArgument(
                f"{name}: prefix length {plen!r} outside 0..{field.bitwidth}")
        _check_value(field, match.value)
        mask = lpm_mask(field.bitwidth, plen)
        if strict:
            if plen == 0:
                raise InvalidArgument(f"{name}: don't-care lpm match must be omitted")
            if match.value & ~mask:
                raise InvalidArgument(
                    f"{name}: lpm value {match.value:#x} has bits set past /{plen}")
        value = match.value & mask
        return match if value == match.value else Lpm(value, plen)

    if kind is MatchKind.TERNARY:
        if isinstance(match, Exact):
            match = Ternary(match.value, field.max_value)
        if not isinstance(match, Ternary):
            raise InvalidArgument(f"{name}: ternary field needs a ternary match, got {match!r}")
        _check_value(field, match.value)
        _check_value(field, match.mask, "mask")
        if strict:
            if match.mask == 0:
                raise InvalidArgument(f"{name}: don't-care ternary match must be omitted")
            if match.value & ~match.mask:
                raise InvalidArgument(
                    f"{name}: ternary value {match.value:#x} has bits outside mask "
                    f"{match.mask:#x}")
        value = match.value & match.mask
        if match.mask == 0:
            return Ternary(0, 0)
        return match if value == match.value else Ternary(value, match.mask)

    if kind is MatchKind.RANGE:
        if isinstance(match, Exact):
            match = Range(match.value, match.value)
        if not isinstance(match, Range):
            raise InvalidArgument(f"{name}: range field needs a range match, got {match!r}")
        _check_value(field, match.low, "low")
        _check_value(field, match.high, "high")
        if match.low > match.high:
            raise InvalidArgument(f"{name}: range low {match.low} > high {match.high}")
        if strict and match.low == 0 and match.high == field.max_value:
            raise InvalidArgument(f"{name}: don't-care range match must be omitted")
        return match

    # OPTIONAL
    if isinstance(match, Exact):
        match = Optional(match.value)
    if not isinstance(match, Optional):
        raise InvalidArgument(f"{name}: optional field needs an optional match, got {match!r}")
    if match.value is not None:
        _check_value(field, match.value)
    elif strict:
        raise InvalidArgument(f"{name}: don't-care optional match must be omitted")
    return match


def canonicalize_match(fields: Sequence[KeyField],
                       match: Sequence[FieldMatchInput] | Mapping[str | int, FieldMatchInput],
                       *, strict: bool = False) -> MatchKey:
    """Canonical match key for `fields` (the matched fields, selectors excluded).

    `match` is either a sequence with one item per field, or a mapping from
    field name or field id to match; fields missing from a mapping are don't
    care (P4Runtime omits don't-care fields), which is an error for exact.
    """
    if isinstance(match, Mapping):
        by_key: dict[str | int, KeyField] = {}
        for f in fields:
            by_key[f.name] = f
            if f.id:
                by_key[f.id] = f
        given: dict[str, FieldMatchInput] = {}
        for k, m in match.items():
            kf = by_key.get(k)
            if kf is None:
                raise InvalidArgument(f"unknown match field {k!r}")
            if kf.name in given:
                raise InvalidArgument(f"match field {kf.name} given twice")
            given[kf.name] = m
        items: list[FieldMatchInput] = []
        for f in fields:
            if f.name not in given and f.kind is MatchKind.EXACT:
                raise InvalidArgument(f"exact field {f.name} must be given")
            items.append(given.get(f.name))
        seq: Sequence[FieldMatchInput] = items
    else:
        seq = match
        if len(seq) != len(fields):
            raise InvalidArgument(
                f"match has {len(seq)} fields, the table key has {len(fields)}")
    return tuple(canonicalize_field(f, m, strict=strict) for f, m in zip(fields, seq, strict=True))


def field_matches(field: KeyField, match: FieldMatch, value: int) -> bool:
    """Reference semantics of one canonical field match (used by tests and reads)."""
    if isinstance(match, Exact):
        return value == match.value
    if isinstance(match, Lpm):
        return value & lpm_mask(field.bitwidth, match.prefix_len) == match.value
    if isinstance(match, Ternary):
        return value & match.mask == match.value
    if isinstance(match, Range):
        return match.low <= value <= match.high
    return match.value is None or match.value == value


def value_mask(field: KeyField, match: FieldMatch) -> tuple[int, int]:
    """(value, mask) of a non-range canonical match, for tuple-space grouping."""
    if isinstance(match, Exact):
        return match.value, field.max_value
    if isinstance(match, Lpm):
        return match.value, lpm_mask(field.bitwidth, match.prefix_len)
    if isinstance(match, Ternary):
        return match.value, match.mask
    if isinstance(match, Optional):
        return (0, 0) if match.value is None else (match.value, field.max_value)
    raise TypeError(f"{field.name}: range matches have no single mask")


# ---------------------------------------------------------------------------
# Actions

class ActionScope(str, enum.Enum):
    """P4Info ActionRef scope (@tableonly / @defaultonly)."""

    TABLE_AND_DEFAULT = "TABLE_AND_DEFAULT"
    TABLE_ONLY = "TABLE_ONLY"
    DEFAULT_ONLY = "DEFAULT_ONLY"


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """What the table needs to validate an action reference: name, id, param widths."""

    name: str
    id: int = 0
    param_widths: tuple[int, ...] = ()
    scope: ActionScope = ActionScope.TABLE_AND_DEFAULT


@dataclass(frozen=True, slots=True)
class ActionCall:
    """An action reference with its parameter values (in declaration order).

    `action` is the action name (or id, when the table was built without
    ActionSpecs); tables built with specs normalise it to the spec's name.
    """

    action: str | int
    params: tuple[int, ...] = ()


NO_ACTION = ActionCall("NoAction")


def action_specs(actions: Sequence[ActionSpec] | None) -> dict[str | int, ActionSpec] | None:
    """A table's or profile's actions by name and by id (where it has one), for
    validate_action; None (no list: any action goes) when `actions` is None."""
    if actions is None:
        return None
    specs: dict[str | int, ActionSpec] = {}
    for a in actions:
        specs[a.name] = a
        if a.id:
            specs[a.id] = a
    return specs


def check_scope(spec: ActionSpec, *, for_default: bool, where: str) -> None:
    """PERMISSION_DENIED for an action out of its scope (@tableonly as the default,
    @defaultonly in an entry), as the P4Runtime spec says."""
    if for_default and spec.scope is ActionScope.TABLE_ONLY:
        raise PermissionDenied(f"{where}: action {spec.name} is @tableonly")
    if not for_default and spec.scope is ActionScope.DEFAULT_ONLY:
        raise PermissionDenied(f"{where}: action {spec.name} is @defaultonly")


def validate_action(specs: Mapping[str | int, ActionSpec] | None, action: ActionCall, *,
                    for_default: bool, where: str) -> ActionCall:
    """Check an action reference against the table's actions; return it normalised.

    Unknown action, wrong parameter count or a value wider than its parameter:
    INVALID_ARGUMENT. Action scope violated (@tableonly as default,
    @defaultonly in an entry): PERMISSION_DENIED, as the P4Runtime spec says.
    Without specs only the shape is checked.
    """
    if not isinstance(action, ActionCall):
        raise InvalidArgument(f"{where}: expected an ActionCall, got {action!r}")
    params = tuple(action.params)
    for p in params:
        if not isinstance(p, int) or isinstance(p, bool) or p < 0:
            raise InvalidArgument(f"{where}: bad action parameter {p!r}")
    if specs is None:
        return action if params is action.params else ActionCall(action.action, params)
    spec = specs.get(action.action)
    if spec is None:
        raise InvalidArgument(f"{where}: action {action.action!r} is not an action of this table")
    check_scope(spec, for_default=for_default, where=where)
    if len(params) != len(spec.param_widths):
        raise InvalidArgument(
            f"{where}: action {spec.name} takes {len(spec.param_widths)} parameters, "
            f"got {len(params)}")
    for i, (p, w) in enumerate(zip(params, spec.param_widths, strict=True)):
        if p >> w:
            raise InvalidArgument(f"{where}: parameter {i} of {spec.name} ({p:#x}) "
                                  f"does not fit in {w} bits")
    if action.action == spec.name and params is action.params:
        return action
    return ActionCall(spec.name, params)


# ---------------------------------------------------------------------------
# Priorities

STF_BMV2_PRIORITY_BASE = 10000


def stf_to_bmv2_cli_priority(stf_priority: int) -> int:
    """Priority p4c's bmv2stf.py hands to BMv2's CLI for an STF `add t <prio> ...`.

    bmv2stf.py sends `10000 - prio` (only for tables whose BMv2 match_type is
    ternary), and BMv2 picks the numerically *smallest* priority, so in STF the
    *larger* priority wins -- the same direction as P4Runtime and as this engine.
    Our STF runner therefore passes STF priorities through unchanged
    (`stf_to_p4rt_priority`); this function is only for driving real BMv2.
    """
    return STF_BMV2_PRIORITY_BASE - stf_priority


def stf_to_p4rt_priority(stf_priority: int) -> int:
    """STF priority -> this engine's priority (identity: larger wins in both)."""
    return stf_priority


def assign_entry_priorities(explicit: Sequence[int | None], *, is_const: bool,
                            largest_priority_wins: bool = True,
                            priority_delta: int = 1) -> list[int]:
    """Priorities of a program's initial entries, as p4c's front end assigns them.

    Mirrors the rules of p4c frontends/p4/entryPriorities.cpp (checked there) and
    the P4Runtime spec ("Constant Tables"): with no explicit priority anywhere,
    entries are numbered so that the earlier entry wins -- with
    largest_priority_wins (default) the last entry gets 1 and each earlier one
    `priority_delta` more; otherwise the first gets 1 and each later one
    `priority_delta` more. `const entries` may not carry explicit priorities.
    With some explicit priorities, the first entry must have one, and each
    entry without one gets the previous entry's priority minus (largest wins)
    or plus `priority_delta`. Only call this for tables that need priorities.
    """
    n = len(explicit)
    if priority_delta <= 0:
        raise InvalidArgument("priority_delta must be positive")
    if all(p is None for p in explicit):
        out = [0] * n
        current = 1
        for i in range(n):
            out[n - 1 - i if largest_priority_wins else i] = current
            current += priority_delta
        return out
    if is_const:
        raise InvalidArgument("a table with const entries cannot give entry priorities")
    if explicit[0] is None:
        raise InvalidArgument("the first entry must have a priority")
    result: list[int] = []
    current = 0
    for p in explicit:
        if p is not None:
            current = p
        if current <= 0:
            raise InvalidArgument(f"computed entry priority {current} is not positive")
        result.append(current)
        current = current - priority_delta if largest_priority_wins else current + priority_delta
    return result
