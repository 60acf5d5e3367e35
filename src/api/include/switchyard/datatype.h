/**
 * @file switchyard/datatype.h
 * @brief Datatypes of message and RMA buffers: contiguous, iov, and generic (callbacks).
 *
 * Every operation that takes a (buffer, count) pair -- swy_tag_send_nb, swy_tag_recv_nb,
 * swy_tag_msg_recv_nb, swy_put_nb, swy_get_nb, swy_am_send_nb, swy_am_recv_data_nb -- reads
 * them through the datatype in its request parameters (swy_request_params_t.datatype, with
 * SWY_REQ_PARAM_FIELD_DATATYPE; without it the data is contiguous):
 *   - SWY_DATATYPE_CONTIG: @c buffer points to the bytes, @c count is their number;
 *   - SWY_DATATYPE_IOV:    @c buffer points to an array of swy_dt_iov_t, @c count is the number
 *                          of entries (zero-length entries are allowed and skipped); the
 *                          array and the memory it names must stay valid until completion;
 *   - a generic datatype from swy_dt_create_generic(): @c buffer and @c count are handed to
 *     its start_pack / start_unpack callbacks unchanged; Switchyard never touches the buffer
 *     itself, it only calls pack and unpack.
 * The length of the message is the sum of the iov entries or the generic type's packed_size.
 *
 * Non-contiguous data must be host memory: stating a device memory type for it fails the
 * operation with SWY_ERR_UNSUPPORTED (it is not detected; an unstated type is taken as host).
 *
 * The generic type's finish callback runs exactly once per operation whose start callback
 * succeeded: when it completes, fails or is canceled (before the request's callback runs).
 * A receive whose unpack failed completes with that status once all its data arrived.
 *
 * Non-contiguous data streams: a large message is packed and unpacked one fragment at a time
 * (at most a few fragments in flight per message), never into a temporary copy of the whole
 * message. Fragments are packed in offset order on the sender; on the receiver unpack may be
 * called with offsets out of order when fragments arrive out of order, so unpack must accept
 * any offset (as MPI's pack/unpack with a position do).
 */
#ifndef SWITCHYARD_DATATYPE_H
#define SWITCHYARD_DATATYPE_H

#include <stddef.h>
#include <stdint.h>

#include <switchyard/status.h>

#ifdef __cplusplus
extern "C" {
#endif

struct swy_ep; /* swy_ep_h (switchyard.h) */

/** A datatype: SWY_DATATYPE_CONTIG, SWY_DATATYPE_IOV, or a value from swy_dt_create_generic(). */
typedef uint64_t swy_datatype_t;

/** The predefined datatypes. */
enum swy_datatype_predefined {
    SWY_DATATYPE_CONTIG = 0, /**< bytes at buffer, count of them (the default) */
    SWY_DATATYPE_IOV = 1     /**< buffer: const swy_dt_iov_t[count] */
};

/** One entry of an iov datatype. */
typedef struct swy_dt_iov {
    void* buffer;  /**< may be NULL when length is 0 */
    size_t length; /**< bytes */
} swy_dt_iov_t;

/**
 * Callbacks of a generic datatype (non-contiguous data the caller packs and unpacks, e.g. an
 * MPI derived datatype). They run from inside Switchyard calls on the worker's thread and must
 * not call back into Switchyard.
 */
typedef struct swy_dt_generic_ops {
    /** Begin packing @p count items at @p buffer; return a state for the other callbacks. */
    void* (*start_pack)(void* context, const void* buffer, size_t count);
    /** Begin unpacking into @p count items at @p buffer; return a state. */
    void* (*start_unpack)(void* context, void* buffer, size_t count);
    /** Bytes of the packed form (asked once per operation, right after start). */
    size_t (*packed_size)(void* state);
    /** Pack at most @p max_length bytes from packed offset @p offset into @p dest; return how
        many were written (less than max_length only at the end of the data). */
    size_t (*pack)(void* state, size_t offset, void* dest, size_t max_length);
    /** Unpack @p length packed bytes that belong at packed offset @p offset. A status other
        than SWY_OK fails the receive with it. */
    swy_status_t (*unpack)(void* state, size_t offset, const void* src, size_t length);
    /** The operation is over (completed, failed or canceled): release @p state. */
    void (*finish)(void* state);
} swy_dt_generic_ops_t;

/**
 * @brief Create a generic datatype.
 * @param ops      callbacks, copied (every one is required); @param context passed to start_*.
 * @param[out] datatype  release with swy_dt_destroy() once no operation uses it.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument or callback); SWY_ERR_NO_MEMORY.
 * Thread safety: any thread.
 */
swy_status_t swy_dt_create_generic(const swy_dt_generic_ops_t* ops, void* context,
                                   swy_datatype_t* datatype);

/** @brief Destroy a generic datatype (predefined ones are ignored). */
void swy_dt_destroy(swy_datatype_t datatype);

/**
 * @brief Write the protocol table an endpoint uses for non-contiguous host data (iov and
 * generic datatypes), by packed length, in the format of swy_ep_print_protocols(): one line
 * "<lo>..<hi> <protocol>  <reason>" per range, covering 0..inf. The eager ranges are split
 * where one packet ends and fragments begin; every rendezvous range is rndv_pipeline, since
 * non-contiguous data is never moved zero-copy (see docs/protocols.md).
 * @param ep  a swy_ep_h (declared here as its struct so this header stands alone).
 * @return SWY_OK; SWY_ERR_NO_RESOURCE if @p buf was too small (output truncated);
 *         SWY_ERR_UNSUPPORTED before the endpoint is wired; SWY_ERR_INVALID_PARAM (NULL).
 * Thread safety: as other endpoint calls.
 */
swy_status_t swy_ep_print_datatype_protocols(struct swy_ep* ep, char* buf, size_t buflen);

#ifdef __cplusplus
}
#endif

#endif
