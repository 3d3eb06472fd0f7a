/* Every match kind a controller writes (exact, lpm, ternary, range, optional), the
 * action scopes (@tableonly, @defaultonly), a const default action, const entries, a
 * keyless table, an action profile and an action selector: what
 * `emu crosscheck --random-entries` fills (or must leave alone), and what the STF's
 * entries exercise here. h follows the Ethernet
 * header whatever its type, so random frames reach every table. t_dead is in P4Info
 * but p4c-bm2-ss optimises it away (its condition is constant): BMv2 refuses its writes. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t {
    bit<16> a;    /* range key */
    bit<16> b;    /* optional key; rewrite() adds to it */
    bit<8>  c;    /* ternary key; rewrite() sets it */
    bit<32> d;    /* lpm key */
    bit<8>  op;   /* exact key of the const and action-profile tables */
    bit<8>  seen; /* one bit per table that hit */
}
struct headers { eth_t eth; h_t h; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.eth); pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action set_port(bit<9> port) { sm.egress_spec = port; }
    action rewrite(bit<8> v, @name("delta") bit<16> w) { hdr.h.c = v; hdr.h.b = hdr.h.b + w; }
    action drop_it() { mark_to_drop(sm); }
    action tag(bit<8> bit_) { hdr.h.seen = hdr.h.seen | bit_; }

    table t_range {
        key = { hdr.h.a: range; }
        actions = { set_port; rewrite; @defaultonly drop_it; }
        default_action = drop_it();
    }
    table t_opt {
        key = { hdr.h.b: optional; hdr.h.c: ternary; }
        actions = { @tableonly rewrite; set_port; tag; }
        default_action = tag(0x80);
    }
    table t_lpm {
        key = { hdr.h.d: lpm; }
        actions = { set_port; tag; NoAction; }
        const default_action = NoAction();
    }
    table t_const {
        key = { hdr.h.op: exact; }
        actions = { rewrite; NoAction; }
        const entries = { 1: rewrite(0xAA, 1); }
        default_action = NoAction();
    }
    table t_keyless {
        actions = { tag; NoAction; }
        default_action = tag(0x40);
    }
    action_profile(32w4) profile;
    table t_profile {
        key = { hdr.h.op: exact; }
        actions = { tag; set_port; }
        implementation = profile;
    }
    action_selector(HashAlgorithm.crc16, 32w8, 32w16) sel;
    table t_select {
        key = { hdr.h.op: ternary; hdr.h.d: selector; hdr.h.b: selector; }
        actions = { set_port; tag; }
        implementation = sel;
    }
    table t_dead {
        key = { hdr.h.op: exact; }
        actions = { tag; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        bit<8> never = 2;
        if (never < 1) { t_dead.apply(); }
        if (t_range.apply().hit) { hdr.h.seen = hdr.h.seen | 1; }
        if (t_opt.apply().hit) { hdr.h.seen = hdr.h.seen | 2; }
        if (t_lpm.apply().hit) { hdr.h.seen = hdr.h.seen | 4; }
        if (t_const.apply().hit) { hdr.h.seen = hdr.h.seen | 8; }
        t_keyless.apply();
        t_profile.apply();
        t_select.apply();
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
