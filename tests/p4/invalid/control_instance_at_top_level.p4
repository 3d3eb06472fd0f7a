/* Invalid: a control instantiated at top level (P4_16 spec 11.3; p4c: "cannot
 * instantiate at top-level"). It may only be instantiated in a block or in main's list. */
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std)(bit<9> port) {
    apply { std.egress_spec = port; }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
Ig(3) ig;
V1Switch(P(), C(), ig, Eg(), C(), D()) main;
