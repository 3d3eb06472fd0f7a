/* cp.p4, version 2 (RECONCILE_AND_COMMIT tests): an added table and action, fwd under
 * another id, acl's key fields in another order (so other field ids). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct learn_t {
    bit<48> srcAddr;
    bit<9>  port;
}

struct metadata { bit<8> color; }
struct headers { ethernet_t ethernet; }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) fwd_counter;
    direct_meter<bit<8>>(MeterType.bytes) fwd_meter;
    counter(64, CounterType.packets) pkt_counter;
    meter(32, MeterType.packets) port_meter;
    register<bit<16>>(16) reg16;
    action_profile(128) prof;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
        fwd_meter.read(meta.color);
    }
    action drop() { mark_to_drop(standard_metadata); }
    action set_port(bit<9> port) { standard_metadata.egress_spec = port; }
    action set_color(bit<8> color) { meta.color = color; }

    @id(0x0200abcd)
    table fwd {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { forward; drop; }
        default_action = drop();
        counters = fwd_counter;
        meters = fwd_meter;
        support_timeout = true;
        size = 64;
    }
    table acl {
        key = {
            hdr.ethernet.srcAddr: optional;
            hdr.ethernet.etherType: ternary;
            standard_metadata.ingress_port: range;
        }
        actions = { set_port; drop; NoAction; }
        size = 64;
    }
    table indirect {
        key = { hdr.ethernet.srcAddr: exact; }
        actions = { set_port; drop; }
        implementation = prof;
    }

    table color {
        key = { standard_metadata.ingress_port: exact; }
        actions = { set_color; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    apply {
        color.apply();
        fwd.apply();
        acl.apply();
        indirect.apply();
        pkt_counter.count(0);
        port_meter.execute_meter(0, meta.color);
        reg16.write(0, 1);
        digest<learn_t>(1, {hdr.ethernet.srcAddr, standard_metadata.ingress_port});
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.ethernet); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
