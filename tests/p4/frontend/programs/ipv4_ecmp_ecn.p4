/* IPv4 LPM router with ECMP next-hop selection by a 5-tuple hash and
 * ECN marking at egress when the queue is deep. */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x0800;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;
#define ECN_THRESHOLD 19w64

typedef bit<48> mac_t;
typedef bit<32> ip4_t;

header ethernet_t {
    mac_t   dst;
    mac_t   src;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    ip4_t   src;
    ip4_t   dst;
}

header l4_ports_t {
    bit<16> sport;
    bit<16> dport;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    l4_ports_t ports;
}

struct metadata_t {
    bit<16> ecmp_base;
    bit<16> ecmp_count;
    bit<16> ecmp_select;
}

parser FabricParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl == 5, error.HeaderTooShort);
        transition select(hdr.ipv4.protocol) {
            PROTO_TCP: parse_ports;
            PROTO_UDP: parse_ports;
            default: accept;
        }
    }
    state parse_ports {
        pkt.extract(hdr.ports);
        transition accept;
    }
}

control FabricVerify(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control FabricIngress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    direct_counter(CounterType.packets_and_bytes) route_hits;

    action drop() {
        mark_to_drop(std);
    }

    action set_ecmp_group(bit<16> base, bit<16> count) {
        meta.ecmp_base = base;
        meta.ecmp_count = count;
        hash(meta.ecmp_select, HashAlgorithm.crc16, base,
             { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.protocol,
               hdr.ports.sport, hdr.ports.dport },
             count);
        route_hits.count();
    }

    action set_nexthop(bit<9> port, mac_t dmac) {
        std.egress_spec = port;
        hdr.ethernet.src = hdr.ethernet.dst;
        hdr.ethernet.dst = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst : lpm @name("dst_addr"); }
        actions = { set_ecmp_group; drop; @defaultonly NoAction; }
        default_action = drop();
        size = 4096;
        counters = route_hits;
    }

    table ecmp_nexthop {
        key = { meta.ecmp_select : exact; }
        actions = { set_nexthop; drop; }
        const default_action = drop();
        size = 1024;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
            exit;
        }
        if (hdr.ipv4.ttl <= 1) {
            drop();
            return;
        }
        switch (ipv4_lpm.apply().action_run) {
            set_ecmp_group: { ecmp_nexthop.apply(); }
            default: { }
        }
    }
}

control FabricEgress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    apply {
        // ECN-capable transport (01, 10) gets CE (11) above the threshold.
        if (hdr.ipv4.isValid() && hdr.ipv4.ecn != 0 && std.enq_qdepth >= ECN_THRESHOLD) {
            hdr.ipv4.ecn = 3;
        }
    }
}

control FabricCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control FabricDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ports);
    }
}

V1Switch(FabricParser(), FabricVerify(), FabricIngress(), FabricEgress(),
         FabricCompute(), FabricDeparser()) main;
