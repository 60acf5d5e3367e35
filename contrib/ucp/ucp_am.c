/* UCP active messages of the old API on Switchyard's (swy_am_send_nb, swy_worker_set_am_handler):
 * ucp_worker_set_am_handler, ucp_am_send_nb (contig, iov and generic data) and
 * ucp_am_data_release, and the worker hooks of the one-sided half.
 *
 * Handlers get the whole message (UCP_AM_FLAG_WHOLE_MSG): eager data straight from Switchyard
 * (kept on UCS_INPROGRESS), rendezvous data pulled into a buffer of ours first, from the
 * Switchyard handler, and handed over when it has arrived. A sender's UCP_AM_SEND_FLAG_REPLY
 * travels as a one-byte header, so that only those receivers look up the reply endpoint. */
#include <stdlib.h>
#include <string.h>

#include "ucp_rma_internal.h"

/* One registered handler: Switchyard's handler argument. */
typedef struct am_entry {
    struct ucp_worker* worker;
    ucp_am_callback_t cb;        /* old API (ucp_worker_set_am_handler), or */
    ucp_am_recv_callback_t recv; /* new API (ucp_worker_set_am_recv_handler) */
    void* arg;
} am_entry_t;

/* Rendezvous data pulled for a handler; kept while the handler holds it (UCS_INPROGRESS). */
typedef struct am_held {
    struct am_held* next;
    am_entry_t* entry;
    ucp_ep_h reply_ep;
    size_t length;
    max_align_t data[]; /* the message, aligned as malloc aligns */
} am_held_t;

/* worker->rma. */
typedef struct ucp_shim_rma_worker {
    am_entry_t** entries; /* by id; NULL: no handler */
    size_t num_entries;
    am_held_t* held; /* rendezvous data the handlers kept */
} ucp_shim_rma_worker_t;

enum { kAmHeaderReply = 1u << 0 };

ucs_status_t ucp_shim_rma_worker_init(struct ucp_worker* worker) {
    worker->rma = calloc(1, sizeof(ucp_shim_rma_worker_t));
    return worker->rma != NULL ? UCS_OK : UCS_ERR_NO_MEMORY;
}

void ucp_shim_rma_worker_cleanup(struct ucp_worker* worker) {
    ucp_shim_rma_worker_t* rw = worker->rma;
    if (rw == NULL) return;
    for (size_t i = 0; i < rw->num_entries; ++i) {
        if (rw->entries[i] != NULL)
            swy_worker_set_am_handler(worker->swy, (uint16_t)i, NULL, NULL, 0);
        free(rw->entries[i]);
    }
    free(rw->entries);
    while (rw->held != NULL) {
        am_held_t* next = rw->held->next;
        free(rw->held);
        rw->held = next;
    }
    free(rw);
    worker->rma = NULL;
}

unsigned ucp_shim_rma_progress(struct ucp_worker* worker) {
    (void)worker;
    return 0;
}

/* The UCP endpoint of this worker whose Switchyard endpoint is @p swy, or NULL. */
static ucp_ep_h ep_of(struct ucp_worker* w, swy_ep_h swy) {
    if (swy == NULL) return NULL;
    ucp_shim_worker_lock(w);
    struct ucp_ep* ep = w->eps;
    while (ep != NULL && ep->swy != swy)
        ep = ep->next;
    ucp_shim_worker_unlock(w);
    return ep;
}

/* Hands pulled rendezvous data to the handler; keeps it if the handler does. */
static void deliver_held(am_held_t* held) {
    am_entry_t* e = held->entry;
    ucs_status_t r =
        e->cb(e->arg, held->data, held->length, held->reply_ep, UCP_CB_PARAM_FLAG_DATA);
    if (r != UCS_INPROGRESS) {
        free(held);
        return;
    }
    ucp_shim_rma_worker_t* rw = e->worker->rma;
    ucp_shim_worker_lock(e->worker);
    held->next = rw->held;
    rw->held = held;
    ucp_shim_worker_unlock(e->worker);
}

static void rndv_pulled(swy_request_h sreq, swy_status_t status, const swy_tag_recv_info_t* info,
                        void* user_data) {
    (void)sreq;
    (void)info;
    am_held_t* held = user_data;
    if (status != SWY_OK) {
        ucp_shim_error("ucp_worker_progress", "active message data lost: %s",
                       ucs_status_string(ucp_shim_status(status)));
        free(held);
        return;
    }
    deliver_held(held);
}

/* A message for a handler of the new API: header and data as they came; rendezvous data as
 * Switchyard's descriptor, for ucp_am_recv_data_nbx (kept when the handler returns
 * UCS_INPROGRESS, dropped otherwise unless it was received). */
