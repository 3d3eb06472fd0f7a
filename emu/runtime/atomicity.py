"""Write batch atomicity: CONTINUE_ON_ERROR, ROLLBACK_ON_ERROR, DATAPLANE_ATOMIC.

P4Runtime spec ("Batch Atomicity"):

- CONTINUE_ON_ERROR: every update is attempted; each gets its own status.
- ROLLBACK_ON_ERROR: updates are applied until one fails; then the applied
  ones are rolled back so that the state is the one before the batch
  (all-or-none).
- DATAPLANE_ATOMIC: all-or-none as well, and no packet may see a partial batch.

Undo: before an update is applied its inverse is computed from the state read
through the server's own Read path -- INSERT is undone by a DELETE of its key,
MODIFY by a MODIFY back to the state read, DELETE by an INSERT of it -- and the
inverses of the applied updates are written back in reverse order with the
Write path. This covers every entity the server writes (table entries and
default entries, one-shot sets, direct counter data and meter configs, action
profile members and groups, counters, meters, registers, multicast groups,
clone sessions, digest configs, value sets). Counter data and meter configs
are restored only where the update itself wrote them: packets counted while a
ROLLBACK_ON_ERROR batch ran are not taken back. Data-plane-volatile state that
the Read path does not show is not restored either: an entry re-inserted by a
rollback restarts its idle timer, and digest data buffered for a configuration
that a rolled-back DELETE removed is gone.

Statuses after a rollback (spec "Error Reporting": one p4.Error per update, OK
only for the ones that succeeded): the failed update has its own error; every
other update is ABORTED -- the ones applied and then rolled back, and the ones
never attempted -- since none of them took effect.

Data-plane atomicity: the server runs a DATAPLANE_ATOMIC batch, rollback
included, in one `Device.call` (see server.Write); the switch runs packets on
the same loop thread, so no packet is parsed or matched between two updates of
such a batch. The other modes run in chunks of CHUNK updates, forwarding in
between (write_batch). A
packet already queued in the traffic manager when a batch runs has had its
ingress pass before the batch and gets its egress pass after it (the same holds
for BMv2, whose ingress and egress threads share its queues).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from p4.v1 import p4runtime_pb2

from .errors import P4RTError, aborted, as_p4rt_error, internal, invalid

__all__ = ["CHUNK", "ApplyFn", "ReadFn", "inverse", "write_batch"]

log = logging.getLogger("emu.runtime.atomicity")

U = p4runtime_pb2.Update
E = p4runtime_pb2.Entity
WR = p4runtime_pb2.WriteRequest
ReadFn = Callable[[p4runtime_pb2.Entity], list[p4runtime_pb2.Entity]]
ApplyFn = Callable[[p4runtime_pb2.Update], None]


def _upd(typ: int, ent: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    return U(type=typ, entity=ent)


def _restore(typ: int, prev: list[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Update]:
    """MODIFY is undone by a MODIFY back to `prev`, DELETE by an INSERT of it."""
    back = U.MODIFY if typ == U.MODIFY else U.INSERT
    return [_upd(back, e) for e in prev]


def _table_entry(typ: int, te: p4runtime_pb2.TableEntry,
                 read: ReadFn) -> list[p4runtime_pb2.Update]:
    key = p4runtime_pb2.TableEntry(table_id=te.table_id, priority=te.priority,
                                   is_default_action=te.is_default_action)
    key.match.extend(te.match)
    if typ == U.INSERT:
        return [_upd(U.DELETE, E(table_entry=key))]
    q = E(table_entry=key)
    q.table_entry.counter_data.SetInParent()
    q.table_entry.meter_config.SetInParent()
    got = [e for e in read(q)
           if te.is_default_action or (e.table_entry.priority == te.priority
                                       and (len(te.match) or not len(e.table_entry.match)))]
    for e in got:
        prev = e.table_entry
        prev.is_const = False
        if typ == U.MODIFY and not te.HasField("counter_data"):
            prev.ClearField("counter_data")  # untouched by the update: keep what packets added
        # prev's meter_config stays as read (unset: none): a MODIFY without it resets it
    return _restore(typ, got)


def _profile_entry(typ: int, which: str, msg: Any, read: ReadFn
                   ) -> list[p4runtime_pb2.Update]:
    """Undo of a write of an action profile member or group (`which`): the member or
    group id field is the one besides action_profile_id."""
    id_field = "member_id" if which == "action_profile_member" else "group_id"
    own_id = getattr(msg, id_field)
    key = type(msg)(action_profile_id=msg.action_profile_id, **{id_field: own_id})
    if msg.action_profile_id == 0:
        return []
    if typ == U.INSERT:
        return [_upd(U.DELETE, E(**{which: key}))]
    return _restore(typ, [e for e in read(E(**{which: key}))
                          if getattr(getattr(e, which), id_field) == own_id])


def inverse(u: p4runtime_pb2.Update, read: ReadFn) -> list[p4runtime_pb2.Update]:
    """Updates that undo `u` once it has been applied, computed before it is.

    An empty list for an update that cannot succeed (the Write path refuses it).
    """
    typ = u.type
    if typ not in (U.INSERT, U.MODIFY, U.DELETE):
        return []
    ent = u.entity
    which = ent.WhichOneof("entity")
    if which == "table_entry":
        if ent.table_entry.table_id == 0:
            return []
        return _table_entry(typ, ent.table_entry, read)
    if which in ("action_profile_member", "action_profile_group"):
        return _profile_entry(typ, which, getattr(ent, which), read)
    if which in ("counter_entry", "meter_entry", "register_entry"):
        # Only MODIFY exists; without an index it wrote every cell: restore each.
        msg = getattr(ent, which)
        q = E()
        qm = getattr(q, which)
        pid = "counter_id" if which == "counter_entry" else \
            "meter_id" if which == "meter_entry" else "register_id"
        if typ != U.MODIFY or getattr(msg, pid) == 0:
            return []
        setattr(qm, pid, getattr(msg, pid))
        if msg.HasField("index"):
            qm.index.CopyFrom(msg.index)
        return _restore(typ, read(q))
    if which in ("direct_counter_entry", "direct_meter_entry"):
        msg = getattr(ent, which)
        if typ != U.MODIFY or msg.table_entry.table_id == 0:
            return []
        q = E()
        qm = getattr(q, which)
        qm.table_entry.table_id = msg.table_entry.table_id
        qm.table_entry.priority = msg.table_entry.priority
        qm.table_entry.is_default_action = msg.table_entry.is_default_action
        qm.table_entry.match.extend(msg.table_entry.match)
        return _restore(typ, read(q))
    if which == "packet_replication_engine_entry":
        pre = ent.packet_replication_engine_entry
        kind = pre.WhichOneof("type")
        q = E()
        if kind == "multicast_group_entry":
            gid = pre.multicast_group_entry.multicast_group_id
            if gid == 0:
                return []
            q.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = gid
        elif kind == "clone_session_entry":
            sid = pre.clone_session_entry.session_id
            if sid == 0:
                return []
            q.packet_replication_engine_entry.clone_session_entry.session_id = sid
        else:
            return []
        if typ == U.INSERT:
            return [_upd(U.DELETE, q)]
        return _restore(typ, read(q))
    if which == "digest_entry":
        did = ent.digest_entry.digest_id
        if did == 0:
            return []
        q = E(digest_entry=p4runtime_pb2.DigestEntry(digest_id=did))
        if typ == U.INSERT:
            return [_upd(U.DELETE, q)]
        return _restore(typ, read(q))
    if which == "value_set_entry":
        vid = ent.value_set_entry.value_set_id
        if typ != U.MODIFY or vid == 0:
            return []
        return _restore(typ, read(E(value_set_entry=p4runtime_pb2.ValueSetEntry(
            value_set_id=vid))))
    return []


def _attempt(apply: ApplyFn, u: p4runtime_pb2.Update) -> P4RTError | None:
    try:
        apply(u)
        return None
    except Exception as e:
        err = as_p4rt_error(e)
        if err.code is grpc.StatusCode.INTERNAL:
            log.exception("internal error in update")
        return err


RunFn = Callable[[Callable[[], Any]], Any]

# Updates per data-path turn for the batches that need not be data-plane atomic: between
# two chunks the switch forwards, so a large batch stalls forwarding for one chunk's
# time at a time, not for the whole batch (bench/bench_write_stall.py).
CHUNK = 256


def _direct(fn: Callable[[], Any]) -> Any:
    return fn()


def write_batch(updates: Sequence[p4runtime_pb2.Update],
                denied: Sequence[P4RTError | None], atomicity: int,
                apply: ApplyFn, read: ReadFn, run: RunFn = _direct,
                chunk: int = CHUNK) -> list[P4RTError | None]:
    """Apply a batch with the given WriteRequest.Atomicity; one status per update.

    `denied[i]` is an error found before the batch ran (roles): the update is
    not attempted and fails with it. `run(fn)` runs `fn` serialised with the data
    path (Device.call). A DATAPLANE_ATOMIC batch, rollback included, is one `run`:
    no packet sees part of it. The others run `chunk` updates per `run`, so packets
    are forwarded between chunks: CONTINUE_ON_ERROR promises nothing about them,
    and ROLLBACK_ON_ERROR is all-or-none for the state, not for packets in flight
    (P4Runtime spec, "Batch Atomicity"); its rollback runs in one `run`.
    """
    if atomicity == WR.DATAPLANE_ATOMIC:
        return run(lambda: _all_or_none(updates, denied, apply, read))  # type: ignore[no-any-return]
    if atomicity == WR.CONTINUE_ON_ERROR:
        results: list[P4RTError | None] = []

        def each(lo: int, hi: int) -> None:
            for u, d in zip(updates[lo:hi], denied[lo:hi], strict=True):
                results.append(d if d is not None else _attempt(apply, u))

        for lo in range(0, len(updates), chunk):
            run(functools.partial(each, lo, lo + chunk))
        return results
    if atomicity != WR.ROLLBACK_ON_ERROR:
        raise invalid(f"unknown atomicity {atomicity}")
    state = _Rollback(updates, denied, apply, read)
    for lo in range(0, len(updates), chunk):
        if not run(functools.partial(state.step, lo, min(lo + chunk, len(updates)))):
            break
    run(state.finish)
    return state.results


def _all_or_none(updates: Sequence[p4runtime_pb2.Update], denied: Sequence[P4RTError | None],
                 apply: ApplyFn, read: ReadFn) -> list[P4RTError | None]:
    state = _Rollback(updates, denied, apply, read)
    state.step(0, len(updates))
    state.finish()
    return state.results


class _Rollback:
    """An all-or-none batch applied in steps: undo kept, rolled back if one update fails."""

    def __init__(self, updates: Sequence[p4runtime_pb2.Update],
                 denied: Sequence[P4RTError | None], apply: ApplyFn, read: ReadFn) -> None:
        self.updates, self.denied, self.apply, self.read = updates, denied, apply, read
        self.undo: list[tuple[int, list[p4runtime_pb2.Update]]] = []
        self.failed: int | None = None
        self.results: list[P4RTError | None] = [None] * len(updates)

    def step(self, lo: int, hi: int) -> bool:
        """Apply updates lo..hi-1; False once one failed (the rest is not attempted)."""
        apply, read, results = self.apply, self.read, self.results
        for i in range(lo, hi):
            u, d = self.updates[i], self.denied[i]
            if d is not None:
                self.failed, results[i] = i, d
                return False
            why: P4RTError | None = None
            try:
                inv: list[p4runtime_pb2.Update] | None = inverse(u, read)
            except Exception as e:  # the update will most likely fail the same way
                inv, why = None, as_p4rt_error(e)
            err = _attempt(apply, u)
            if err is None and inv is None:
                # Applied, but its undo could not be computed: report it, undo the rest.
                log.error("update %d applied without an undo (%s)", i, why)
                self.failed, results[i] = i, internal(f"cannot roll this update back ({why})")
                return False
            if err is not None:
                self.failed, results[i] = i, err
                return False
            self.undo.append((i, inv or []))
        return True

    def finish(self) -> None:
        """After the last step: roll everything back if an update failed."""
        failed = self.failed
        if failed is None:
            return
        results = self.results
        for i, inv in reversed(self.undo):
            msg = f"rolled back: update {failed} of the batch failed"
            for back in inv:
                err = _attempt(self.apply, back)
                if err is not None:
                    log.error("rollback of update %d failed: %s", i, err)
                    msg = f"rollback failed after update {failed} of the batch failed: {err}"
                    results[i] = internal(msg)
                    break
            else:
                results[i] = aborted(msg)
        for j in range(failed + 1, len(self.updates)):
            results[j] = aborted(f"not attempted: update {failed} of the batch failed")
