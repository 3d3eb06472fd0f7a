/* Invalid: a value_set keyset whose type is not the select expression's (bit<16> against bit<8>). */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; bit<32> c; }
struct pair_t { bit<8> a; bit<16> b; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    value_set<bit<16>>(4) vs;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            vs: accept;
            default: accept;
        }
    }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), C(), Ig(), Eg(), C(), D()) main;
