"""Requests a fuzzer of the P4Runtime server found mishandled, each with the code the
P4Runtime spec asks for: engine errors logged as internal errors, meter rates that
could not be read back, a MODIFY without meter_config (and its rollback), device
configs and P4Infos that crashed or stalled SetForwardingPipelineConfig, an indirect
table's default entry, replica ports wider than the field reads return them in,
negative watch ports and huge selector group weights."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emu.p4.tables.action_profile import MAX_GROUP_WEIGHT
from emu.runtime.client import P4RuntimeClient, WriteError
from emu.runtime.devconfig import make_null_config
from emu.runtime.infoplane import MAX_CELLS

from .conftest import HERE, Rig, compiled_config, error_codes, p4info_of, primary

U = p4runtime_pb2.Update
E = p4runtime_pb2.Entity
WR = p4runtime_pb2.WriteRequest
SFPC = p4runtime_pb2.SetForwardingPipelineConfigRequest
INVALID, NOT_FOUND, PERM, EXHAUSTED, ABORTED, RANGE = 3, 5, 7, 8, 10, 11
INT64_MAX = (1 << 63) - 1




def _verify_code(c: P4RuntimeClient, p4info: p4info_pb2.P4Info, config: bytes
                 ) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(p4info, config, action=SFPC.VERIFY)
    return ei.value.code()  # type: ignore[no-any-return]


def test_engine_errors_are_not_logged_as_internal_errors(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, caplog: pytest.LogCaptureFixture) -> None:
    """A read of a missing multicast group or entry is the client's mistake: NOT_FOUND,
    and no 'internal error' traceback in the server's log."""
    c = primary(rig, cp_p4info)
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


def _meter(p4info: p4info_pb2.P4Info, cir: int, pir: int, index: int = 3) -> E:
    m = E()
    m.meter_entry.meter_id = p4info.meters[0].preamble.id
    m.meter_entry.index.index = index
    cfg = m.meter_entry.config
    cfg.cir, cfg.pir, cfg.cburst, cfg.pburst = cir, pir, 10, INT64_MAX
    return m


def test_meter_rates_read_back_as_written(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """Rates up to int64's limit are read back exactly (they were kept as a per-µs float:
    2**63 - 1 read back as 2**63, which the field cannot hold, so the read failed), and
    an all-or-none batch that modifies such a meter can be rolled back."""
    c = primary(rig, cp_p4info)
    big = _meter(cp_p4info, (1 << 53) + 1, INT64_MAX)
    c.write_one(U.MODIFY, big)
    got = c.read([_meter(cp_p4info, 0, 0)])
    assert [e.meter_entry.config for e in got] == [big.meter_entry.config]
    # the direct meter of a table entry, the same way
    ent = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 5}, "MyIngress.drop")
    ent.table_entry.meter_config.CopyFrom(big.meter_entry.config)
    c.write_one(U.INSERT, ent)
    q = c.table_entry("MyIngress.fwd")
    q.table_entry.meter_config.SetInParent()
    assert c.read([q])[0].table_entry.meter_config == big.meter_entry.config
    # ROLLBACK_ON_ERROR reads the meter to undo its MODIFY: it did not roll back (INTERNAL)
    missing = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 6})
    with pytest.raises(WriteError) as ei:
        c.write([U(type=U.MODIFY, entity=_meter(cp_p4info, 5, 7)),
                 U(type=U.DELETE, entity=missing)], atomicity=WR.ROLLBACK_ON_ERROR)
    assert error_codes(ei.value) == [ABORTED, NOT_FOUND]
    assert c.read([_meter(cp_p4info, 0, 0)])[0].meter_entry.config == big.meter_entry.config


@pytest.mark.parametrize("change", [
    {"include_dirs": None}, {"include_dirs": 5}, {"defines": 5},
    {"files": {"a.p4": "", "a.p4/b.p4": ""}},
], ids=["include-null", "include-int", "defines-int", "file-and-folder"])
def test_malformed_p4_source_config_is_invalid_argument(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, change: dict[str, object]) -> None:
    """These crashed the config's reader (TypeError, OSError: INTERNAL)."""
    c = rig.client()
    cfg: dict[str, object] = {"format": "p4-source", "main": "a.p4",
                              "files": {"a.p4": ""}, **change}
    assert _verify_code(c, cp_p4info, json.dumps(cfg).encode()) is \
        grpc.StatusCode.INVALID_ARGUMENT


