/**
 * @file switchyard/am.h
 * @brief Active messages: a user header and data delivered to a handler registered under a
 * 16-bit id. Included by switchyard.h.
 *
 * Active messages have their own matching space: they never match tag receives or probes,
 * and use no tag bits. Messages from one endpoint reach their handlers in send order, also
 * relative to the tag messages sent on that endpoint.
 *
 * Delivery:
 *   - eager (header and data fit one packet of the lane, see swy_ep_am_eager_max(); or
 *     SWY_AM_SEND_FLAG_EAGER): the
 *     handler gets the whole data in @c data; the pointer is valid during the call only,
 *     unless the handler returns SWY_INPROGRESS ("keep the data", possible when the param
 *     flags say SWY_AM_RECV_FLAG_DATA_KEEPABLE): then it stays valid until
 *     swy_am_data_release();
 *   - rendezvous (larger data): the handler is called with SWY_AM_RECV_FLAG_RNDV, and @c data is
 *     a descriptor, not bytes: pull the data into a buffer of the handler's choosing with
 *     swy_am_recv_data_nb(), from inside the handler or later (return SWY_INPROGRESS to keep the
 *     descriptor); it moves zero-copy where the lane allows (CMA, RDMA). A descriptor released
 *     with swy_am_data_release() without receiving, or a handler that returns SWY_OK without
 *     calling swy_am_recv_data_nb(), drops the data: the sender completes with SWY_OK. So
 *     does a sender whose receiver pulled less than it sent (the receive is truncated).
 * A message for an id without a handler is dropped with a warning in the log (its sender
 * completes normally).
 */
#ifndef SWITCHYARD_AM_H
#define SWITCHYARD_AM_H

#include <stddef.h>
#include <stdint.h>

#include <switchyard/switchyard.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Flags of a received active message (swy_am_recv_param_t.flags). */
enum swy_am_recv_flags {
    /** @c data is a rendezvous descriptor: pull it with swy_am_recv_data_nb(). */
    SWY_AM_RECV_FLAG_RNDV = 1u << 0,
    /** The handler may return SWY_INPROGRESS to keep @c data (release it later). */
    SWY_AM_RECV_FLAG_DATA_KEEPABLE = 1u << 1
};

/** swy_am_recv_param_t.field_mask bits (set by Switchyard: which fields are valid). */
enum swy_am_recv_param_field {
    SWY_AM_RECV_PARAM_FIELD_FLAGS = 1u << 0,
    SWY_AM_RECV_PARAM_FIELD_REPLY_EP = 1u << 1
};

/** What the handler learns about a message besides header and data. */
typedef struct swy_am_recv_param {
    uint64_t field_mask; /**< enum swy_am_recv_param_field: fields Switchyard filled */
    uint32_t flags;      /**< enum swy_am_recv_flags */
    swy_ep_h reply_ep;   /**< this worker's endpoint whose lane sends to the lane the
                              message came on (the transport vouches for the sender), else
                              NULL: always NULL over tcp, where each direction has its own
                              connection */
} swy_am_recv_param_t;

/**
 * Active-message handler, run from swy_worker_progress(). Must not call
 * swy_worker_progress() itself; may send, and may call swy_am_recv_data_nb().
 * @return SWY_OK: done with @p data; SWY_INPROGRESS: keep it (only with
 *         SWY_AM_RECV_FLAG_DATA_KEEPABLE or SWY_AM_RECV_FLAG_RNDV), release it later with
 *         swy_am_data_release(). Any other value is treated as SWY_OK.
 */
typedef swy_status_t (*swy_am_recv_cb_t)(void* arg, const void* header, size_t header_length,
                                         void* data, size_t data_length,
                                         const swy_am_recv_param_t* param);

/** Handler flags (swy_worker_set_am_handler). */
enum swy_am_handler_flags {
    /** Data of eager messages may be kept by the handler (SWY_AM_RECV_FLAG_DATA_KEEPABLE). */
    SWY_AM_HANDLER_FLAG_KEEP_DATA = 1u << 0
};

