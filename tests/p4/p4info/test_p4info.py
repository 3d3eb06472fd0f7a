"""P4Info generation: names, ids, widths, match types, scopes, units, sizes, metadata."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from emu.p4.frontend import P4Error, check_source, load_program
from emu.p4.p4info import (
    TEXT_HEADER,
    generate_p4info,
    p4info_to_bytes,
    p4info_to_text,
    write_p4info,
)
from emu.p4.p4info_ids import P4IdPrefix

from .conftest import PROGRAMS, p4info_of

MF = p4info_pb2.MatchField

# A program skeleton: tests fill in the ingress control's locals and apply block.
SKELETON = """
#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> a; bit<16> b; bit<32> c; }}
struct headers_t {{ h_t h; }}
struct meta_t {{ bit<8> m; }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control {ingress}(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    {locals}
    apply {{ {apply} }}
}}
control {egress}(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    {egress_locals}
    apply {{ {egress_apply} }}
}}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), VC(), {ingress}(), {egress}(), CC(), D()) main;
"""


def program(locals_: str = "", apply: str = "", *, ingress: str = "ingress", egress: str = "egress",
            egress_locals: str = "", egress_apply: str = "") -> p4info_pb2.P4Info:
    return p4info_of(SKELETON.format(locals=locals_, apply=apply, ingress=ingress, egress=egress,
                                     egress_locals=egress_locals, egress_apply=egress_apply))


def by_name(items, name):  # type: ignore[no-untyped-def]
    for item in items:
        if item.preamble.name == name:
            return item
    raise AssertionError(f"{name} not in {[i.preamble.name for i in items]}")


def prefix(obj_id: int) -> int:
    return obj_id >> 24


# ------------------------------------------------------------------ ids


def test_ids_match_p4c_for_known_names() -> None:
    info = program(
        """
        action set_vrf(bit<12> vrf) { meta.m = (bit<8>) vrf; }
        table bd { key = { hdr.h.b : exact; } actions = { set_vrf; } size = 65536; }
        """,
        "bd.apply();",
    )
    # p4c's testdata/p4_16_samples_outputs/basic_routing-bmv2.p4.p4info.txtpb:
    # table "ingress.bd" has id 48392551, action "ingress.set_vrf" 33505590, NoAction 21257015.
    assert by_name(info.tables, "ingress.bd").preamble.id == 48392551
    assert by_name(info.actions, "ingress.set_vrf").preamble.id == 33505590
    assert by_name(info.actions, "NoAction").preamble.id == 21257015


def test_utf8_names_keep_their_characters_and_p4c_ids() -> None:
    info = program(
        """
        @name(".ingress.tables.prefix◕‿◕😀ツsimple_table_1")
        table t { key = { hdr.h.b : exact; } actions = { NoAction; } }
        @name("tab\\tescaped") table u { key = { hdr.h.b : exact; } actions = { NoAction; } }
        """,
        "t.apply(); u.apply();",
    )
    # p4c's testdata/p4_16_samples_outputs/nonstandard_table_names-bmv2.p4.p4info.txtpb
    name = "ingress.tables.prefix◕‿◕😀ツsimple_table_1"
    assert by_name(info.tables, name).preamble.id == 41307018
    assert by_name(info.tables, "ingress.tab\\tescaped")  # p4c keeps a name's escapes


def test_id_prefix_bytes(features: p4info_pb2.P4Info) -> None:
    expected = {
        "tables": P4IdPrefix.TABLE, "actions": P4IdPrefix.ACTION,
        "action_profiles": P4IdPrefix.ACTION_PROFILE, "counters": P4IdPrefix.COUNTER,
        "direct_counters": P4IdPrefix.DIRECT_COUNTER, "meters": P4IdPrefix.METER,
        "direct_meters": P4IdPrefix.DIRECT_METER, "registers": P4IdPrefix.REGISTER,
        "digests": P4IdPrefix.DIGEST, "value_sets": P4IdPrefix.VALUE_SET,
        "controller_packet_metadata": P4IdPrefix.CONTROLLER_HEADER,
    }
    for field, pfx in expected.items():
        items = getattr(features, field)
        assert items, field
        assert all(prefix(i.preamble.id) == pfx for i in items), field
    all_ids = [i.preamble.id for f in expected for i in getattr(features, f)]
    assert len(all_ids) == len(set(all_ids))


def test_controller_header_id_hashes_the_header_type_name() -> None:
    info = p4info_of(SKELETON.replace(
        "header h_t",
        '@controller_header("packet_in") header packet_in_header_t {{ bit<9> ingress_port; bit<7> _pad0; }}\n'
        "header h_t",
    ).format(locals="", apply="", ingress="ingress", egress="egress", egress_locals="", egress_apply=""))
    (cpm,) = info.controller_packet_metadata
    # The SAI P4 program's published P4Info (header type packet_in_header_t, compiled by p4c)
    # gives packet_in the id 81826293: the hash is of the type's name, not of "packet_in".
    assert cpm.preamble.id == 81826293
    assert (cpm.preamble.name, cpm.preamble.alias) == ("packet_in", "packet_in")
    assert list(cpm.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in cpm.metadata] == [(1, "ingress_port", 9), (2, "_pad0", 7)]


def test_a_struct_in_a_controller_header_is_listed_flattened() -> None:
    # p4c's issue3329-bmv2 sample: P4Info names a struct's fields `s.f`, in wire order;
    # the struct once stopped the whole P4Info with "not bit<>, int<>, type ...". A
    # @hidden field keeps its number (p4c-bm2-ss gives `tag` id 4, not 3).
    info = p4info_of(SKELETON.replace(
        "header h_t",
        "struct port_s {{ bit<9> port; bit<7> pad; }}\n"
        '@controller_header("packet_out") header po_t {{ port_s p; @hidden bit<8> h; bit<16> tag; }}\n'
        "header h_t",
    ).format(locals="", apply="", ingress="ingress", egress="egress", egress_locals="", egress_apply=""))
    (cpm,) = info.controller_packet_metadata
    assert [(m.id, m.name, m.bitwidth) for m in cpm.metadata] == [
        (1, "p.port", 9), (2, "p.pad", 7), (4, "tag", 16)]


def test_explicit_id_annotation_is_honoured() -> None:
    info = program(
        "@id(0x01000042) action a() { } @id(7) table t { key = { hdr.h.a : exact; } actions = { a; } }",
        "t.apply();",
    )
    assert by_name(info.actions, "ingress.a").preamble.id == 0x01000042
    assert by_name(info.tables, "ingress.t").preamble.id == (P4IdPrefix.TABLE << 24) | 7


# ------------------------------------------------------------------ tables


def test_tables_in_p4c_order(features: p4info_pb2.P4Info) -> None:
    # Declaration order per control, ingress before egress; a nested control instance is
    # inlined where it is declared (p4c inlines before writing P4Info); unused_table is
    # dropped (never applied), like p4c's front end does.
    assert [t.preamble.name for t in features.tables] == [
        "Ing.nested.inner_t", "Ing.vrf_t", "Ing.ipv4_lpm", "Ing.ecmp", "global_acl", "Eg.smac_t",
    ]
    assert [t.preamble.alias for t in features.tables][:4] == ["inner_t", "vrf_t", "ipv4_lpm", "ecmp"]


def test_match_fields(features: p4info_pb2.P4Info) -> None:
    lpm = by_name(features.tables, "Ing.ipv4_lpm")
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in lpm.match_fields] == [
        (1, "meta.vrf", 12, MF.EXACT),
        (2, "hdr.ipv4.dst", 32, MF.LPM),
    ]
    ecmp = by_name(features.tables, "Ing.ecmp")
    # The selector key (position 1) is not a match field, but keeps its id slot.
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in ecmp.match_fields] == [
        (2, "hdr.ipv4.$valid$", 1, MF.EXACT),
        (3, "ip_proto", 8, MF.TERNARY),
        (4, "hdr.ipv4.src", 32, MF.RANGE),
        (5, "hdr.eth.ether_type", 16, MF.OPTIONAL),
        (6, "hdr.ipv4.ttl[7:4]", 4, MF.TERNARY),
    ]


def test_action_refs_scopes_and_defaults(features: p4info_pb2.P4Info) -> None:
    ids = {a.preamble.name: a.preamble.id for a in features.actions}
    vrf = by_name(features.tables, "Ing.vrf_t")
    assert [(r.id, r.scope, list(r.annotations)) for r in vrf.action_refs] == [
        (ids["Ing.set_vrf"], p4info_pb2.ActionRef.TABLE_AND_DEFAULT, []),
        (ids["Ing.drop"], p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"]),
    ]
    assert vrf.const_default_action_id == 0
    assert vrf.initial_default_action.action_id == ids["Ing.set_vrf"]
    (arg,) = vrf.initial_default_action.arguments
    assert (arg.param_id, arg.value) == (1, b"\x00\x07")  # set_vrf(12w7): 12 bits -> 2 bytes
    assert vrf.size == 64

    lpm = by_name(features.tables, "Ing.ipv4_lpm")
    assert [r.scope for r in lpm.action_refs] == [
        p4info_pb2.ActionRef.TABLE_AND_DEFAULT, p4info_pb2.ActionRef.TABLE_ONLY,
        p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    ]
    assert lpm.const_default_action_id == ids["Ing.drop"]
    assert lpm.initial_default_action.action_id == ids["Ing.drop"]


def test_missing_default_action_gets_defaultonly_noaction(features: p4info_pb2.P4Info) -> None:
    smac = by_name(features.tables, "Eg.smac_t")
    last = smac.action_refs[-1]
    assert (last.id, last.scope, list(last.annotations)) == (
        21257015, p4info_pb2.ActionRef.DEFAULT_ONLY, ["@defaultonly"])
    assert smac.initial_default_action.action_id == 21257015
    assert smac.size == 1024  # v1model's default size
    # A table listing NoAction itself gets no extra @defaultonly reference.
    acl = by_name(features.tables, "global_acl")
    assert [list(r.annotations) for r in acl.action_refs] == [[], []]


def test_table_properties(features: p4info_pb2.P4Info) -> None:
    lpm = by_name(features.tables, "Ing.ipv4_lpm")
    assert lpm.size == 4096
    assert lpm.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    dc = by_name(features.direct_counters, "Ing.lpm_hits")
    dm = by_name(features.direct_meters, "Ing.lpm_meter")
    assert list(lpm.direct_resource_ids) == [dc.preamble.id, dm.preamble.id]
    assert dc.direct_table_id == dm.direct_table_id == lpm.preamble.id
    assert dc.spec.unit == p4info_pb2.CounterSpec.BYTES
    assert dm.spec.unit == p4info_pb2.MeterSpec.PACKETS

    ecmp = by_name(features.tables, "Ing.ecmp")
    prof = by_name(features.action_profiles, "Ing.ecmp_sel")
    assert ecmp.implementation_id == prof.preamble.id
    assert (list(prof.table_ids), prof.with_selector, prof.size) == ([ecmp.preamble.id], True, 64)

    acl = by_name(features.tables, "global_acl")  # @name(".global_acl"): absolute name
    assert acl.is_const_table and acl.has_initial_entries
    assert not lpm.is_const_table and not lpm.has_initial_entries


# ------------------------------------------------------------------ actions


def test_actions_listed_are_the_used_ones(features: p4info_pb2.P4Info) -> None:
    names = [a.preamble.name for a in features.actions]
    assert names == [
        "NoAction", "Ing.nested.bump", "Ing.drop", "Ing.set_port", "Ing.set_nhop", "Ing.set_vrf",
        "Ing.set_color", "Ing.count_lpm", "Ing.learn", "Eg.rewrite",
    ]
    assert "Ing.unused_action" not in names and "Ing.hidden_action" not in names
    assert list(by_name(features.actions, "NoAction").preamble.annotations) == ['@noWarn("unused")']


def test_action_params(features: p4info_pb2.P4Info) -> None:
    nhop = by_name(features.actions, "Ing.set_nhop")
    assert [(p.id, p.name, p.bitwidth) for p in nhop.params] == [(1, "dmac", 48), (2, "out_port", 9)]
    port = by_name(features.actions, "Ing.set_port")
    (p,) = port.params
    assert (p.bitwidth, p.type_name.name) == (9, "port_id_t")
    assert features.type_info.new_types["port_id_t"].original_type.bitstring.bit.bitwidth == 9
    color = by_name(features.actions, "Ing.set_color")
    assert color.params[0].bitwidth == 8
    enum = features.type_info.serializable_enums["Color_t"]
    assert enum.underlying_type.bitwidth == 8
    assert [(m.name, m.value) for m in enum.members] == [("RED", b"\x01"), ("GREEN", b"\x02")]


def test_alias_is_shortest_unique_suffix() -> None:
    info = program(
        "action hit() { } table t { key = { hdr.h.a : exact; } actions = { hit; } }", "t.apply();",
        egress_locals="action hit() { } table u { key = { hdr.h.b : exact; } actions = { hit; } }",
        egress_apply="u.apply();",
    )
    assert by_name(info.actions, "ingress.hit").preamble.alias == "ingress.hit"
    assert by_name(info.actions, "egress.hit").preamble.alias == "egress.hit"
    assert by_name(info.tables, "ingress.t").preamble.alias == "t"


def test_directly_applied_control_type_is_named_after_it() -> None:
    # `Inner.apply()` instantiates Inner anonymously: its objects are named `ingress.Inner.*`,
    # and an instance declared inside it adds its own name (p4c: `cIngress.E.c1.stats`).
    info = p4info_of(SKELETON.replace(
        "control VC(",
        "control Leaf(inout bit<8> x) {{ counter(32w4, CounterType.packets) hits; "
        "apply {{ hits.count(32w0); }} }}\n"
        "control Inner(inout bit<8> x) {{ Leaf() leaf; Leaf() unused_leaf; "
        "action bump() {{ x = x + 1; }} table t {{ key = {{ x : exact; }} actions = {{ bump; }} }} "
        "apply {{ leaf.apply(x); t.apply(); }} }}\n"
        "control VC(",
    ).format(locals="", apply="Inner.apply(meta.m);", ingress="ingress", egress="egress",
             egress_locals="", egress_apply=""))
    assert [c.preamble.name for c in info.counters] == ["ingress.Inner.leaf.hits"]
    assert [t.preamble.name for t in info.tables] == ["ingress.Inner.t"]
    assert [a.preamble.name for a in info.actions] == ["NoAction", "ingress.Inner.bump"]


def test_pkg_info_and_documentation() -> None:
    source = SKELETON.format(
        locals='@brief("Routes IPv4") @description("Longest prefix match") '
               'action a(@brief("next hop") bit<8> nh) { meta.m = nh; } '
               '@format_hint("x") table t { key = { hdr.h.a : exact; } actions = { a; } }',
        apply="t.apply();", ingress="ingress", egress="egress", egress_locals="", egress_apply="",
    ).replace("V1Switch(", '@pkginfo(name="demo.p4", version="2", organization="emu") V1Switch(')
    info = p4info_of(source)
    assert (info.pkg_info.name, info.pkg_info.version, info.pkg_info.organization) == ("demo.p4", "2", "emu")
    assert info.pkg_info.arch == "v1model"
    a = by_name(info.actions, "ingress.a")
    assert (a.preamble.doc.brief, a.preamble.doc.description) == ("Routes IPv4", "Longest prefix match")
    assert list(a.preamble.annotations) == []  # @brief/@description go to doc only
    assert a.params[0].doc.brief == "next hop"
    assert list(by_name(info.tables, "ingress.t").preamble.annotations) == ['@format_hint("x")']


def test_a_table_applied_in_another_tables_key_is_listed() -> None:
    """p4c's issue2362-bmv2: `sub.apply().hit` as a key applies `sub`."""
    info = program(
        """
        table sub { key = { hdr.h.b : exact; } actions = { NoAction; } }
        table t { key = { sub.apply().hit : exact @name("hit"); } actions = { NoAction; } }
        table unused { key = { hdr.h.b : exact; } actions = { NoAction; } }
        """,
        "t.apply();",
    )
    assert [t.preamble.name for t in info.tables] == ["ingress.sub", "ingress.t"]


