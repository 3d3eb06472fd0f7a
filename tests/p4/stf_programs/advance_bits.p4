/* packet_in.advance by a bit count that is not a whole number of bytes: BMv2 stops the
 * parser with error.ParserInvalidArgument and leaves the cursor where it was; a whole
 * number of bytes is skipped (and so not emitted again). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> kind; bit<8> n; bit<8> flag; }
struct headers { h_t h; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta,
         inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.kind) {
            1: by_constant;
            2: by_field;
            default: accept;
        }
    }
    state by_constant {
        pk.advance(12);
        transition accept;
    }
    state by_field {
        pk.advance((bit<32>)hdr.h.n);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.ParserInvalidArgument) {
            hdr.h.flag = 0xee;
        } else if (sm.parser_error == error.NoError) {
            hdr.h.flag = 0x00;
        } else {
            hdr.h.flag = 0xff;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
