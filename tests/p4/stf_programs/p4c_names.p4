/* Forms p4c accepts that the front end once rejected (found by loading p4c's own
 * v1model samples: issue1541, issue1765-1, issue2345, issue2726, table-key-serenum,
 * use-priority-as-name, free-form-annotation):
 *  - `type` and `priority` as field, parameter and variable names, and a field named
 *    `type` assigned a constant (once taken for a `type T NAME;` declaration);
 *  - an unstructured annotation whose body holds characters P4 has no token for;
 *  - `hash(...)` with five arguments inside an action named `hash` (calls overload by
 *    arity, so it is v1model's hash);
 *  - a serializable enum as a header stack index. */
#include <core.p4>
#include <v1model.p4>

const bit<8> KIND_REPLY = 0x81;

@scrabble(
    - That's it. That's all there is; 6 * 9 == 42 `really`?
)
header h_t {
    bit<8> type;
    bit<8> priority;
    bit<8> idx;
    bit<8> sum;
}
header e_t { bit<8> v; }
enum bit<8> Index_t { FIRST = 0, SECOND = 1 }
struct headers { h_t h; e_t[2] s; }
struct metadata { bit<16> digest; }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h);
        pk.extract(hdr.s[0]);
        pk.extract(hdr.s[1]);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control Bump(inout headers hdr, in bit<8> priority) {
    apply { hdr.h.priority = priority + 1; }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action set_type(bit<8> type) {
        bit<8> priority = type + 2;
        hdr.h.type = KIND_REPLY;
        hdr.h.sum = type + priority;
    }
    action hash() {
        hash(meta.digest, HashAlgorithm.identity, 16w0, { hdr.h.idx }, 16w256);
    }
    table t {
        key = { hdr.h.type : exact; }
        actions = { set_type; NoAction; }
        const entries = { 1 : set_type(5); }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        t.apply();
        hash();
        Index_t type = (Index_t) hdr.h.idx;
        hdr.s[type].v = (bit<8>) meta.digest;
        Bump.apply(hdr, hdr.h.priority);
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.s); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