def test_tables_and_actions_only_in_dead_branches_are_left_out() -> None:
    """As p4c folds constant conditions first (its gauntlet_exit_combination samples)."""
    info = program(
        """
        action dead_a() { meta.m = 1; }
        action live_a() { meta.m = 2; }
        table dead_t { key = { hdr.h.b : exact; } actions = { NoAction; } }
        table live_t { key = { hdr.h.b : exact; } actions = { NoAction; } }
        """,
        "if (true) { live_a(); } else { dead_a(); } "
        "hdr.h.a = false ? (dead_t.apply().hit ? 8w1 : 8w2) : 8w3; "
        "if (1 == 2) { dead_t.apply(); } else { live_t.apply(); }",
    )
    assert [t.preamble.name for t in info.tables] == ["ingress.live_t"]
    assert [a.preamble.name for a in info.actions] == ["NoAction", "ingress.live_a"]


def test_structured_annotations_carry_their_values() -> None:
    """As p4c writes p4_16_samples/structured_annotations.p4's."""
    info = program(
        """
        action a() { }
        @List[1, "hello", true, 1 == 2, 5 + 6]
        @Pairs[label = "text", int_val = 2 * 3]
        table t { key = { hdr.h.a : exact; } actions = { @myid[1] a; NoAction; } }
        """,
        "t.apply();",
    )
    t = by_name(info.tables, "ingress.t")
    lst, pairs = t.preamble.structured_annotations
    assert lst.name == "List"
    assert [e.WhichOneof("value") for e in lst.expression_list.expressions] == \
        ["int64_value", "string_value", "bool_value", "bool_value", "int64_value"]
    assert [lst.expression_list.expressions[i].int64_value for i in (0, 4)] == [1, 11]
    assert (lst.expression_list.expressions[1].string_value,
            lst.expression_list.expressions[3].bool_value) == ("hello", False)
    assert [(kv.key, kv.value.WhichOneof("value")) for kv in pairs.kv_pair_list.kv_pairs] == \
        [("label", "string_value"), ("int_val", "int64_value")]
    assert list(t.preamble.annotations) == []
    (ref,) = [r for r in t.action_refs if r.structured_annotations]
    assert ref.structured_annotations[0].expression_list.expressions[0].int64_value == 1


