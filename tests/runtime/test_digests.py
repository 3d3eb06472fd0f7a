"""Digests over the real server: DigestEntry config, batching, dedup cache, acks, timeouts.

cp.p4 (compiled) sends digest learn_t {srcAddr, ingress_port} for every frame, so
frames with distinct source MACs make distinct digest messages. No assertion
depends on how fast anything runs: lists are counted, waits are generous, and an
absence is only asserted where nothing could have sent (a 60 s timeout).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.runtime.client import P4RuntimeClient, WriteError
from emu.runtime.devconfig import make_null_config

from .conftest import CP_P4, HERE, Rig, compiled_config, wait_for

U = p4runtime_pb2.Update
INVALID, NOT_FOUND, EXISTS, PERM = 3, 5, 6, 7
MINUTE_NS = 60_000_000_000


def _learn_name(info: p4info_pb2.P4Info) -> str:
    return info.digests[0].preamble.name


def _frame(src: int) -> bytes:
    return (0x0A0B0C0D0E0F).to_bytes(6, "big") + src.to_bytes(6, "big") + b"\x88\xb5" + bytes(50)


def _inject(rig: Rig, *srcs: int, port: int = 2) -> None:
    """Frames from the given source MACs, in one go on the switch loop."""
    def run() -> None:
        for s in srcs:
            rig.device.inject(port, _frame(s))
    rig.device.call(run)
    rig.clock.run_until_idle()


def _srcs(dl: p4runtime_pb2.DigestList) -> list[int]:
    return [int.from_bytes(d.struct.members[0].bitstring, "big") for d in dl.data]


@pytest.fixture
def learner(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> P4RuntimeClient:
    c = rig.client()
    c.set_pipeline(cp_p4info, compiled_config(CP_P4))
    return c


def test_digest_entry_config_lifecycle(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """INSERT / MODIFY / DELETE / Read of DigestEntry with the spec's error codes."""
    c = rig.client()
    c.set_pipeline(cp_p4info, make_null_config())
    name = _learn_name(cp_p4info)
    did = cp_p4info.digests[0].preamble.id
    ent = c.digest_entry(name, max_timeout_ns=1000, max_list_size=10, ack_timeout_ns=5000)
    q = p4runtime_pb2.Entity()
    q.digest_entry.digest_id = did
    with pytest.raises(grpc.RpcError) as ri:  # not configured yet
        c.read([q])
    assert ri.value.code() is grpc.StatusCode.NOT_FOUND
    assert c.read([p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry())]) == []
    with pytest.raises(WriteError) as ei:
        c.write_one(U.MODIFY, ent)
    assert [code for code, _ in ei.value.errors] == [NOT_FOUND]
    c.write_one(U.INSERT, ent)
    got = c.read([q])[0].digest_entry
    assert (got.digest_id, got.config.max_timeout_ns, got.config.max_list_size,
            got.config.ack_timeout_ns) == (did, 1000, 10, 5000)
    wild = c.read([p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry())])
    assert [e.digest_entry.digest_id for e in wild] == [did]
    # batch: duplicate INSERT, MODIFY, unknown id, negative value, wildcard id in a write
    bad_id = c.digest_entry(name)
    bad_id.digest_entry.digest_id = 0x0F000001
    negative = c.digest_entry(name, max_list_size=-1)
    wildcard = c.digest_entry(name)
    wildcard.digest_entry.digest_id = 0
    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.INSERT, entity=ent),
                 U(type=U.MODIFY, entity=c.digest_entry(name, max_list_size=3)),
                 U(type=U.MODIFY, entity=bad_id),
                 U(type=U.MODIFY, entity=negative),
                 U(type=U.INSERT, entity=wildcard)])
    assert [code for code, _ in ei.value.errors] == [EXISTS, 0, NOT_FOUND, INVALID, INVALID]
    assert c.read([q])[0].digest_entry.config.max_list_size == 3
    c.write_one(U.DELETE, c.digest_entry(name))
    with pytest.raises(WriteError) as ei:
        c.write_one(U.DELETE, c.digest_entry(name))
    assert [code for code, _ in ei.value.errors] == [NOT_FOUND]
    # a new pipeline (VERIFY_AND_COMMIT) starts with no digest configured
    c.write_one(U.INSERT, ent)
    c.set_pipeline(cp_p4info, make_null_config())
    assert c.read([p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry())]) == []


