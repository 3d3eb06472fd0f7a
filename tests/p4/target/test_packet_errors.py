"""An exception escaping the generated pipeline at packet time (issue #16 item 4): the
packet is dropped and counted, the error logged once with its P4 location, and the
switch goes on forwarding."""

from __future__ import annotations

import logging

import pytest

from emu.p4.api import P4Switch
from emu.p4.target.program import compile_source

from ..programs import v1model_program

# Every construct the front end accepts executes; to prove the safety net anyway, a fault
# is injected into the runtime under a register read (the register array raises for one
# index), so the exception escapes from inside generated code, as a target bug would.
PROGRAM = v1model_program("""
    register<bit<8>>(4) r;
    apply {
        sm.egress_spec = 1;
        r.read(hdr.h.b, (bit<32>) hdr.h.a);
    }
""")


class _Faulty:
    """A register array whose read of index 1 fails like a bug in the runtime."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def read(self, index: int, default: int = 0) -> int:
        if index == 1:
            raise RuntimeError("injected fault")
        return self.inner.read(index, default)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_exception_at_packet_time_drops_counts_and_logs_once(
        caplog: pytest.LogCaptureFixture) -> None:
    sw = P4Switch(compile_source(PROGRAM, "faulty.p4"))
    inner = sw.sw  # the target switch behind the API
    (name,) = inner.registers
    faulty = _Faulty(inner.registers[name])
    # the generated code reads the register from its namespace (its globals)
    (key,) = [k for k, v in inner.ns.items() if v is faulty.inner]
    inner.ns[key] = faulty
    with caplog.at_level(logging.ERROR):
        for i in range(6):
            sw.inject(0, bytes([1 if i % 2 == 0 else 2, 0]))
            sw.run_until_idle()
    assert [o.data for o in sw.outputs()] == [bytes([2, 0])] * 3  # the others go on
    assert sw.drops.get(0, "pipeline_error") == 3
    errors = [r.getMessage() for r in caplog.records if "pipeline error" in r.getMessage()]
    assert len(errors) == 1, errors
    assert "faulty.p4:15" in errors[0]  # the register read's statement
