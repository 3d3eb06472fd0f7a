/* Invalid: lastIndex outside a parser (it follows the parser's extraction cursor). */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers_t { h_t[2] s; }
struct meta_t { bit<32> i; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.s.next); transition accept; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { meta.i = hdr.s.lastIndex; }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), C(), Ig(), Eg(), C(), D()) main;
