"""STF parsing: real-looking files and error cases."""

from __future__ import annotations

import pytest

from emu.p4.stf import StfError, parse_stf
from emu.p4.stf.expect import ExpectPattern
from emu.p4.stf.model import (
    Add,
    CheckCounter,
    CounterRead,
    CounterReset,
    CounterWrite,
    Expect,
    McMgrpCreate,
    McMgrpDestroy,
    McNodeAssociate,
    McNodeCreate,
    McNodeDestroy,
    McNodeDissociate,
    MeterSetRates,
    MirroringAdd,
    MirroringDelete,
    NoPacket,
    Packet,
    PvsAdd,
    PvsClear,
    PvsRemove,
    RegisterRead,
    RegisterReset,
    RegisterWrite,
    RemoveAll,
    SetDefault,
    SetQueueDepth,
    SetQueueRate,
    Unknown,
    Wait,
)

# Shaped like p4c testdata/p4_16_samples/*-bmv2.stf files.
CHECKSUM_STF = """\
# The packet was created with these Scapy statements:
# p=Ether(src='08:00:27:01:8b:bc', dst='52:54:00:12:35:02')/IP(...)/TCP(...)
packet 0 525400123502080027018bbc08004500003800010000400664af0a00020f0a010001
expect 0 525400123502080027018BBC080045000038000100003F0665AB0A00020F0A010005
"""

TABLES_STF = """\
add ingress.t_exact hdr.ethernet.etherType:0x0800 ingress.set_port(port:2)
ADD t_ternary 10 hdr.h.f:0x**01 hdr.h.g:0b1*0 a_with_args(x:0x7f, y : 3)
add t_lpm hdr.ipv4.dstAddr:10.0.0.0/8 fwd(dmac:00:11:22:33:44:55, port:1)
add t_mixed [20] h.f:0x0A&&&0xFF   h.g : 5 act() = E1
setdefault t_exact drop()
SetDefault t_ternary a_with_args(x:1,y:2)
"""

PRE_STF = """\
mc_mgrp_create 1
mc_node_create 0 1 2 3
mc_node_create 1 4
mc_node_associate 1 0
mc_node_associate 1 1
mc_node_dissociate 1 1
mc_node_destroy 1
mc_mgrp_destroy 1
mirroring_add 5 4
mirroring_delete 5
"""


def test_packets_and_expectations() -> None:
    cmds = parse_stf(CHECKSUM_STF, "checksum-l4-bmv2.stf")
    assert len(cmds) == 2
    pkt, exp = cmds
    assert isinstance(pkt, Packet) and pkt.port == 0 and pkt.line == 3
    assert pkt.data[:6] == bytes.fromhex("525400123502") and len(pkt.data) == 34  # Ethernet 14 + IPv4 20
    assert isinstance(exp, Expect) and exp.port == 0 and exp.pattern is not None
    assert not exp.pattern.exact and exp.pattern.nibbles.startswith("525400123502")


def test_packet_with_an_odd_digit_count_ends_in_a_byte_of_the_last_digit() -> None:
    # as bmv2stf.py's hex-to-bytes conversion does (gauntlet_index_3-bmv2.stf relies on it)
    assert parse_stf("packet 0 20 0A 5\n") == [Packet(0, bytes([0x20, 0x0A, 0x05]), line=1)]


def test_packet_without_data_is_an_empty_frame() -> None:
    # p4c's bmv2stf.py sends whatever follows the port, so a bare `packet N` is a 0-byte frame.
    cmds = parse_stf("packet 0 \nPACKET 3 # comment\n")
    assert cmds == [Packet(0, b"", line=1), Packet(3, b"", line=2)]


