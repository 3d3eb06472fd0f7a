"""P4Runtime errors: one exception type carrying a gRPC status code, plus the
batch error encoding p4runtime-shell and other clients expect.

A failed Write batch is reported as gRPC status UNKNOWN whose binary details
(trailing metadata `grpc-status-details-bin`, a google.rpc.Status) hold one
p4.v1.Error per update, in request order, OK ones included (P4Runtime spec,
"Error Reporting Messages"). Clients refuse trailing metadata beyond gRPC's
default limit (8 KiB), and would then see RESOURCE_EXHAUSTED instead of the
errors; so the details are kept within DETAILS_BUDGET bytes: messages are
shortened, then the Any type URLs (to "/p4.v1.Error", which every protobuf
runtime unpacks by the name after the last slash), then failed updates keep
only their code; a batch too large even then gets details for its first updates
only, and the status message says how many failed and where the first did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from emu.p4.tables import TableError
from emu.p4.v1model.replication import DuplicateError, ReplicationError, UnknownEntryError

__all__ = ["P4RTError", "as_p4rt_error", "batch_status", "is_client_error",
           "STATUS_DETAILS_KEY"]

STATUS_DETAILS_KEY = "grpc-status-details-bin"

MAX_MESSAGE = 1024  # characters of any error message
DETAILS_BUDGET = 7000  # bytes of status details per Write (client default limit: 8 KiB)
_FULL_URL = "type.googleapis.com/p4.v1.Error"
_SHORT_URL = "/p4.v1.Error"

_BY_VALUE = {c.value[0]: c for c in grpc.StatusCode}


class P4RTError(Exception):
    """A request (or one update of a batch) failed with a P4Runtime status code."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        if len(message) > MAX_MESSAGE:  # never echo a client's huge value back in full
            message = message[:MAX_MESSAGE] + f"... ({len(message)} chars)"
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


def _with_code(code: grpc.StatusCode) -> Callable[[str], P4RTError]:
    """A maker of P4RTError with one fixed code: `raise not_found("...")`."""
    def make(msg: str) -> P4RTError:
        return P4RTError(code, msg)
    return make


invalid = _with_code(grpc.StatusCode.INVALID_ARGUMENT)
not_found = _with_code(grpc.StatusCode.NOT_FOUND)
unimplemented = _with_code(grpc.StatusCode.UNIMPLEMENTED)
failed_precondition = _with_code(grpc.StatusCode.FAILED_PRECONDITION)
permission_denied = _with_code(grpc.StatusCode.PERMISSION_DENIED)
out_of_range = _with_code(grpc.StatusCode.OUT_OF_RANGE)
already_exists = _with_code(grpc.StatusCode.ALREADY_EXISTS)
resource_exhausted = _with_code(grpc.StatusCode.RESOURCE_EXHAUSTED)
aborted = _with_code(grpc.StatusCode.ABORTED)
internal = _with_code(grpc.StatusCode.INTERNAL)


def show_bytes(data: bytes, limit: int = 16) -> str:
    """A byte string for an error message: hex, at most `limit` bytes of it shown."""
    if len(data) <= limit:
        return "0x" + data.hex()
    return f"0x{data[:limit].hex()}... ({len(data)} bytes)"


def as_p4rt_error(exc: BaseException) -> P4RTError:
    """Map an engine exception onto its P4Runtime code.

    The table engine decides the kind itself (TableError.kind); replication
    engine errors map by class (the server checks extern indices itself: beyond
    the size OUT_OF_RANGE, negative INVALID_ARGUMENT).
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


def is_client_error(exc: BaseException) -> bool:
    """An error that names what is wrong with a request, by its type: ours, or the
    table and replication engines' own. Anything else, even when as_p4rt_error maps
    it to a client code (ValueError, IndexError), may be a bug: log its traceback."""
    return isinstance(exc, (P4RTError, TableError, ReplicationError))


def _packed(r: P4RTError | None, url: str, msg_limit: int | None) -> any_pb2.Any:
    if r is None:
        err = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
    elif msg_limit is None:
        err = p4runtime_pb2.Error(canonical_code=r.code_value)
    else:
        msg = r.message if len(r.message) <= msg_limit else r.message[:msg_limit] + "..."
        err = p4runtime_pb2.Error(canonical_code=r.code_value, message=msg, space="emu-p4rt")
    return any_pb2.Any(type_url=url, value=err.SerializeToString())


def batch_status(results: Sequence[P4RTError | None],
                 budget: int = DETAILS_BUDGET) -> status_pb2.Status:
    """google.rpc.Status (code UNKNOWN) with one p4.v1.Error per update, in at most
    `budget` bytes (see the module docstring for what gives way first)."""
    anys: list[any_pb2.Any] = []
    for url, limit in ((_FULL_URL, 256), (_SHORT_URL, 64), (_SHORT_URL, None)):
        anys, total = [], 64  # the status's own code and message
        for r in results:
            a = _packed(r, url, limit)
            size = a.ByteSize()
            total += size + (2 if size < 128 else 3)  # + field tag and length
            if total > budget:
                break
            anys.append(a)
        else:
            return status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure.",
                                     details=anys)
    failed = [i for i, r in enumerate(results) if r is not None]
    first = results[failed[0]]
    msg = (f"Write failure: {len(failed)} of {len(results)} updates failed, the first "
           f"(update {failed[0]}) with {first}"[:200]
           + f"; details cover updates 0..{len(anys) - 1} only (gRPC metadata limit)")
    return status_pb2.Status(code=code_pb2.UNKNOWN, message=msg, details=anys)
