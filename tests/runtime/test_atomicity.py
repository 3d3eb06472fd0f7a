"""Write atomicity over the real server: CONTINUE_ON_ERROR, ROLLBACK_ON_ERROR,
DATAPLANE_ATOMIC.

A batch with a failing update leaves the state as it was under the two
all-or-none modes (checked by Read, for every entity kind the Write path
takes), with the failed update's own error and ABORTED for the others; under
CONTINUE_ON_ERROR the other updates apply. Packets sent through a compiled
program while batches swap a route never see half a batch.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.core.clock import RealClock
from emu.runtime.client import P4RuntimeClient, WriteError
from emu.runtime.devconfig import make_null_config
from emu.runtime.device import LocalDevice
from emu.runtime.server import P4RuntimeServer

from .conftest import (
    CP_P4,
    DEVICE_ID,
    ECMP_P4,
    HERE,
    Rig,
    compiled_config,
    error_codes,
    generated_p4info,
    p4info_of,
    wait_for,
)
from .test_reconcile import _everything, _id, _program_state
from .test_value_sets import PVS_P4, exact, vs_entity

U = p4runtime_pb2.Update
WR = p4runtime_pb2.WriteRequest
E = p4runtime_pb2.Entity
OK, INVALID, NOT_FOUND, EXISTS, PERM, ABORTED = 0, 3, 5, 6, 7, 10
SWAP_P4 = HERE / "p4" / "swap.p4"
ALL_OR_NONE = [WR.ROLLBACK_ON_ERROR, WR.DATAPLANE_ATOMIC]
MODES = {"continue": WR.CONTINUE_ON_ERROR, "rollback": WR.ROLLBACK_ON_ERROR,
         "dataplane_atomic": WR.DATAPLANE_ATOMIC}



@pytest.fixture(params=["null", "compiled"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _cp(rig: Rig, kind: str) -> tuple[P4RuntimeClient, p4info_pb2.P4Info]:
    info = p4info_of(CP_P4)
    c = rig.client()
    c.set_pipeline(info, make_null_config() if kind == "null" else compiled_config(CP_P4))
    return c, info


def _fwd(c: P4RuntimeClient, dst: int, port: int | None = None) -> E:
    if port is None:
        return c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": dst}, "MyIngress.drop")
    return c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": dst}, "MyIngress.forward",
                         {"port": port})


def _fwd_entries(c: P4RuntimeClient) -> list[bytes]:
    return sorted(e.SerializeToString(deterministic=True)
                  for e in c.read([c.table_entry("MyIngress.fwd")]))


@pytest.mark.parametrize("mode", list(MODES))
def test_failure_in_the_middle_of_a_batch(rig: Rig, kind: str, mode: str) -> None:
    c, _ = _cp(rig, kind)
    c.write_one(U.INSERT, _fwd(c, 1, 1))
    before = _fwd_entries(c)
    batch = [U(type=U.INSERT, entity=_fwd(c, 2, 2)),
             U(type=U.MODIFY, entity=_fwd(c, 1)),
             U(type=U.INSERT, entity=_fwd(c, 1, 3)),  # ALREADY_EXISTS
             U(type=U.INSERT, entity=_fwd(c, 4, 4))]
    with pytest.raises(WriteError) as ei:
        c.write(batch, atomicity=MODES[mode])
    assert ei.value.code is grpc.StatusCode.UNKNOWN
    if mode == "continue":
        assert error_codes(ei.value) == [OK, OK, EXISTS, OK]
        assert _fwd_entries(c) == sorted(
            e.SerializeToString(deterministic=True)
            for e in (_fwd(c, 1), _fwd(c, 2, 2), _fwd(c, 4, 4)))
    else:
        # The failed update has its error; the others took no effect: ABORTED.
        assert error_codes(ei.value) == [ABORTED, ABORTED, EXISTS, ABORTED]
        msgs = [m for _, m in ei.value.errors]
        assert "rolled back" in msgs[0] and "not attempted" in msgs[3]
        assert _fwd_entries(c) == before
    # A batch without errors applies in every mode.
    c.write([U(type=U.INSERT, entity=_fwd(c, 9, 9))], atomicity=MODES[mode])
    assert len(c.read([_fwd(c, 9, 9)])) == 1


@pytest.mark.parametrize("mode", ALL_OR_NONE)
def test_rollback_restores_every_entity_kind(rig: Rig, kind: str, mode: int) -> None:
    """Every kind of update of cp.p4 in one batch, then a failure: all of it is undone."""
    c, info = _cp(rig, kind)
    _program_state(c, info)
    before = _everything(c)
    dst = next(e.table_entry for e in c.read([c.table_entry("MyIngress.fwd")]))
    fwd_key = c.table_entry("MyIngress.fwd")
    fwd_key.table_entry.match.extend(dst.match)

    batch: list[U] = [U(type=U.INSERT, entity=_fwd(c, 3, 3)),
                      U(type=U.MODIFY, entity=c.table_entry(
                          "MyIngress.fwd", {"hdr.ethernet.dstAddr": 0x0A0B0C0D0E0F},
                          "MyIngress.drop")),
                      U(type=U.MODIFY, entity=c.table_entry(
                          "MyIngress.fwd", action="MyIngress.drop", default=True))]
    acl = c.read([c.table_entry("MyIngress.acl")])[0]
    acl.table_entry.action.action.params[0].value = b"\x01"
    acl.table_entry.metadata = b"changed"
    batch.append(U(type=U.MODIFY, entity=acl))
    acl_del = E()
    acl_del.CopyFrom(acl)
    batch.append(U(type=U.DELETE, entity=acl_del))
    # action profile members and indirect entries
    mem = c.read([E(action_profile_member=p4runtime_pb2.ActionProfileMember())])[0]
    new_mem = E()
    new_mem.CopyFrom(mem)
    new_mem.action_profile_member.member_id = 2
    batch.append(U(type=U.INSERT, entity=new_mem))
    batch.append(U(type=U.MODIFY, entity=c.table_entry(
        "MyIngress.indirect", {"hdr.ethernet.srcAddr": 1}, member_id=2)))
    mod_mem = E()
    mod_mem.CopyFrom(mem)
    mod_mem.action_profile_member.action.params[0].value = b"\x08"
    batch.append(U(type=U.MODIFY, entity=mod_mem))
    # counters (one cell and all cells), meters, registers
    cid = _id(info.counters, "MyIngress.pkt_counter")
    cnt = E()
    cnt.counter_entry.counter_id = cid
    cnt.counter_entry.data.packet_count = 42
    batch.append(U(type=U.MODIFY, entity=cnt))
    met = E()
    met.meter_entry.meter_id = _id(info.meters, "MyIngress.port_meter")
    met.meter_entry.index.index = 2  # configured: MODIFY without config resets it
    batch.append(U(type=U.MODIFY, entity=met))
    met2 = E()
    met2.CopyFrom(met)
    met2.meter_entry.index.index = 4
    met2.meter_entry.config.cir, met2.meter_entry.config.pir = 10, 20
    batch.append(U(type=U.MODIFY, entity=met2))
    reg = E()
    reg.register_entry.register_id = _id(info.registers, "MyIngress.reg16")
    reg.register_entry.data.bitstring = b"\x77"
    batch.append(U(type=U.MODIFY, entity=reg))
    # direct counter and meter of the fwd entry
    dc = E()
    dc.direct_counter_entry.table_entry.CopyFrom(fwd_key.table_entry)
    dc.direct_counter_entry.data.packet_count = 1000
    batch.append(U(type=U.MODIFY, entity=dc))
    dm = E()
    dm.direct_meter_entry.table_entry.CopyFrom(fwd_key.table_entry)
    batch.append(U(type=U.MODIFY, entity=dm))  # no config: unmetered
    # PRE
    mc = E()
    g = mc.packet_replication_engine_entry.multicast_group_entry
    g.multicast_group_id = 1
    g.replicas.add(egress_port=9, instance=1)
    batch.append(U(type=U.MODIFY, entity=mc))
    mc2 = E()
    mc2.CopyFrom(mc)
    mc2.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 2
    batch.append(U(type=U.INSERT, entity=mc2))
    cs = E()
    cs.packet_replication_engine_entry.clone_session_entry.session_id = 5
    batch.append(U(type=U.DELETE, entity=cs))
    cs2 = E()
    cs2.packet_replication_engine_entry.clone_session_entry.session_id = 6
    cs2.packet_replication_engine_entry.clone_session_entry.replicas.add(egress_port=4)
    batch.append(U(type=U.INSERT, entity=cs2))
    # digests
    batch.append(U(type=U.MODIFY, entity=c.digest_entry("learn_t", max_list_size=1)))
    # ... and finally a failure
    batch.append(U(type=U.INSERT, entity=_fwd(c, 3, 3)))
    with pytest.raises(WriteError) as ei:
        c.write(batch, atomicity=mode)
    assert error_codes(ei.value) == [ABORTED] * (len(batch) - 1) + [EXISTS]
    assert _everything(c) == before
    # The same batch without the failing update applies (the updates were valid).
    c.write(batch[:-1], atomicity=mode)
    assert _everything(c) != before
    # Digest DELETE is undone too.
    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.DELETE, entity=c.digest_entry("learn_t")),
                 U(type=U.MODIFY, entity=_fwd(c, 12345))], atomicity=mode)
    assert error_codes(ei.value) == [ABORTED, NOT_FOUND]
    assert len(c.read([E(digest_entry=p4runtime_pb2.DigestEntry())])) == 1


def _one_shot(c: P4RuntimeClient, info: p4info_pb2.P4Info, prefix: int, weight: int) -> E:
    nhop = next(a.preamble.id for a in info.actions if a.preamble.name == "MyIngress.set_nhop")
    shot = c.table_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (prefix << 24, 8)})
    a = shot.table_entry.action.action_profile_action_set.action_profile_actions.add(
        weight=weight)
    a.action.action_id = nhop
    a.action.params.add(param_id=1, value=b"\x05")
    a.action.params.add(param_id=2, value=b"\x05")
    return shot


@pytest.mark.parametrize("style", ["groups", "one-shot"])
@pytest.mark.parametrize("mode", ALL_OR_NONE)
def test_rollback_of_groups_and_one_shot_sets(rig: Rig, ecmp_p4info: p4info_pb2.P4Info,
                                              mode: int, style: str) -> None:
    """Group updates, or one-shot updates (one action profile takes one style or the
    other), then a failure: all undone, and no hidden one-shot member or group leaks."""
    c = rig.client()
    c.set_pipeline(ecmp_p4info, compiled_config(ECMP_P4))
    prof = "MyIngress.ecmp_selector"
    queries = [E(action_profile_member=p4runtime_pb2.ActionProfileMember()),
               E(action_profile_group=p4runtime_pb2.ActionProfileGroup()),
               c.table_entry("MyIngress.ipv4_lpm")]

    def state() -> list[bytes]:
        return sorted(e.SerializeToString(deterministic=True) for e in c.read(queries))

    if style == "groups":
        for mid in (1, 2):
            c.insert_member(prof, mid, "MyIngress.set_nhop", {"dmac": mid, "port": mid})
        c.insert_group(prof, 10, [(1, 1), (2, 3)])
        c.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000, 8)},
                       group_id=10)
        grp = c.read([queries[1]])[0]
        mod = E()
        mod.CopyFrom(grp)
        del mod.action_profile_group.members[0]
        new_grp = E()
        new_grp.CopyFrom(grp)
        new_grp.action_profile_group.group_id = 11
        del_grp = E()
        del_grp.action_profile_group.action_profile_id = grp.action_profile_group.action_profile_id
        del_grp.action_profile_group.group_id = 10
        batch = [U(type=U.MODIFY, entity=mod), U(type=U.INSERT, entity=new_grp),
                 U(type=U.MODIFY, entity=c.table_entry(
                     "MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000, 8)},
                     group_id=11)),
                 U(type=U.DELETE, entity=del_grp),
                 U(type=U.INSERT, entity=new_grp)]  # ALREADY_EXISTS
    else:
        c.write_one(U.INSERT, _one_shot(c, ecmp_p4info, 0x0A, 1))
        c.write_one(U.INSERT, _one_shot(c, ecmp_p4info, 0x0B, 2))
        batch = [U(type=U.MODIFY, entity=_one_shot(c, ecmp_p4info, 0x0B, 7)),
                 U(type=U.DELETE, entity=_one_shot(c, ecmp_p4info, 0x0A, 1)),
                 U(type=U.INSERT, entity=_one_shot(c, ecmp_p4info, 0x0C, 3)),
                 U(type=U.DELETE, entity=_one_shot(c, ecmp_p4info, 0x0B, 7)),
                 U(type=U.INSERT, entity=_one_shot(c, ecmp_p4info, 0x0C, 3))]  # ALREADY_EXISTS
    before = state()
    hidden = rig.device.control().action_profiles[prof]  # type: ignore[union-attr]
    n_members, n_groups = len(list(hidden.members())), len(list(hidden.groups()))
    with pytest.raises(WriteError) as ei:
        c.write(batch, atomicity=mode)
    assert error_codes(ei.value) == [ABORTED] * (len(batch) - 1) + [EXISTS]
    assert state() == before
    # the hidden one-shot members/group were rebuilt, none leaked
    assert (len(list(hidden.members())), len(list(hidden.groups()))) == (n_members, n_groups)


@pytest.mark.parametrize("mode", ALL_OR_NONE)
def test_rollback_of_value_sets(rig: Rig, mode: int) -> None:
    info = p4info_of(PVS_P4)
    c = rig.client()
    c.set_pipeline(info, compiled_config(PVS_P4))
    vs = next(v.preamble.id for v in info.value_sets if v.preamble.alias == "etypes")
    c.write_one(U.MODIFY, vs_entity(vs, [[exact(1, 0x88B5)]]))
    before = c.read([vs_entity(0)])
    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.MODIFY, entity=vs_entity(vs, [[exact(1, 1)], [exact(1, 2)]])),
                 U(type=U.MODIFY, entity=vs_entity(vs, [[exact(1, 1)]] * 2))],
                atomicity=mode)
    assert error_codes(ei.value) == [ABORTED, EXISTS]
    assert c.read([vs_entity(0)]) == before


def test_role_denied_update_rolls_back_the_batch(rig: Rig) -> None:
    from emu.runtime.roles import make_role_config

    info = p4info_of(CP_P4)
    boss = rig.client()
    boss.set_pipeline(info, make_null_config())
    fwd_id = _id(info.tables, "MyIngress.fwd")
    c = rig.client(role="fwd-only", role_config=make_role_config(exclusive_p4_ids=[fwd_id]))
    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.INSERT, entity=_fwd(boss, 1, 1)),
                 U(type=U.INSERT, entity=boss.table_entry(
                     "MyIngress.acl", {"hdr.ethernet.srcAddr": 1}, "MyIngress.drop",
                     priority=1))],
                atomicity=WR.ROLLBACK_ON_ERROR)
    assert error_codes(ei.value) == [ABORTED, PERM]
    assert c.read([boss.table_entry("MyIngress.fwd")]) == []


def test_batch_and_rollback_run_in_one_device_call(rig: Rig, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    """What makes DATAPLANE_ATOMIC hold: the switch loop runs the whole batch, its
    rollback included, as one piece of work -- no packet runs in between."""
    c, _ = _cp(rig, "null")
    calls: list[int] = []
    inside = threading.local()
    real_call = rig.device.call
    table = rig.device.control().tables["MyIngress.fwd"]  # type: ignore[union-attr]
    real_insert, real_delete = table.insert, table.delete
    outside: list[str] = []

    def call(fn):  # type: ignore[no-untyped-def]
        calls.append(1)
        inside.on = True
        try:
            return real_call(fn)
        finally:
            inside.on = False

    def insert(*a, **k):  # type: ignore[no-untyped-def]
        if not getattr(inside, "on", False):
            outside.append("insert")
        return real_insert(*a, **k)

    def delete(*a, **k):  # type: ignore[no-untyped-def]
        if not getattr(inside, "on", False):
            outside.append("delete")
        return real_delete(*a, **k)

    monkeypatch.setattr(rig.device, "call", call)
    monkeypatch.setattr(table, "insert", insert)
    monkeypatch.setattr(table, "delete", delete)
    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.INSERT, entity=_fwd(c, 1, 1)), U(type=U.INSERT, entity=_fwd(c, 2, 2)),
                 U(type=U.MODIFY, entity=_fwd(c, 3))], atomicity=WR.DATAPLANE_ATOMIC)
    assert error_codes(ei.value) == [ABORTED, ABORTED, NOT_FOUND]
    assert len(calls) == 1 and outside == []


# ---------------------------------------------------------------- packets vs batches


def test_swap_p4info_file_is_current() -> None:
    assert generated_p4info(SWAP_P4) == p4info_of(SWAP_P4), "regenerate swap.p4info.txtpb"


class _Switch:
    """The server on a LocalDevice whose RealClock loop runs in its own thread, as in
    the switch daemon: packets and Device.call work share that one thread."""

    def __init__(self) -> None:
        self.clock = RealClock()
        self.outputs: list[tuple[int, bytes]] = []
        self.device = LocalDevice(DEVICE_ID, self.clock, cpu_port=255,
                                  output=lambda p, f: self.outputs.append((p, f)))
        self.server = P4RuntimeServer(self.device)
        self.path = f"/tmp/emu-p4rt-{uuid.uuid4().hex[:8]}.sock"
        self.server.start(f"unix:{self.path}")
        started = threading.Event()

        def loop() -> None:
            self.device.loop_thread = threading.get_ident()
            self.clock.call_soon(started.set)
            try:
                self.clock.run()
            finally:
                self.device.loop_thread = None

        self.thread = threading.Thread(target=loop, name="switch-loop", daemon=True)
        self.thread.start()
        assert started.wait(10)

    def inject(self, port: int, frame: bytes, n: int = 1) -> None:
        def run() -> None:
            for _ in range(n):
                self.device.inject(port, frame)
        self.clock.call_soon_threadsafe(run)

    def close(self) -> None:
        self.server.stop(0)
        self.clock.stop()
        self.thread.join(10)
        self.clock.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


@pytest.fixture
def switch() -> Iterator[_Switch]:
    sw = _Switch()
    try:
        yield sw
    finally:
        sw.close()


def test_dataplane_atomic_batches_are_never_seen_half_applied(switch: _Switch) -> None:
    """A sender thread keeps frames flowing through swap.p4 while batches swap the
    route (port) and tag (source MAC) of one destination between A=(1, 0xA) and
    B=(2, 0xB), and while batches that would set C=(3, 0xC) fail on their last
    update and are rolled back. Every frame out must carry A or B, whole."""
    info = p4info_of(SWAP_P4)
    c = P4RuntimeClient(f"unix:{switch.path}", DEVICE_ID, (0, 1))
    try:
        c.set_pipeline(info, compiled_config(SWAP_P4))
        dst = 0x0000000000AB
        frame = dst.to_bytes(6, "big") + bytes(6) + b"\x88\xb5" + bytes(50)

        def pair(typ: int, port: int, tag: int) -> list[U]:
            return [U(type=typ, entity=c.table_entry("I.routes", {"hdr.eth.dst": dst},
                                                     "I.route", {"port": port})),
                    U(type=typ, entity=c.table_entry("I.tags", {"hdr.eth.dst": dst},
                                                     "I.tag", {"src": tag}))]

        c.write(pair(U.INSERT, 1, 0xA), atomicity=WR.DATAPLANE_ATOMIC)
        stop = threading.Event()

        def sender() -> None:
            while not stop.is_set():
                switch.inject(0, frame, 20)
                stop.wait(0.001)

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        seen_after: list[tuple[int, int]] = []
        try:
            for i in range(30):
                port, tag = (2, 0xB) if i % 2 == 0 else (1, 0xA)
                c.write(pair(U.MODIFY, port, tag), atomicity=WR.DATAPLANE_ATOMIC)
                with pytest.raises(WriteError) as ei:
                    c.write(pair(U.MODIFY, 3, 0xC)
                            + [U(type=U.INSERT, entity=pair(U.INSERT, 1, 1)[0].entity)],
                            atomicity=WR.DATAPLANE_ATOMIC)
                assert error_codes(ei.value) == [ABORTED, ABORTED, EXISTS]
                # A frame sent after the batch returned sees the batch (deterministic);
                # it is told apart from the sender's by a marker in its payload.
                probe = frame[:20] + bytes([i + 1]) + frame[21:]
                switch.inject(0, probe)
                wait_for(lambda m=i + 1: any(f[20] == m for _, f in list(switch.outputs)),
                         10, "the probe frame out")
                p, f = next((p, f) for p, f in list(switch.outputs) if f[20] == i + 1)
                seen_after.append((p, int.from_bytes(f[6:12], "big")))
        finally:
            stop.set()
            t.join(10)
        got = {(p, int.from_bytes(f[6:12], "big")) for p, f in switch.outputs}
        assert got <= {(1, 0xA), (2, 0xB)}, got
        assert seen_after == [(2, 0xB) if i % 2 == 0 else (1, 0xA) for i in range(30)]
        assert len(switch.outputs) > 100  # frames really flowed during the batches
    finally:
        c.close()
