/* fabric.p4: the switch of the emulated RoCEv2 fabric (P4_16, v1model).
 *
 * Ingress: IPv4 LPM -> host port or next-hop group; the group member is chosen by
 * the switch's load-balancing mode (routing.p4: ecmp, flowlet, adaptive, spray, te);
 * MAC rewrite per egress port, TTL decrement, DSCP -> strict-priority queue.
 * Egress: queue-depth readings for adaptive LB, RED-style ECN marking (ecn.p4).
 * The IPv4 checksum is recomputed after egress. The control-plane contract (tables,
 * actions, counters, registers) is listed in p4src/README.md.
 */
/* Index-typed register<T, I> and counter<I>: v1model 20200408 or later (p4c
 * defaults to 20180101). */
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"
#include "include/parser.p4"
#include "include/routing.p4"
#include "include/ecn.p4"

const bit<9> DROP_PORT = 511;

control FabricIngress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {

    counter<bit<32>>(PORT_SLOTS, CounterType.packets_and_bytes) port_rx;
    counter<bit<32>>(PORT_SLOTS, CounterType.packets) port_drops;

    Routing() routing;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* Source MAC = the switch's router MAC, destination = whoever is on that port. */
    action set_macs(mac_addr_t smac, mac_addr_t dmac) {
        hdr.ethernet.srcAddr = smac;
        hdr.ethernet.dstAddr = dmac;
    }

    table port_neighbor {
        key = { standard_metadata.egress_spec: exact; }
        actions = { set_macs; drop; }
        default_action = drop();
        size = PORT_SLOTS;
    }

    /* Strict-priority egress queue by DSCP: RoCE NICs send CNPs (and, if so configured,
     * ACK/NAKs) with their own DSCP (48 by default), which the controller maps above the
     * data class. */
    action set_priority(bit<3> prio) {
        standard_metadata.priority = prio;
    }

    table traffic_class {
        key = { hdr.ipv4.dscp: exact; }
        actions = { set_priority; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        port_rx.count((bit<32>) standard_metadata.ingress_port);
        if (hdr.packet_out.isValid()) {
            /* PacketOut from the controller: out of the port it names, as it is. */
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (!hdr.ipv4.isValid() || hdr.ipv4.ihl != 5
                || standard_metadata.checksum_error == 1 || hdr.ipv4.ttl <= 1) {
            /* Not IPv4, IP options (the checksum would not be recomputed), a bad
             * header checksum, or a TTL that would reach zero. */
            drop();
        } else {
            /* The class first: adaptive routing compares the queues of the packet's own
             * priority. */
            traffic_class.apply();
            routing.apply(hdr, meta, standard_metadata);
            /* A route to CPU_PORT punts the packet to the controller as it came in. */
            if (standard_metadata.egress_spec != DROP_PORT
                    && standard_metadata.egress_spec != CPU_PORT) {
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                port_neighbor.apply();
            } else {
                standard_metadata.priority = 0;  /* a punted packet: the default queue */
            }
        }
        if (standard_metadata.egress_spec == DROP_PORT) {
            port_drops.count((bit<32>) standard_metadata.ingress_port);
        }
    }
}

control FabricEgress(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {

    counter<bit<32>>(PORT_SLOTS, CounterType.packets_and_bytes) port_tx;

    EcnMarking() ecn;

    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            /* PacketIn: tell the controller where the packet came in. */
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
        port_qdepth.write(QDEPTH_INDEX(standard_metadata.egress_port,
                                       standard_metadata.priority),
                          (bit<32>) standard_metadata.deq_qdepth);
        port_qdepth_time_us.write(QDEPTH_INDEX(standard_metadata.egress_port,
                                               standard_metadata.priority),
                                  (bit<32>) standard_metadata.egress_global_timestamp);
        ecn.apply(hdr, meta, standard_metadata);
        port_tx.count((bit<32>) standard_metadata.egress_port);
    }
}

V1Switch(FabricParser(),
         FabricVerifyChecksum(),
         FabricIngress(),
         FabricEgress(),
         FabricComputeChecksum(),
         FabricDeparser()) main;
