/* Parser value sets configured from the control plane (BMv2 CLI pvs_add / pvs_remove /
 * pvs_clear): a bit<16> set selecting on the EtherType, and a struct-typed set matched
 * against a two-field select key. Empty sets match nothing. h.path records the path. */
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<16> etype;
}
header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> path;
}
struct pair_t {
    bit<8> a;
    bit<8> b;
}
struct headers { eth_t eth; h_t h; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) etypes;
    value_set<pair_t>(2) pairs;
    state start {
        pk.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            etypes: parse_h;
            default: accept;
        }
    }
    state parse_h {
        pk.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b) {
            pairs: paired;
            default: unpaired;
        }
    }
    state paired {
        hdr.h.path = 2;
        transition accept;
    }
    state unpaired {
        hdr.h.path = 1;
        transition accept;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
