/* v1model meters as BMv2 runs them (two-rate three-color, RFC 2698): an indirect packet
 * meter, an indirect byte meter (the frame's ingress length counts) and a direct meter
 * read into metadata by the table's action. Buckets start full and the STF's rates are
 * so low that nothing refills during the test, so each color follows from the bursts.
 * h.op selects the meter, h.idx the cell or table key; the color is written to h.color. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> idx;
    bit<8> color;
}
struct headers { h_t h; }
struct metadata {
    bit<8> dcolor;
}

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    meter(4, MeterType.packets) by_packets;
    meter(4, MeterType.bytes) by_bytes;
    direct_meter<bit<8>>(MeterType.packets) per_entry;

    action metered() { per_entry.read(meta.dcolor); }
    // No read() here: v1model allows it only in an action run on a hit. (BMv2 writes
    // nothing on a miss, and p4c, taking read() for a write, drops the 0x77 below when
    // every action of the table calls it: a miss would then show 0, not 0x77.)
    // A hit on an `unmetered` entry still runs the meter and writes its color: p4c-bm2-ss
    // makes read()'s argument the meter's result target, which BMv2 writes on every hit.
    action unmetered() { }
    table flows {
        key = { hdr.h.idx: exact; }
        actions = { metered; unmetered; }
        default_action = unmetered();
        meters = per_entry;
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            by_packets.execute_meter((bit<32>)hdr.h.idx, hdr.h.color);
        } else if (hdr.h.op == 2) {
            by_bytes.execute_meter((bit<32>)hdr.h.idx, hdr.h.color);
        } else if (hdr.h.op == 3) {
            // On a miss the meter does not run: dcolor stays 0x77.
            meta.dcolor = 0x77;
            flows.apply();
            hdr.h.color = meta.dcolor;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
