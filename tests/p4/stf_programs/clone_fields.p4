/* clone_preserving_field_list: which user metadata fields reach the clone.
 * Field list 1 = {a, b}, list 2 = {b, c}; d is in no list. BMv2 copies the listed
 * fields when the packet leaves the pipeline that asked for the clone (end of ingress
 * for I2E, end of egress for E2E), so writes after the call are what the clone sees;
 * every other metadata field of the clone starts at 0. Egress writes instance_type,
 * the four fields and the egress port into the packet. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> itype;
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<8> port;
}
struct headers { h_t h; }
struct metadata {
    @field_list(1) bit<8> a;
    @field_list(1, 2) bit<8> b;
    @field_list(2) bit<8> c;
    bit<8> d;
}

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        meta.a = 0x11;
        meta.b = 0x22;
        meta.c = 0x33;
        meta.d = 0x44;
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
            meta.a = 0x1A;  // after the call: still copied into the clone
        } else if (hdr.h.op == 3) {
            clone(CloneType.I2E, 5);  // no field list: the clone's metadata is all 0
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0 && hdr.h.op == 2) {
            meta.c = 0x3C;
            clone_preserving_field_list(CloneType.E2E, 6, 2);
            meta.b = 0x2B;
        }
        hdr.h.itype = (bit<8>)sm.instance_type;
        hdr.h.a = meta.a;
        hdr.h.b = meta.b;
        hdr.h.c = meta.c;
        hdr.h.d = meta.d;
        hdr.h.port = (bit<8>)sm.egress_port;
    }
}
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