def test_translated_and_plain_new_types_as_p4c_lists_them() -> None:
    """p4c's v1model-p4runtime-most-types1: a translated type's fields have the controller
    width; a plain `type` over it the data plane's, its original type the bits below."""
    source = SKELETON.format(
        locals="action a(C21 p) { } table t { key = { hdr.h.a : exact; } actions = { a; } }",
        apply="t.apply();", ingress="ingress", egress="egress", egress_locals="", egress_apply="",
    ).replace("header h_t {{", "").replace(
        "header h_t { bit<8> a;",
        '@p4runtime_translation("emu.test/C2", 12) @note("n") type bit<8> C2;\n'
        "type C2 C21;\nheader h_t { C2 a;")
    info = p4info_of(source)
    (mf,) = info.tables[0].match_fields
    assert (mf.bitwidth, mf.type_name.name) == (12, "C2")
    (param,) = by_name(info.actions, "ingress.a").params
    assert (param.bitwidth, param.type_name.name) == (8, "C21")
    c2, c21 = info.type_info.new_types["C2"], info.type_info.new_types["C21"]
    assert (c2.translated_type.uri, c2.translated_type.sdn_bitwidth) == ("emu.test/C2", 12)
    assert list(c2.annotations) == ['@note("n")']
    assert c21.original_type.bitstring.bit.bitwidth == 8


