"""Match-action table engine and action profiles for the embedded v1model target.

Used per packet by the generated pipeline (`Table.apply` / `Table.lookup`) and
by the P4Runtime server and STF runner (insert / modify / delete / read).
Errors carry P4Runtime error kinds (`TableError.kind`).
"""

from .action_profile import (
    ActionProfile,
    ActionProfileGroup,
    ActionProfileMember,
    GroupMember,
    SizeSemantics,
)
from .entry import CounterCell, TableEntry
from .errors import (
    AlreadyExists,
    ErrorKind,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    TableError,
    Unimplemented,
)
from .keys import (
    NO_ACTION,
    PRIORITY_MAX,
    ActionCall,
    ActionScope,
    ActionSpec,
    Exact,
    FieldMatch,
    KeyField,
    Lpm,
    MatchKey,
    MatchKind,
    Optional,
    OptionalMatch,
    Range,
    Ternary,
    assign_entry_priorities,
    canonicalize_field,
    canonicalize_match,
    dont_care,
    field_matches,
    is_dont_care,
    stf_to_bmv2_cli_priority,
    stf_to_p4rt_priority,
)
from .table import KEEP, InitialEntry, Table

__all__ = [
    "KEEP", "NO_ACTION", "PRIORITY_MAX",
    "ActionCall", "ActionProfile", "ActionProfileGroup", "ActionProfileMember",
    "ActionScope", "ActionSpec", "AlreadyExists", "CounterCell", "ErrorKind", "Exact",
    "FailedPrecondition", "FieldMatch", "GroupMember", "InitialEntry", "InvalidArgument",
    "KeyField", "Lpm", "MatchKey", "MatchKind", "NotFound", "Optional", "OptionalMatch",
    "PermissionDenied", "Range", "ResourceExhausted", "SizeSemantics", "Table", "TableEntry",
    "TableError", "Ternary", "Unimplemented",
    "assign_entry_priorities", "canonicalize_field", "canonicalize_match", "dont_care",
    "field_matches", "is_dont_care", "stf_to_bmv2_cli_priority", "stf_to_p4rt_priority",
]
