"""Switches running one compiled program share its generated code and classes (so the
interpreter's specialised loads stay valid across switches) while each keeps its own
tables, counters and registers."""

from __future__ import annotations

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

from ..programs import v1model_program

PROGRAM = v1model_program("""
    counter(4, CounterType.packets_and_bytes) seen;
    register<bit<8>>(4) last;
    apply {
        seen.count((bit<32>) hdr.h.a);
        last.write((bit<32>) hdr.h.a, hdr.h.b);
        sm.egress_spec = 1;
    }
""")


def test_switches_of_one_program_share_code_but_not_state() -> None:
    prog = compile_source(PROGRAM, "bind.p4")
    one, two = P4Switch(prog), P4Switch(prog)
    ns1, ns2 = one.sw.ns, two.sw.ns
    assert ns1["run_ingress"].__code__ is ns2["run_ingress"].__code__
    assert ns1["run_ingress"].__globals__ is ns2["run_ingress"].__globals__
    hdr = prog.info.hdr_class
    assert ns1[hdr] is ns2[hdr]
    one.inject(0, bytes([2, 7]))
    one.inject(0, bytes([2, 9]))
    two.inject(0, bytes([3, 5]))
    one.run_until_idle()
    two.run_until_idle()
    (counter,) = one.sw.counters
    (register,) = one.sw.registers
    assert one.counter_read(counter, 2) == (2, 4)
    assert one.counter_read(counter, 3) == (0, 0)
    assert two.counter_read(counter, 2) == (0, 0)
    assert two.counter_read(counter, 3) == (1, 2)
    assert one.register_read(register, 2) == 9
    assert two.register_read(register, 2) == 0
    assert two.register_read(register, 3) == 5
    assert [o.data for o in one.outputs()] == [bytes([2, 7]), bytes([2, 9])]


def test_counts_and_register_writes_after_a_reset_land_in_what_is_read() -> None:
    sw = P4Switch(compile_source(PROGRAM, "bind.p4"))
    (counter,) = sw.sw.counters
    (register,) = sw.sw.registers
    sw.inject(0, bytes([1, 4]))
    sw.run_until_idle()
    sw.counter_reset(counter)
    sw.register_reset(register)
    assert sw.counter_read(counter, 1) == (0, 0)
    assert sw.register_read(register, 1) == 0
    sw.inject(0, bytes([1, 6]))
    sw.inject(0, bytes([9, 6]))  # index 9 is out of range: nothing counted or written
    sw.run_until_idle()
    assert sw.counter_read(counter, 1) == (1, 2)
    assert sw.register_read(register, 1) == 6
    assert [sw.counter_read(counter, i) for i in (0, 2, 3)] == [(0, 0)] * 3