def test_a_translation_to_another_type_than_bits_or_string_is_an_error() -> None:
    """p4c's issue2283_2-bmv2: `@p4runtime_translation("uri", bool)` is refused."""
    source = SKELETON.format(
        locals="table t { key = { hdr.h.a : exact; } actions = { NoAction; } }",
        apply="t.apply();", ingress="ingress", egress="egress", egress_locals="", egress_apply="",
    ).replace("header h_t { bit<8> a;", '@p4runtime_translation("emu.test/P", bool) type bit<8> Port_t;\n'
                                        "header h_t { Port_t a;")
    with pytest.raises(P4Error, match="@p4runtime_translation expects a URI and bit<W> or string"):
        p4info_of(source)


@pytest.mark.parametrize("width", ["4294967296", "bit<2147483648>"])
def test_a_translation_wider_than_an_int32_is_an_error(width: str) -> None:
    """P4Info's bit width is an int32: protobuf's ValueError (a traceback) before; p4c
    refuses it too ("does not support bitstrings this large"). 2^31 - 1 goes through."""
    source = SKELETON.format(
        locals="table t { key = { hdr.h.a : exact; } actions = { NoAction; } }",
        apply="t.apply();", ingress="ingress", egress="egress", egress_locals="", egress_apply="",
    ).replace("header h_t { bit<8> a;", f'@p4runtime_translation("emu.test/P", {width}) '
                                        "type bit<8> Port_t;\nheader h_t { Port_t a;")
    with pytest.raises(P4Error, match="this implementation does not support bitstrings this large"):
        p4info_of(source)
    info = p4info_of(source.replace("4294967296", "2147483647").replace("2147483648", "2147483647"))
    assert info.type_info.new_types["Port_t"].translated_type.sdn_bitwidth == 2147483647


