/* Struct-valued constants (p4c's issue1210 sample: `const PortId_t PSA_CPU_PORT =
 * {9w192};`), written as a list and as a struct expression, nested, at top level and
 * in a control: compared with a struct, assigned, and read field by field. The front
 * end once rejected them as "not a compile-time constant". */
#include <core.p4>
#include <v1model.p4>

struct port_t { bit<9> v; }
struct pair_t { port_t port; bit<8> tag; }
const port_t CPU_PORT = {9w192};
const pair_t DEFAULT_PAIR = { port = { v = 9w3 }, tag = 0x77 };

header h_t { bit<7> pad; bit<9> port; bit<8> tag; }
struct headers { h_t h; }
struct metadata { port_t p; pair_t q; }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    const pair_t LOCAL = { { 9w5 }, 8w0x55 };
    apply {
        meta.p.v = hdr.h.port;
        meta.q = DEFAULT_PAIR;
        if (meta.p == CPU_PORT) {
            meta.q = LOCAL;
        }
        sm.egress_spec = meta.q.port.v;
        hdr.h.tag = meta.q.tag;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
