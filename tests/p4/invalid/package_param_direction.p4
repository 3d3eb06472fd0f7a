/* Invalid: a control whose parameter's direction is not the one its V1Switch slot
   declares (ComputeChecksum takes `inout H hdr`). */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control CC(headers_t hdr, inout meta_t meta) { apply { } }
control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), C(), Ig(), Eg(), CC(), D()) main;
