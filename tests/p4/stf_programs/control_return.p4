/* `return` in a control's apply block: it ends that control only. In ingress (whose
 * body the target splices into its per-packet function) it must still hand
 * standard_metadata back to the switch; in a control applied from ingress it ends just
 * that control. A statement line carries its P4 location as a comment, which once hid
 * such a `return` from the splice and dropped every packet. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
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

control Inner(inout headers hdr) {
    apply {
        hdr.h.b = 0x11;
        if (hdr.h.op == 2) {
            return;           /* ends Inner; ingress goes on */
        }
        hdr.h.b = 0x22;
    }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action mark() { hdr.h.a = 0xAA; }
    table pick {
        key = { hdr.h.op : exact; }
        actions = { mark; NoAction; }
        const entries = { 1 : mark(); }
        default_action = NoAction();
    }
    Inner() inner;
    apply {
        sm.egress_spec = 1;
        inner.apply(hdr);
        switch (pick.apply().action_run) {
            mark: { }
            default: {
                hdr.h.a = 0x55;
                return;       /* ends ingress: the packet still leaves on port 1 */
            }
        }
        sm.egress_spec = 2;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
