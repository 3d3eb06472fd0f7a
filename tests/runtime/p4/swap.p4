/* Two ingress tables keyed on the destination: `routes` picks the egress port and
 * `tags` writes the source address. The DATAPLANE_ATOMIC test swaps both in one
 * batch, so every packet must leave with a (port, source) pair of one batch. */
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}
struct headers { eth_t eth; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.eth);
        transition accept;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action route(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    action tag(bit<48> src) { hdr.eth.src = src; }
    table routes {
        key = { hdr.eth.dst: exact; }
        actions = { route; drop; }
        default_action = drop();
    }
    table tags {
        key = { hdr.eth.dst: exact; }
        actions = { tag; NoAction; }
        default_action = NoAction();
    }
    apply {
        routes.apply();
        tags.apply();
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
