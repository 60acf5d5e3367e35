/*
 * osc swy accumulate, target side: decode a request (every byte of it came from a peer and
 * is checked before use), check that every segment lies inside this rank's window memory,
 * apply it (osc_swy_acc_apply.c) and answer with the status and, for get_accumulate and
 * compare_and_swap, the old values.
 *
 * Nothing is applied unless the whole request is valid, so an out-of-window access leaves
 * the window untouched and the origin learns MPI_ERR_RMA_RANGE. A request whose header is
 * too short to name an operation to answer is dropped and counted (acc->refused).
 */
#include <stdlib.h>
#include <string.h>

#include "osc_swy_acc_apply.h"
#include "osc_swy_acc_op.h"
#include "osc_swy_acc_wire.h"
#include "osc_swy_accumulate.h"

/** Everything a request needs once its payload is here (rendezvous keeps it across the pull). */
typedef struct acc_incoming {
    ompi_osc_swy_module_t* module;
    int source;
    osc_swy_acc_request_t req;
    unsigned char* buffer; /**< the pulled payload (rendezvous) */
    size_t length;
} acc_incoming_t;

/* ---- window memory ----------------------------------------------------------------------- */

/* [address, address + length) inside this rank's window memory (dynamic windows: inside one
 * attached region), as a local pointer; NULL otherwise. length >= 1. */
static unsigned char* window_range(const ompi_osc_swy_module_t* module, uint64_t address,
                                   uint64_t length) {
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        for (int i = 0; i < module->attached_count; ++i) {
            const ompi_osc_swy_attached_t* r = &module->attached[i];
            uint64_t base = (uint64_t)(uintptr_t)r->base;
            if (address >= base && address - base <= r->size &&
                length <= r->size - (address - base)) {
                return (unsigned char*)(uintptr_t)address;
            }
        }
        return NULL;
    }
    uint64_t base = (uint64_t)(uintptr_t)module->base;
    if (NULL == module->base || address < base || address - base > module->size ||
        length > module->size - (address - base)) {
        return NULL;
    }
    return (unsigned char*)(uintptr_t)address;
}

/* ---- replies ----------------------------------------------------------------------------- */

static void free_on_send(swy_request_h req, swy_status_t status, void* user_data) {
    (void)req;
    (void)status;
    free(user_data);
}

/* Send the reply: @p values (NULL or @p values_length bytes) after the fixed header when that
 * fits one AM header, else as data from a heap copy freed when the send completes. */
static void send_reply(ompi_osc_swy_module_t* module, int source, const osc_swy_acc_request_t* req,
                       int status, const void* values, size_t values_length) {
    _Alignas(8) unsigned char header[SWY_AM_MAX_HEADER];
    osc_swy_acc_reply_t reply;
    memset(&reply, 0, sizeof(reply));
    reply.am.win_id = module->win_id;
    reply.am.source = module->rank;
    reply.am.kind = OSC_SWY_AM_KIND_ACC_REPLY;
    reply.op_id = req->op_id;
    reply.result_offset = req->result_offset;
    reply.status = status;
    reply.version = OSC_SWY_ACC_WIRE_VERSION;
    if (MPI_SUCCESS != status) {
        values_length = 0;
    }
    memcpy(header, &reply, sizeof(reply));
    size_t header_length = sizeof(reply);
    void* data = NULL;
    size_t data_length = 0;
    if (values_length > 0 && sizeof(reply) + values_length <= SWY_AM_MAX_HEADER) {
        memcpy(header + sizeof(reply), values, values_length);
        header_length += values_length;
    } else if (values_length > 0) {
        data = malloc(values_length);
        if (NULL == data) {
            reply.status = MPI_ERR_NO_MEM;
            memcpy(header, &reply, sizeof(reply));
        } else {
            memcpy(data, values, values_length);
            data_length = values_length;
        }
    }
    swy_request_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    params.send_cb = free_on_send;
    params.user_data = data;
    swy_request_h sreq = NULL;
    swy_status_t st = swy_am_send_nb(module->peers[source].ep, OSC_SWY_AM_ID, header, header_length,
                                     data, data_length, &params, &sreq);
    if (SWY_INPROGRESS == st) {
        swy_request_free(sreq); /* the callback still runs and frees the data */
    } else {
        free(data);
        if (SWY_OK != st) {
            opal_output(0, "osc swy: accumulate reply to rank %d failed: %s", source,
                        swy_status_string(st));
        }
    }
}

/* ---- applying a request ------------------------------------------------------------------ */

