"""Requests a fuzzer of the P4Runtime server found mishandled, each with the code the
P4Runtime spec asks for: engine errors logged as internal errors, meter rates that
could not be read back, device configs and P4Infos that crashed or stalled
SetForwardingPipelineConfig, an indirect table's default entry, replica ports wider
than the field reads return them in."""

from __future__ import annotations

import json
import logging

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.runtime.client import P4RuntimeClient, WriteError
from emu.runtime.devconfig import make_null_config
from emu.runtime.infoplane import MAX_CELLS

from .conftest import HERE, Rig, compiled_config, p4info_of

U = p4runtime_pb2.Update
E = p4runtime_pb2.Entity
WR = p4runtime_pb2.WriteRequest
SFPC = p4runtime_pb2.SetForwardingPipelineConfigRequest
INVALID, NOT_FOUND, PERM, ABORTED, RANGE = 3, 5, 7, 10, 11
INT64_MAX = (1 << 63) - 1


def _primary(rig: Rig, p4info: p4info_pb2.P4Info) -> P4RuntimeClient:
    c = rig.client()
    assert c.is_primary
    c.set_pipeline(p4info, make_null_config())
    return c


def _codes(e: WriteError) -> list[int]:
    return [c for c, _ in e.errors]


def _verify_code(c: P4RuntimeClient, p4info: p4info_pb2.P4Info, config: bytes
                 ) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(p4info, config, action=SFPC.VERIFY)
    return ei.value.code()  # type: ignore[no-any-return]


def test_engine_errors_are_not_logged_as_internal_errors(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, caplog: pytest.LogCaptureFixture) -> None:
    """A read of a missing multicast group or entry is the client's mistake: NOT_FOUND,
    and no 'internal error' traceback in the server's log."""
    c = _primary(rig, cp_p4info)
    mc = E()
    mc.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 8
    dc = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 5})
    dce = E()
    dce.direct_counter_entry.table_entry.CopyFrom(dc.table_entry)
    with caplog.at_level(logging.ERROR, logger="emu.runtime"):
        for ent in (mc, dce):
            with pytest.raises(grpc.RpcError) as ei:
                c.read([ent])
            assert ei.value.code() is grpc.StatusCode.NOT_FOUND
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