def test_a_program_without_main_has_no_pkg_info() -> None:
    """p4c-bm2-ss warns and leaves pkg_info out (p4c's bitwise-and, issue407-2, ...)."""
    info = generate_p4info(check_source("#include <core.p4>\ncontrol c() { apply {} }\n", "nomain.p4"))
    assert not info.HasField("pkg_info")


def test_platform_properties_go_to_pkg_info() -> None:
    base = SKELETON.format(locals="", apply="", ingress="ingress", egress="egress",
                           egress_locals="", egress_apply="")
    info = p4info_of(base.replace("V1Switch(", "@platform_property(multicast_group_table_size = 10, "
                                               "multicast_group_table_total_replicas = 20, "
                                               "some_other = 3) V1Switch("))
    props = info.pkg_info.platform_properties
    assert (props.multicast_group_table_size, props.multicast_group_table_total_replicas) == (10, 20)
    assert list(info.pkg_info.annotations) == []
    with pytest.raises(P4Error, match="'multicast_group_table_size' key in @platform_property "
                                      "annotation is not an integer"):
        p4info_of(base.replace("V1Switch(", '@platform_property(multicast_group_table_size = "x") '
                                            'V1Switch('))
    # past int32 it was protobuf's ValueError (a traceback); p4c wraps it unannounced
    with pytest.raises(P4Error, match="'multicast_group_table_size' key in @platform_property "
                                      "annotation 4294967296 does not fit P4Info's 32-bit "
                                      "field"):
        p4info_of(base.replace("V1Switch(", "@platform_property(multicast_group_table_size = "
                                            "4294967296) V1Switch("))


def test_a_hidden_key_element_keeps_its_annotation() -> None:
    info = program("table t { key = { hdr.h.a : exact @hidden; hdr.h.b : exact; } actions = { NoAction; } }",
                   "t.apply();")
    fields = by_name(info.tables, "ingress.t").match_fields
    assert [list(f.annotations) for f in fields] == [["@hidden"], []]


# ------------------------------------------------------------------ externs


def test_counters_meters_registers(features: p4info_pb2.P4Info) -> None:
    c = by_name(features.counters, "Ing.port_pkts")
    assert (c.spec.unit, c.size) == (p4info_pb2.CounterSpec.BOTH, 1024)
    inner = by_name(features.counters, "Ing.nested.inner_hits")
    assert (inner.spec.unit, inner.size, inner.preamble.alias) == (p4info_pb2.CounterSpec.PACKETS, 64, "inner_hits")
    m = by_name(features.meters, "Ing.port_meter")
    assert (m.spec.unit, m.size) == (p4info_pb2.MeterSpec.BYTES, 16)
    r = by_name(features.registers, "Ing.flow_bytes")
    assert (r.type_spec.bitstring.bit.bitwidth, r.size) == (32, 256)


def test_unused_extern_instances_are_kept() -> None:
    info = program("counter(32w8, CounterType.bytes) spare; register<bit<4>>(32w2) r4;")
    assert [c.preamble.name for c in info.counters] == ["ingress.spare"]
    assert [(r.preamble.name, r.type_spec.bitstring.bit.bitwidth) for r in info.registers] == [("ingress.r4", 4)]


