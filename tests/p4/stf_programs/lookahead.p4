// lookahead<T>() of a struct holding signed and bool fields, a header, a header stack
// and a nested struct, and of a signed scalar: each field takes its bits in wire order
// (signed ones sign-extended), the headers in it are valid, and the cursor stays put.
#include <core.p4>
#include <v1model.p4>

header h1_t { bit<8> f1; }
header raw_t { bit<48> r; }
header out_t {
    bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; bit<8> g; bit<8> v; bit<8> s;
}
struct inner_t { bit<3> x; int<5> y; }
struct la_t {
    bit<4> a;
    int<4> b;
    bool c;
    bit<7> d;
    h1_t h;
    h1_t[2] st;
    inner_t nn;
}
struct headers { out_t o; raw_t raw; }
struct metadata { }

parser P(packet_in b, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        la_t l = b.lookahead<la_t>();
        int<8> sv = b.lookahead<int<8>>();
        hdr.o.setValid();
        hdr.o.a = (bit<8>)l.a;
        hdr.o.b = (bit<8>)(int<8>)l.b;
        hdr.o.c = l.c ? 8w1 : 8w0;
        hdr.o.d = (bit<8>)l.d;
        hdr.o.e = l.h.f1;
        hdr.o.f = l.st[0].f1 ^ l.st[1].f1;
        hdr.o.g = (bit<8>)l.nn.x ^ (bit<8>)(int<8>)l.nn.y;
        hdr.o.v = (l.h.isValid() ? 8w1 : 8w0) | (l.st[1].isValid() ? 8w2 : 8w0);
        hdr.o.s = (bit<8>)(sv >> 4);
        b.extract(hdr.raw);
        transition accept;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = sm.parser_error == error.NoError ? 9w1 : 9w2; }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.o); pk.emit(hdr.raw); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
