"""Inlined counter.count / register.write: the index check is left out only when the
index's type cannot exceed the array (an unsigned bit<W>, through a widening cast,
with 2**W cells or more); a bit<W> value needs no mask (the type checker makes W the
cells' width)."""

from __future__ import annotations

import pytest

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source
from tests.p4.programs import v1model_program

INGRESS = """
    counter(32w{size}, CounterType.packets) c;
    register<bit<4>>(32w{size}) r;
    apply {{
        sm.egress_spec = 1;
        c.count((bit<32>)hdr.h.a[{hi}:0]);
        r.write((bit<32>)hdr.h.a[{hi}:0], hdr.h.b[3:0]);
    }}
"""


@pytest.mark.parametrize(("size", "hi", "checked"), [
    (4, 1, False),  # bit<2> index (cast to bit<32>), 4 cells
    (3, 1, True),  # index 3 is out of a 3-cell array
    (4, 2, True),  # a bit<3> index may be out of 4 cells
])
def test_index_and_value_checks(size: int, hi: int, checked: bool) -> None:
    prog = compile_source(v1model_program(INGRESS.format(size=size, hi=hi)), "t.p4")
    ing = prog.source[prog.source.index("def run_ingress("):]
    assert ("if _ci < " in ing) is checked and ("if _ri < " in ing) is checked
    assert "_rv &" not in ing
    sw = P4Switch(prog)
    for a in (0, 1, 3, 3, 7):  # the index is a's low 2 or 3 bits
        sw.inject(0, bytes([a, 0xFE]) + b"x")
    sw.run_until_idle()
    assert len(sw.outputs()) == 5
    counts = [sw.counter_read("I.c", i)[0] for i in range(size)]
    # out-of-range indexes are not counted: 3 with 3 cells, 7 with 3 index bits
    want = {(4, 1): [1, 1, 0, 3], (3, 1): [1, 1, 0], (4, 2): [1, 1, 0, 2]}[(size, hi)]
    assert counts == want
    assert sw.register_read("I.r", 1) == 0xE