def test_inline_action_profile_named_by_annotation() -> None:
    info = program(
        """
        action a() { }
        table t {
            key = { hdr.h.a : exact; meta.m : selector; }
            actions = { a; }
            @name("sel") @max_group_size(16) implementation = action_selector(HashAlgorithm.crc16, 32w128, 32w10);
        }
        """,
        "t.apply();",
    )
    (prof,) = info.action_profiles
    assert (prof.preamble.name, prof.with_selector, prof.size, prof.max_group_size) == ("sel", True, 128, 16)
    # No @selector_size_semantics: none in P4Info (sum of weights is P4Runtime's default)
    assert prof.WhichOneof("selector_size_semantics") is None
    assert list(prof.preamble.annotations) == []
    assert info.tables[0].implementation_id == prof.preamble.id


@pytest.mark.parametrize(("annotation", "semantics"), [
    ("", None), ('@selector_size_semantics("sum_of_weights")', "sum_of_weights"),
    ('@selector_size_semantics("SUM_OF_MEMBERS") @max_member_weight(9)', "sum_of_members")])
def test_selector_size_semantics_only_when_annotated(annotation: str,
                                                     semantics: str | None) -> None:
    """p4c writes the semantics only for @selector_size_semantics (also without
    @max_group_size): ours wrote sum_of_weights for every @max_group_size, so SONiC PINS's
    wcmp_group_selector (p4c's pins samples) differed from p4c's P4Info."""
    info = program(
        f"""
        action a() {{ }}
        table t {{
            key = {{ hdr.h.a : exact; meta.m : selector; }}
            actions = {{ a; }}
            @name("sel") {annotation}
            implementation = action_selector(HashAlgorithm.crc16, 32w128, 32w10);
        }}
        """,
        "t.apply();",
    )
    (prof,) = info.action_profiles
    assert prof.WhichOneof("selector_size_semantics") == semantics
    if semantics == "sum_of_members":
        assert prof.sum_of_members.max_member_weight == 9


def test_a_multi_line_string_annotation_keeps_its_comments_and_ends_at_its_quote() -> None:
    """SONiC PINS's tables carry p4-constraints as multi-line strings with `//` lines:
    the comments were blanked, and a `(` in them took the next annotation along."""
    info = program(
        """
        action a() { }
        @entry_restriction("
            // The VRF ID 0 (or '' in P4Runtime) is the default: `vrf != ''` (since
            /* kept too */ a != 0;
          ") @p4runtime_role("sdn_controller") @name("vrf_table")
        table t { key = { hdr.h.a : exact; } actions = { a; } }
        """,
        "t.apply();",
    )
    (t,) = info.tables
    restriction, role = t.preamble.annotations
    assert "// The VRF ID 0 (or '' in P4Runtime) is the default" in restriction
    assert "/* kept too */ a != 0;" in restriction and restriction.endswith('")')
    assert role == '@p4runtime_role("sdn_controller")'
    assert t.preamble.name.endswith("vrf_table")


def test_an_unknown_selector_size_semantics_is_an_error() -> None:
    with pytest.raises(P4Error, match='"sum_of_weights" or "sum_of_members", got "sum"'):
        program('action a() { } table t { key = { hdr.h.a : exact; meta.m : selector; } '
                'actions = { a; } @name("sel") @selector_size_semantics("sum") '
                'implementation = action_selector(HashAlgorithm.crc16, 32w128, 32w10); }',
                "t.apply();")


def test_group_settings_of_a_plain_action_profile_are_left_out() -> None:
    """As p4c does: without a selector there are no groups to size."""
    info = program(
        """
        action a() { }
        table t {
            key = { hdr.h.a : exact; }
            actions = { a; }
            @name("ap") @max_group_size(200) @selector_size_semantics("sum_of_members")
            implementation = action_profile(32w128);
        }
        """,
        "t.apply();",
    )
    (prof,) = info.action_profiles
    assert (prof.with_selector, prof.size, prof.max_group_size) == (False, 128, 0)
    assert prof.WhichOneof("selector_size_semantics") is None


def test_anonymous_inline_implementation_is_an_error() -> None:
    with pytest.raises(P4Error) as err:
        program("action a() { } table t { key = { hdr.h.a : exact; } actions = { a; } "
                "implementation = action_profile(32w4); }", "t.apply();")
    d = err.value.diagnostics[0]
    assert "anonymous table property 'implementation'" in d.message
    assert d.file == "test.p4" and d.line > 0


def test_digest_and_type_info(features: p4info_pb2.P4Info) -> None:
    (d,) = features.digests
    assert (d.preamble.name, d.type_spec.struct.name) == ("learn_t", "learn_t")
    members = features.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("src", 48), ("port", 9)]


