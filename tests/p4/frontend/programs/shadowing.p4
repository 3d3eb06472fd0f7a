/* A parameter named like a parser type, switch on a bit<8> value, the priority field. */
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser p(packet_in b, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { b.extract(hdr.h); transition accept; }
}
control c(inout H hdr, inout M m) { apply { } }
control ig(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        bit<8> x = hdr.h.a;
        switch (x) {
            1: { sm.egress_spec = 1; }
            2:
            3: { sm.egress_spec = 2; }
            default: { }
        }
        sm.priority = 3w1;
        if (hdr.h.minSizeInBits() == 8) { x = x; }
    }
}
control d(packet_out p, in H hdr) { apply { p.emit(hdr); } }
V1Switch(p(), c(), ig(), ig(), c(), d()) main;
