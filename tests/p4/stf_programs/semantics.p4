/* Language semantics: copy-in/copy-out (out starts invalid/zero, inout copied back also
 * after exit), return in functions and actions, exit in an action, signed arithmetic,
 * saturating ops, slices, concatenation, casts; IPv4 checksum verify + update. */
#include <core.p4>
#include <v1model.p4>

header ipv4_t {
    bit<4>  version; bit<4> ihl; bit<8> tos; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8>  ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header r_t {
    bit<8>  op;
    bit<8>  a;
    bit<8>  b;
    bit<8>  c;
    int<8>  s;
    bit<8>  flags;   /* bit 0: checksum_error seen in ingress */
}
struct headers { r_t r; ipv4_t ip; }
struct metadata { }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.r);
        pk.extract(hdr.ip);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum(hdr.ip.isValid(),
            { hdr.ip.version, hdr.ip.ihl, hdr.ip.tos, hdr.ip.totalLen, hdr.ip.identification,
              hdr.ip.flags, hdr.ip.fragOffset, hdr.ip.ttl, hdr.ip.protocol,
              hdr.ip.srcAddr, hdr.ip.dstAddr },
            hdr.ip.hdrChecksum, HashAlgorithm.csum16);
    }
}

bit<8> pick(in bit<8> x) {
    if (x > 100) { return 1; }
    return 2;
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action set_out(out bit<8> o, inout bit<8> io) {
        io = io + o;          /* o is uninitialised (0) on entry */
        o = 7;
    }
    action leave(inout bit<8> v) {
        v = 0x42;
        exit;                 /* v is still copied out */
    }
    action early(inout bit<8> v) {
        v = 1;
        return;
    }
    apply {
        sm.egress_spec = 1;
        hdr.r.flags = (bit<8>)sm.checksum_error;
        if (hdr.r.op == 1) {
            set_out(hdr.r.a, hdr.r.b);      /* a := 7, b := b + 0 */
        } else if (hdr.r.op == 2) {
            leave(hdr.r.c);
            hdr.r.c = 0xFF;                 /* not reached */
        } else if (hdr.r.op == 3) {
            early(hdr.r.c);
            hdr.r.a = pick(hdr.r.b);
        } else if (hdr.r.op == 4) {
            hdr.r.s = hdr.r.s - 100;        /* int<8> wraps */
            hdr.r.a = hdr.r.a |+| 200;      /* saturates at 255 */
            hdr.r.b = hdr.r.b |-| 50;       /* saturates at 0 */
            hdr.r.c = hdr.r.a[3:0] ++ hdr.r.b[7:4];
        } else if (hdr.r.op == 5) {
            hdr.ip.ttl = hdr.ip.ttl - 1;    /* checksum recomputed in egress */
        }
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.r.op == 5,
            { hdr.ip.version, hdr.ip.ihl, hdr.ip.tos, hdr.ip.totalLen, hdr.ip.identification,
              hdr.ip.flags, hdr.ip.fragOffset, hdr.ip.ttl, hdr.ip.protocol,
              hdr.ip.srcAddr, hdr.ip.dstAddr },
            hdr.ip.hdrChecksum, HashAlgorithm.csum16);
    }
}
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
