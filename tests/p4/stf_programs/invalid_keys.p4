/* A table key that is a field of an invalid header looks up 0, whatever the field holds:
 * BMv2's key builder writes zeros for an invalid header (it keeps such a header's old
 * field values, even from earlier packets). Here `b` is valid only when a.op is 1, and
 * a.op 2 writes b.x while `b` stays invalid. The program reads b.x only through keys:
 * anywhere else an invalid header's field is undefined, and BMv2 returns what an
 * earlier packet left there. */
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8> op;
    bit<8> by_exact;
    bit<8> by_ternary;
    bit<8> by_lpm;
}
header b_t { bit<8> x; }
struct headers { a_t a; b_t b; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.a);
        transition select(hdr.a.op) { 1: parse_b; default: accept; }
    }
    state parse_b { pk.extract(hdr.b); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action set_exact(bit<8> v) { hdr.a.by_exact = v; }
    action set_ternary(bit<8> v) { hdr.a.by_ternary = v; }
    action set_lpm(bit<8> v) { hdr.a.by_lpm = v; }
    table t_exact { key = { hdr.b.x: exact; } actions = { set_exact; NoAction; } default_action = NoAction(); }
    table t_ternary { key = { hdr.b.x: ternary; } actions = { set_ternary; NoAction; } default_action = NoAction(); }
    table t_lpm { key = { hdr.b.x: lpm; } actions = { set_lpm; NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 1;
        if (hdr.a.op == 2) { hdr.b.x = 7; }
        t_exact.apply();
        t_ternary.apply();
        t_lpm.apply();
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
