"""Match-action table engine and action profiles for the embedded v1model target.

Used per packet by the generated pipeline (`Table.apply` / `Table.lookup`) and
by the P4Runtime server and STF runner (insert / modify / delete / read).
Errors carry P4Runtime error kinds (`TableError.kind`).
"""

from . import keys
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
from .keys import *  # noqa: F403 - the key model, as keys.__all__ lists it
from .table import KEEP, InitialEntry, Table

__all__ = [
    "KEEP",
    "ActionProfile", "ActionProfileGroup", "ActionProfileMember", "AlreadyExists",
    "CounterCell", "ErrorKind", "FailedPrecondition", "GroupMember", "InitialEntry",
    "InvalidArgument", "NotFound", "PermissionDenied", "ResourceExhausted", "SizeSemantics",
    "Table", "TableEntry", "TableError", "Unimplemented",
]
__all__ += keys.__all__
