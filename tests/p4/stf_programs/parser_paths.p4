/* Parser paths: select (value, mask, range, default, no match), verify, PacketTooShort,
 * lookahead, advance, header stacks (next/last/lastIndex), varbit, header unions.
 * Ingress records standard_metadata.parser_error in h0.err and sends everything to port 1. */
#include <core.p4>
#include <v1model.p4>

error { BadVersion }

header h0_t { bit<8> kind; bit<8> err; }
header s_t  { bit<8> v; bit<8> more; }
header vb_t { bit<8> len; varbit<64> data; }
header ua_t { bit<8> tag; bit<8> a; }
header ub_t { bit<8> tag; bit<16> b; }
header_union u_t { ua_t ua; ub_t ub; }
header tail_t { bit<8> t; }

struct headers {
    h0_t      h0;
    s_t[3]    st;
    vb_t      vb;
    u_t       u;
    tail_t    tail;
}
struct metadata { bit<8> last_v; bit<32> last_idx; }

parser P(packet_in pk, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.h0);
        transition select(hdr.h0.kind) {
            0x01: stack;
            0x02: varlen;
            0x03: union_;
            0x10 &&& 0xF0: skip;      /* 0x10..0x1F */
            0x20 .. 0x2F: check;
            0x30: accept;
        }                              /* anything else: NoMatch */
    }
    state stack {
        pk.extract(hdr.st.next);
        meta.last_v = hdr.st.last.v;
        meta.last_idx = hdr.st.lastIndex;
        transition select(hdr.st.last.more) {
            1: stack;                  /* a 4th element overflows: StackOutOfBounds */
            default: accept;
        }
    }
    state varlen {
        pk.extract(hdr.vb, (bit<32>)(pk.lookahead<bit<8>>() << 3));
        transition tail;
    }
    state union_ {
        transition select(pk.lookahead<bit<8>>()) {
            0xA: ua;
            default: ub;
        }
    }
    state ua { pk.extract(hdr.u.ua); transition tail; }
    state ub { pk.extract(hdr.u.ub); transition tail; }
    state skip {
        pk.advance(16);
        transition tail;
    }
    state check {
        verify(hdr.h0.kind == 0x21, error.BadVersion);
        transition tail;
    }
    state tail {
        pk.extract(hdr.tail);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.NoError) { hdr.h0.err = 0; }
        else if (sm.parser_error == error.PacketTooShort) { hdr.h0.err = 1; }
        else if (sm.parser_error == error.NoMatch) { hdr.h0.err = 2; }
        else if (sm.parser_error == error.StackOutOfBounds) { hdr.h0.err = 3; }
        else if (sm.parser_error == error.HeaderTooShort) { hdr.h0.err = 4; }
        else if (sm.parser_error == error.BadVersion) { hdr.h0.err = 5; }
        else { hdr.h0.err = 0xFF; }
        if (hdr.st[0].isValid()) {
            hdr.tail.setValid();
            hdr.tail.t = meta.last_v + (bit<8>)meta.last_idx;
        }
        if (hdr.u.isValid() && hdr.u.ub.isValid()) {
            hdr.u.ub.b = hdr.u.ub.b + 1;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out pk, in headers hdr) {
    apply { pk.emit(hdr); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
