/* v1model.p4 for the emu embedded v1model target.
 *
 * Declarations of the v1model architecture as BMv2's simple_switch implements
 * it, written for this project from the P4_16 specification and p4c's
 * documented v1model interface.  It must accept and reject exactly what p4c's
 * own v1model.p4 does, so a program checked here also compiles with p4c:
 * docs/v1model.md lists the rules the target implements.
 * V1MODEL_VERSION defaults to 20180101 as in every p4c release, and the
 * index-typed counter<I>, meter<I>, register<T, I> (and PortId_t) exist only
 * when a program defines V1MODEL_VERSION 20200408 or later before including
 * this file.
 */
#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

match_kind {
    range,     /* lo..hi */
    optional,  /* exact value or wildcard */
    selector   /* input of an action_selector's hash */
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;        /* 511 = drop port */
#endif

/* Intrinsic metadata of simple_switch.  Timestamps are in microseconds. */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;
    PortId_t egress_spec;          /* set in ingress: output port, 511 drops */
    PortId_t egress_port;          /* read in egress: the port being sent to */
#else
    bit<9>   ingress_port;
    bit<9>   egress_spec;
    bit<9>   egress_port;
#endif
    bit<32>  instance_type;        /* NORMAL 0, clones 1/2, RECIRC 4, REPLICATION 5, RESUBMIT 6 */
    bit<32>  packet_length;        /* bytes */
    @alias("queueing_metadata.enq_timestamp")
    bit<32>  enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19>  enq_qdepth;           /* packets */
    @alias("queueing_metadata.deq_timedelta")
    bit<32>  deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19>  deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48>  ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48>  egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16>  mcast_grp;
    @alias("intrinsic_metadata.egress_rid")
    bit<16>  egress_rid;
    bit<1>   checksum_error;       /* a verify_checksum failed */
    error    parser_error;
    @alias("intrinsic_metadata.priority")
    bit<3>   priority;             /* queue of --priority-queues */
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

#if V1MODEL_VERSION >= 20200408
/* Indexed counter array; I is the index type. */
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}
#else
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}
#endif

/* Counter attached to a table (table property `counters`). */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

#if V1MODEL_VERSION >= 20200408
/* Indexed two-rate three-color meter array; result 0 green, 1 yellow, 2 red. */
extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}
#else
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}
#endif

/* Meter attached to a table (table property `meters`). */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

#if V1MODEL_VERSION >= 20200408
/* Register array of `size` elements of type T, indexed by I. */
extern register<T, I> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in I index);
    void write(in I index, in T value);
}
#else
extern register<T> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}
#endif

/* Table implementation: members chosen by the control plane. */
extern action_profile {
    action_profile(bit<32> size);
}

/* result = a uniformly chosen value in lo..hi. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send `data` to the control plane. */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* egress_spec := drop port, mcast_grp := 0.  The argument-less form is the
 * pre-2018 spelling. */
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + H(data) % max (max 0 counts as 1). */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Table implementation: members of groups chosen by a hash of the selector keys. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* In VerifyChecksum: when `condition`, compare algo(data) with `checksum` and
 * set standard_metadata.checksum_error on mismatch. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
/* In ComputeChecksum: when `condition`, checksum := algo(data). */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);
/* As above, with the unparsed payload appended to `data`. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Resubmit the original packet to ingress at the end of ingress, keeping the
 * user metadata fields annotated @field_list(index). */
extern void resubmit_preserving_field_list(bit<8> index);
@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);

/* Send the deparsed packet back to the parser at the end of egress. */
extern void recirculate_preserving_field_list(bit<8> index);
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);

/* Clone to the session's port at the end of ingress (I2E) or egress (E2E). */
extern void clone(in CloneType type, in bit<32> session);
@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Emit at most `length` bytes of the packet. */
extern void truncate(in bit<32> length);

/* Debug helpers of simple_switch. */
extern void assert(in bool check);
extern void assume(in bool check);
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The six programmable blocks of the v1model pipeline. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);
control VerifyChecksum<H, M>(inout H hdr, inout M meta);
@pipeline
control Ingress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);
@pipeline
control Egress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);
control ComputeChecksum<H, M>(inout H hdr, inout M meta);
@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif /* _V1_MODEL_P4_ */
