"""The hand-written reference data path as an oracle for the compiled ecmp_ecn.p4:
the same entries and frames into both, in process on virtual time, and the same
frames must come out of the same ports at the same instants, with the same
counters, registers and drops."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from emu.core.clock import VirtualClock
from emu.p4.tables import ActionCall, Lpm
from emu.runtime.dataplane import Dataplane
from emu.runtime.p4switch_adapter import P4SwitchDataplane
from emu.runtime.translate import P4InfoIndex
from tests.runtime.conftest import ECMP_P4, p4info_of

from .conftest import ipv4_udp
from .reference_pipeline import CPU_PORT, DROP_PORT, EcmpEcnDataplane

NHOP = "MyIngress.set_nhop"
Out = list[tuple[int, int, bytes]]  # (time ns, port, frame)


@pytest.fixture(scope="module")
def program() -> Any:
    from emu.p4 import api

    try:
        return api.compile_file(str(ECMP_P4), [], {})
    except Exception as exc:  # the compiler is another team's moving part
        pytest.skip(f"the compiler cannot build {ECMP_P4.name} now: {exc}")


def _build(kind: str, program: Any) -> tuple[Dataplane, VirtualClock, Out]:
    index = P4InfoIndex.build(p4info_of(ECMP_P4))
    clock = VirtualClock()
    dp: Any = (EcmpEcnDataplane(index, clock) if kind == "reference"
               else P4SwitchDataplane(program, index, clock))
    out: Out = []
    dp.set_output(lambda p, f: out.append((clock.now_ns(), p, f)))
    sel = dp.control.action_profiles["MyIngress.ecmp_selector"]
    for mid, (mac, port) in enumerate([(0x020000000002, 2), (0x020000000012, 3),
                                       (0x020000000022, 4), (0x0200000000FF, DROP_PORT)], 1):
        sel.insert_member(mid, ActionCall(NHOP, (mac, port)))
    sel.insert_member(9, ActionCall("MyIngress.send_to_cpu", ()))
    sel.insert_member(10, ActionCall("MyIngress.drop", ()))
    sel.insert_group(1, [(1, 1), (2, 1), (3, 2)])
    t = dp.control.tables["MyIngress.ipv4_lpm"]
    t.insert([Lpm(0x0A000200, 24)], group_id=1)
    t.insert([Lpm(0x0A000303, 32)], member_id=3)
    t.insert([Lpm(0x0A000909, 32)], member_id=9)
    t.insert([Lpm(0x0A000500, 24)], member_id=4)
    t.insert([Lpm(0x0A000600, 24)], member_id=10)
    return dp, clock, out


def _state(dp: Dataplane) -> tuple[object, ...]:
    c = dp.control
    return (tuple(map(list, c.counters["MyIngress.port_rx"].cells)), c.registers["MyIngress.last_len"].values(),
            {p: dp.drops.port_total(p) for p in (0, 1, 2, 3, 4, CPU_PORT)})


def _frame(rnd: random.Random) -> bytes:
    """Ethernet, mostly IPv4 (TCP, UDP, others; options, bad versions, any TTL and
    ECN), at sizes around every header boundary the parser has."""
    dst = rnd.choice([0x0A000201, 0x0A0002FE, 0x0A000303, 0x0A000909, 0x0A000505,
                      0x0A000606, 0x0A000707, rnd.getrandbits(32)])
    size = rnd.choice([0, 13, 14, 20, 33, 34, 35, 37, 38, 42, 64, 200, 1500])
    ip = struct.pack("!BBHHHBBH4s4s", rnd.choice([0x45, 0x45, 0x46, 0x4F, 0x65]),
                     rnd.getrandbits(8), max(0, size - 14), rnd.getrandbits(16), 0,
                     rnd.choice([0, 1, 64, 255]), rnd.choice([6, 17, 1, 47, rnd.getrandbits(8)]),
                     rnd.getrandbits(16), rnd.getrandbits(32).to_bytes(4, "big"),
                     dst.to_bytes(4, "big"))
    eth_type = rnd.choice([b"\x08\x00"] * 6 + [b"\x86\xdd", b"\x08\x06",
                                                rnd.getrandbits(16).to_bytes(2, "big")])
    body = bytes(rnd.getrandbits(8) for _ in range(max(0, size - 34)))
    return (bytes.fromhex("020000000a01020000000001") + eth_type + ip + body)[:size]


def test_compiled_program_forwards_as_the_reference(program: Any) -> None:
    rnd = random.Random(5)
    frames: list[tuple[int, bytes]] = []
    for _ in range(2000):
        port = rnd.choice([1, 2, CPU_PORT])
        f = _frame(rnd)
        if port == CPU_PORT:  # PacketOut: a packet_out header first, sometimes cut short
            eg = rnd.choice([1, 2, 3, CPU_PORT, DROP_PORT, 0])
            f = bytes(((eg >> 1) & 0xFF, (eg & 1) << 7 | rnd.getrandbits(7))) + f
            if rnd.random() < 0.05:
                f = f[:rnd.randint(0, 3)]
        frames.append((port, f))
    got = {}
    for kind in ("reference", "compiled"):
        dp, clock, out = _build(kind, program)
        for port, f in frames:
            dp.inject(port, f)
            clock.run_until_idle()
        got[kind] = (out, _state(dp))
    ref, comp = got["reference"], got["compiled"]
    assert {p for _, p, _ in ref[0]} == {0, 1, 2, 3, 4, CPU_PORT}  # every path taken
    assert len(comp[0]) == len(ref[0])
    for i, (a, b) in enumerate(zip(ref[0], comp[0], strict=True)):
        assert a == b, (i, a[1], a[2].hex(), b[1], b[2].hex())
    assert comp[1] == ref[1]


def test_compiled_program_queues_and_marks_ecn_as_the_reference(program: Any) -> None:
    """A paced port with a short queue: the same tail drops, CE marks and departure times."""
    rnd = random.Random(7)
    burst = [ipv4_udp("10.0.1.1", "10.0.3.3", 5000, 4791, ecn=rnd.choice([0, 1, 2, 1]), seq=i)
             for i in range(120)]
    got = {}
    for kind in ("reference", "compiled"):
        dp, clock, out = _build(kind, program)
        dp.set_queue_depth(4, 20)
        dp.set_queue_rate(4, rate_pps=2000)
        for i in range(0, len(burst), 2):
            dp.inject(1, burst[i])
            dp.inject(1, burst[i + 1])
            clock.advance(100_000)
        clock.run_until_idle()
        got[kind] = (out, _state(dp), dp.drops.snapshot())
    ref, comp = got["reference"], got["compiled"]
    assert 20 < len(ref[0]) < len(burst)  # the queue filled and dropped
    assert any(f[15] & 3 == 3 for _, _, f in ref[0])  # and marked
    assert comp == ref