/**
 * @brief Set (or with @p cb NULL, remove) the handler of active-message id @p id.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (unknown flags).
 */
swy_status_t swy_worker_set_am_handler(swy_worker_h worker, uint16_t id, swy_am_recv_cb_t cb,
                                       void* arg, uint32_t flags);

/** Active-message send flags (swy_request_params_t.flags, next to enum swy_request_flags). */
enum swy_am_send_flags {
    /** Always eager: fail with SWY_ERR_INVALID_PARAM if header and data do not fit one packet. */
    SWY_AM_SEND_FLAG_EAGER = 1u << 8,
    /** Always rendezvous (the handler gets a descriptor). */
    SWY_AM_SEND_FLAG_RNDV = 1u << 9
};

/**
 * @brief Send an active message to handler @p id of the peer.
 * @param header       copied at the call (up to SWY_AM_MAX_HEADER bytes); may be NULL if 0.
 * @param data, count  the data (datatype from params; bytes by default). Host memory only.
 * @param params       flags (enum swy_am_send_flags, SWY_REQ_FLAG_NO_IMM_COMPLETE), callback,
 *                     user data, datatype, memtype; each read only when its field_mask bit
 *                     is set.
 * Completion model as swy_tag_send_nb: SWY_OK means header and data were copied out; a
 * rendezvous send completes once the receiver pulled or dropped the data.
 * @return SWY_OK, SWY_INPROGRESS (*req set), or an error with nothing sent:
 *         SWY_ERR_INVALID_PARAM (both forcing flags, SWY_AM_SEND_FLAG_EAGER with a message
 *         that does not fit, a header too long), SWY_ERR_UNSUPPORTED (device memory;
 *         non-contiguous data on an endpoint not yet wired). Non-contiguous data that needs
 *         rendezvous streams through the pipeline, packed fragment by fragment,
 *         the endpoint's failure.
 */
swy_status_t swy_am_send_nb(swy_ep_h ep, uint16_t id, const void* header, size_t header_length,
                            const void* data, size_t count, const swy_request_params_t* params,
                            swy_request_h* req);

/** Largest active-message header. */
enum { SWY_AM_MAX_HEADER = 1024 };

/**
 * @brief The largest @c header_length + data bytes an active message on @p ep carries eager
 * (one packet of its lane): the limit of SWY_AM_SEND_FLAG_EAGER, and the size above which a
 * send goes rendezvous. *@p max is 0 for an endpoint made from a sockaddr and not yet wired.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM for NULL arguments.
 */
swy_status_t swy_ep_am_eager_max(swy_ep_h ep, size_t* max);

/**
 * @brief Pull the data of a rendezvous message (@p data_desc from the handler) into
 * @p buffer (@p count items of the datatype from params). Consumes the descriptor.
 * Completion model as swy_tag_recv_nb (params->recv_cb; info->length is the message length);
 * a buffer smaller than the data completes with SWY_ERR_MESSAGE_TRUNCATED (nothing is written
 * past @p count bytes); a sender that died completes it with SWY_ERR_CONNECTION_RESET.
 * @return as swy_tag_recv_nb; SWY_ERR_INVALID_PARAM for a pointer that is no descriptor this
 *         worker holds (consumed ones included), SWY_ERR_UNSUPPORTED for device memory (then
 *         the descriptor is not consumed). An iov or generic @p buffer (params datatype) is
 *         filled fragment by fragment (the sender's data then comes through the pipeline).
 */
swy_status_t swy_am_recv_data_nb(swy_worker_h worker, void* data_desc, void* buffer, size_t count,
                                 const swy_request_params_t* params, swy_request_h* req);

/**
 * @brief Release data an eager handler kept, or a rendezvous descriptor never received
 * (drops the data; its sender completes normally). Anything else is ignored with an error in
 * the log.
 */
void swy_am_data_release(swy_worker_h worker, void* data);

#ifdef __cplusplus
}
#endif

#endif
