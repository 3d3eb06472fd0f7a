"""fabric.p4 and the controller agree: every name and parameter the controller writes
exists in the program's P4Info with the width it expects; the P4Runtime handle encodes
entries as the spec says."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2

from emu.control import EcnSettings, FabricController, LbMode, SouthboundError
from emu.control import program as P
from emu.control.p4rt import P4RuntimeSwitchHandle, encode
from emu.control.params import QDEPTH_SLOTS, SPRAY_SLOTS
from emu.control.southbound import Lpm
from emu.core import wire
from emu.topo import load_topology

P4SRC = Path(__file__).resolve().parents[2] / "p4src"


@functools.lru_cache(maxsize=1)
def _checked():
    from emu.p4.frontend import load_program

    return load_program(str(P4SRC / "fabric.p4"), include_dirs=[str(P4SRC)])


@functools.lru_cache(maxsize=1)
def _p4info():
    from emu.p4.p4info import generate_p4info

    return generate_p4info(_checked())


@functools.lru_cache(maxsize=1)
def p4_constants() -> dict[str, int]:
    """NAME -> value of p4src/include/headers.p4's `const bit<N> NAME = V;` and
    `#define NAME V` lines."""
    text = (P4SRC / "include" / "headers.p4").read_text()
    # a width-prefixed literal (32w0x1000000) keeps its value after the "w"
    pairs = re.findall(r"^\s*const\s+bit<\d+>\s+(\w+)\s*=\s*(?:\d+w)?(\w+)\s*;", text, re.M)
    pairs += re.findall(r"^\s*#define\s+(\w+)\s+(\d\w*)\s*$", text, re.M)
    return {name: int(value, 0) for name, value in pairs}


def test_wire_constants_are_fabric_p4s():
    c = p4_constants()
    assert (c["ETHERTYPE_IPV4"], c["IP_PROTO_TCP"], c["IP_PROTO_UDP"], c["ROCEV2_UDP_PORT"],
            c["CPU_PORT"], c["MAX_MEMBERS"]) == \
        (wire.ETH_P_IPV4, wire.IP_PROTO_TCP, wire.IP_PROTO_UDP, wire.ROCEV2_UDP_PORT,
         wire.CPU_PORT, wire.MAX_GROUP_MEMBERS)


def test_lb_mode_codes_are_fabric_p4s():
    p4_modes = {name.removeprefix("LB_"): v for name, v in p4_constants().items()
                if name.startswith("LB_")}
    assert {m.name: m.code for m in LbMode} == p4_modes


class FakeClient:
    def __init__(self) -> None:
        self.updates: list[p4runtime_pb2.Update] = []
        self.counter_data = (0, 0)

    def write(self, updates):
        self.updates.extend(updates)

    def read(self, entities):
        for ent in entities:
            out = p4runtime_pb2.Entity()
            out.CopyFrom(ent)
            out.counter_entry.data.packet_count = self.counter_data[0]
            out.counter_entry.data.byte_count = self.counter_data[1]
            yield out


def test_fabric_p4_passes_the_front_end():
    prog = _checked()
    assert prog is not None


def test_every_name_the_controller_uses_is_in_the_p4info():
    info = _p4info()
    tables = {t.preamble.name: t for t in info.tables}
    actions = {a.preamble.name: {p.name: p.bitwidth for p in a.params} for a in info.actions}
    counters = {c.preamble.name: c for c in info.counters}
    for t in (P.LB_CONFIG, P.IPV4_LPM, P.ECMP_GROUP, P.TE_FLOW, P.PORT_NEIGHBOR,
              P.TRAFFIC_CLASS, P.ECN_CONFIG):
        assert t in tables, t
    assert actions[P.SET_LB_CONFIG] == {"mode": 8, "seed": 32, "flowlet_timeout_us": 32,
                                        "qdepth_max_age_us": 32}
    assert actions[P.SET_GROUP]["member_count"] == 8
    assert all(actions[P.SET_GROUP][f"port_{i}"] == 9 for i in range(16))
    assert "port_16" not in actions[P.SET_GROUP]
    assert actions[P.SET_MACS] == {"smac": 48, "dmac": 48}
    assert actions[P.SET_RED] == {"kmin": 32, "kmax": 32, "slope": 32, "at_dequeue": 1}
    assert actions[P.TE_PIN] == {"member_index": 32}
    assert actions[P.SET_PRIORITY] == {"prio": 3}
    assert [f.name for f in tables[P.TE_FLOW].match_fields] == [
        "hdr.ipv4.srcAddr", "hdr.ipv4.dstAddr", "hdr.ipv4.protocol", "meta.l4_sport",
        "meta.l4_dport"]
    for c in (P.PORT_RX, P.PORT_TX, P.PORT_DROPS, P.PORT_ECN_MARKS, P.MEMBER_PACKETS):
        assert c in counters, c
    assert counters[P.MEMBER_PACKETS].size == 16 * 1024
    registers = {r.preamble.name: r.size for r in info.registers}
    assert {P.FLOWLET_TIME, P.FLOWLET_PORT, P.SPRAY_NEXT} <= set(registers)
    # spray rotates per flow (a slot per 5-tuple hash), no longer per group (1024)
    assert registers[P.SPRAY_NEXT] == SPRAY_SLOTS == p4_constants()["SPRAY_SLOTS"] == 4096
    # a queue reading per port and priority (deq_qdepth counts the packet's own queue)
    assert registers[P.PORT_QDEPTH] == registers[P.PORT_QDEPTH_TIME] == QDEPTH_SLOTS \
        == p4_constants()["QDEPTH_SLOTS"] == 512 * 8


def test_queue_registers_are_shared_top_level_instances():
    from emu.p4.frontend import ast as A

    names = {d.name for d in _checked().program.decls if isinstance(d, A.Instantiation)}
    assert {P.PORT_QDEPTH, P.PORT_QDEPTH_TIME} <= names


def test_p4runtime_handle_encodes_entries():
    client = FakeClient()
    h = P4RuntimeSwitchHandle("leaf1", client, _p4info())
    from emu.control.southbound import TableEntry

    h.insert_entry(TableEntry(P.IPV4_LPM, {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)},
                              P.ROUTE_TO_GROUP, {"group_id": 3}))
    (u,) = client.updates
    assert u.type == p4runtime_pb2.Update.INSERT
    te = u.entity.table_entry
    (fm,) = te.match
    assert fm.lpm.value == bytes([10, 0, 2, 0]) and fm.lpm.prefix_len == 24
    (param,) = te.action.action.params
    assert param.value == b"\x03"
    h.set_default(P.LB_CONFIG, P.SET_LB_CONFIG,
                  {"mode": 1, "seed": 0, "flowlet_timeout_us": 300, "qdepth_max_age_us": 5})
    d = client.updates[-1]
    assert d.type == p4runtime_pb2.Update.MODIFY and d.entity.table_entry.is_default_action
    assert [p.value for p in d.entity.table_entry.action.action.params] == [
        b"\x01", b"\x00", encode(300, 32), b"\x05"]
    client.counter_data = (5, 640)
    assert h.read_counter(P.PORT_RX, 3) == (5, 640)


def test_p4runtime_handle_refuses_bad_names_and_values():
    h = P4RuntimeSwitchHandle("leaf1", FakeClient(), _p4info())
    from emu.control.southbound import TableEntry

    with pytest.raises(SouthboundError, match="no table 'MyIngress.nope'"):
        h.delete_entry("MyIngress.nope", {})
    with pytest.raises(SouthboundError, match="does not fit in 9 bits"):
        h.insert_entry(TableEntry(P.IPV4_LPM, {"hdr.ipv4.dstAddr": Lpm(1, 32)},
                                  P.ROUTE_TO_PORT, {"port": 600}))
    with pytest.raises(SouthboundError, match="parameters"):
        h.set_default(P.LB_CONFIG, P.SET_LB_CONFIG, {"mode": 1})


def test_whole_fabric_programs_over_p4runtime_handles():
    fabric = load_topology("fattree4")
    clients = {s.name: FakeClient() for s in fabric.switches}
    handles = {n: P4RuntimeSwitchHandle(n, c, _p4info()) for n, c in clients.items()}
    FabricController(fabric, handles, ecn=EcnSettings()).program()
    n_updates = sum(len(c.updates) for c in clients.values())
    assert n_updates > 20 * 10