def test_a_device_config_nested_past_the_json_parser_is_invalid_argument(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, caplog: pytest.LogCaptureFixture) -> None:
    """JSON nested 100,000 deep raised RecursionError in the config's reader: INTERNAL
    and an "internal error" traceback in the switch's log."""
    c = rig.client()
    with caplog.at_level(logging.ERROR, logger="emu.runtime"):
        for cfg in (b"[" * 100_000, b'{"format": "p4-source", "files": '
                    + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001):
            assert _verify_code(c, cp_p4info, cfg) is grpc.StatusCode.INVALID_ARGUMENT
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.parametrize("kind", ["counters", "meters", "registers"])
def test_null_config_with_huge_extern_sizes_is_resource_exhausted(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, kind: str) -> None:
    """The control-plane-only config allocates every cell the P4Info sizes ask for: a
    meter of size 2**32 stalled the server for minutes (and the Writes behind it)."""
    c = rig.client()
    info = p4info_pb2.P4Info()
    info.CopyFrom(cp_p4info)
    getattr(info, kind)[0].size = MAX_CELLS + 1
    assert _verify_code(c, info, make_null_config()) is grpc.StatusCode.RESOURCE_EXHAUSTED
    c.set_pipeline(cp_p4info, make_null_config())  # the P4Info's own sizes are fine


