/* fabric.p4 headers and metadata.
 *
 * Limits the control plane must respect (emu/control/params.py mirrors them):
 *   MAX_MEMBERS        members per next-hop group (the adaptive choice is unrolled)
 *   MAX_GROUPS         next-hop group ids 0..MAX_GROUPS-1 (member counters are
 *                      indexed group_id * MAX_MEMBERS + member)
 *   FLOWLET_SLOTS      flowlet state entries, indexed by a hash of the 5-tuple
 *   SPRAY_SLOTS        spray rotation entries, indexed by a seeded hash of the 5-tuple
 *   PORT_SLOTS         per-port counters/registers, indexed by the 9-bit port
 *   QDEPTH_SLOTS       queue readings per port and priority: (port << 3) | priority
 */
#ifndef FABRIC_HEADERS_P4
#define FABRIC_HEADERS_P4

#define MAX_MEMBERS 16
#define MAX_GROUPS 1024
#define MEMBER_SLOTS 16384
#define FLOWLET_SLOTS 4096
#define SPRAY_SLOTS 4096
#define PORT_SLOTS 512
#define QDEPTH_SLOTS 4096

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP = 6;
const bit<8>  IP_PROTO_UDP = 17;
const bit<16> ROCEV2_UDP_PORT = 4791;

/* Load-balancing modes (lb_config.set_lb_config's `mode`). */
const bit<8> LB_ECMP = 0;
const bit<8> LB_FLOWLET = 1;
const bit<8> LB_ADAPTIVE = 2;
const bit<8> LB_SPRAY = 3;
const bit<8> LB_TE = 4;

/* ECN codepoints (RFC 3168). */
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_CE = 3;

/* RED probabilities are compared with random numbers in [0, 2^24). */
const bit<32> ECN_PROB_ONE = 32w0x1000000;

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     totalLen;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     fragOffset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdrChecksum;
    ipv4_addr_t srcAddr;
    ipv4_addr_t dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

/* InfiniBand Base Transport Header, as RoCEv2 carries it after UDP 4791. */
header bth_t {
    bit<8>  opcode;
    bit<1>  solicited;
    bit<1>  migReq;
    bit<2>  padCount;
    bit<4>  tver;
    bit<16> pkey;
    bit<1>  fecn;
    bit<1>  becn;
    bit<6>  resv6;
    bit<24> dqpn;
    bit<1>  ackReq;
    bit<7>  resv7;
    bit<24> psn;
}

/* Controller packets on the CPU port (P4Runtime PacketIn / PacketOut metadata, the
 * conventional layout): a PacketIn says where the packet came in, a PacketOut where
 * it must go out, ahead of the Ethernet header. */
const bit<9> CPU_PORT = 255;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    tcp_t      tcp;
    bth_t      bth;
}

struct metadata_t {
    /* L4 ports of the 5-tuple (0 when neither UDP nor TCP was parsed). */
    bit<16> l4_sport;
    bit<16> l4_dport;

    /* lb_config: the switch's load-balancing mode and parameters. */
    bit<8>  lb_mode;
    bit<32> lb_seed;
    bit<32> flowlet_timeout_us;
    bit<32> qdepth_max_age_us;

    /* Route result: a next-hop group (routed) or a direct port. */
    bool    routed_to_group;
    bit<16> group_id;
    bit<8>  member_count;
    bit<9>  member_port_0;
    bit<9>  member_port_1;
    bit<9>  member_port_2;
    bit<9>  member_port_3;
    bit<9>  member_port_4;
    bit<9>  member_port_5;
    bit<9>  member_port_6;
    bit<9>  member_port_7;
    bit<9>  member_port_8;
    bit<9>  member_port_9;
    bit<9>  member_port_10;
    bit<9>  member_port_11;
    bit<9>  member_port_12;
    bit<9>  member_port_13;
    bit<9>  member_port_14;
    bit<9>  member_port_15;

    /* Member choice. */
    bit<32> ecmp_index;      /* seeded hash % member_count */
    bit<32> member_index;    /* the member actually used */
    bool    te_pinned;

    /* Scratch for flowlet / spray / adaptive. */
    bit<32> flowlet_slot;
    bit<32> spray_slot;
    bit<32> now_us;
    bit<32> best_key;
    bit<32> cand_key;
    bit<32> cand_depth;
    bit<32> cand_time;
    bit<32> cand_rank;

    /* Egress: RED parameters of the port. */
    bit<32> ecn_kmin;
    bit<32> ecn_kmax;
    bit<32> ecn_slope;       /* Pmax * 2^24 / (Kmax - Kmin), from the controller */
    bit<1>  ecn_at_dequeue;  /* 1: mark on deq_qdepth, 0: on enq_qdepth */
    bool    ecn_enabled;
}

#endif