/* Check the payload against the request and the window; apply it if everything is valid.
 * @return an MPI error class; *values / *values_length: the old values (into @p scratch when
 * they fit, else malloc'd: *heap set). */
static int apply_request(ompi_osc_swy_module_t* module, const osc_swy_acc_request_t* req,
                         const unsigned char* payload, size_t length, unsigned char* scratch,
                         size_t scratch_length, unsigned char** values, size_t* values_length,
                         bool* heap) {
    *values = NULL;
    *values_length = 0;
    *heap = false;
    osc_swy_acc_apply_t a;
    int rc = osc_swy_acc_apply_decode(req->element_type, req->op, &a);
    if (MPI_SUCCESS != rc) {
        return rc;
    }
    const uint64_t nseg = req->segment_count;
    if (0 == nseg || nseg > OSC_SWY_ACC_MAX_SEGMENTS ||
        length < nseg * sizeof(osc_swy_acc_segment_t)) {
        return MPI_ERR_OTHER;
    }
    const unsigned char* seg_bytes = payload;
    const unsigned char* operands = payload + nseg * sizeof(osc_swy_acc_segment_t);
    const size_t operand_length = length - nseg * sizeof(osc_swy_acc_segment_t);

    /* Pass 1: every segment inside the window, and the element total. */
    uint64_t total = 0;
    for (uint64_t i = 0; i < nseg; ++i) {
        osc_swy_acc_segment_t s;
        memcpy(&s, seg_bytes + i * sizeof(s), sizeof(s));
        if (0 == s.count || s.count > OSC_SWY_ACC_MAX_CHUNK) {
            return MPI_ERR_OTHER;
        }
        if (NULL == window_range(module, s.offset, s.count * a.size)) {
            return MPI_ERR_RMA_RANGE;
        }
        total += s.count; /* both <= OSC_SWY_ACC_MAX_CHUNK here: cannot wrap */
        if (total > OSC_SWY_ACC_MAX_CHUNK / a.size) {
            return MPI_ERR_OTHER; /* more than one chunk: the origin splits larger ones */
        }
    }
    const size_t total_bytes = (size_t)total * a.size;
    size_t expected;
    switch (req->kind) {
        case OSC_SWY_ACC_KIND_CAS:
            if (1 != nseg || 1 != total) {
                return MPI_ERR_OTHER;
            }
            expected = 2 * a.size;
            break;
        case OSC_SWY_ACC_KIND_ACCUMULATE:
        case OSC_SWY_ACC_KIND_GET_ACCUMULATE:
            expected = OSC_SWY_ACC_OP_NO_OP == a.wire_op ? 0 : total_bytes;
            break;
        default: return MPI_ERR_OTHER;
    }
    if (operand_length != expected) {
        return MPI_ERR_OTHER;
    }

    unsigned char* old = NULL;
    if (OSC_SWY_ACC_KIND_ACCUMULATE != req->kind) {
        if (total_bytes <= scratch_length) {
            old = scratch;
        } else {
            old = malloc(total_bytes);
            if (NULL == old) {
                return MPI_ERR_NO_MEM;
            }
            *heap = true;
        }
    }

    /* Pass 2: apply, in segment order. */
    uint64_t* lock = &module->ctrl->acc_lock;
    if (OSC_SWY_ACC_KIND_CAS == req->kind) {
        osc_swy_acc_segment_t s;
        memcpy(&s, seg_bytes, sizeof(s));
        osc_swy_acc_apply_cas(&a, window_range(module, s.offset, a.size), operands,
                              operands + a.size, old, lock);
    } else {
        size_t done = 0;
        for (uint64_t i = 0; i < nseg; ++i) {
            osc_swy_acc_segment_t s;
            memcpy(&s, seg_bytes + i * sizeof(s), sizeof(s));
            osc_swy_acc_apply_run(&a, window_range(module, s.offset, s.count * a.size),
                                  expected ? operands + done : NULL, old ? old + done : NULL,
                                  (size_t)s.count, lock);
            done += (size_t)s.count * a.size;
        }
    }
    *values = old;
    *values_length = old ? total_bytes : 0;
    return MPI_SUCCESS;
}