def test_indirect_table_default_entry_is_const(rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """Spec "Default Entry": an indirect table's default entry is a constant NoAction. It
    was read without is_const, and writing it back was UNIMPLEMENTED; modifying a const
    default entry is PERMISSION_DENIED."""
    c = primary(rig, cp_p4info)
    got = c.read([c.table_entry("MyIngress.indirect", default=True)])
    assert len(got) == 1 and got[0].table_entry.is_const
    ent = c.table_entry("MyIngress.indirect", action="NoAction", default=True)
    with pytest.raises(WriteError) as ei:
        c.write_one(U.MODIFY, ent)
    assert error_codes(ei.value) == [PERM]
    # a direct table's default entry stays writable and is not flagged
    assert not c.read([c.table_entry("MyIngress.fwd", default=True)])[0].table_entry.is_const


def test_replica_port_wider_than_32_bits_is_out_of_range(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """Reads return a replica's port as egress_port (uint32): a wider `port` was stored,
    and then every read of the PRE failed."""
    c = primary(rig, cp_p4info)
    mc = E()
    g = mc.packet_replication_engine_entry.multicast_group_entry
    g.multicast_group_id = 1
    g.replicas.add(port=(1 << 32).to_bytes(5, "big"), instance=1)
    cs = E()
    s = cs.packet_replication_engine_entry.clone_session_entry
    s.session_id = 1
    s.replicas.add(port=b"\x01" + bytes(6), instance=1)
    for ent in (mc, cs):
        with pytest.raises(WriteError) as ei:
            c.write_one(U.INSERT, ent)
        assert error_codes(ei.value) == [RANGE]
    g.replicas[0].port = ((1 << 32) - 1).to_bytes(4, "big")  # the widest that fits
    c.write_one(U.INSERT, mc)
    q = E()
    q.packet_replication_engine_entry.multicast_group_entry.SetInParent()
    got = c.read([q])
    assert [r.egress_port for r in
            got[0].packet_replication_engine_entry.multicast_group_entry.replicas] == \
        [(1 << 32) - 1]


def test_value_set_field_count_must_match_the_program(rig: Rig) -> None:
    """A P4Info giving a value set more match fields than the program has was accepted,
    and every write of the set's members failed afterwards."""
    pvs = HERE / "p4" / "pvs.p4"
    cfg = compiled_config(pvs)
    info = p4info_of(pvs)
    vs = next(v for v in info.value_sets if v.preamble.alias == "etypes")
    vs.match.add(id=2, name="extra", bitwidth=8, match_type=p4info_pb2.MatchField.EXACT)
    c = rig.client()
    assert _verify_code(c, info, cfg) is grpc.StatusCode.INVALID_ARGUMENT
    c.set_pipeline(p4info_of(pvs), cfg)


def test_modify_without_meter_config_resets_it_and_rollback_restores_none(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """Spec "Direct Resources": a MODIFY with meter_config unset resets the direct meter
    to its default. The server kept it instead, so the undo of a MODIFY that configured
    a meter (a MODIFY without one) left the new config behind a failed all-or-none
    batch."""
    c = primary(rig, cp_p4info)
    ent = c.table_entry("MyIngress.fwd", {"hdr.ethernet.dstAddr": 5}, "MyIngress.drop")
    c.write_one(U.INSERT, ent)
    q = c.table_entry("MyIngress.fwd")
    q.table_entry.meter_config.SetInParent()
    metered = E()
    metered.CopyFrom(ent)
    cfg = metered.table_entry.meter_config
    cfg.cir, cfg.cburst, cfg.pir, cfg.pburst = 1000, 10, 2000, 20
    c.write_one(U.MODIFY, metered)
    assert c.read([q])[0].table_entry.meter_config == cfg
    c.write_one(U.MODIFY, ent)
    assert not c.read([q])[0].table_entry.HasField("meter_config")
    reg = E()
    reg.register_entry.register_id = cp_p4info.registers[0].preamble.id
    reg.register_entry.index.index = cp_p4info.registers[0].size  # OUT_OF_RANGE
    reg.register_entry.data.bitstring = b"\x01"
    for atomicity in (WR.ROLLBACK_ON_ERROR, WR.DATAPLANE_ATOMIC):
        with pytest.raises(WriteError) as ei:
            c.write([U(type=U.MODIFY, entity=metered), U(type=U.MODIFY, entity=reg)],
                    atomicity=atomicity)
        assert error_codes(ei.value) == [ABORTED, RANGE]
        assert not c.read([q])[0].table_entry.HasField("meter_config"), atomicity


def _ecmp_group(c: P4RuntimeClient, info: p4info_pb2.P4Info, weight: int) -> E:
    ent = E()
    g = ent.action_profile_group
    g.action_profile_id = info.action_profiles[0].preamble.id
    g.group_id = 1
    g.members.add(member_id=1, weight=weight)
    return ent


def test_negative_watch_port_is_invalid_argument(
        rig: Rig, ecmp_p4info: p4info_pb2.P4Info) -> None:
    """A group member's (deprecated, int32) `watch` of -1 was stored, and every later
    read of the groups failed INTERNAL (its watch_port bytes cannot be negative)."""
    c = primary(rig, ecmp_p4info)
    c.insert_member("MyIngress.ecmp_selector", 1, "MyIngress.set_nhop",
                    {"dmac": 2, "port": 2})
    ent = _ecmp_group(c, ecmp_p4info, 1)
    ent.action_profile_group.members[0].watch = -1
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, ent)
    assert error_codes(ei.value) == [INVALID]
    ent.action_profile_group.members[0].watch = 3
    c.write_one(U.INSERT, ent)
    q = E()
    q.action_profile_group.SetInParent()
    got = c.read([q])
    assert [m.watch_port for m in got[0].action_profile_group.members] == [b"\x03"]


def test_group_weights_beyond_the_maximum_are_resource_exhausted(
        rig: Rig, ecmp_p4info: p4info_pb2.P4Info) -> None:
    """A selector group is expanded into one item per unit of weight: a weight of
    2**31 - 1 took gigabytes (MemoryError, INTERNAL). Weights adding up to more than
    MAX_GROUP_WEIGHT are RESOURCE_EXHAUSTED, in groups and one-shot action sets alike."""
    c = primary(rig, ecmp_p4info)
    ent = c.table_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000, 8)})
    act = ent.table_entry.action.action_profile_action_set.action_profile_actions.add(
        weight=MAX_GROUP_WEIGHT + 1)
    c._action("MyIngress.set_nhop", {"dmac": 2, "port": 2}, act.action)
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, ent)
    assert error_codes(ei.value) == [EXHAUSTED]
    # (the profile holds no one-shot set now, so it takes members and groups)
    c.insert_member("MyIngress.ecmp_selector", 1, "MyIngress.set_nhop",
                    {"dmac": 2, "port": 2})
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, _ecmp_group(c, ecmp_p4info, MAX_GROUP_WEIGHT + 1))
    assert error_codes(ei.value) == [EXHAUSTED]
    c.write_one(U.INSERT, _ecmp_group(c, ecmp_p4info, MAX_GROUP_WEIGHT))