static swy_status_t am_recv_handler(am_entry_t* e, const void* header, size_t header_length,
                                    void* data, size_t data_length,
                                    const swy_am_recv_param_t* param, uint32_t flags) {
    ucp_am_recv_param_t rp;
    memset(&rp, 0, sizeof(rp));
    if (param->field_mask & SWY_AM_RECV_PARAM_FIELD_REPLY_EP) {
        rp.reply_ep = ep_of(e->worker, param->reply_ep);
        if (rp.reply_ep != NULL) rp.recv_attr |= UCP_AM_RECV_ATTR_FIELD_REPLY_EP;
    }
    const int rndv = (flags & SWY_AM_RECV_FLAG_RNDV) != 0;
    const int keep = !rndv && (flags & SWY_AM_RECV_FLAG_DATA_KEEPABLE);
    if (rndv) rp.recv_attr |= UCP_AM_RECV_ATTR_FLAG_RNDV;
    if (keep) rp.recv_attr |= UCP_AM_RECV_ATTR_FLAG_DATA;
    ucs_status_t r = e->recv(e->arg, header, header_length, data, data_length, &rp);
    return (r == UCS_INPROGRESS && (rndv || keep)) ? SWY_INPROGRESS : SWY_OK;
}

static swy_status_t am_handler(void* arg, const void* header, size_t header_length, void* data,
                               size_t data_length, const swy_am_recv_param_t* param) {
    am_entry_t* e = arg;
    if (e->recv != NULL) {
        const uint32_t f = (param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) ? param->flags : 0;
        return am_recv_handler(e, header, header_length, data, data_length, param, f);
    }
    ucp_ep_h reply_ep = NULL;
    if (header_length == 1 && (*(const uint8_t*)header & kAmHeaderReply) &&
        (param->field_mask & SWY_AM_RECV_PARAM_FIELD_REPLY_EP)) {
        reply_ep = ep_of(e->worker, param->reply_ep);
    }
    const uint32_t flags = (param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) ? param->flags : 0;
    if (!(flags & SWY_AM_RECV_FLAG_RNDV)) {
        const unsigned keep = (flags & SWY_AM_RECV_FLAG_DATA_KEEPABLE) ? UCP_CB_PARAM_FLAG_DATA : 0;
        ucs_status_t r = e->cb(e->arg, data, data_length, reply_ep, keep);
        return (r == UCS_INPROGRESS && keep) ? SWY_INPROGRESS : SWY_OK;
    }
    am_held_t* held = malloc(sizeof(*held) + (data_length != 0 ? data_length : 1));
    if (held == NULL) {
        ucp_shim_error("ucp_worker_progress", "no memory for a %zu-byte active message",
                       data_length);
        return SWY_OK; /* drops it */
    }
    held->next = NULL;
    held->entry = e;
    held->reply_ep = reply_ep;
    held->length = data_length;
    swy_request_params_t sp;
    memset(&sp, 0, sizeof(sp));
    sp.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    sp.recv_cb = rndv_pulled;
    sp.user_data = held;
    swy_request_h sreq = NULL;
    swy_status_t s = swy_am_recv_data_nb(e->worker->swy, data, held->data, data_length, &sp, &sreq);
    if (s == SWY_OK) {
        deliver_held(held);
    } else if (s == SWY_INPROGRESS) {
        swy_request_free(sreq); /* rndv_pulled still runs */
    } else {
        ucp_shim_error("ucp_worker_progress", "could not receive an active message: %s",
                       ucs_status_string(ucp_shim_status(s)));
        free(held);
    }
    return SWY_OK;
}

