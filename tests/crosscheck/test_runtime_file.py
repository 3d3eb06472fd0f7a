"""`emu crosscheck --entries RUNTIME.json`: a runtime file in the p4lang tutorials'
format, read as their controller reads it: each match field by the kind the program
gives it, values as ints or MAC / IPv4 / IPv6 address strings (every tutorial's file
writes MACs and addresses so; they were refused as "invalid literal for int")."""

from __future__ import annotations

import json

import pytest

from emu import crosscheck as X
from emu.control import Lpm, TableEntry, Ternary
from emu.crosscheck.programming import DefaultAction
from emu.crosscheck.runtime_file import encode
from emu.p4.tables import Optional, Range

from ..p4.programs import v1model_program

PROGRAM = v1model_program("""
    action fwd(bit<48> dmac, bit<9> port) { hdr.e.dst = dmac; sm.egress_spec = port; }
    action mark(bit<8> v) { hdr.e.type = (bit<16>)v; }
    action drop() { mark_to_drop(sm); }
    table routes {
        key = { hdr.e.dst: exact; hdr.a.v4: lpm; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    table acl {
        key = { hdr.a.v6: ternary; hdr.a.port: range; hdr.a.proto: optional; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    apply { routes.apply(); acl.apply(); }""",
    headers="header e_t { bit<48> dst; bit<48> src; bit<16> type; }\n"
            "header a_t { bit<32> v4; bit<128> v6; bit<16> port; bit<8> proto; }",
    fields="e_t e; a_t a;", parse="pk.extract(hdr.e); pk.extract(hdr.a);")


def _entries(tmp_path, *entries):
    p4 = tmp_path / "prog.p4"
    p4.write_text(PROGRAM)
    f = tmp_path / "runtime.json"
    f.write_text(json.dumps({"target": "bmv2", "table_entries": list(entries)}))
    return X.runtime_programming(f, p4, [], [1, 2])


def test_addresses_and_match_kinds_as_the_tutorials_write_them(tmp_path):
    setup = _entries(
        tmp_path,
        {"table": "I.routes", "default_action": True, "action_name": "I.drop",
         "action_params": {}},
        {"table": "I.routes",
         "match": {"hdr.e.dst": "08:00:00:00:01:11", "hdr.a.v4": ["10.0.1.1", 32]},
         "action_name": "I.fwd", "action_params": {"dmac": "08:00:00:00:01:11", "port": 1}},
        {"table": "I.acl", "priority": 10,
         "match": {"hdr.a.v6": ["2001:db8::1", "ffff:ffff::"], "hdr.a.port": [1000, 2000],
                   "hdr.a.proto": 17},
         "action_name": "I.mark", "action_params": {"v": -1}})
    assert setup.defaults == [DefaultAction("I.routes", "I.drop", {})]
    assert setup.entries == [
        TableEntry("I.routes", {"hdr.e.dst": 0x080000000111, "hdr.a.v4": Lpm(0x0A000101, 32)},
                   "I.fwd", {"dmac": 0x080000000111, "port": 1}),
        TableEntry("I.acl", {"hdr.a.v6": Ternary(0x20010DB8 << 96 | 1, 0xFFFFFFFF << 96),
                             "hdr.a.port": Range(1000, 2000), "hdr.a.proto": Optional(17)},
                   "I.mark", {"v": 0xFF}, 10)]


def test_a_range_is_low_high_and_a_ternary_is_known_by_its_kind(tmp_path):
    """A [low, high] range became an Lpm (no priority) or a Ternary (priority): the
    shape was told by the priority, not by the field's match kind."""
    setup = _entries(tmp_path, {"table": "acl", "priority": 1,
                                "match": {"hdr.a.port": [5, 9], "hdr.a.v6": [[1], 3]},
                                "action_name": "NoAction"})
    assert setup.entries[0].match == {"hdr.a.port": Range(5, 9), "hdr.a.v6": Ternary(1, 3)}
    assert setup.entries[0].table == "I.acl"  # a unique suffix names the table, as an alias


@pytest.mark.parametrize("entry, error", [
    ({"match": {"hdr.e.dst": "10.0.0.1", "hdr.a.v4": ["10.0.0.1", 8]}},
     r"hdr.e.dst: '10.0.0.1' is 4 bytes; the field is 48 bits"),
    ({"match": {"hdr.e.dst": 1 << 48, "hdr.a.v4": [0, 0]}},
     r"hdr.e.dst: 0x1000000000000 does not fit in 48 bits"),
    ({"match": {"hdr.e.dst": 1, "hdr.a.v4": ["10.0.0.1", 33]}},
     r"hdr.a.v4 \(lpm\): prefix length 33 is not in 0..32"),
    ({"match": {"hdr.e.dst": 1, "hdr.a.v4": "10.0.0.1"}},
     r"hdr.a.v4 \(lpm\): expected \[value, prefix_len\]"),
    ({"match": {"hdr.e.dst": "host1", "hdr.a.v4": [0, 0]}},
     r"hdr.e.dst: 'host1' is not an integer, MAC, IPv4 or IPv6 address"),
    ({"match": {"hdr.e.src": 1}}, r"table I.routes has no match field 'hdr.e.src'"),
    ({"match": {"hdr.e.dst": 1, "hdr.a.v4": [0, 0]}, "action_params": {"dmac": 1}},
     r"action I.fwd: no value for port"),
    ({"match": {"hdr.e.dst": 1, "hdr.a.v4": [0, 0]},
      "action_params": {"dmac": 1, "port": 1, "vlan": 3}},
     r"action I.fwd has no parameter 'vlan'"),
    ({"table": "I.acl", "action_name": "NoAction", "action_params": {}},
     r"table I.acl has ternary, range or optional fields: its entries need a non-zero priority"),
    ({"action_name": "nosuch"}, r"no action named 'nosuch'"),
])
def test_a_bad_entry_is_named(tmp_path, entry, error):
    e = {"table": "I.routes", "action_name": "I.fwd", "action_params": {"dmac": 1, "port": 1},
         **entry}
    with pytest.raises(ValueError, match=r"runtime.json: table_entries\[0\]: " + error):
        _entries(tmp_path, e)


