/* Constructor parameters of the blocks V1Switch gets, bound from main's arguments
 * (p4c's parser-unroll-t1-cond sample: `MyParser(false)`). The target once reported
 * "reference to param" and compiled nothing. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm)(bool skip_b, bit<8> mark) {
    state start {
        pk.extract(hdr.h);
        transition select(skip_b) {
            true: accept;
            false: set_b;
        }
    }
    state set_b {
        hdr.h.b = mark;
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm)(bit<9> out_port) {
    apply {
        sm.egress_spec = out_port;
        hdr.h.a = hdr.h.a + (bit<8>) out_port;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }

V1Switch(P(false, 0x5A), VC(), I(3), E(), CC(), D()) main;
