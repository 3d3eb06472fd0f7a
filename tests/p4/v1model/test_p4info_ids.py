"""P4Info ids as p4c assigns them, checked against p4c's own outputs."""

from __future__ import annotations

import pytest

from emu.p4.p4info_ids import (
    IdAllocator,
    P4IdError,
    P4IdPrefix,
    assign_ids,
    jenkins_one_at_a_time,
    shortest_unique_suffixes,
)

# From p4lang/p4c testdata/p4_16_samples_outputs/flowlet_switching-bmv2.p4.p4info.txtpb
# (p4c commit 789c1f21547fbd2d22ccbf2e9964b4d324ea08d9): name -> (id, alias).
FLOWLET_TABLES = {
    "ingress.ecmp_group": (38446407, "ecmp_group"),
    "ingress.ecmp_nhop": (41627831, "ecmp_nhop"),
    "ingress.flowlet": (42150575, "flowlet"),
    "ingress.forward": (43289378, "forward"),
    "ingress.new_flowlet": (43789109, "new_flowlet"),
    "egress.send_frame": (49367184, "send_frame"),
}
FLOWLET_ACTIONS = {
    "NoAction": (21257015, "NoAction"),
    "ingress._drop": (19344232, "ingress._drop"),
    "ingress.set_ecmp_select": (20375000, "set_ecmp_select"),
    "ingress.set_nhop": (29239084, "set_nhop"),
    "ingress.lookup_flowlet_map": (27889477, "lookup_flowlet_map"),
    "ingress.set_dmac": (30489383, "set_dmac"),
    "ingress.update_flowlet_id": (17397136, "update_flowlet_id"),
    "egress.rewrite_mac": (23531945, "rewrite_mac"),
    "egress._drop": (25850727, "egress._drop"),
}
FLOWLET_REGISTERS = {
    "ingress.flowlet_id": (384519412, "flowlet_id"),
    "ingress.flowlet_lasttime": (375147533, "flowlet_lasttime"),
}


def test_prefixes_match_p4runtime_enum() -> None:
    from p4.config.v1 import p4info_pb2

    for name, value in p4info_pb2.P4Ids.Prefix.items():
        assert P4IdPrefix[name] == value


def test_flowlet_switching_ids_and_aliases() -> None:
    alloc = IdAllocator()
    groups = [(P4IdPrefix.TABLE, FLOWLET_TABLES), (P4IdPrefix.ACTION, FLOWLET_ACTIONS),
              (P4IdPrefix.REGISTER, FLOWLET_REGISTERS)]
    for prefix, names in groups:
        for name in names:
            alloc.add(prefix, name)
    ids = alloc.assign()
    aliases = alloc.aliases()
    for prefix, names in groups:
        for name, (want_id, want_alias) in names.items():
            assert ids[prefix][name] == want_id, name
            assert alloc.id_of(prefix, name) == want_id
            assert aliases[name] == want_alias, name


def test_tutorial_basic_ids() -> None:
    # p4lang/tutorials basic: ids as shown by P4Runtime shell / p4c-built p4info for the
    # exercise (MyIngress.ipv4_lpm 37375156, ipv4_forward 28792405, drop 25652968).
    assert assign_ids(P4IdPrefix.TABLE, ["MyIngress.ipv4_lpm"]) == {"MyIngress.ipv4_lpm": 37375156}
    acts = assign_ids(P4IdPrefix.ACTION, ["MyIngress.ipv4_forward", "MyIngress.drop"])
    assert acts == {"MyIngress.ipv4_forward": 28792405, "MyIngress.drop": 25652968}


def test_jenkins_hash_known_value() -> None:
    # Jenkins one-at-a-time of "a" is 0xCA2E9442 (the usual test vector).
    assert jenkins_one_at_a_time("a") == 0xCA2E9442
    assert jenkins_one_at_a_time(b"") == 0


def test_id_annotations() -> None:
    alloc = IdAllocator()
    alloc.add(P4IdPrefix.TABLE, "t_plain_id", 5)  # no prefix: the table prefix is added
    alloc.add(P4IdPrefix.TABLE, "t_full_id", 0x02000009)
    alloc.add(P4IdPrefix.TABLE, "t_full_id", 0x0200000A)  # repeated name: ignored
    ids = alloc.assign()[P4IdPrefix.TABLE]
    assert ids == {"t_plain_id": 0x02000005, "t_full_id": 0x02000009}
    with pytest.raises(P4IdError):
        alloc.add(P4IdPrefix.TABLE, "t_wrong", 0x01000001)  # an action prefix on a table
    with pytest.raises(P4IdError):
        alloc.add(P4IdPrefix.TABLE, "t_dup", 5)  # same id as t_plain_id


def test_collisions_probe_on_the_hash_in_sorted_order() -> None:
    name = "ingress.t"
    natural = (P4IdPrefix.TABLE << 24) | (jenkins_one_at_a_time(name) & 0xFFFFFF)
    # An @id squatting on the hashed id pushes the name to the next value.
    ids = assign_ids(P4IdPrefix.TABLE, [name], annotations={"other": natural})
    assert ids["other"] == natural
    assert ids[name] == (natural & 0xFF000000) | ((natural + 1) & 0xFFFFFF)


def test_shortest_unique_suffixes() -> None:
    names = ["a.b.c", "d.b.c", "e.c", "x.y", "b.c"]
    assert shortest_unique_suffixes(names) == {
        "a.b.c": "a.b.c", "d.b.c": "d.b.c", "e.c": "e.c", "x.y": "y", "b.c": "b.c",
    }