@pytest.mark.parametrize("key, item, error", [
    ("multicast_group_entries", {"multicast_group_id": float("inf"), "replicas": []},
     r"multicast_group_id inf is not an integer in 0..4294967295"),
    ("multicast_group_entries", {"multicast_group_id": 1.5, "replicas": []},
     r"multicast_group_id 1.5 is not"),
    ("multicast_group_entries", {"multicast_group_id": True, "replicas": []},
     r"multicast_group_id True is not"),
    ("multicast_group_entries", {"multicast_group_id": 1, "replicas": [{"egress_port": -1}]},
     r"egress_port -1 is not"),
    ("multicast_group_entries", {"multicast_group_id": 1, "replicas": {"egress_port": 1}},
     r"replicas must be a list of objects"),
    ("clone_session_entries", {"clone_session_id": 5, "replicas": [],
                               "packet_length_bytes": 1 << 31},
     r"packet_length_bytes 2147483648 is not an integer in 0..2147483647"),
    ("table_entries", {"table": "I.acl", "priority": 1 << 40, "action_name": "NoAction",
                       "action_params": {}}, r"priority 1099511627776 is not"),
])
def test_a_bad_replication_entry_or_priority_is_named(tmp_path, key, item, error):
    """Ids, ports and sizes went through int(): 1.5 and true were taken as 1 and
    1e400 (infinity, which Python's JSON reads) raised OverflowError, a traceback."""
    p4 = tmp_path / "prog.p4"
    p4.write_text(PROGRAM)
    f = tmp_path / "runtime.json"
    f.write_text(json.dumps({key: [item]}))
    with pytest.raises(ValueError, match=rf"runtime.json: {key}\[0\]: " + error):
        X.runtime_programming(f, p4, [], [1, 2])
    # the same values as decimal strings, as int() took them, are still read
    f.write_text(json.dumps({"multicast_group_entries": [
        {"multicast_group_id": "7", "replicas": [{"egress_port": "2", "instance": 1}]}]}))
    (group,) = X.runtime_programming(f, p4, [], [1, 2]).replication
    assert (group.group_id, group.replicas) == (7, ((2, 1),))


def test_a_runtime_file_nested_past_the_json_parser_is_named(tmp_path):
    p4 = tmp_path / "prog.p4"
    p4.write_text(PROGRAM)
    f = tmp_path / "runtime.json"
    f.write_text('{"table_entries": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match=r"runtime.json: not a runtime JSON file"):
        X.runtime_programming(f, p4, [], [1, 2])


@pytest.mark.parametrize("value, width, expected", [
    (-1, 9, 0x1FF), (-256, 9, 0x100), ("ff:ff:ff:ff:ff:ff", 48, (1 << 48) - 1),
    ("255.255.255.0", 32, 0xFFFFFF00), ("::1", 128, 1), ("10.0.0.1", 30, 0x0A000001), ("200.0.0.1", 30, 0xC8000001),
])
def test_encode(value, width, expected):
    """Two's complement in the field's width; an address's bytes must be the field's
    byte width, and its value fit in the field."""
    if expected >> width:
        with pytest.raises(ValueError, match="does not fit"):
            encode(value, width, "f")
    else:
        assert encode(value, width, "f") == expected


@pytest.mark.parametrize("value", [-257, True, 1.5, None, "1.2.3.256"])
def test_encode_refuses(value):
    with pytest.raises(ValueError):
        encode(value, 9 if isinstance(value, int) else 32, "f")


def test_generated_packets_are_addressed_to_the_entries(tmp_path):
    """`--generate` drew random 10.x addresses, so a tutorial's /32 routes were never
    hit (basic.p4: 300 packets, 0 frames out on either side): the 32-bit values the
    entries match become the hosts, beside two addresses no entry names."""
    setup = _entries(
        tmp_path,
        *[{"table": "I.routes", "match": {"hdr.e.dst": i, "hdr.a.v4": [f"10.0.{i}.0", 24]},
           "action_name": "I.fwd", "action_params": {"dmac": i, "port": 1}}
          for i in (1, 2)])
    assert [h[0] for h in setup.hosts] == ["10.0.1.1", "10.0.2.1", "192.0.2.1",
                                           "10.255.255.254"]
    assert len({h[1] for h in setup.hosts}) == 4 and {h[2] for h in setup.hosts} == {None}
    dsts = {p.frame[30:34] for p in X.generate_packets(60, [1, 2], 7, setup.hosts)}
    assert bytes([10, 0, 1, 1]) in dsts and bytes([10, 0, 2, 1]) in dsts
    one = _entries(tmp_path, {"table": "I.routes", "match": {"hdr.e.dst": 1,
                                                             "hdr.a.v4": ["10.0.1.1", 32]},
                              "action_name": "I.drop"})
    assert one.hosts == []  # one address: random ones as before