def test_digests_stream_only_when_configured_and_batch_by_size(
        rig: Rig, learner: P4RuntimeClient, cp_p4info: p4info_pb2.P4Info) -> None:
    c = learner
    name = _learn_name(cp_p4info)
    _inject(rig, 0x020000000001)  # no DigestEntry: never streamed
    c.write_one(U.INSERT, c.digest_entry(name, max_timeout_ns=MINUTE_NS, max_list_size=3))
    _inject(rig, 0x020000000002, 0x020000000002, 0x020000000003)  # a duplicate in the buffer
    with pytest.raises(queue.Empty):  # 2 distinct of 3: the list waits (for a minute)
        c.digests.get(timeout=0.3)
    _inject(rig, 0x020000000004, 0x020000000005)
    first = c.digests.get(timeout=10)
    assert first.digest_id == cp_p4info.digests[0].preamble.id
    assert _srcs(first) == [0x020000000002, 0x020000000003, 0x020000000004]
    assert [m.bitstring for m in first.data[0].struct.members] == [b"\x02\x00\x00\x00\x00\x02",
                                                                  b"\x02"]
    assert first.timestamp > 0
    _inject(rig, 0x020000000006, 0x020000000007)
    second = c.digests.get(timeout=10)
    assert _srcs(second) == [0x020000000005, 0x020000000006, 0x020000000007]
    assert (first.list_id, second.list_id) == (1, 2)
    assert c.digests.empty()


def test_max_timeout_sends_a_partial_list(rig: Rig, learner: P4RuntimeClient,
                                          cp_p4info: p4info_pb2.P4Info) -> None:
    c = learner
    c.write_one(U.INSERT, c.digest_entry(_learn_name(cp_p4info),
                                         max_timeout_ns=1_000_000_000, max_list_size=0))
    _inject(rig, 0x020000000011, 0x020000000012)  # no size limit: only the timeout sends
    got: list[int] = []
    while len(got) < 2:
        got += _srcs(c.digests.get(timeout=15))
    assert got == [0x020000000011, 0x020000000012]


def test_duplicates_wait_for_ack_or_ack_timeout(rig: Rig, learner: P4RuntimeClient,
                                                cp_p4info: p4info_pb2.P4Info) -> None:
    c = learner
    mgr = rig.server.digests
    name = _learn_name(cp_p4info)
    a, b = 0x020000000021, 0x020000000022
    c.write_one(U.INSERT, c.digest_entry(name, ack_timeout_ns=3600 * 10**9))  # one per message
    _inject(rig, a)
    one = c.digests.get(timeout=10)
    assert _srcs(one) == [a]
    sent, suppressed = mgr.lists_sent, mgr.suppressed
    _inject(rig, a, a)  # in the cache until acked: suppressed
    assert (mgr.lists_sent, mgr.suppressed) == (sent, suppressed + 2)
    _inject(rig, b)  # other data is not held back
    assert _srcs(c.digests.get(timeout=10)) == [b]
    c.ack_digest(one)
    wait_for(lambda: (_inject(rig, a), not c.digests.empty())[1], timeout=10,
             what="the acked data reported again")
    again = c.digests.get(timeout=1)
    assert _srcs(again) == [a] and again.list_id > one.list_id
    # without an ack, the cache entry expires after ack_timeout_ns
    c.write_one(U.MODIFY, c.digest_entry(name, ack_timeout_ns=200_000_000))
    c.ack_digest(again)  # acks travel on the stream: wait until it has been taken
    wait_for(lambda: (_inject(rig, a), not c.digests.empty())[1], timeout=10,
             what="the acked data reported again")
    third = c.digests.get(timeout=1)
    wait_for(lambda: (_inject(rig, a), not c.digests.empty())[1], timeout=15,
             what="the unacked data reported again after ack_timeout_ns")
    assert _srcs(c.digests.get(timeout=1)) == [a]
    assert third.list_id > again.list_id
    # ack_timeout_ns 0: no cache, every message is reported
    c.write_one(U.MODIFY, c.digest_entry(name))
    fresh = 0x020000000023
    _inject(rig, fresh, fresh)
    lists = []
    while len(lists) < 2:  # (a late list of `a` from the loop above is not what we count)
        got = _srcs(c.digests.get(timeout=10))
        if got != [a]:
            lists.append(got)
    assert lists == [[fresh], [fresh]]


