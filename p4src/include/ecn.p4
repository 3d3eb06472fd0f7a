/* ECN marking at egress, RED-style on the egress queue depth in packets, read where
 * the controller says per port: at dequeue (deq_qdepth, the packets left behind the one
 * leaving, as the HPCC simulator and the DCQCN authors' simulator mark) or at enqueue
 * (enq_qdepth, the packets it found on arrival, as switches that mark on admission do):
 *   q <= Kmin        never
 *   Kmin < q <= Kmax with probability Pmax * (q - Kmin) / (Kmax - Kmin): Pmax at Kmax
 *   q >  Kmax        always
 * as DCQCN's RED and the DCQCN and HPCC authors' ns-3 switches mark (Pmax at Kmax,
 * 1 only above it). Only ECT(0)/ECT(1) packets are set to CE. P4 has no division, so
 * the controller passes slope = round(Pmax * 2^24 / (Kmax - Kmin)) and the program
 * compares slope * (q - Kmin) with a uniform random number in [0, 2^24).
 * kmin == kmax, which the controller never installs (it needs kmin < kmax), marks every
 * ECT packet whatever the queue: the crosscheck's --ecn-always (kmin = kmax = 0) needs
 * marks while it sends one packet at a time, so every queue it sees is empty.
 * A port without an ecn_config entry never marks.
 */
#ifndef FABRIC_ECN_P4
#define FABRIC_ECN_P4

#include "headers.p4"

control EcnMarking(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    counter<bit<32>>(PORT_SLOTS, CounterType.packets) port_ecn_marks;

    action set_red(bit<32> kmin, bit<32> kmax, bit<32> slope, bit<1> at_dequeue) {
        meta.ecn_enabled = true;
        meta.ecn_at_dequeue = at_dequeue;
        meta.ecn_kmin = kmin;
        meta.ecn_kmax = kmax;
        meta.ecn_slope = slope;
    }

    action no_marking() {
        meta.ecn_enabled = false;
    }

    table ecn_config {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_red; no_marking; }
        default_action = no_marking();
        size = PORT_SLOTS;
    }

    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT && hdr.ipv4.ecn != ECN_CE) {
            ecn_config.apply();
            if (meta.ecn_enabled) {
                bit<32> q = (bit<32>) standard_metadata.enq_qdepth;
                if (meta.ecn_at_dequeue == 1) {
                    q = (bit<32>) standard_metadata.deq_qdepth;
                }
                bool mark = false;
                if (q > meta.ecn_kmax || meta.ecn_kmin == meta.ecn_kmax) {
                    mark = true;
                } else if (q > meta.ecn_kmin) {
                    /* q <= kmax here, so slope * (q - kmin) <= about Pmax * 2^24: no wrap */
                    bit<32> r;
                    random(r, 32w0, ECN_PROB_ONE - 1);
                    if (r < meta.ecn_slope * (q - meta.ecn_kmin)) {
                        mark = true;
                    }
                }
                if (mark) {
                    hdr.ipv4.ecn = ECN_CE;
                    port_ecn_marks.count((bit<32>) standard_metadata.egress_port);
                }
            }
        }
    }
}

#endif
