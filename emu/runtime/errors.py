"""P4Runtime errors: one exception type carrying a gRPC status code, plus the
batch error encoding p4runtime-shell and other clients expect.

A failed Write batch is reported as gRPC status UNKNOWN whose binary details
(trailing metadata `grpc-status-details-bin`, a google.rpc.Status) hold one
p4.v1.Error per update, in request order, OK ones included (P4Runtime spec,
"Error Reporting Messages").
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from emu.p4.tables import TableError
from emu.p4.v1model.replication import DuplicateError, ReplicationError, UnknownEntryError

__all__ = ["P4RTError", "as_p4rt_error", "batch_status", "STATUS_DETAILS_KEY"]

STATUS_DETAILS_KEY = "grpc-status-details-bin"

_BY_VALUE = {c.value[0]: c for c in grpc.StatusCode}


class P4RTError(Exception):
    """A request (or one update of a batch) failed with a P4Runtime status code."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def code_value(self) -> int:
        return int(self.code.value[0])

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"

    def to_p4_error(self) -> p4runtime_pb2.Error:
        return p4runtime_pb2.Error(canonical_code=self.code_value, message=self.message,
                                   space="emu-p4rt")


def invalid(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.INVALID_ARGUMENT, msg)


def not_found(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.NOT_FOUND, msg)


def unimplemented(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.UNIMPLEMENTED, msg)


def failed_precondition(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.FAILED_PRECONDITION, msg)


def permission_denied(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.PERMISSION_DENIED, msg)


def already_exists(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.ALREADY_EXISTS, msg)


def resource_exhausted(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.RESOURCE_EXHAUSTED, msg)


def aborted(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.ABORTED, msg)


def internal(msg: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.INTERNAL, msg)


def as_p4rt_error(exc: BaseException) -> P4RTError:
    """Map an engine exception onto its P4Runtime code.

    The table engine decides the kind itself (TableError.kind); replication
    engine errors map by class; bad indices are OUT_OF_RANGE... except that the
    spec asks INVALID_ARGUMENT for an index beyond an extern's size, as PI does.
    Anything else is INTERNAL (a bug, reported rather than crashing the server).
    """
    if isinstance(exc, P4RTError):
        return exc
    if isinstance(exc, TableError):
        return P4RTError(_BY_VALUE[exc.kind.grpc_code], exc.message)
    if isinstance(exc, DuplicateError):
        return P4RTError(grpc.StatusCode.ALREADY_EXISTS, str(exc))
    if isinstance(exc, UnknownEntryError):
        return P4RTError(grpc.StatusCode.NOT_FOUND, str(exc))
    if isinstance(exc, (ReplicationError, IndexError, ValueError)):
        return P4RTError(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
    return P4RTError(grpc.StatusCode.INTERNAL, f"{type(exc).__name__}: {exc}")


def batch_status(results: Sequence[P4RTError | None]) -> status_pb2.Status:
    """google.rpc.Status (code UNKNOWN) with one p4.v1.Error per update."""
    st = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure.")
    for r in results:
        err = (p4runtime_pb2.Error(canonical_code=code_pb2.OK) if r is None
               else r.to_p4_error())
        any_msg = any_pb2.Any()
        any_msg.Pack(err)
        st.details.append(any_msg)
    return st