static void process(ompi_osc_swy_module_t* module, int source, const osc_swy_acc_request_t* req,
                    const unsigned char* payload, size_t length) {
    /* Old values that fit one reply header are built on the stack: no allocation for the
     * small operations that dominate (fetch_and_op, compare_and_swap, short get_accumulate). */
    _Alignas(16) unsigned char scratch[SWY_AM_MAX_HEADER - sizeof(osc_swy_acc_reply_t)];
    unsigned char* values;
    size_t values_length;
    bool heap;
    int rc = apply_request(module, req, payload, length, scratch, sizeof(scratch), &values,
                           &values_length, &heap);
    if (MPI_SUCCESS != rc) {
        __atomic_add_fetch(&module->acc->refused, 1, __ATOMIC_RELAXED);
    }
    send_reply(module, source, req, rc, values, values_length);
    if (heap) {
        free(values);
    }
}

/* ---- rendezvous payloads ------------------------------------------------------------------ */

static void rndv_pulled(swy_request_h sreq, swy_status_t status, const swy_tag_recv_info_t* info,
                        void* user_data) {
    (void)sreq;
    acc_incoming_t* in = user_data;
    if (SWY_OK == status && NULL != info && info->length == in->length) {
        process(in->module, in->source, &in->req, in->buffer, in->length);
    } else {
        __atomic_add_fetch(&in->module->acc->refused, 1, __ATOMIC_RELAXED);
        send_reply(in->module, in->source, &in->req, MPI_ERR_OTHER, NULL, 0);
    }
    __atomic_sub_fetch(&in->module->acc->pulls, 1, __ATOMIC_ACQ_REL);
    free(in->buffer);
    free(in);
}

/* Largest payload a rendezvous request may announce: the segments and operands of one
 * chunk (compare_and_swap is always eager). */
static const size_t kMaxPayload =
    (size_t)OSC_SWY_ACC_MAX_SEGMENTS * sizeof(osc_swy_acc_segment_t) + OSC_SWY_ACC_MAX_CHUNK;

static void pull(ompi_osc_swy_module_t* module, int source, const osc_swy_acc_request_t* req,
                 void* descriptor, size_t length) {
    acc_incoming_t* in = calloc(1, sizeof(*in));
    unsigned char* buffer = length <= kMaxPayload ? malloc(length) : NULL;
    if (NULL == in || NULL == buffer) {
        free(in);
        free(buffer);
        swy_am_data_release(module->worker, descriptor);
        __atomic_add_fetch(&module->acc->refused, 1, __ATOMIC_RELAXED);
        send_reply(module, source, req, length <= kMaxPayload ? MPI_ERR_NO_MEM : MPI_ERR_OTHER,
                   NULL, 0);
        return;
    }
    __atomic_add_fetch(&module->acc->pulls, 1, __ATOMIC_ACQ_REL);
    in->module = module;
    in->source = source;
    in->req = *req;
    in->buffer = buffer;
    in->length = length;
    ompi_osc_swy_acc_pull(module->worker, descriptor, buffer, length, rndv_pulled, in);
}

/* ---- entry -------------------------------------------------------------------------------- */

swy_status_t ompi_osc_swy_acc_handle_request(ompi_osc_swy_module_t* module, int source,
                                             const void* header, size_t header_length, void* data,
                                             size_t data_length, const swy_am_recv_param_t* param) {
    const bool rndv = NULL != param && (param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) &&
                      (param->flags & SWY_AM_RECV_FLAG_RNDV);
    osc_swy_acc_request_t req;
    if (header_length < sizeof(req)) {
        /* no op_id to answer: drop */
        __atomic_add_fetch(&module->acc->refused, 1, __ATOMIC_RELAXED);
        if (rndv) {
            swy_am_data_release(module->worker, data);
        }
        return SWY_OK;
    }
    memcpy(&req, header, sizeof(req));
    static const uint8_t zeros[sizeof(req.reserved)] = {0};
    const bool inline_payload = header_length > sizeof(req);
    if (OSC_SWY_ACC_WIRE_VERSION != req.version ||
        0 != memcmp(req.reserved, zeros, sizeof(zeros)) ||
        (inline_payload && (rndv || 0 != data_length))) {
        if (rndv) {
            swy_am_data_release(module->worker, data);
        }
        __atomic_add_fetch(&module->acc->refused, 1, __ATOMIC_RELAXED);
        send_reply(module, source, &req, MPI_ERR_OTHER, NULL, 0);
        return SWY_OK;
    }
    if (rndv) {
        pull(module, source, &req, data, data_length);
    } else if (inline_payload) {
        process(module, source, &req, (const unsigned char*)header + sizeof(req),
                header_length - sizeof(req));
    } else {
        process(module, source, &req, data, data_length);
    }
    return SWY_OK;
}