@pytest.mark.parametrize("how", ["absolute", "dotdot", "include_dirs"])
def test_p4_source_config_cannot_include_the_servers_files(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, tmp_path: Path, how: str) -> None:
    """A p4-source program could #include any file the server (root) can read, and the
    compile error quoted its lines back to the client."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-LINE\n")
    target = {"absolute": str(secret), "dotdot": "../" * 12 + str(secret).lstrip("/"),
              "include_dirs": "secret.txt"}[how]
    cfg: dict[str, object] = {"format": "p4-source", "main": "a.p4",
                              "files": {"a.p4": f'#include "{target}"\n'}}
    if how == "include_dirs":
        cfg["include_dirs"] = ["../" * 12 + str(tmp_path).lstrip("/")]
    c = rig.client()
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(cp_p4info, json.dumps(cfg).encode(), action=SFPC.VERIFY)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "outside the program's own files" in str(ei.value.details())
    assert "TOPSECRET" not in str(ei.value.details())


@pytest.mark.parametrize("change", ["key-width", "key-kind", "param-width"])
def test_p4info_must_match_the_programs_widths_and_kinds(
        rig: Rig, cp_p4info: p4info_pb2.P4Info, change: str) -> None:
    """Only the names of a P4Info's objects were checked against the program: a match
    field or action parameter of another width (or a match kind) was accepted, and
    entries were then encoded by the one and matched by the other."""
    info = p4info_pb2.P4Info()
    info.CopyFrom(cp_p4info)
    table = next(t for t in info.tables if t.match_fields)
    if change == "key-width":
        table.match_fields[0].bitwidth += 1
    elif change == "key-kind":
        mf = table.match_fields[0]
        mf.match_type = (p4info_pb2.MatchField.TERNARY if mf.match_type != mf.TERNARY
                         else p4info_pb2.MatchField.EXACT)
    else:
        action = next(a for a in info.actions if a.params)
        action.params[0].bitwidth += 1
    c = rig.client()
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(info, compiled_config(HERE / "p4" / "cp.p4"), action=SFPC.VERIFY)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "device config's program" in str(ei.value.details())
    c.set_pipeline(cp_p4info, compiled_config(HERE / "p4" / "cp.p4"))  # unchanged: fine


# Found by scripts/p4runtime_fuzz.py against BMv2's server.

def _read_code(c: P4RuntimeClient, ent: E) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as ei:
        c.read([ent])
    return ei.value.code()  # type: ignore[no-any-return]


def test_a_read_by_an_invalid_key_is_invalid_argument(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """Spec, Wildcard Reads: a match filter "must be a valid match key for the table"; a
    ternary value outside its mask, or a range with low above high, is none (it answered
    no entries)."""
    c = primary(rig, cp_p4info)
    c.write_one(U.INSERT, c.table_entry("MyIngress.acl", {"hdr.ethernet.etherType": (8, 0xFF)},
                                        "MyIngress.drop", priority=3))
    outside = c.table_entry("MyIngress.acl", {"hdr.ethernet.etherType": (0x108, 0xFF)},
                            priority=3)
    backwards = c.table_entry("MyIngress.acl", {"standard_metadata.ingress_port": (5, 1)},
                              priority=3)
    for q in (outside, backwards):
        assert _read_code(c, q) is grpc.StatusCode.INVALID_ARGUMENT
    assert len(c.read([c.table_entry("MyIngress.acl", {"hdr.ethernet.etherType": (8, 0xFF)},
                                     priority=3)])) == 1


def test_reads_filter_on_action_and_controller_metadata(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """Spec, Wildcard Reads: a direct action's id and controller_metadata filter a read
    (both were ignored; metadata already filtered)."""
    c = primary(rig, cp_p4info)
    drop = c.table_entry("MyIngress.acl", {"hdr.ethernet.etherType": (8, 0xFF)},
                         "MyIngress.drop", priority=3)
    drop.table_entry.controller_metadata = 7
    port = c.table_entry("MyIngress.acl", {"hdr.ethernet.etherType": (9, 0xFF)},
                         "MyIngress.set_port", {"port": 2}, priority=3)
    port.table_entry.metadata = b"m"
    c.write([U(type=U.INSERT, entity=drop), U(type=U.INSERT, entity=port)])

    def read(action: str, params: dict[str, int] | None = None) -> list[bytes]:
        q = c.table_entry("MyIngress.acl", action=action, params=params)
        return [e.table_entry.match[0].ternary.value for e in c.read([q])]

    assert read("MyIngress.drop") == [b"\x08"]
    assert read("MyIngress.set_port", {"port": 0}) == [b"\x09"]  # by id: params do not filter
    assert read("NoAction") == []
    q = c.table_entry("MyIngress.acl")
    q.table_entry.controller_metadata = 7
    assert [e.table_entry.controller_metadata for e in c.read([q])] == [7]
    q.table_entry.controller_metadata = 8
    assert c.read([q]) == []
    q = c.table_entry("MyIngress.acl")
    q.table_entry.metadata = b"m"
    assert [e.table_entry.metadata for e in c.read([q])] == [b"m"]


def test_read_filters_that_cannot_apply_are_refused(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """An action of another table is INVALID_ARGUMENT, a member of an indirect table
    UNIMPLEMENTED (the spec filters on a direct action's id only), and a read of every
    table (table_id 0) takes no filter: INVALID_ARGUMENT (the priority was ignored)."""
    c = primary(rig, cp_p4info)
    assert _read_code(c, c.table_entry("MyIngress.acl", action="MyIngress.forward",
                                       params={"port": 1})) is grpc.StatusCode.INVALID_ARGUMENT
    assert _read_code(c, c.table_entry("MyIngress.indirect", member_id=1)) \
        is grpc.StatusCode.UNIMPLEMENTED
    every = E()
    every.table_entry.priority = 3
    assert _read_code(c, every) is grpc.StatusCode.INVALID_ARGUMENT
    every.table_entry.priority = 0
    c.read([every])  # no filter: every table


def test_a_malformed_insert_is_refused_for_what_it_is_not_for_its_taken_key(
        rig: Rig, cp_p4info: p4info_pb2.P4Info) -> None:
    """An INSERT of a taken key answered ALREADY_EXISTS before looking at its target: a
    group in a profile without selector is INVALID_ARGUMENT, a missing member NOT_FOUND
    (BMv2's server answers so too); a member id that is taken, with an action of no
    table of its profile, INVALID_ARGUMENT."""
    c = primary(rig, cp_p4info)
    c.insert_member("MyIngress.prof", 1, "MyIngress.set_port", {"port": 1})
    key = {"hdr.ethernet.srcAddr": 5}
    c.write_one(U.INSERT, c.table_entry("MyIngress.indirect", key, member_id=1))
    bad_member = E()
    m = bad_member.action_profile_member
    m.action_profile_id, m.member_id = cp_p4info.action_profiles[0].preamble.id, 1
    m.action.CopyFrom(c.table_entry("MyIngress.fwd", action="MyIngress.forward",
                                    params={"port": 1}).table_entry.action.action)
    cases = [(c.table_entry("MyIngress.indirect", key, group_id=1), INVALID),
             (c.table_entry("MyIngress.indirect", key, member_id=9), NOT_FOUND),
             (bad_member, INVALID)]
    for ent, code in cases:
        with pytest.raises(WriteError) as ei:
            c.write_one(U.INSERT, ent)
        assert error_codes(ei.value) == [code]


def _one_table_client(rig: Rig, tmp_path: Path, table_extra: str) -> P4RuntimeClient:
    """A client of the rig's switch running one table `I.t` (exact key hdr.h.a, action
    `I.set(v)`, plus `table_extra`) as a P4 source config."""
    from emu.p4.frontend import load_program
    from emu.p4.p4info import generate_p4info
    from emu.runtime.devconfig import make_source_config

    from ..p4.programs import v1model_program
    src = v1model_program(f"""
        action set(bit<8> v) {{ hdr.h.b = v; }}
        table t {{ key = {{ hdr.h.a: exact; }} actions = {{ set; }} {table_extra} }}
        apply {{ sm.egress_spec = 1; t.apply(); }}""")
    path = tmp_path / "one_table.p4"
    path.write_text(src)
    info = generate_p4info(load_program(str(path)))
    c = rig.client()
    c.set_pipeline(info, make_source_config(path.name, {path.name: src}))
    c.p4info = info
    return c


def test_an_entry_of_the_implicit_default_only_noaction_is_permission_denied(
        rig: Rig, tmp_path: Path) -> None:
    """A table without default_action gets NoAction as a @defaultonly action (p4c's rule,
    in P4Info too). The compiled table did not list it, so an entry naming it was
    INVALID_ARGUMENT ("not an action of this table"), not the spec's PERMISSION_DENIED
    for an action out of scope; a MODIFY of a missing entry with it was NOT_FOUND before
    its action was looked at. BMv2's server answers PERMISSION_DENIED to both."""
    c = _one_table_client(rig, tmp_path, "")
    for typ in (U.INSERT, U.MODIFY):
        with pytest.raises(WriteError) as ei:
            c.write_one(typ, c.table_entry("I.t", {"hdr.h.a": 1}, "NoAction"))
        assert error_codes(ei.value) == [PERM]
    # ... also with counter data or a meter config the table has no direct resource for:
    # BMv2 judges the action's scope first (the fuzzer on p4c's pins_middleblock.p4 found
    # INVALID_ARGUMENT here); with an action in scope they stay INVALID_ARGUMENT.
    for typ in (U.INSERT, U.MODIFY):
        for extra in ("counter_data", "meter_config"):
            bad = c.table_entry("I.t", {"hdr.h.a": 1}, "NoAction")
            if extra == "counter_data":
                bad.table_entry.counter_data.packet_count = 2
            else:
                bad.table_entry.meter_config.cir = bad.table_entry.meter_config.pir = 10
            with pytest.raises(WriteError) as ei:
                c.write_one(typ, bad)
            assert error_codes(ei.value) == [PERM], (typ, extra)
            bad.table_entry.action.action.CopyFrom(
                c.table_entry("I.t", {"hdr.h.a": 1}, "I.set", {"v": 2}).table_entry.action
                .action)
            with pytest.raises(WriteError) as ei:
                c.write_one(U.INSERT, bad)
            assert error_codes(ei.value) == [INVALID], extra
    # ... and before the action's parameters: a @defaultonly action with a parameter it
    # does not have, or a @tableonly one as the default with a value too wide
    stray = c.table_entry("I.t", {"hdr.h.a": 1}, "NoAction")
    stray.table_entry.action.action.params.add(param_id=1, value=b"\x01")
    with pytest.raises(WriteError) as ei:
        c.write_one(U.INSERT, stray)
    assert error_codes(ei.value) == [PERM]
    c.write_one(U.MODIFY, c.table_entry("I.t", action="NoAction", default=True))
    c.write_one(U.INSERT, c.table_entry("I.t", {"hdr.h.a": 1}, "I.set", {"v": 2}))


def test_the_const_default_action_is_refused_before_its_parameters(
        rig: Rig, tmp_path: Path) -> None:
    """A MODIFY of a const default action is PERMISSION_DENIED whatever its action says;
    with a parameter too wide it was OUT_OF_RANGE, with one missing INVALID_ARGUMENT
    (BMv2 answers PERMISSION_DENIED: the P4Runtime fuzzer on p4c's pins_middleblock.p4)."""
    c = _one_table_client(rig, tmp_path, "const default_action = set(1);")
    for value in (b"\x01\x00", None):
        d = c.table_entry("I.t", action="I.set", params={"v": 2}, default=True)
        del d.table_entry.action.action.params[:]
        if value is not None:
            d.table_entry.action.action.params.add(param_id=1, value=value)
        with pytest.raises(WriteError) as ei:
            c.write_one(U.MODIFY, d)
        assert error_codes(ei.value) == [PERM], value


def test_one_action_profile_takes_one_shots_or_members_never_both(
        rig: Rig, ecmp_p4info: p4info_pb2.P4Info) -> None:
    """Spec, Action Selector Programming: mixing one-shot action sets with members and
    groups in one action profile is INVALID_ARGUMENT (both were taken; BMv2's server
    refuses it). An emptied profile takes either style again."""
    c = primary(rig, ecmp_p4info)
    prof, lpm = "MyIngress.ecmp_selector", "MyIngress.ipv4_lpm"

    def one_shot(prefix: int) -> E:
        ent = c.table_entry(lpm, {"hdr.ipv4.dstAddr": (prefix << 24, 8)})
        act = ent.table_entry.action.action_profile_action_set.action_profile_actions.add(
            weight=1)
        c._action("MyIngress.set_nhop", {"dmac": 2, "port": 2}, act.action)
        return ent

    def refused(typ: int, ent: E) -> None:
        with pytest.raises(WriteError) as ei:
            c.write_one(typ, ent)
        assert error_codes(ei.value) == [INVALID], ei.value

    member_1 = E(action_profile_member=p4runtime_pb2.ActionProfileMember(
        action_profile_id=ecmp_p4info.action_profiles[0].preamble.id, member_id=1))
    c.insert_member(prof, 1, "MyIngress.set_nhop", {"dmac": 2, "port": 2})
    refused(U.INSERT, one_shot(10))
    c.write_one(U.DELETE, member_1)
    c.write_one(U.INSERT, one_shot(10))
    refused(U.INSERT, _ecmp_group(c, ecmp_p4info, 1))
    refused(U.INSERT, c.table_entry(lpm, {"hdr.ipv4.dstAddr": (11 << 24, 8)}, member_id=1))
    with pytest.raises(WriteError) as ei:
        c.insert_member(prof, 2, "MyIngress.set_nhop", {"dmac": 2, "port": 2})
    assert error_codes(ei.value) == [INVALID]
    c.write_one(U.MODIFY, one_shot(10))  # one-shot entries stay writable
    c.write_one(U.DELETE, c.table_entry(lpm, {"hdr.ipv4.dstAddr": (10 << 24, 8)}))
    c.insert_member(prof, 2, "MyIngress.set_nhop", {"dmac": 2, "port": 2})


def test_a_one_shot_set_spreads_flows_over_its_actions(rig: Rig,
                                                       ecmp_p4info: p4info_pb2.P4Info) -> None:
    """(Kept from the switch daemon's p4runtime-shell test, which now programs the
    selector with members and groups only.) A one-shot set of two next hops behind the
    selector: flows spread over both, each flow on one."""
    from emu.runtime.translate import encode_uint
    from tests.switch.conftest import ipv4_udp

    c = rig.client()
    c.set_pipeline(ecmp_p4info, compiled_config(HERE.parent / "switch" / "p4" / "ecmp_ecn.p4"))
    ent = c.table_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000300, 24)})
    for port in (2, 3):
        a = ent.table_entry.action.action_profile_action_set.action_profile_actions.add(
            weight=1)
        c._action("MyIngress.set_nhop", {"dmac": 0x020000000030 + port, "port": port},
                  a.action)
    c.write_one(U.INSERT, ent)
    (back,) = c.read([c.table_entry("MyIngress.ipv4_lpm")])
    assert back.table_entry.action == ent.table_entry.action
    for _round in range(2):
        for i in range(32):
            frame = ipv4_udp("10.0.1.1", "10.0.3.3", 2000 + i, 4791, seq=i)
            rig.device.call(lambda f=frame: rig.device.inject(1, f))
        rig.clock.run_until_idle()
    got = {}
    for port, frame in rig.outputs:
        sport = int.from_bytes(frame[34:36], "big")
        assert frame[:6] == encode_uint(0x020000000030 + port).rjust(6, b"\0")
        assert got.setdefault(sport, port) == port  # one flow, one next hop
    assert len(got) == 32 and set(got.values()) == {2, 3}