def test_bad_acks_are_stream_errors(rig: Rig, learner: P4RuntimeClient,
                                    cp_p4info: p4info_pb2.P4Info) -> None:
    c = learner
    c.write_one(U.INSERT, c.digest_entry(_learn_name(cp_p4info)))
    c.ack_digest(p4runtime_pb2.DigestList(digest_id=0x0F000001, list_id=1))
    err = c.stream_errors.get(timeout=5)
    assert err.canonical_code == INVALID
    assert err.WhichOneof("details") == "digest_list_ack"
    assert err.digest_list_ack.digest_list_ack.digest_id == 0x0F000001
    backup = rig.client((0, 0))
    assert not backup.is_primary
    backup.ack_digest(p4runtime_pb2.DigestList(digest_id=cp_p4info.digests[0].preamble.id,
                                               list_id=1))
    assert backup.stream_errors.get(timeout=5).canonical_code == PERM


def test_no_primary_drops_lists_without_caching(rig: Rig, learner: P4RuntimeClient,
                                                cp_p4info: p4info_pb2.P4Info) -> None:
    c = learner
    mgr = rig.server.digests
    c.write_one(U.INSERT, c.digest_entry(_learn_name(cp_p4info), ack_timeout_ns=3600 * 10**9))
    c.close()
    rig.clients.remove(c)
    wait_for(lambda: rig.server.arbitration.primary("") is None, what="primary gone")
    _inject(rig, 0x020000000031)
    assert mgr.lists_dropped == 1
    again = rig.client((0, 2))
    _inject(rig, 0x020000000031)  # not cached while nobody saw it: reported to the new primary
    assert _srcs(again.digests.get(timeout=10)) == [0x020000000031]


def test_p4runtime_shell_digests(tcp_rig: Rig, cp_p4info: p4info_pb2.P4Info,
                                 tmp_path: Path) -> None:
    """p4runtime-shell configures the digest (DigestEntry), reads it back and sniffs
    DigestLists, which it acks itself; the server sees the acks."""
    cfg = compiled_config(CP_P4)
    out = tmp_path
    (out / "cp.p4info.txtpb").write_text(str(cp_p4info))
    (out / "cp.cfg").write_bytes(cfg)
    proc = subprocess.Popen([sys.executable, str(HERE / "shell_digests.py"), tcp_rig.address,
                             str(tcp_rig.device.device_id), str(out / "cp.p4info.txtpb"),
                             str(out / "cp.cfg")],
                            cwd=HERE.parents[1], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        first = json.loads(proc.stdout.readline() or "{}")
        assert first.get("configured") == [2, 1_000_000_000, 3600 * 10**9], first
        _inject(tcp_rig, 0x020000000041, 0x020000000042)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    result = json.loads(rest.splitlines()[0])
    assert result["lists"] == [[0x020000000041, 0x020000000042]]
    # acked by the shell: the cache is empty again, so the same data is reported again
    mgr = tcp_rig.server.digests
    wait_for(lambda: not any(d.cache for d in mgr._digests.values()), what="acks seen")
