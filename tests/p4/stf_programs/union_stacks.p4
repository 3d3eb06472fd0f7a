/* Stacks of header unions, tuple element reads and extract into '_':
 * - extract(us.next.member) fills the union at nextIndex (its other member becomes
 *   invalid) and advances nextIndex; emitting the stack emits each union's valid member;
 * - pk.extract<skip_t>(_) consumes a header's bytes without keeping them;
 * - t[i] reads a tuple element.
 * h.tag picks the path; ingress records validity bits and the tuple reads in `o`. */
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<8> tag; }
header skip_t { bit<16> junk; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union u_t { a_t a; b_t b; }
header o_t { bit<8> valid; bit<8> t0; bit<8> t1; }
struct headers { tag_t h; u_t[3] us; o_t o; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.tag) {
            1: one_a_one_b;
            2: skip_then_b;
            default: accept;
        }
    }
    state one_a_one_b {
        pk.extract(hdr.us.next.a);
        pk.extract(hdr.us.next.b);
        transition finish;
    }
    state skip_then_b {
        pk.extract<skip_t>(_);
        pk.extract(hdr.us.next.a);
        pk.extract(hdr.us.next.b);
        pk.extract(hdr.us.next.a);
        transition finish;
    }
    state finish {
        pk.extract(hdr.o);
        transition accept;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = { 0x5A, hdr.h.tag };
        hdr.o.t0 = t[0];
        hdr.o.t1 = t[1];
        hdr.o.valid = (hdr.us[0].a.isValid() ? 8w0x01 : 8w0) | (hdr.us[0].b.isValid() ? 8w0x02 : 8w0)
                    | (hdr.us[1].a.isValid() ? 8w0x04 : 8w0) | (hdr.us[1].b.isValid() ? 8w0x08 : 8w0)
                    | (hdr.us[2].a.isValid() ? 8w0x10 : 8w0) | (hdr.us[2].b.isValid() ? 8w0x20 : 8w0);
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
