/*
 * osc swy accumulate: the active messages that carry accumulate, get_accumulate,
 * fetch_and_op and compare_and_swap to the target when no Switchyard atomic can do the job.
 *
 * Both are window active messages (OSC_SWY_AM_ID, header starting with
 * ompi_osc_swy_am_header_t; the window's dispatcher checks the window and the sender's rank).
 * Request (kind OSC_SWY_AM_KIND_ACC_REQUEST, origin -> target):
 *   fixed   osc_swy_acc_request_t (host byte order: both ends are the same MPI build on
 *           hosts of one byte order, as Open MPI's own osc components assume)
 *   payload segment_count x osc_swy_acc_segment_t, then the operands: the elements the
 *           segments name, in segment order, element size bytes each (none for MPI_NO_OP);
 *           compare_and_swap: exactly one segment of one element, then [operand][compare].
 * Reply (kind OSC_SWY_AM_KIND_ACC_REPLY, target -> origin):
 *   fixed   osc_swy_acc_reply_t
 *   payload get_accumulate / compare_and_swap with status 0: the values the elements had
 *           before, in the order of the request's segments; otherwise empty.
 * The payload travels in the active message's header right after the fixed part when it
 * fits SWY_AM_MAX_HEADER (small operations: no allocation on either side, the header is
 * copied by the send call), else as the message's data (then the AM header is exactly the
 * fixed part). Anything else is malformed.
 *
 * A segment is (window offset, element count) of the one predefined element type of the
 * request: the origin decomposes the target datatype into them, so the target never sees a
 * derived datatype. The target checks everything (version, kind, op, element type, op valid
 * for the type, segment count against the data length, every segment inside its window)
 * before it touches memory; see osc_swy_acc_target.c.
 */
#ifndef OSC_SWY_ACC_WIRE_H
#define OSC_SWY_ACC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "osc_swy.h"

/** Message kinds (ompi_osc_swy_am_header_t.kind) of the accumulate family: the window's
 *  active messages (OSC_SWY_AM_ID) with these kinds go to ompi_osc_swy_acc_am_handler. */
enum {
    OSC_SWY_AM_KIND_ACC_REQUEST = 0x100, /**< osc_swy_acc_request_t, origin -> target */
    OSC_SWY_AM_KIND_ACC_REPLY = 0x101    /**< osc_swy_acc_reply_t, target -> origin */
};

enum { OSC_SWY_ACC_WIRE_VERSION = 1 };

/** What a request asks for. */
enum osc_swy_acc_kind {
    OSC_SWY_ACC_KIND_ACCUMULATE = 1,     /**< apply; reply is an empty ack */
    OSC_SWY_ACC_KIND_GET_ACCUMULATE = 2, /**< apply; reply carries the old values */
    OSC_SWY_ACC_KIND_CAS = 3             /**< compare and swap one element */
};

/** Reduction operations on the wire (not Open MPI's enum: the wire must not move with it). */
enum osc_swy_acc_op {
    OSC_SWY_ACC_OP_MAX = 1,
    OSC_SWY_ACC_OP_MIN = 2,
    OSC_SWY_ACC_OP_SUM = 3,
    OSC_SWY_ACC_OP_PROD = 4,
    OSC_SWY_ACC_OP_LAND = 5,
    OSC_SWY_ACC_OP_BAND = 6,
    OSC_SWY_ACC_OP_LOR = 7,
    OSC_SWY_ACC_OP_BOR = 8,
    OSC_SWY_ACC_OP_LXOR = 9,
    OSC_SWY_ACC_OP_BXOR = 10,
    OSC_SWY_ACC_OP_MAXLOC = 11,
    OSC_SWY_ACC_OP_MINLOC = 12,
    OSC_SWY_ACC_OP_REPLACE = 13,
    OSC_SWY_ACC_OP_NO_OP = 14,
    OSC_SWY_ACC_OP_COUNT = 15 /**< one past the last valid code */
};

/** Request header. */
typedef struct osc_swy_acc_request {
    ompi_osc_swy_am_header_t am; /**< window, sender rank, OSC_SWY_AM_KIND_ACC_REQUEST */
    uint64_t op_id;              /**< origin's cookie, echoed in the reply */
    uint64_t result_offset;      /**< origin's byte offset of this chunk's results, echoed */
    uint32_t segment_count;      /**< segments at the start of the payload */
    uint16_t element_type;       /**< Open MPI predefined datatype id of every element */
    uint8_t kind;                /**< enum osc_swy_acc_kind */
    uint8_t op;                  /**< enum osc_swy_acc_op */
    uint8_t version;             /**< OSC_SWY_ACC_WIRE_VERSION */
    uint8_t reserved[7];         /**< 0 */
} osc_swy_acc_request_t;
_Static_assert(sizeof(ompi_osc_swy_am_header_t) == 16, "window message header layout");
_Static_assert(sizeof(osc_swy_acc_request_t) == 48, "request header layout");
_Static_assert(offsetof(osc_swy_acc_request_t, segment_count) == 32, "request header layout");
_Static_assert(offsetof(osc_swy_acc_request_t, version) == 40, "request header layout");

/** One run of elements at the target: its address in the target's address space (inside
 *  the window's memory or a region attached to a dynamic window), number of elements. */
typedef struct osc_swy_acc_segment {
    uint64_t offset;
    uint64_t count;
} osc_swy_acc_segment_t;
_Static_assert(sizeof(osc_swy_acc_segment_t) == 16, "segment layout");

/** Reply header. */
typedef struct osc_swy_acc_reply {
    ompi_osc_swy_am_header_t am; /**< window, sender rank, OSC_SWY_AM_KIND_ACC_REPLY */
    uint64_t op_id;              /**< the request's */
    uint64_t result_offset;      /**< the request's */
    int32_t status;              /**< OMPI_SUCCESS or an MPI error class (MPI_ERR_RMA_RANGE) */
    uint8_t version;             /**< OSC_SWY_ACC_WIRE_VERSION */
    uint8_t reserved[3];         /**< 0 */
} osc_swy_acc_reply_t;
_Static_assert(sizeof(osc_swy_acc_reply_t) == 40, "reply header layout");

/** Largest operand bytes of one request: larger operations are split at element
 *  boundaries into several requests, so a target never allocates more than this (plus the
 *  segment list) for a rendezvous request. */
enum { OSC_SWY_ACC_MAX_CHUNK = 1 << 20 };
/** Largest segment list of one request (bounds the target's work per request as well). */
enum { OSC_SWY_ACC_MAX_SEGMENTS = 1 << 16 };

#endif /* OSC_SWY_ACC_WIRE_H */
