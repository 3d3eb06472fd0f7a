/* core.p4 for the emu embedded v1model target.
 *
 * Declarations every P4_16 program may use (P4_16 specification, "P4 core
 * library").  Written for this project from the specification.
 */
/* The include guard has p4c's name: programs test it with #ifdef. */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Errors the parser and the core externs may signal; programs may add more. */
error {
    NoError,               /* no error */
    PacketTooShort,        /* extract ran past the end of the packet */
    NoMatch,               /* select found no matching case */
    StackOutOfBounds,      /* .next past the end of a header stack */
    HeaderTooShort,        /* varbit extract longer than the header allows */
    ParserTimeout,         /* parser ran out of time */
    ParserInvalidArgument  /* bad argument to a parser operation */
}

/* Packet to be parsed. */
extern packet_in {
    /* Read fixed-size header `hdr` and advance past it. */
    void extract<T>(out T hdr);
    /* Read a header with one varbit field of `variableFieldSizeInBits` bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Read the next bits as a T without advancing. */
    T lookahead<T>();
    /* Skip `sizeInBits` bits. */
    void advance(in bit<32> sizeInBits);
    /* Packet length in bytes (not supported by every target). */
    bit<32> length();
}

/* Packet being assembled by a deparser. */
extern packet_out {
    /* Append `hdr` if it is a valid header (all valid headers of a struct/stack). */
    void emit<T>(in T hdr);
}

/* Parser-only: when `check` is false, stop parsing with error `toSignal`. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing; the default action of tables that name none. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every target understands; architectures add more. */
match_kind {
    exact,
    ternary,
    lpm
}

/* Compile-time assertion. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif /* _CORE_P4_ */
