"""@p4runtime_translation over the real server: P4Info describes the controller's
representation as p4c writes it; the target translates by identity, within both
widths, and refuses at SetForwardingPipelineConfig what identity cannot serve."""

from __future__ import annotations

import grpc
import pytest
from p4.config.v1 import p4info_pb2

from emu.p4.frontend import check_source
from emu.p4.p4info import generate_p4info
from emu.runtime.client import P4RuntimeClient, WriteError
from emu.runtime.devconfig import make_source_config

from ..p4.programs import v1model_program
from .conftest import Rig, error_codes

OUT_OF_RANGE, INVALID = 11, 3


def _program(translation: str, packet_in: bool = False) -> str:
    pin = '@controller_header("packet_in") header pin_t { Addr_t a; bit<16> pad; }' if packet_in else ""
    return v1model_program(
        """
    action fwd(Addr_t dst, bit<9> port) { hdr.h.a = dst; sm.egress_spec = port; }
    table t { key = { hdr.h.a : exact; } actions = { fwd; NoAction; } }
    apply { sm.egress_spec = 7; t.apply(); }
""",
        headers=f"{translation}\ntype bit<48> Addr_t;\nheader h_t {{ Addr_t a; }}\n{pin}",
        fields="h_t h;" + (" pin_t pin;" if packet_in else ""))


def _load(rig: Rig, source: str) -> tuple[P4RuntimeClient, p4info_pb2.P4Info]:
    info = generate_p4info(check_source(source, "tr.p4"))
    c = rig.client()
    c.set_pipeline(info, make_source_config("tr.p4", {"tr.p4": source}))
    return c, info


def _send(rig: Rig, a: int) -> list[tuple[int, bytes]]:
    rig.outputs.clear()
    frame = a.to_bytes(6, "big")
    rig.device.call(lambda: rig.device.inject(0, frame))
    rig.clock.run_until_idle()
    return list(rig.outputs)


def test_a_narrower_controller_width_translates_by_identity(rig: Rig) -> None:
    c, info = _load(rig, _program('@p4runtime_translation("emu.test/Addr", 32)'))
    (table,) = info.tables
    (mf,) = table.match_fields
    assert (mf.bitwidth, mf.type_name.name) == (32, "Addr_t")
    tr = info.type_info.new_types["Addr_t"].translated_type
    assert (tr.uri, tr.sdn_bitwidth) == ("emu.test/Addr", 32)
    c.insert_entry(table.preamble.name, {mf.name: 0x0A0B0C0D},
                   "I.fwd", {"dst": 0x01020304, "port": 3})
    assert _send(rig, 0x0A0B0C0D) == [(3, bytes.fromhex("000001020304"))]
    assert _send(rig, 0x0A0B0C0E) == [(7, bytes.fromhex("00000a0b0c0e"))]
    with pytest.raises(WriteError) as err:  # wider than the controller's 32 bits
        c.insert_entry(table.preamble.name, {mf.name: 1 << 32}, "I.fwd", {"dst": 1, "port": 1})
    assert error_codes(err.value) == [OUT_OF_RANGE]


def test_a_value_without_a_data_plane_counterpart_is_refused(rig: Rig) -> None:
    c, info = _load(rig, _program('@p4runtime_translation("emu.test/Addr", 49)'))
    (table,) = info.tables
    (mf,) = table.match_fields
    with pytest.raises(WriteError) as err:  # fits 49 bits, not the data plane's 48
        c.insert_entry(table.preamble.name, {mf.name: 1 << 48}, "I.fwd", {"dst": 1, "port": 1})
    assert error_codes(err.value) in ([INVALID], [OUT_OF_RANGE])


@pytest.mark.parametrize("translation,packet_in,what", [
    ('@p4runtime_translation("emu.test/Addr", string)', False, "translated to strings"),
    ('@p4runtime_translation("emu.test/Addr", 48)', True, "packet-in/out of translated types"),
])
def test_what_identity_cannot_serve_is_unimplemented(rig: Rig, translation: str, packet_in: bool,
                                                    what: str) -> None:
    with pytest.raises(grpc.RpcError) as err:
        _load(rig, _program(translation, packet_in))
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED  # type: ignore[attr-defined]
    assert what in (err.value.details() or "")  # type: ignore[attr-defined]