def test_packet_spanning_spaces_and_expect_forms() -> None:
    cmds = parse_stf(
        "packet 2 00 01\t02 03   04\n"
        "expect 1 0000 00** $\n"
        "expect 1 00 01 02\n"
        "EXPECT 3\n"
        "no_packet\n"
    )
    assert cmds[0] == Packet(2, bytes([0, 1, 2, 3, 4]))
    assert cmds[1] == Expect(1, ExpectPattern("000000**", exact=True))
    assert cmds[2] == Expect(1, ExpectPattern("000102"))
    assert cmds[3] == Expect(3, None)
    assert isinstance(cmds[4], NoPacket)


def test_table_commands() -> None:
    cmds = parse_stf(TABLES_STF, "tables.stf")
    assert cmds[0] == Add("ingress.t_exact", None, (("hdr.ethernet.etherType", "0x0800"),),
                          "ingress.set_port", (("port", "2"),))
    assert cmds[1] == Add("t_ternary", 10, (("hdr.h.f", "0x**01"), ("hdr.h.g", "0b1*0")),
                          "a_with_args", (("x", "0x7f"), ("y", "3")))
    assert cmds[2] == Add("t_lpm", None, (("hdr.ipv4.dstAddr", "10.0.0.0/8"),), "fwd",
                          (("dmac", "00:11:22:33:44:55"), ("port", "1")))
    assert cmds[3] == Add("t_mixed", 20, (("h.f", "0x0A&&&0xFF"), ("h.g", "5")), "act", (),
                          handle="E1")
    assert cmds[4] == SetDefault("t_exact", "drop", ())
    assert cmds[5] == SetDefault("t_ternary", "a_with_args", (("x", "1"), ("y", "2")))
    assert [c.line for c in cmds] == [1, 2, 3, 4, 5, 6]


def test_ternary_priorities_and_stack_keys_with_dollar() -> None:
    # Shaped like p4c testdata/p4_16_samples/ternary2-bmv2.stf.
    text = """
add test1 503 data.f1:0x****0202 ingress.setb1(val:7, port:3)
#          f1       f2      h1  b1 b2  h   b1 b2
expect 3 00000202 ******** **** 07 66
packet 2 00000202 00000303 0404 55 66 7777 88 00
wait
add ex1 110 extra$0.h:0x2525 act2(val:0x27)
"""
    cmds = parse_stf(text, "ternary2-bmv2.stf")
    assert cmds[0] == Add("test1", 503, (("data.f1", "0x****0202"),), "ingress.setb1",
                          (("val", "7"), ("port", "3")))
    assert cmds[1] == Expect(3, ExpectPattern("00000202************0766"))
    assert isinstance(cmds[2], Packet) and len(cmds[2].data) == 16
    assert isinstance(cmds[3], Wait)
    assert cmds[4] == Add("ex1", 110, (("extra$0.h", "0x2525"),), "act2", (("val", "0x27"),))
    assert [c.line for c in cmds] == [2, 4, 5, 6, 7]


def test_header_stack_and_valid_keys() -> None:
    (cmd,) = parse_stf("add t hdr.h[1].f:1 data.$valid$:0b1 a(p:1)")
    assert isinstance(cmd, Add)
    assert cmd.keys == (("hdr.h[1].f", "1"), ("data.$valid$", "0b1"))


def test_pre_and_mirroring_commands() -> None:
    assert parse_stf(PRE_STF) == [
        McMgrpCreate(1),
        McNodeCreate(0, (1, 2, 3)),
        McNodeCreate(1, (4,)),
        McNodeAssociate(1, 0),
        McNodeAssociate(1, 1),
        McNodeDissociate(1, 1),
        McNodeDestroy(1),
        McMgrpDestroy(1),
        MirroringAdd(5, 4),
        MirroringDelete(5),
    ]


