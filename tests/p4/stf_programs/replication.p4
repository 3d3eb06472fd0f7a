/* v1model packet paths: multicast (egress_rid, instance_type REPLICATION), I2E and E2E
 * clones (instance types 1 and 2, mirroring_add sessions), resubmit and recirculate with
 * @field_list preserved metadata, drop via mark_to_drop and port 511. A resubmitted or
 * recirculated packet sent unicast is NORMAL (0) again in egress.
 * h.op selects the path; egress writes instance_type, egress_rid and the preserved
 * counter into the packet. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;
    bit<8>  itype;
    bit<16> rid;
    bit<8>  passes;
    bit<8>  port;
}
struct headers { h_t h; }
struct metadata {
    @field_list(1) bit<8> passes;
    bit<8> scratch;
}

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        meta.passes = meta.passes + 1;
        hdr.h.passes = meta.passes;
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            sm.mcast_grp = 7;
        } else if (hdr.h.op == 2) {
            clone(CloneType.I2E, 5);
        } else if (hdr.h.op == 3) {
            if (sm.instance_type == 0) {
                resubmit_preserving_field_list(1);
            } else {
                sm.egress_spec = 2;
            }
        } else if (hdr.h.op == 5) {
            mark_to_drop(sm);
        } else if (hdr.h.op == 6) {
            sm.egress_spec = 511;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.itype = (bit<8>)sm.instance_type;
        hdr.h.rid = sm.egress_rid;
        hdr.h.port = (bit<8>)sm.egress_port;
        // Not instance_type == 0: a recirculated packet sent unicast starts egress
        // NORMAL again (as BMv2 has it), so that test would recirculate for ever.
        if (hdr.h.op == 4 && meta.passes == 1) {
            recirculate_preserving_field_list(1);
        }
        if (hdr.h.op == 7 && sm.instance_type == 0) {
            clone(CloneType.E2E, 6);
        }
    }
}
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
