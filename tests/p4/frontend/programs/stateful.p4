/* Registers, counters, meters, clone, digest, resubmit and recirculate. */
/* register<T, I> needs v1model 20200408 or later (the default is 20180101). */
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }

struct learn_t { bit<48> src; bit<9> port; }

struct meta_t {
    @field_list(1) bit<32> flow_count;
    bit<2> color;
    bit<32> seen;
}

enum bit<8> Verdict { PASS = 1, DROP = 2 }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}

control NoCk(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    register<bit<32>, bit<16>>(1024) flow_packets;
    counter<bit<9>>(512, CounterType.packets) port_packets;
    meter<bit<9>>(512, MeterType.bytes) port_meter;
    direct_meter<bit<2>>(MeterType.packets) flow_meter;
    action_selector(HashAlgorithm.crc32, 32w128, 32w16) ecmp_sel;

    action meter_read() { flow_meter.read(meta.color); }
    action set_port(bit<9> port) { std.egress_spec = port; }

    table metered {
        key = { hdr.ethernet.src : exact; }
        actions = { meter_read; NoAction; }
        meters = flow_meter;
        default_action = NoAction();
    }
    table lb {
        key = { hdr.ethernet.dst : exact; hdr.ethernet.src : selector; }
        actions = { set_port; NoAction; }
        implementation = ecmp_sel;
    }

    apply {
        bit<16> idx = hdr.ethernet.src[15:0];
        flow_packets.read(meta.flow_count, idx);
        flow_packets.write(idx, meta.flow_count + 1);
        port_packets.count(std.ingress_port);
        port_meter.execute_meter(std.ingress_port, meta.color);
        metered.apply();
        lb.apply();
        Verdict v = meta.color == V1MODEL_METER_COLOR_RED ? Verdict.DROP : Verdict.PASS;
        if (v == Verdict.DROP) {
            mark_to_drop(std);
        }
        if (std.instance_type == 0) {
            clone(CloneType.I2E, 32w5);
            digest<learn_t>(1, { hdr.ethernet.src, std.ingress_port });
        }
        if (meta.flow_count == 0 && std.instance_type != 6) {
            resubmit_preserving_field_list(1);
        }
        random(meta.seen, 0, 100);
        log_msg("flow {} count {}", { idx, meta.flow_count });
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply {
        if (std.instance_type == 1) {
            truncate(32w64);
            recirculate_preserving_field_list(1);
        }
    }
}

control Dp(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }

V1Switch(P(), NoCk(), Ig(), Eg(), NoCk(), Dp()) main;