def test_digests_of_data_without_a_type_name_are_numbered_like_p4c() -> None:
    # p4c's issue430-1-bmv2 sample digests a list; P4Info once refused anything but a
    # struct. p4c-bm2-ss names such data digest_0, digest_1, ... in program order, and
    # the compiled pipeline must send its digests under the same names.
    from emu.p4.frontend import check_source
    from emu.p4.target.program import compile_checked

    src = SKELETON.format(
        locals="", apply="digest(1, hdr.h.a); digest(2, {hdr.h.b, hdr.h.c}); digest(3, meta);",
        ingress="ingress", egress="egress", egress_locals="", egress_apply="")
    info = p4info_of(src)
    specs = [(d.preamble.name, d.type_spec.WhichOneof("type_spec")) for d in info.digests]
    assert specs == [("digest_0", "bitstring"), ("digest_1", "tuple"), ("meta_t", "struct")]
    assert [m.bitstring.bit.bitwidth for m in info.digests[1].type_spec.tuple.members] == [16, 32]
    compiled = compile_checked(check_source(src, "prog.p4"))
    assert [d["name"] for d in compiled.info.digests] == ["digest_0", "digest_1", "meta_t"]


def test_two_actions_with_one_control_plane_name_are_an_error() -> None:
    # p4c's issue1949-bmv2: P4Info once kept the first and silently dropped the second.
    src = SKELETON.format(
        locals='@name(".foo") action a1() { hdr.h.a = 1; }\n'
               '@name(".foo") action a2() { hdr.h.a = 2; }\n'
               "table t { key = { hdr.h.a : exact; } actions = { a1; a2; } }",
        apply="t.apply();", ingress="ingress", egress="egress", egress_locals="", egress_apply="")
    with pytest.raises(P4Error, match="actions 'a1' and 'a2' have the same control-plane name 'foo'"):
        p4info_of(src)


def test_value_set(features: p4info_pb2.P4Info) -> None:
    (vs,) = features.value_sets
    assert (vs.preamble.name, vs.size) == ("P.tpid_vs", 4)
    assert [(m.id, m.bitwidth, m.match_type) for m in vs.match] == [(1, 16, MF.EXACT)]


def test_controller_metadata_ids(features: p4info_pb2.P4Info) -> None:
    out = next(c for c in features.controller_packet_metadata if c.preamble.name == "packet_out")
    # @id(2) / @id(1) on the fields win; the unannotated one takes the next free id.
    assert [(m.id, m.name, m.bitwidth) for m in out.metadata] == [
        (2, "egress_port", 9), (1, "mcast_grp", 16), (3, "_pad", 7)]


# ------------------------------------------------------------------ errors


def test_complex_key_needs_a_name() -> None:
    with pytest.raises(P4Error, match="Complex key expression requires a @name annotation"):
        program("action a() { } table t { key = { hdr.h.a + 1 : exact; } actions = { a; } }", "t.apply();")
    info = program('action a() { } table t { key = { hdr.h.a + 1 : exact @name("sum"); } actions = { a; } }',
                   "t.apply();")
    assert info.tables[0].match_fields[0].name == "sum"


def test_tableonly_and_defaultonly_together_is_an_error() -> None:
    with pytest.raises(P4Error, match="both '@tableonly' and '@defaultonly'"):
        program("action a() { } table t { key = { hdr.h.a : exact; } actions = { @tableonly @defaultonly a; } }",
                "t.apply();")


# ------------------------------------------------------------------ output


def test_deterministic_and_text_round_trip() -> None:
    first = generate_p4info(load_program(str(PROGRAMS / "features.p4")))
    second = generate_p4info(load_program(str(PROGRAMS / "features.p4")))
    assert p4info_to_text(first) == p4info_to_text(second)
    assert p4info_to_bytes(first, "binary") == p4info_to_bytes(second, "binary")
    text = p4info_to_text(first)
    assert text.startswith(TEXT_HEADER)
    parsed = text_format.Parse(text, p4info_pb2.P4Info())
    assert parsed == first



# What p4c (1.2.4, and its outputs today) writes, checked against p4c itself: type_info
# (empty where no type needs it) once a table, action parameter, extern instance or
# extern call exists, none in a program without any; an action only called directly
# has its parameters bound by p4c's RemoveActionParameters, so P4Info lists none.
@pytest.mark.parametrize("locals_, apply, type_info", [
    ("", "", False),
    ("register<bit<8>>(4) r;", "", True),
    ("", "mark_to_drop(sm);", True),
    ("table t { key = { hdr.h.a : exact; } actions = { NoAction; } }", "t.apply();", True),
    ("action a(bit<8> x) { hdr.h.a = x; }", "a(1);", False),
])
def test_type_info_is_written_when_p4c_writes_it(locals_: str, apply: str,
                                                 type_info: bool) -> None:
    info = program(locals_, apply)
    assert info.HasField("type_info") is type_info
    assert ("type_info {\n}" in p4info_to_text(info)) is type_info


