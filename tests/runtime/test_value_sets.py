"""ValueSetEntry over the real server: parser value sets of pvs.p4.

Members written over P4Runtime change how the compiled program parses packets
(h.path: 0 = h not parsed, 1 = parsed but no `keys` member matched, 2 =
matched); reads return the members as written; every error the spec names has
its code; RECONCILE_AND_COMMIT carries the members over.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.runtime.client import P4RuntimeClient, WriteError
from emu.runtime.devconfig import make_null_config

from .conftest import HERE, Rig, compiled_config, error_codes, generated_p4info, p4info_of

PVS_P4 = HERE / "p4" / "pvs.p4"
U = p4runtime_pb2.Update
SFPC = p4runtime_pb2.SetForwardingPipelineConfigRequest
FM = p4runtime_pb2.FieldMatch
INVALID, NOT_FOUND, EXISTS, EXHAUSTED, UNIMPL = 3, 5, 6, 8, 12
ETYPE = 0x88B5


def _vs_id(info: p4info_pb2.P4Info, name: str) -> int:
    return next(v.preamble.id for v in info.value_sets if v.preamble.alias == name)


def exact(fid: int, v: int) -> FM:
    return FM(field_id=fid, exact=FM.Exact(value=v.to_bytes(2, "big")))


def ternary(fid: int, v: int, m: int) -> FM:
    return FM(field_id=fid, ternary=FM.Ternary(value=bytes([v]), mask=bytes([m])))


def lpm(fid: int, v: int, plen: int) -> FM:
    return FM(field_id=fid, lpm=FM.LPM(value=bytes([v]), prefix_len=plen))


def vs_entity(vs_id: int, members: Sequence[Sequence[FM]] = ()) -> p4runtime_pb2.Entity:
    e = p4runtime_pb2.Entity()
    e.value_set_entry.value_set_id = vs_id
    for m in members:
        e.value_set_entry.members.add().match.extend(m)
    return e



def _client(rig: Rig, config: bytes) -> tuple[P4RuntimeClient, p4info_pb2.P4Info]:
    info = p4info_of(PVS_P4)
    c = rig.client()
    c.set_pipeline(info, config)
    return c, info


def _frame(etype: int, a: int, b: int, c: int) -> bytes:
    return (bytes.fromhex("0a0b0c0d0e0f" "020000000001") + etype.to_bytes(2, "big")
            + bytes([a, b, c, 0]) + bytes(40))


def _path(rig: Rig, etype: int, a: int, b: int, c: int) -> int:
    """h.path of the frame the program sends out (0: h was not parsed)."""
    frame = _frame(etype, a, b, c)
    rig.outputs.clear()
    rig.device.call(lambda: rig.device.inject(0, frame))
    rig.clock.run_until_idle()
    [(port, out)] = rig.outputs
    assert port == 1 and out[:14 + 3] == frame[:14 + 3] and out[18:] == frame[18:]
    return out[17]


def test_p4info_file_is_current() -> None:
    assert generated_p4info(PVS_P4) == p4info_of(PVS_P4), "regenerate pvs.p4info.txtpb"


def test_members_steer_the_parser(rig: Rig) -> None:
    c, info = _client(rig, compiled_config(PVS_P4))
    etypes, keys = _vs_id(info, "etypes"), _vs_id(info, "keys")
    assert c.read([vs_entity(etypes)]) == [vs_entity(etypes)]  # empty: matches nothing
    assert _path(rig, ETYPE, 0x0A, 0x30, 0x40) == 0

    c.write_one(U.MODIFY, vs_entity(etypes, [[exact(1, ETYPE)], [exact(1, 0x1234)]]))
    assert _path(rig, ETYPE, 0x0A, 0x30, 0x40) == 1  # h parsed; `keys` still empty
    assert _path(rig, 0x1234, 0x0A, 0x30, 0x40) == 1
    assert _path(rig, 0x0800, 0x0A, 0x30, 0x40) == 0

    # a exact 0x0A, b ternary 0x30/0xF0, c lpm 0x40/2 (0x40..0x7F); a second member
    # leaves b and c don't-care (omitted) and matches a == 0x0C alone.
    m1 = [exact(1, 0x0A), ternary(2, 0x30, 0xF0), lpm(3, 0x40, 2)]
    m2 = [exact(1, 0x0C)]
    c.write_one(U.MODIFY, vs_entity(keys, [m1, m2]))
    assert _path(rig, ETYPE, 0x0A, 0x3F, 0x7F) == 2
    assert _path(rig, ETYPE, 0x0A, 0x4F, 0x7F) == 1  # b outside the ternary
    assert _path(rig, ETYPE, 0x0A, 0x3F, 0x80) == 1  # c outside the prefix
    assert _path(rig, ETYPE, 0x0B, 0x3F, 0x7F) == 1  # a differs
    assert _path(rig, ETYPE, 0x0C, 0xFF, 0x00) == 2
    # Read returns what was written (canonical byte strings), in write order.
    [got] = c.read([vs_entity(keys)])
    want = vs_entity(keys, [[FM(field_id=1, exact=FM.Exact(value=b"\x0a")),
                             ternary(2, 0x30, 0xF0), lpm(3, 0x40, 2)],
                            [FM(field_id=1, exact=FM.Exact(value=b"\x0c"))]])
    assert got == want
    # Wildcard read: every set.
    assert {e.value_set_entry.value_set_id
            for e in c.read([vs_entity(0)])} == {etypes, keys}

    # MODIFY replaces the whole membership; an empty one empties the set.
    c.write_one(U.MODIFY, vs_entity(etypes, [[exact(1, 0x1234)]]))
    assert _path(rig, ETYPE, 0x0A, 0x3F, 0x7F) == 0
    assert _path(rig, 0x1234, 0x0A, 0x3F, 0x7F) == 2
    c.write_one(U.MODIFY, vs_entity(etypes))
    assert _path(rig, 0x1234, 0x0A, 0x3F, 0x7F) == 0
    assert c.read([vs_entity(etypes)]) == [vs_entity(etypes)]


@pytest.mark.parametrize("kind", ["null", "compiled"])
def test_errors(rig: Rig, kind: str) -> None:
    cfg = make_null_config() if kind == "null" else compiled_config(PVS_P4)
    c, info = _client(rig, cfg)
    etypes, keys = _vs_id(info, "etypes"), _vs_id(info, "keys")
    c.write_one(U.MODIFY, vs_entity(etypes, [[exact(1, ETYPE)]]))
    before = c.read([vs_entity(0)])
    good = [exact(1, 0x0A)]
    bad: list[tuple[int, int, p4runtime_pb2.Entity]] = [
        (U.INSERT, INVALID, vs_entity(etypes, [[exact(1, 1)]])),  # only MODIFY
        (U.DELETE, INVALID, vs_entity(etypes)),
        (U.MODIFY, INVALID, vs_entity(0, [[exact(1, 1)]])),  # wildcard id
        (U.MODIFY, NOT_FOUND, vs_entity(12345, [[exact(1, 1)]])),
        (U.MODIFY, EXHAUSTED, vs_entity(etypes, [[exact(1, v)] for v in (1, 2, 3)])),
        (U.MODIFY, EXISTS, vs_entity(etypes, [[exact(1, 7)], [exact(1, 7)]])),
        (U.MODIFY, EXISTS, vs_entity(keys, [good + [ternary(2, 1, 3)],
                                            good + [ternary(2, 1, 3)]])),
        (U.MODIFY, INVALID, vs_entity(keys, [[ternary(2, 1, 3)]])),  # exact a missing
        (U.MODIFY, INVALID, vs_entity(keys, [good + [ternary(2, 0, 0)]])),  # mask 0
        (U.MODIFY, INVALID, vs_entity(keys, [good + [ternary(2, 0x11, 0x01)]])),
        (U.MODIFY, INVALID, vs_entity(keys, [good + [lpm(3, 0, 0)]])),  # prefix 0
        (U.MODIFY, INVALID, vs_entity(keys, [good + [lpm(3, 0x41, 2)]])),  # beyond prefix
        (U.MODIFY, INVALID, vs_entity(keys, [good + [lpm(3, 0x40, 9)]])),
        (U.MODIFY, INVALID, vs_entity(keys, [good + [exact(2, 1)]])),  # wrong kind
        (U.MODIFY, 11, vs_entity(keys, [[exact(1, 0x100)]])),  # wider than 8 bits: OUT_OF_RANGE
        (U.MODIFY, INVALID, vs_entity(keys, [good + [exact(9, 1)]])),  # unknown field
        (U.MODIFY, INVALID, vs_entity(keys, [good + good])),  # field twice
    ]
    for typ, code, ent in bad:
        with pytest.raises(WriteError) as ei:
            c.write_one(typ, ent)
        assert error_codes(ei.value) == [code], (typ, ent)
    assert c.read([vs_entity(0)]) == before  # refused writes left the sets alone
    with pytest.raises(grpc.RpcError) as ri:
        c.read([vs_entity(12345)])
    assert ri.value.code() is grpc.StatusCode.NOT_FOUND


def test_range_fields_are_unimplemented(rig: Rig) -> None:
    info = p4info_of(PVS_P4)
    keys = next(v for v in info.value_sets if v.preamble.alias == "keys")
    keys.match[2].match_type = p4info_pb2.MatchField.RANGE
    c = rig.client()
    c.set_pipeline(info, make_null_config())
    rng = FM(field_id=3, range=FM.Range(low=b"\x01", high=b"\x05"))
    with pytest.raises(WriteError) as ei:
        c.write_one(U.MODIFY, vs_entity(keys.preamble.id, [[exact(1, 1), rng]]))
    assert error_codes(ei.value) == [UNIMPL]
    c.write_one(U.MODIFY, vs_entity(keys.preamble.id, [[exact(1, 1)]]))  # range omitted


def test_reconcile_carries_members(rig: Rig) -> None:
    """RECONCILE_AND_COMMIT to another device config keeps the value sets' members."""
    c, info = _client(rig, compiled_config(PVS_P4))
    etypes, keys = _vs_id(info, "etypes"), _vs_id(info, "keys")
    c.write_one(U.MODIFY, vs_entity(etypes, [[exact(1, ETYPE)]]))
    c.write_one(U.MODIFY, vs_entity(keys, [[exact(1, 0x0A), lpm(3, 0x40, 2)]]))
    before = c.read([vs_entity(0)])
    c.set_pipeline(info, make_null_config(), action=SFPC.RECONCILE_AND_COMMIT)
    assert c.read([vs_entity(0)]) == before
    c.set_pipeline(info, compiled_config(PVS_P4), action=SFPC.RECONCILE_AND_COMMIT)
    assert c.read([vs_entity(0)]) == before
    assert _path(rig, ETYPE, 0x0A, 0x00, 0x55) == 2  # and the program uses them