/* Installs (or with neither callback, removes) the handler of @p id. */
static ucs_status_t set_handler(ucp_worker_h worker, unsigned id, ucp_am_callback_t cb,
                                ucp_am_recv_callback_t recv, void* arg) {
    ucp_shim_rma_worker_t* rw = worker->rma;
    if (cb == NULL && recv == NULL) {
        if (id < rw->num_entries && rw->entries[id] != NULL) {
            swy_worker_set_am_handler(worker->swy, (uint16_t)id, NULL, NULL, 0);
            free(rw->entries[id]);
            rw->entries[id] = NULL;
        }
        return UCS_OK;
    }
    if (id >= rw->num_entries) {
        const size_t n = (size_t)id + 1;
        am_entry_t** grown = realloc(rw->entries, n * sizeof(*grown));
        if (grown == NULL) return UCS_ERR_NO_MEMORY;
        memset(grown + rw->num_entries, 0, (n - rw->num_entries) * sizeof(*grown));
        rw->entries = grown;
        rw->num_entries = n;
    }
    am_entry_t* e = rw->entries[id];
    const int fresh = e == NULL;
    if (fresh && (e = calloc(1, sizeof(*e))) == NULL) return UCS_ERR_NO_MEMORY;
    e->worker = worker;
    e->cb = cb;
    e->recv = recv;
    e->arg = arg;
    swy_status_t s = swy_worker_set_am_handler(worker->swy, (uint16_t)id, am_handler, e,
                                               SWY_AM_HANDLER_FLAG_KEEP_DATA);
    if (s != SWY_OK) {
        if (fresh) free(e);
        return ucp_shim_status(s);
    }
    rw->entries[id] = e;
    return UCS_OK;
}

ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id, ucp_am_callback_t cb,
                                       void* arg, uint32_t flags) {
    static const char call[] = "ucp_worker_set_am_handler";
    if (worker == NULL || worker->rma == NULL) {
        ucp_shim_error(call, "worker must not be NULL");
        return UCS_ERR_INVALID_PARAM;
    }
    if (flags & ~(uint32_t)UCP_AM_FLAG_WHOLE_MSG) {
        ucp_shim_error(call, "unsupported flags %#x (only UCP_AM_FLAG_WHOLE_MSG)", flags);
        return UCS_ERR_UNSUPPORTED;
    }
    return set_handler(worker, id, cb, NULL, arg);
}

ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker,
                                            const ucp_am_handler_param_t* param) {
    static const char call[] = "ucp_worker_set_am_recv_handler";
    if (worker == NULL || worker->rma == NULL || param == NULL ||
        !(param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_ID)) {
        ucp_shim_error(call, "worker, param and param->id are required");
        return UCS_ERR_INVALID_PARAM;
    }
    if (param->id > UINT16_MAX) {
        ucp_shim_error(call, "id %u is above 65535", param->id);
        return UCS_ERR_INVALID_PARAM;
    }
    const uint32_t flags =
        (param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_FLAGS) ? param->flags : 0;
    if (flags & ~(uint32_t)(UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA)) {
        ucp_shim_error(call, "unsupported flags %#x", flags);
        return UCS_ERR_UNSUPPORTED;
    }
    ucp_am_recv_callback_t cb =
        (param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_CB) ? param->cb : NULL;
    void* arg = (param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_ARG) ? param->arg : NULL;
    return set_handler(worker, param->id, NULL, cb, arg);
}

ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void* buffer, size_t count,
                                ucp_datatype_t datatype, ucp_send_callback_t cb, unsigned flags) {
    static const char call[] = "ucp_am_send_nb";
    if (ep == NULL) {
        ucp_shim_error(call, "ep must not be NULL");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (ep->closing) return UCS_STATUS_PTR(UCS_ERR_CANCELED);
    const unsigned known = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_RNDV;
    if (flags & ~known) {
        ucp_shim_error(call, "unknown flags %#x", flags);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, NULL, NULL);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (cb != NULL) {
        req->complete = ucp_shim_complete_send;
        req->cb.send = cb;
    }
    ucp_request_param_t dt_param;
    memset(&dt_param, 0, sizeof(dt_param));
    dt_param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    dt_param.datatype = datatype;
    swy_request_params_t sp;
    size_t swy_count = 0;
    ucs_status_t c =
        ucp_shim_swy_params(req, &dt_param, count, ucp_shim_swy_send_cb, NULL, &sp, &swy_count);
    if (c != UCS_OK) {
        ucp_shim_req_put(req);
        return UCS_STATUS_PTR(c);
    }
    if (flags & (UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_RNDV)) {
        sp.field_mask |= SWY_REQ_PARAM_FIELD_FLAGS;
        if (flags & UCP_AM_SEND_FLAG_EAGER) sp.flags |= SWY_AM_SEND_FLAG_EAGER;
        if (flags & UCP_AM_SEND_FLAG_RNDV) sp.flags |= SWY_AM_SEND_FLAG_RNDV;
    }
    const uint8_t header = kAmHeaderReply;
    const int reply = (flags & UCP_AM_SEND_FLAG_REPLY) != 0;
    swy_request_h sreq = NULL;
    swy_status_t s = swy_am_send_nb(ep->swy, id, reply ? &header : NULL, reply ? 1 : 0, buffer,
                                    swy_count, &sp, &sreq);
    return ucp_shim_req_post_result(req, s, sreq, 0);
}

void ucp_am_data_release(ucp_worker_h worker, void* data) {
    if (worker == NULL || data == NULL) return;
    ucp_shim_rma_worker_t* rw = worker->rma;
    am_held_t* found = NULL;
    if (rw != NULL) {
        ucp_shim_worker_lock(worker);
        for (am_held_t** p = &rw->held; *p != NULL; p = &(*p)->next) {
            if ((void*)(*p)->data == data) {
                found = *p;
                *p = found->next;
                break;
            }
        }
        ucp_shim_worker_unlock(worker);
    }
    if (found != NULL) {
        free(found);
        return;
    }
    swy_am_data_release(worker->swy, data); /* eager data kept by a handler */
}

ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void* header, size_t header_length,
                                 const void* buffer, size_t count,
                                 const ucp_request_param_t* param) {
    static const char call[] = "ucp_am_send_nbx";
    if (ep == NULL || id > UINT16_MAX || (header == NULL && header_length != 0)) {
        ucp_shim_error(call, "ep, an id up to 65535 and a header for header_length are required");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (ep->closing) return UCS_STATUS_PTR(UCS_ERR_CANCELED);
    if (header_length > SWY_AM_MAX_HEADER) {
        ucp_shim_error(call, "header of %zu bytes (at most %d)", header_length,
                       (int)SWY_AM_MAX_HEADER);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    const uint32_t flags =
        (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_FLAGS)) ? param->flags : 0;
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, param, ucp_shim_complete_send_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    swy_request_params_t sp;
    size_t swy_count = 0;
    ucs_status_t c =
        ucp_shim_swy_params(req, param, count, ucp_shim_swy_send_cb, NULL, &sp, &swy_count);
    if (c != UCS_OK) {
        ucp_shim_req_put(req);
        return UCS_STATUS_PTR(c);
    }
    if (flags & (UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_RNDV)) {
        sp.field_mask |= SWY_REQ_PARAM_FIELD_FLAGS;
        if (flags & UCP_AM_SEND_FLAG_EAGER) sp.flags |= SWY_AM_SEND_FLAG_EAGER;
        if (flags & UCP_AM_SEND_FLAG_RNDV) sp.flags |= SWY_AM_SEND_FLAG_RNDV;
    }
    swy_request_h sreq = NULL;
    swy_status_t s =
        swy_am_send_nb(ep->swy, (uint16_t)id, header, header_length, buffer, swy_count, &sp, &sreq);
    return ucp_shim_req_post_result(req, s, sreq, ucp_shim_no_imm(param));
}

/* ucp_am_recv_data_nbx completion: the callback with the message length. */
static void complete_recv_am(ucp_shim_request_t* req) {
    req->cb.recv_am(ucp_shim_req_user(req), req->status, req->length, req->user_data);
}

static void swy_recv_am_cb(swy_request_h sreq, swy_status_t status, const swy_tag_recv_info_t* info,
                           void* user_data) {
    ucp_shim_request_t* req = user_data;
    if (info != NULL) req->length = info->length;
    atomic_store(&req->swy, UCP_SHIM_SWY_DONE);
    swy_request_free(sreq);
    ucp_shim_req_complete_later(req, ucp_shim_status(status));
}

ucs_status_ptr_t ucp_am_recv_data_nbx(ucp_worker_h worker, void* data_desc, void* buffer,
                                      size_t count, const ucp_request_param_t* param) {
    static const char call[] = "ucp_am_recv_data_nbx";
    if (worker == NULL || data_desc == NULL) {
        ucp_shim_error(call, "worker and data_desc are required");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucp_shim_request_t* req = ucp_shim_req_alloc(worker, param, complete_recv_am);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    swy_request_params_t sp;
    size_t swy_count = 0;
    ucs_status_t c = ucp_shim_swy_params(req, param, count, NULL, swy_recv_am_cb, &sp, &swy_count);
    if (c != UCS_OK) {
        ucp_shim_req_put(req);
        return UCS_STATUS_PTR(c);
    }
    sp.field_mask |= SWY_REQ_PARAM_FIELD_RECV_INFO;
    swy_tag_recv_info_t info = {0, 0};
    sp.recv_info = &info;
    swy_request_h sreq = NULL;
    swy_status_t s = swy_am_recv_data_nb(worker->swy, data_desc, buffer, swy_count, &sp, &sreq);
    if ((s == SWY_OK || s == SWY_ERR_MESSAGE_TRUNCATED) && !ucp_shim_no_imm(param)) {
        if (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_RECV_INFO) &&
            param->recv_info.length != NULL) {
            *param->recv_info.length = info.length;
        }
    }
    req->length = info.length;
    return ucp_shim_req_post_result(req, s, sreq, ucp_shim_no_imm(param));
}
