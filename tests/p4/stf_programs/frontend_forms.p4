/* Front-end forms that once needed codegen workarounds: V1Switch arguments passed by name
 * (in another order), a function call (the call's target is the FunctionDecl), direct
 * application of a control type (Sub.apply), and table keys named as P4Info names them
 * (isValid() -> $valid$, @name on a key element). A bare `packet N` is a 0-byte frame. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> f;    /* written by the function */
    bit<8> sub;  /* written by the directly applied control */
    bit<8> t;    /* written by the table */
}
header opt_t { bit<8> x; }
struct headers { h_t h; opt_t o; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.a) { 0xFF: with_opt; default: accept; }
    }
    state with_opt { pk.extract(hdr.o); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }

bit<8> twice_plus(in bit<8> x, in bit<8> y) {
    return x + x + y;
}

control Sub(inout h_t h) {
    apply { h.sub = h.a ^ 0x0F; }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action set_t(bit<8> v) { hdr.h.t = v; }
    table kt {
        key = {
            hdr.o.isValid(): exact;
            hdr.h.b: exact @name("bee");
        }
        actions = { set_t; NoAction; }
        default_action = set_t(0xEE);
    }
    apply {
        if (!hdr.h.isValid()) {
            mark_to_drop(sm);
            exit;
        }
        hdr.h.f = twice_plus(hdr.h.a, hdr.h.b);
        Sub.apply(hdr.h);
        kt.apply();
        sm.egress_spec = 1;
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.o); } }

V1Switch(dep = D(), ck = C(), eg = E(), ig = I(), vr = VC(), p = P()) main;
