/* A struct inside a header (P4_16 allows struct fields of bit, int and bool types in
 * a header): its fields sit on the wire in declaration order, between the header's
 * own fields, and are read, written, matched and compared like any header field. The
 * code generator once laid such a header out as if the struct had no bits. */
#include <core.p4>
#include <v1model.p4>

struct coord_t {
    bit<4>  x;
    bit<12> y;
    bool    up;
    int<7>  d;
}
header h_t {
    bit<8>  op;
    coord_t c;
    bit<8>  tail;
}
struct headers { h_t h; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table by_x {
        key = { hdr.h.c.x : exact; }
        actions = { fwd; }
        const entries = { 1 : fwd(1); }
        default_action = fwd(2);
    }
    apply {
        if (hdr.h.op == 1) {
            hdr.h.c.y = hdr.h.c.y + 1;     /* 12-bit wrap */
            hdr.h.c.d = hdr.h.c.d - 1;     /* signed 7-bit */
        } else if (hdr.h.op == 2) {
            coord_t k;
            k.x = 9;
            k.y = 0x123;
            k.up = true;
            k.d = -1;
            hdr.h.c = k;                   /* the whole struct at once */
        } else if (hdr.h.op == 4) {
            if (hdr.h.c.d < 0 && !hdr.h.c.up) {
                hdr.h.tail = 0xEE;
            }
        }
        by_x.apply();
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
