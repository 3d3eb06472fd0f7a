from __future__ import annotations

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from emu.p4.frontend import check_source, load_program
from emu.p4.p4info import generate_p4info

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="session")
def features() -> p4info_pb2.P4Info:
    return generate_p4info(load_program(str(PROGRAMS / "features.p4")))


def p4info_of(source: str) -> p4info_pb2.P4Info:
    """P4Info of a program given as text (it includes core.p4 and v1model.p4 itself)."""
    return generate_p4info(check_source(source, "test.p4"))