def test_state_and_misc_commands() -> None:
    text = """
        register_write MyIngress.r 3 0x10
        register_read MyIngress.r 3
        register_reset MyIngress.r
        counter_read MyIngress.c 0
        counter_write MyIngress.c 0 5 500
        counter_reset MyIngress.c
        meter_set_rates MyIngress.m 0 0.0001:10 0.0005:20
        pvs_add P.pvs 0x0A0B
        pvs_remove pvs 7
        pvs_clear pvs
        set_queue_depth 16
        set_queue_rate 1000 3
        check_counter c1(10) packets == 2
        check_counter c2($A)
        check_counter c3(0) BYTES >= 0x40
        remove all
        wait
    """
    assert parse_stf(text) == [
        RegisterWrite("MyIngress.r", 3, 16),
        RegisterRead("MyIngress.r", 3),
        RegisterReset("MyIngress.r"),
        CounterRead("MyIngress.c", 0),
        CounterWrite("MyIngress.c", 0, 5, 500),
        CounterReset("MyIngress.c"),
        MeterSetRates("MyIngress.m", 0, ((0.0001, 10), (0.0005, 20))),
        PvsAdd("P.pvs", 0x0A0B),
        PvsRemove("pvs", 7),
        PvsClear("pvs"),
        SetQueueDepth(16),
        SetQueueRate(1000, 3),
        CheckCounter("c1", "10", "packets", "==", 2),
        CheckCounter("c2", "$A"),
        CheckCounter("c3", "0", "bytes", ">=", 64),
        RemoveAll(),
        Wait(),
    ]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("packet 0 0x00", 1, "hex digits"),
        ("packet x 00", 1, "bad port"),
        ("expect 1 00 zz", 1, "bad character"),
        ("add t f:1", 1, "action"),
        ("add t a(p:1)", 1, "without key fields"),
        ("add t f:1 a(p:1", 1, "missing ')'"),
        ("add t f:1 a(p)", 1, "name:value"),
        ("add t f 1 a()", 1, "field:value"),
        ("add t f:1 a() junk", 1, "unexpected"),
        ("setdefault t", 1, "usage"),
        ("mc_node_associate 1", 1, "usage"),
        ("mc_mgrp_create one", 1, "bad number"),
        ("remove t 1", 1, "remove all"),
        ("wait now", 1, "unexpected arguments"),
        ("check_counter c", 1, "usage"),
        ("frobnicate 1 2", 1, "unknown command"),
        ("meter_set_rates m 0 fast 1:1", 1, "rate:burst"),
        ("pvs_add pvs", 1, "usage"),
        ("pvs_add pvs zz", 1, "bad value"),
    ],
)
def test_errors_name_file_and_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(StfError) as info:
        parse_stf(text, "bad.stf")
    assert info.value.line == line
    assert str(info.value).startswith(f"bad.stf:{line}: ")
    assert fragment in str(info.value)


def test_non_strict_keeps_unknown_commands() -> None:
    cmds = parse_stf("frobnicate 1 2\npacket 0 00", strict=False)
    assert cmds[0] == Unknown("frobnicate", "1 2")
    assert isinstance(cmds[1], Packet)


def test_pre_commands_drive_the_replication_engine() -> None:
    """STF's BMv2 CLI commands map one-to-one onto PacketReplicationEngine calls."""
    from emu.p4.v1model.replication import PacketReplicationEngine, Replica

    pre = PacketReplicationEngine()
    handles = []
    for cmd in parse_stf("mc_mgrp_create 1\nmc_node_create 7 3 1\nmc_node_create 8 2\n"
                         "mc_node_associate 1 1\nmc_node_associate 1 0\nmirroring_add 5 4\n"):
        if isinstance(cmd, McMgrpCreate):
            pre.mc_mgrp_create(cmd.group)
        elif isinstance(cmd, McNodeCreate):
            handles.append(pre.mc_node_create(cmd.rid, cmd.ports))
        elif isinstance(cmd, McNodeAssociate):
            pre.mc_node_associate(cmd.group, cmd.handle)
        elif isinstance(cmd, MirroringAdd):
            pre.mirroring_add(cmd.session, cmd.port)
    assert handles == [0, 1]
    assert pre.replicate(1) == (Replica(2, 8), Replica(1, 7), Replica(3, 7))
    assert pre.clone_session(5) is not None
