/* Parser value sets for the P4Runtime ValueSetEntry tests: `etypes` (bit<16>, exact)
 * gates the h header; `keys` matches (h.a exact, h.b ternary, h.c lpm) and sets
 * h.path to 2 (member matched) or 1 (no member matched). */
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}
header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> path;
}
struct key_t {
    bit<8> a;
    @match(ternary) bit<8> b;
    @match(lpm) bit<8> c;
}
struct headers { eth_t eth; h_t h; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(2) etypes;
    value_set<key_t>(4) keys;
    state start {
        pk.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            etypes: parse_h;
            default: accept;
        }
    }
    state parse_h {
        pk.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b, hdr.h.c) {
            keys: matched;
            default: unmatched;
        }
    }
    state matched {
        hdr.h.path = 2;
        transition accept;
    }
    state unmatched {
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
