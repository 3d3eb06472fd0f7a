/* Routing and load balancing: LPM -> next-hop group -> member, by the switch's LB mode.
 *
 * The member is chosen by the program, not by an action_selector, so that every mode
 * can decide: ecmp_group gives the group's size and member ports (one entry per group,
 * so a group is replaced atomically when a link fails), the mode computes a member
 * index, and the index selects the port.
 *
 * Groups hold at most MAX_MEMBERS (16) members (a leaf under 16 spines, a k=32 fat
 * tree): P4 has no loops, so the adaptive least-occupied choice is unrolled over 16
 * candidates.
 */
#ifndef FABRIC_ROUTING_P4
#define FABRIC_ROUTING_P4

#include "headers.p4"

/* Egress queue readings, written by egress for every packet it sends and read by the
 * adaptive mode in ingress: packets left in the packet's queue (deq_qdepth) and when,
 * per port and priority (QDEPTH_INDEX). deq_qdepth counts the packet's own priority
 * queue (BMv2 since 1.15.1), so one reading per port would flip between the data queue
 * and the ACK/CNP queue with every departure; a packet compares its own class's queues. */
#define QDEPTH_INDEX(PORT, PRIO) (((bit<32>) (PORT) << 3) | (bit<32>) (PRIO))
register<bit<32>, bit<32>>(QDEPTH_SLOTS) port_qdepth;
register<bit<32>, bit<32>>(QDEPTH_SLOTS) port_qdepth_time_us;

/* Fibonacci hashing: the seed enters the CRC linearly (a CRC of seed ++ key is the CRC
 * of key xor a constant), so different seeds alone would pick correlated members on
 * consecutive switches; the multiply mixes the low bits non-linearly. */
#define MIX_TO_INDEX(RAW, OUT, COUNT) \
    RAW = RAW * 32w0x9E3779B1; \
    hash(OUT, HashAlgorithm.identity, 32w0, { RAW[31:16] }, (bit<32>) COUNT)

/* A live flowlet's port (stored + 1), looked up among the group's current members: a
 * flowlet keeps its port while that port stays in the group, whatever the others do
 * (a stored member index would move every flowlet behind a member that a link failure
 * removed). */
#define FLOWLET_MEMBER(I, PORT) \
    if ((bit<32>) meta.member_count > I && (bit<32>) PORT + 1 == meta.cand_rank) { \
        meta.cand_key = I; \
    }

/* One adaptive candidate: key = (queue depth, rotation rank: 4 bits), smaller wins; readings
 * older than qdepth_max_age_us count as an empty queue. */
#define ADAPTIVE_CANDIDATE(I, PORT) \
    if ((bit<32>) meta.member_count > I) { \
        port_qdepth.read(meta.cand_depth, QDEPTH_INDEX(PORT, standard_metadata.priority)); \
        port_qdepth_time_us.read(meta.cand_time, \
                                 QDEPTH_INDEX(PORT, standard_metadata.priority)); \
        if (meta.now_us - meta.cand_time > meta.qdepth_max_age_us) { \
            meta.cand_depth = 0; \
        } \
        if (I >= meta.ecmp_index) { \
            meta.cand_rank = I - meta.ecmp_index; \
        } else { \
            meta.cand_rank = I + (bit<32>) meta.member_count - meta.ecmp_index; \
        } \
        meta.cand_key = (meta.cand_depth << 4) | meta.cand_rank; \
        if (meta.cand_key < meta.best_key) { \
            meta.best_key = meta.cand_key; \
            meta.member_index = I; \
        } \
    }

