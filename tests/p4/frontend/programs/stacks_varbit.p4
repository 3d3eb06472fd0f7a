/* MPLS label stack and IPv4 options (varbit). */
#include <core.p4>
#include <v1model.p4>

#define MAX_LABELS 4

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header mpls_t { bit<20> label; bit<3> tc; bit<1> bos; bit<8> ttl; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum;
    bit<32> src; bit<32> dst;
    varbit<320> options;
}
header ihl_peek_t { bit<4> version; bit<4> ihl; }

struct headers_t {
    ethernet_t         ethernet;
    mpls_t[MAX_LABELS] mpls;
    ipv4_t             ipv4;
}
struct meta_t { bit<8> depth; bit<32> last_label; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x8847: parse_mpls;
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        meta.depth = meta.depth + 1;
        meta.last_label = hdr.mpls.lastIndex;  /* lastIndex: parsers only */
        transition select(hdr.mpls.last.bos) {
            1w0: parse_mpls;
            1w1: parse_ipv4;
        }
    }
    state parse_ipv4 {
        bit<4> ihl = pkt.lookahead<ihl_peek_t>().ihl;
        pkt.extract(hdr.ipv4, (bit<32>)(((bit<9>)ihl << 5) - 160));
        transition accept;
    }
}

control NoCk(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action pop_label() {
        hdr.mpls.pop_front(1);
        if (!hdr.mpls[0].isValid()) {
            hdr.ethernet.ether_type = 0x0800;
        }
    }
    action push_label(bit<20> label) {
        hdr.mpls.push_front(1);
        hdr.mpls[0].setValid();
        hdr.mpls[0].label = label;
        hdr.mpls[0].ttl = 64;
        hdr.mpls[0].bos = hdr.mpls[1].isValid() ? 1w0 : 1w1;
        hdr.ethernet.ether_type = 0x8847;
    }
    table mpls_tbl {
        key = { hdr.mpls[0].label : exact; hdr.mpls[0].isValid() : exact; }
        actions = { pop_label; push_label; NoAction; }
        default_action = NoAction();
    }
    apply {
        mpls_tbl.apply();
        std.egress_spec = (bit<9>)meta.last_label;
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }

control Dp(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(P(), NoCk(), Ig(), Eg(), NoCk(), Dp()) main;
