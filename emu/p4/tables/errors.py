"""Table-engine errors, each carrying a P4Runtime error kind.

The P4Runtime server maps `TableError.kind` straight onto a gRPC status code
(`kind.grpc_code`), so the engine, not the server, decides what kind a failed
write is. The kinds and when they apply follow the P4Runtime specification
(sections TableEntry, Default Entry, Constant Tables, ActionProfileMember and
ActionProfileGroup).
"""

from __future__ import annotations

import enum


class ErrorKind(enum.Enum):
    """P4Runtime error kinds; the value is the google.rpc / gRPC status code."""

    INVALID_ARGUMENT = 3
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    UNIMPLEMENTED = 12

    @property
    def grpc_code(self) -> int:
        return self.value


class TableError(Exception):
    """A rejected table or action-profile operation.

    Catch the subclasses to test for one kind, or read `kind` to map it.
    """

    kind: ErrorKind = ErrorKind.INVALID_ARGUMENT
    # Set when installing a program's initial entries failed: which one (0-based).
    entry_index: int | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.kind.name}: {self.message}"


class InvalidArgument(TableError):
    kind = ErrorKind.INVALID_ARGUMENT


class NotFound(TableError):
    kind = ErrorKind.NOT_FOUND


class AlreadyExists(TableError):
    kind = ErrorKind.ALREADY_EXISTS


class PermissionDenied(TableError):
    kind = ErrorKind.PERMISSION_DENIED


class ResourceExhausted(TableError):
    kind = ErrorKind.RESOURCE_EXHAUSTED


class FailedPrecondition(TableError):
    kind = ErrorKind.FAILED_PRECONDITION


class Unimplemented(TableError):
    kind = ErrorKind.UNIMPLEMENTED