def test_an_action_only_called_directly_has_no_parameters() -> None:
    info = program("action a(bit<8> x) { hdr.h.a = x; }\n"
                   "action b(bit<8> y) { hdr.h.a = y; }\n"
                   "table t { key = { hdr.h.a : exact; } actions = { b; } }",
                   "a(1); t.apply();")
    assert [p.name for p in by_name(info.actions, "ingress.a").params] == []
    assert [p.name for p in by_name(info.actions, "ingress.b").params] == ["y"]


@pytest.mark.parametrize("suffix", [".p4info.txtpb", ".txt", ".bin", ".json"])
def test_write_formats(tmp_path: Path, features: p4info_pb2.P4Info, suffix: str) -> None:
    path = write_p4info(features, tmp_path / "sub" / f"x{suffix}")
    data = path.read_bytes()
    msg = p4info_pb2.P4Info()
    if suffix == ".bin":
        msg.ParseFromString(data)
    elif suffix == ".json":
        json_format.Parse(data.decode(), msg)
    else:
        text_format.Parse(data.decode(), msg)
    assert msg == features


def test_top_level_extern_is_listed_without_prefix() -> None:
    # A register declared outside any control is shared by ingress and egress; p4c
    # names it by its plain name.
    src = SKELETON.replace("struct meta_t", "register<bit<32>>(16) shared_q;\nstruct meta_t", 1)
    info = p4info_of(src.format(
        locals="register<bit<8>>(4) own;", apply="bit<32> v; shared_q.read(v, 0); own.write(0, 1);",
        ingress="ingress", egress="egress", egress_locals="", egress_apply="shared_q.write(0, 7);"))
    shared = by_name(info.registers, "shared_q")
    assert shared.size == 16 and shared.type_spec.bitstring.bit.bitwidth == 32
    assert shared.preamble.id >> 24 == P4IdPrefix.REGISTER
    assert by_name(info.registers, "ingress.own").size == 4


def test_table_referencing_a_hidden_action_refs_it_by_id_without_listing_it() -> None:
    """p4c (p4c-bm2-ss) gives a @hidden action an id, names it in the table's
    action_refs and leaves it out of `actions`; the generator used to stop with a
    KeyError on such a program (tests/p4/frontend/programs/corner_cases.p4)."""
    info = program('@name("a1") @hidden action a1(bit<8> v) { hdr.h.a = v; } action a2() { }'
                   " table t2 { key = { hdr.h.a : exact; } actions = { a1; a2; } }",
                   "t2.apply();")
    (t2,) = info.tables
    ids = [r.id for r in t2.action_refs]
    listed = {a.preamble.id: a.preamble.name for a in info.actions}
    assert [listed.get(i) for i in ids] == [None, "ingress.a2", "NoAction"]
    assert prefix(ids[0]) == P4IdPrefix.ACTION and ids[0] not in listed


def test_corner_cases_program_gets_diagnostics_not_a_traceback() -> None:
    with pytest.raises(P4Error, match="value_set 'pairs'"):
        p4info_of((PROGRAMS.parent.parent / "frontend" / "programs" / "corner_cases.p4").read_text())


@pytest.mark.parametrize("decl,what", [
    ("register<bit<8>>(32w0xFFFFFFFF) r;", "register"),
    ("register<bit<8>>(-1) r;", "register"),
])
def test_a_size_beyond_p4infos_int32_is_an_error(decl: str, what: str) -> None:
    """A register's (and a value set's) size is an int32 in P4Info: 2^32 - 1 crashed the
    generator with protobuf's ValueError instead of an error at the declaration."""
    source = SKELETON.format(locals=decl, apply="r.write(0, 1);", ingress="ingress",
                             egress="egress", egress_locals="", egress_apply="")
    with pytest.raises(P4Error, match=f"{what} size 4294967295 does not fit P4Info's 32-bit "
                                      "size field") as ei:
        p4info_of(source)
    assert ei.value.diagnostics[0].line > 0


@pytest.mark.parametrize("annotation, size, says", [
    ("@id(4294967296)", "16", "ingress.t: @id 4294967296 is not a 32-bit id"),
    ("@id(-1)", "16", "ingress.t: @id -1 is not a 32-bit id"),
    ("@id(0x01ffffff)", "16", "ingress.t: @id 0x1ffffff has the wrong 8-bit prefix"),
    ("", "4294967296000000000000", "table ingress.t: size 4294967296000000000000 does not "
                                   "fit P4Info's 64-bit size field"),
])
def test_numbers_p4info_cannot_hold_are_errors_at_their_position(annotation: str, size: str,
                                                                 says: str) -> None:
    """Each was a traceback: protobuf's ValueError, or P4IdError (not a P4Error) when the
    @id was read."""
    source = SKELETON.format(
        locals=f"{annotation} table t {{ key = {{ hdr.h.a : exact; }} actions = {{ NoAction; }} "
               f"size = {size}; }}",
        apply="t.apply();", ingress="ingress", egress="egress", egress_locals="",
        egress_apply="")
    with pytest.raises(P4Error) as ei:
        p4info_of(source)
    (d,) = ei.value.diagnostics
    assert d.message == says and d.line > 0
