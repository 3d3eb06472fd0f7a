/* Fields of width 0 (bit<0>) in headers: at the start, in the middle and at the end of a
 * byte-aligned header, before a varbit, and in metadata. They occupy no bits on the wire
 * and hold only 0. */
#include <core.p4>
#include <v1model.p4>

header a_t { bit<0> z0; bit<8> a; bit<0> z1; bit<4> b; bit<4> c; bit<0> z2; }
header v_t { bit<0> z; bit<8> len; varbit<16> data; }
header t_t { bit<8> tag; bit<0> z; }

struct headers { a_t a; v_t v; t_t t; }
struct metadata { bit<0> mz; bit<8> sum; }

parser P(packet_in pkt, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        transition select(hdr.a.a) {
            1: parse_v;
            default: parse_t;
        }
    }
    state parse_v {
        pkt.extract(hdr.v, (bit<32>)(hdr.a.c ++ 3w0));  // c bytes of data
        transition parse_t;
    }
    state parse_t {
        pkt.extract(hdr.t);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    // A key of width 0 matches every packet (its one value is 0); with hdr.t.tag beside it
    table zt {
        key = { hdr.a.z2: exact; hdr.t.tag: exact; }
        actions = { to; NoAction; }
        default_action = to(1);
    }
    apply {
        zt.apply();
        hdr.a.z1 = 0;
        meta.sum = hdr.a.a + (bit<8>)(hdr.a.z0 ++ hdr.a.b) + (bit<8>)(hdr.a.c ++ hdr.a.z2);
        if (hdr.a.z0 == hdr.a.z2 && meta.mz == 0) {
            hdr.t.tag = meta.sum;
        }
        if (hdr.v.isValid()) {
            hdr.v.len = hdr.v.len + 1 + (bit<8>)hdr.v.z;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.a); pkt.emit(hdr.v); pkt.emit(hdr.t); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
