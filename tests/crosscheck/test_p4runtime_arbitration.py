"""Client arbitration on BMv2's server and ours: the same clients come and go in the
same order (higher and lower election ids, a duplicate id, a wrong device id, the
primary leaving, writes from backups and from clients without a stream) and each side
sees the same arbitration updates and the same codes, but where BMv2's server keeps to
P4Runtime before 1.1 (DIFFERENT; emu/runtime/README.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as P

from emu.runtime.client import P4RuntimeClient, WriteError

from ..conftest import needs_root
from ..targets.params import requires_bmv2
from .test_p4runtime_agreement import PROGRAMS, compare_with_bmv2

U = P.Update
V1_1 = "P4Runtime 1.1 on: no backup is promoted when the primary leaves (BMv2's server " \
       "promotes the next highest id, as before 1.1)"
# step -> why ours differs (ours follows the spec, section Client Arbitration)
DIFFERENT = {
    "a wrong device: stream": "NOT_FOUND, BMv2 leaves the stream open: the spec ends it "
                              "with NOT_FOUND",
    "b leaves: a hears": f"NOT_FOUND (no primary), BMv2 promotes a: {V1_1}",
    "a writes with no primary": f"PERMISSION_DENIED, BMv2 OK: {V1_1}",
}


def _settle(pred: Callable[[], object], timeout: float = 5.0) -> None:
    """Wait until `pred` holds, or give up quietly: the outcome is compared, not asserted."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not pred():
        time.sleep(0.01)


def _last_update(c: P4RuntimeClient) -> str:
    """The status and election id of the last arbitration update `c` received."""
    time.sleep(0.3)  # let updates in flight arrive
    last = None
    while not c.arbitrations.empty():
        last = c.arbitrations.get_nowait()
    if last is None:
        return "none"
    return (f"{code_pb2.Code.Name(last.status.code)} "
            f"({last.election_id.high},{last.election_id.low})")


def _write(c: P4RuntimeClient, ent: P.Entity) -> str:
    try:
        c.write([U(type=U.MODIFY, entity=ent)])
    except WriteError as e:
        return e.code.name
    return "OK"


def _stream_end(c: P4RuntimeClient) -> str:
    _settle(lambda: c.stream_status is not None)
    return c.stream_status.name if c.stream_status is not None else "open"


def _scenario(a: P4RuntimeClient, address: str) -> list[tuple[str, str]]:
    """a: the primary with election id (0,1), its pipeline set."""
    assert a.p4info is not None
    default = P.Entity()  # a write every primary may do: the fwd table's default entry
    default.table_entry.table_id = next(t.preamble.id for t in a.p4info.tables
                                        if t.preamble.name == "MyIngress.fwd")
    default.table_entry.is_default_action = True
    out = [("a (0,1) primary", str(a.is_primary)), ("a writes", _write(a, default))]
    clients = [a]
    try:
        b = P4RuntimeClient(address, 1, (0, 2))
        clients.append(b)
        _settle(lambda: not a.is_primary)
        out += [("b (0,2) primary", str(b.is_primary)), ("a hears", _last_update(a)),
                ("b hears", _last_update(b)), ("a writes as a backup", _write(a, default)),
                ("b writes", _write(b, default))]
        for name, eid, device in (("a second (0,2)", (0, 2), 1), ("a wrong device", (0, 9), 7)):
            c = P4RuntimeClient(address, device, eid, arbitrate=False)
            clients.append(c)
            c.open_stream()
            out.append((f"{name}: stream", _stream_end(c)))
        lone = P4RuntimeClient(address, 1, (0, 2), arbitrate=False)
        clients.append(lone)
        out.append(("no stream, the primary's id, writes", _write(lone, default)))
        lone.election_id = (0, 7)
        out.append(("no stream, an unknown id, writes", _write(lone, default)))
        b.close()
        clients.remove(b)
        out.append(("b leaves: a hears", _last_update(a)))
        out.append(("a writes with no primary", _write(a, default)))
        d = P4RuntimeClient(address, 1, (0, 3))
        clients.append(d)
        out += [("d (0,3) primary", str(d.is_primary)), ("a hears", _last_update(a))]
        e = P4RuntimeClient(address, 1, (0, 1), arbitrate=False)
        clients.append(e)
        e.open_stream()
        out.append(("a second (0,1) while a is connected: stream", _stream_end(e)))
    finally:
        for c in clients[1:]:
            c.close()
    return out


@needs_root
@requires_bmv2
def test_arbitration_agrees_with_bmv2(tmp_path: Path) -> None:
    ours = compare_with_bmv2(PROGRAMS["cp"][0], tmp_path,
                             lambda sw: _scenario(sw.client, sw.client.address), DIFFERENT)
    assert dict(ours)["d (0,3) primary"] == "True"

