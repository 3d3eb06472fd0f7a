/* Tables: lpm (longest prefix), ternary (priority), exact with default action arguments,
 * switch on action_run, hit/miss, const entries, direct counter, registers across packets,
 * crc16 / crc32 / identity hash values. Output port comes from the tables. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> addr;
    bit<16> tag;
    bit<8>  route;   /* written by lpm */
    bit<8>  cls;     /* written by ternary */
    bit<8>  sw;      /* written by the action_run switch */
    bit<8>  cnt;     /* register counter value */
    bit<16> crc16;
    bit<32> crc32;
    bit<16> ident;
}
struct headers { h_t h; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) lpm_hits;
    register<bit<8>>(4) seen;

    action route(bit<8> r, bit<9> port) { hdr.h.route = r; sm.egress_spec = port; }
    action no_route(bit<8> r) { hdr.h.route = r; sm.egress_spec = 9; }
    table lpm {
        key = { hdr.h.addr: lpm; }
        actions = { route; no_route; }
        default_action = no_route(0xEE);
        counters = lpm_hits;
    }
    action set_cls(bit<8> c) { hdr.h.cls = c; }
    table tern {
        key = { hdr.h.tag: ternary; }
        actions = { set_cls; NoAction; }
        default_action = NoAction();
    }
    action a1() { hdr.h.sw = 1; }
    action a2() { hdr.h.sw = 2; }
    table by_tag {
        key = { hdr.h.tag: exact; }
        actions = { a1; a2; NoAction; }
        const entries = {
            0x0001: a1();
            0x0002: a2();
        }
        default_action = NoAction();
    }
    apply {
        lpm.apply();
        if (tern.apply().miss) { hdr.h.cls = 0xFF; }
        switch (by_tag.apply().action_run) {
            a1: { hdr.h.sw = hdr.h.sw + 0x10; }
            a2: { }
            default: { hdr.h.sw = 0x99; }
        }
        bit<8> n;
        seen.read(n, 0);
        n = n + 1;
        seen.write(0, n);
        hdr.h.cnt = n;
        hash(hdr.h.crc16, HashAlgorithm.crc16, 16w0, { hdr.h.addr }, 32w65536);
        hash(hdr.h.crc32, HashAlgorithm.crc32, 32w0, { hdr.h.addr }, 64w4294967296);
        hash(hdr.h.ident, HashAlgorithm.identity, 16w100, { hdr.h.tag }, 16w1000);
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
