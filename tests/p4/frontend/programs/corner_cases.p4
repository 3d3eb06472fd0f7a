/* Corner cases: shifts vs nested type arguments, value sets of tuples, serializable enums
 * used as their underlying type, tuple indexing, switch on a plain enum. */
/* register<T, I> needs v1model 20200408 or later (the default is 20180101). */
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>
#define SHR2(x) ((x) >> 2)
enum bit<8> Kind { A = 1, B = 2 }
enum Color { RED, GREEN, BLUE }
header h_t { bit<8> a; bit<8> b; Kind k; }
struct hs { h_t h; h_t[2] st; }
struct ms { bit<8> x; Color c; tuple<bit<8>, bool> t; }
const bit<8> X = 1 << 3;
const int BIG = 1 << 40;
bit<8> max8(in bit<8> a, in bit<8> b) { return a > b ? a : b; }
parser P(packet_in pkt, out hs hdr, inout ms m, inout standard_metadata_t sm) {
    value_set<tuple<bit<8>, bit<8>>>(4) pairs;
    state start {
        pkt.extract(hdr.h);
        transition select(pkt.lookahead<bit<8>>(), hdr.h.b) {
            (0, 0): accept;
            (1 .. 3, _): reject;
            pairs: accept;
            (Kind.A &&& 0xF, 8w7): s2;
            default: accept;
        }
    }
    state s2 {
        bool big = pkt.lookahead<bit<8>>() > 5;
        error e = error.NoError;
        verify(e != error.PacketTooShort && big, error.NoMatch);
        transition select(hdr.h.k) { Kind.A: accept; Kind.B: reject; }
    }
}
control C(inout hs hdr, inout ms m) { apply { } }
control Ig(inout hs hdr, inout ms m, inout standard_metadata_t sm) {
    register<bit<8>, bit<32>>(16) r;
    @name("a1") @hidden action a1(bit<8> v) { hdr.h.a = v; exit; }
    @foo[k = 1, s = "x"] action a2() { }
    table t { key = {} actions = {} }
    table t2 { key = { m.c : exact; } actions = { a1; a2; } }
    apply {
        bit<8> y = SHR2(hdr.h.a) >> 1;
        y = (bit<8>)(y >> 2) >> 1;
        y = 8w1 << 3 >> 1;
        hdr.h = {1, 2, Kind.B};
        m.t = { y, true };
        y = m.t[0];
        r.read(y, 32w3);
        y = y + (bit<8>)-1;
        y = max8(y, X);
        y = -1;
        switch (m.c) {
            Color.RED: { y = 1; }
            Color.GREEN:
            default: { y = 2; }
        }
        if (hdr.h.k == Kind.A) { hdr.h.k = (Kind)8w2; }
        bit<16> w = (bit<16>)(8w1 ++ 8w2 ++ 8w3 > 24w5 ? 16w1 : 16w0);
        bit<8> kv = hdr.h.k + 1;
        bool kb = hdr.h.k == 8w2 && hdr.h.k[0:0] == 1;
        if (y < X && y > 8w1 || !(y <= 0x0F) && y >= 0X1) { t.apply(); }
        switch (t2.apply().action_run) { a1: { } a2: { } }
        hdr.st[1].setValid();
        hdr.st[y].a = 1;
    }
}
control D(packet_out pkt, in hs hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), C(), Ig(), Ig(), C(), D()) main;
