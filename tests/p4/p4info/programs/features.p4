// Exercises every P4Info object kind the embedded target supports.
/* register<T, I> needs v1model 20200408 or later (the default is 20180101). */
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
type bit<9> port_id_t;

enum bit<8> Color_t { RED = 1, GREEN = 2 }

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    @id(2) bit<9> egress_port;
    @id(1) bit<16> mcast_grp;
    bit<7> _pad;
}

header ethernet_t {
    mac_t dst;
    mac_t src;
    bit<16> ether_type;
}

header ipv4_t {
    bit<8> ttl;
    bit<8> proto;
    bit<32> src;
    bit<32> dst;
}

struct learn_t {
    mac_t src;
    bit<9> port;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t eth;
    ipv4_t ipv4;
}

struct meta_t {
    bit<16> hash;
    bit<12> vrf;
    learn_t learn;
    Color_t color;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) tpid_vs;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            tpid_vs: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Nested(inout headers_t hdr) {
    counter<bit<32>>(32w64, CounterType.packets) inner_hits;
    action bump() { inner_hits.count(32w1); }
    table inner_t {
        key = { hdr.eth.src : exact; }
        actions = { bump; }
    }
    apply { inner_t.apply(); }
}

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter<bit<32>>(32w1024, CounterType.packets_and_bytes) port_pkts;
    meter<bit<32>>(32w16, MeterType.bytes) port_meter;
    register<bit<32>, bit<32>>(32w256) flow_bytes;
    direct_counter(CounterType.bytes) lpm_hits;
    direct_meter<bit<2>>(MeterType.packets) lpm_meter;
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) ecmp_sel;
    Nested() nested;

    action drop() { mark_to_drop(sm); }
    action set_port(port_id_t port) { sm.egress_spec = (bit<9>) port; }
    action set_nhop(mac_t dmac, @name("out_port") bit<9> port) {
        hdr.eth.dst = dmac;
        sm.egress_spec = port;
    }
    action set_vrf(bit<12> vrf) { meta.vrf = vrf; }
    action set_color(Color_t c) { meta.color = c; }
    action unused_action() { }
    @hidden action hidden_action() { }
    action count_lpm() { lpm_hits.count(); }
    action learn() {
        meta.learn.src = hdr.eth.src;
        meta.learn.port = sm.ingress_port;
        digest<learn_t>(1, meta.learn);
    }

    table vrf_t {
        key = { sm.ingress_port : exact; }
        actions = { set_vrf; @defaultonly drop; }
        default_action = set_vrf(12w7);
        size = 64;
    }
    table ipv4_lpm {
        key = {
            meta.vrf : exact;
            hdr.ipv4.dst : lpm;
        }
        actions = { set_nhop; @tableonly count_lpm; drop; }
        const default_action = drop();
        counters = lpm_hits;
        meters = lpm_meter;
        support_timeout = true;
        size = 4096;
    }
    table ecmp {
        key = {
            meta.hash : selector;
            hdr.ipv4.isValid() : exact;
            hdr.ipv4.proto : ternary @name("ip_proto");
            hdr.ipv4.src : range;
            hdr.eth.ether_type : optional;
            hdr.ipv4.ttl[7:4] : ternary;
        }
        actions = { set_nhop; set_port; set_color; }
        implementation = ecmp_sel;
    }
    @name(".global_acl") table acl {
        key = { hdr.eth.dst : ternary; }
        actions = { drop; NoAction; }
        const entries = {
            48w0x010000000000 &&& 48w0x010000000000 : drop();
        }
    }
    table unused_table {
        key = { hdr.eth.dst : exact; }
        actions = { unused_action; }
    }
    apply {
        port_pkts.count((bit<32>) sm.ingress_port);
        port_meter.execute_meter((bit<32>) sm.ingress_port, meta.hash[1:0]);
        flow_bytes.write(32w0, 32w1);
        vrf_t.apply();
        ipv4_lpm.apply();
        ecmp.apply();
        acl.apply();
        nested.apply(hdr);
        learn();
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action rewrite(mac_t smac) { hdr.eth.src = smac; }
    table smac_t {
        key = { sm.egress_port : exact; }
        actions = { rewrite; }
    }
    apply { smac_t.apply(); }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