control Routing(inout headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    counter<bit<32>>(MEMBER_SLOTS, CounterType.packets_and_bytes) member_packets;
    register<bit<32>, bit<32>>(FLOWLET_SLOTS) flowlet_time_us;
    register<bit<32>, bit<32>>(FLOWLET_SLOTS) flowlet_port;     /* egress port + 1; 0 = none */
    register<bit<32>, bit<32>>(SPRAY_SLOTS) spray_next;       /* flow's next member + 1; 0 = none */

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* The switch's load-balancing mode (LB_*) and its parameters. */
    action set_lb_config(bit<8> mode, bit<32> seed, bit<32> flowlet_timeout_us,
                         bit<32> qdepth_max_age_us) {
        meta.lb_mode = mode;
        meta.lb_seed = seed;
        meta.flowlet_timeout_us = flowlet_timeout_us;
        meta.qdepth_max_age_us = qdepth_max_age_us;
    }

    table lb_config {
        actions = { set_lb_config; }
        default_action = set_lb_config(LB_ECMP, 0, 500, 32w0xFFFFFFFF);
    }

    action route_to_port(bit<9> port) {
        standard_metadata.egress_spec = port;
        meta.routed_to_group = false;
    }

    action route_to_group(bit<16> group_id) {
        meta.group_id = group_id;
        meta.routed_to_group = true;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { route_to_port; route_to_group; drop; }
        default_action = drop();
        size = 4096;
    }

    action set_group(bit<8> member_count,
                     bit<9> port_0, bit<9> port_1, bit<9> port_2, bit<9> port_3,
                     bit<9> port_4, bit<9> port_5, bit<9> port_6, bit<9> port_7,
                     bit<9> port_8, bit<9> port_9, bit<9> port_10, bit<9> port_11,
                     bit<9> port_12, bit<9> port_13, bit<9> port_14, bit<9> port_15) {
        meta.member_count = member_count;
        meta.member_port_0 = port_0;
        meta.member_port_1 = port_1;
        meta.member_port_2 = port_2;
        meta.member_port_3 = port_3;
        meta.member_port_4 = port_4;
        meta.member_port_5 = port_5;
        meta.member_port_6 = port_6;
        meta.member_port_7 = port_7;
        meta.member_port_8 = port_8;
        meta.member_port_9 = port_9;
        meta.member_port_10 = port_10;
        meta.member_port_11 = port_11;
        meta.member_port_12 = port_12;
        meta.member_port_13 = port_13;
        meta.member_port_14 = port_14;
        meta.member_port_15 = port_15;
    }

    table ecmp_group {
        key = { meta.group_id: exact; }
        actions = { set_group; drop; }
        default_action = drop();
        size = MAX_GROUPS;
    }

    /* TE: a centrally computed member for one 5-tuple (used in LB_TE mode). */
    action te_pin(bit<32> member_index) {
        meta.member_index = member_index;
        meta.te_pinned = true;
    }

    table te_flow {
        key = {
            hdr.ipv4.srcAddr: exact;
            hdr.ipv4.dstAddr: exact;
            hdr.ipv4.protocol: exact;
            meta.l4_sport: exact;
            meta.l4_dport: exact;
        }
        actions = { te_pin; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        meta.now_us = (bit<32>) standard_metadata.ingress_global_timestamp;
        lb_config.apply();
        ipv4_lpm.apply();
        if (!meta.routed_to_group) {
            return;
        }
        ecmp_group.apply();
        if (meta.member_count == 0 || standard_metadata.egress_spec == 511) {
            mark_to_drop(standard_metadata);
            return;
        }

        /* The seeded 5-tuple hash: the ecmp choice, and the tie-break of adaptive. */
        hash(meta.cand_key, HashAlgorithm.crc32, 32w0,
             { meta.lb_seed, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
               meta.l4_sport, meta.l4_dport },
             32w0xFFFFFFFF);
        MIX_TO_INDEX(meta.cand_key, meta.ecmp_index, meta.member_count);
        meta.member_index = meta.ecmp_index;

        if (meta.lb_mode == LB_FLOWLET) {
            hash(meta.flowlet_slot, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol,
                   meta.l4_sport, meta.l4_dport },
                 (bit<32>) FLOWLET_SLOTS);
            flowlet_time_us.read(meta.cand_time, meta.flowlet_slot);
            flowlet_port.read(meta.cand_rank, meta.flowlet_slot);
            meta.cand_key = 32w0xFFFFFFFF;
            if (meta.cand_rank != 0 && meta.now_us - meta.cand_time <= meta.flowlet_timeout_us) {
                FLOWLET_MEMBER(32w0, meta.member_port_0)
                FLOWLET_MEMBER(32w1, meta.member_port_1)
                FLOWLET_MEMBER(32w2, meta.member_port_2)
                FLOWLET_MEMBER(32w3, meta.member_port_3)
                FLOWLET_MEMBER(32w4, meta.member_port_4)
                FLOWLET_MEMBER(32w5, meta.member_port_5)
                FLOWLET_MEMBER(32w6, meta.member_port_6)
                FLOWLET_MEMBER(32w7, meta.member_port_7)
                FLOWLET_MEMBER(32w8, meta.member_port_8)
                FLOWLET_MEMBER(32w9, meta.member_port_9)
                FLOWLET_MEMBER(32w10, meta.member_port_10)
                FLOWLET_MEMBER(32w11, meta.member_port_11)
                FLOWLET_MEMBER(32w12, meta.member_port_12)
                FLOWLET_MEMBER(32w13, meta.member_port_13)
                FLOWLET_MEMBER(32w14, meta.member_port_14)
                FLOWLET_MEMBER(32w15, meta.member_port_15)
            }
            if (meta.cand_key == 32w0xFFFFFFFF) {
                /* A new flowlet, or its port left the group: a member drawn at random,
                 * as LetFlow picks. (The timestamp hashed into the 5-tuple made the pick
                 * depend on when the run started, not only on the traffic.) */
                random(meta.member_index, 32w0, (bit<32>) meta.member_count - 1);
            } else {
                meta.member_index = meta.cand_key;
            }
            flowlet_time_us.write(meta.flowlet_slot, meta.now_us);
        } else if (meta.lb_mode == LB_ADAPTIVE) {
            meta.best_key = 32w0xFFFFFFFF;
            ADAPTIVE_CANDIDATE(32w0, meta.member_port_0)
            ADAPTIVE_CANDIDATE(32w1, meta.member_port_1)
            ADAPTIVE_CANDIDATE(32w2, meta.member_port_2)
            ADAPTIVE_CANDIDATE(32w3, meta.member_port_3)
            ADAPTIVE_CANDIDATE(32w4, meta.member_port_4)
            ADAPTIVE_CANDIDATE(32w5, meta.member_port_5)
            ADAPTIVE_CANDIDATE(32w6, meta.member_port_6)
            ADAPTIVE_CANDIDATE(32w7, meta.member_port_7)
            ADAPTIVE_CANDIDATE(32w8, meta.member_port_8)
            ADAPTIVE_CANDIDATE(32w9, meta.member_port_9)
            ADAPTIVE_CANDIDATE(32w10, meta.member_port_10)
            ADAPTIVE_CANDIDATE(32w11, meta.member_port_11)
            ADAPTIVE_CANDIDATE(32w12, meta.member_port_12)
            ADAPTIVE_CANDIDATE(32w13, meta.member_port_13)
            ADAPTIVE_CANDIDATE(32w14, meta.member_port_14)
            ADAPTIVE_CANDIDATE(32w15, meta.member_port_15)
        } else if (meta.lb_mode == LB_SPRAY) {
            /* Round robin per flow: one counter per group let flows that arrive in turn
             * phase-lock onto disjoint members (two flows alternating over 4 members took
             * 2 each). The slot is the seeded hash (mixed above), so flows that share a
             * slot, and hence a rotation, on one switch do not on the next. */
            hash(meta.spray_slot, HashAlgorithm.identity, 32w0, { meta.cand_key[31:16] },
                 (bit<32>) SPRAY_SLOTS);
            spray_next.read(meta.cand_rank, meta.spray_slot);
            if (meta.cand_rank != 0 && meta.cand_rank <= (bit<32>) meta.member_count) {
                meta.member_index = meta.cand_rank - 1;
            }   /* else a new flow, or its group shrank: start at the ecmp member */
            meta.cand_key = meta.member_index + 1;
            if (meta.cand_key >= (bit<32>) meta.member_count) {
                meta.cand_key = 0;
            }
            spray_next.write(meta.spray_slot, meta.cand_key + 1);
        } else if (meta.lb_mode == LB_TE) {
            meta.te_pinned = false;
            te_flow.apply();
            if (!meta.te_pinned || meta.member_index >= (bit<32>) meta.member_count) {
                /* Unpinned flows, and stale pins after a group shrank, use ecmp. */
                meta.member_index = meta.ecmp_index;
            }
        }

        if (meta.member_index == 0) {
            standard_metadata.egress_spec = meta.member_port_0;
        } else if (meta.member_index == 1) {
            standard_metadata.egress_spec = meta.member_port_1;
        } else if (meta.member_index == 2) {
            standard_metadata.egress_spec = meta.member_port_2;
        } else if (meta.member_index == 3) {
            standard_metadata.egress_spec = meta.member_port_3;
        } else if (meta.member_index == 4) {
            standard_metadata.egress_spec = meta.member_port_4;
        } else if (meta.member_index == 5) {
            standard_metadata.egress_spec = meta.member_port_5;
        } else if (meta.member_index == 6) {
            standard_metadata.egress_spec = meta.member_port_6;
        } else if (meta.member_index == 7) {
            standard_metadata.egress_spec = meta.member_port_7;
        } else if (meta.member_index == 8) {
            standard_metadata.egress_spec = meta.member_port_8;
        } else if (meta.member_index == 9) {
            standard_metadata.egress_spec = meta.member_port_9;
        } else if (meta.member_index == 10) {
            standard_metadata.egress_spec = meta.member_port_10;
        } else if (meta.member_index == 11) {
            standard_metadata.egress_spec = meta.member_port_11;
        } else if (meta.member_index == 12) {
            standard_metadata.egress_spec = meta.member_port_12;
        } else if (meta.member_index == 13) {
            standard_metadata.egress_spec = meta.member_port_13;
        } else if (meta.member_index == 14) {
            standard_metadata.egress_spec = meta.member_port_14;
        } else {
            standard_metadata.egress_spec = meta.member_port_15;
        }
        member_packets.count(((bit<32>) meta.group_id << 4) + meta.member_index);
        if (meta.lb_mode == LB_FLOWLET) {
            flowlet_port.write(meta.flowlet_slot, (bit<32>) standard_metadata.egress_spec + 1);
        }
    }
}

#endif
