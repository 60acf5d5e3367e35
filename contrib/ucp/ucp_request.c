/* Requests of the UCP shim: allocation (pool or caller memory), deferred completion, and the
 * public request calls (check_status, test, is_completed, release, free, cancel).
 * The scheme is described in ucp_shim.h. */
#include <stdlib.h>
#include <string.h>

#include "ucp_shim.h"

ucp_shim_request_t* ucp_shim_req_check(void* user, const char* call) {
    if (user == NULL || UCS_PTR_IS_ERR(user)) {
        ucp_shim_error(call, "not a request (%p)", user);
        return NULL;
    }
    ucp_shim_request_t* req = ucp_shim_req_from_user(user);
    if (req->magic != UCP_SHIM_REQ_MAGIC) {
        ucp_shim_error(call, "%p is not a request of this library (or was already freed)", user);
        return NULL;
    }
    return req;
}

static ucp_shim_request_t* pool_get(struct ucp_worker* w) {
    ucp_shim_worker_lock(w);
    ucp_shim_request_t* req = w->free_list;
    if (req != NULL) w->free_list = req->next;
    ucp_shim_worker_unlock(w);
    if (req != NULL) return req;

    size_t user = w->context->request_size;
    size_t total = sizeof(ucp_shim_request_t) + ((user + 15) & ~(size_t)15);
    req = aligned_alloc(16, total);
    if (req == NULL) return NULL;
    memset(req, 0, total);
    /* request_init once per pooled object, as UCX does (MPICH relies on it). */
    if (w->context->request_init != NULL) w->context->request_init(ucp_shim_req_user(req));
    ucp_shim_worker_lock(w);
    req->all_next = w->all_pooled;
    w->all_pooled = req;
    ucp_shim_worker_unlock(w);
    return req;
}

ucp_shim_request_t* ucp_shim_req_alloc(struct ucp_worker* w, const ucp_request_param_t* param,
                                       ucp_shim_complete_fn_t complete) {
    ucp_shim_request_t* req;
    uint32_t flags;
    if (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST) &&
        param->request != NULL) {
        req = ucp_shim_req_from_user(param->request);
        flags = UCP_SHIM_REQ_USER_MEM;
    } else {
        req = pool_get(w);
        if (req == NULL) return NULL;
        flags = UCP_SHIM_REQ_POOLED;
    }
    ucp_shim_request_t* all_next = req->all_next; /* pool bookkeeping survives reuse */
    memset(req, 0, sizeof(*req));
    req->all_next = (flags & UCP_SHIM_REQ_POOLED) ? all_next : NULL;
    req->magic = UCP_SHIM_REQ_MAGIC;
    req->flags = flags;
    req->status = UCS_INPROGRESS;
    req->final_status = UCS_INPROGRESS;
    req->worker = w;
    atomic_store(&req->swy, NULL);
    if (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) &&
        param->cb.send != NULL) {
        req->complete = complete;
        req->cb.send_nbx = param->cb.send; /* same storage for every nbx kind */
    }
    if (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_USER_DATA))
        req->user_data = param->user_data;
    return req;
}

void ucp_shim_req_put(ucp_shim_request_t* req) {
    if (!(req->flags & UCP_SHIM_REQ_POOLED)) {
        /* Caller memory: mark it finished so a stray check_status sees no garbage. */
        req->flags |= UCP_SHIM_REQ_COMPLETED;
        return;
    }
    struct ucp_worker* w = req->worker;
    req->magic = 0;
    ucp_shim_worker_lock(w);
    req->next = w->free_list;
    w->free_list = req;
    ucp_shim_worker_unlock(w);
}

void ucp_shim_req_complete_later(ucp_shim_request_t* req, ucs_status_t status) {
    struct ucp_worker* w = req->worker;
    req->final_status = status;
    ucp_shim_worker_lock(w);
    req->flags |= UCP_SHIM_REQ_QUEUED;
    req->next = NULL;
    if (w->queue_tail != NULL)
        w->queue_tail->next = req;
    else
        w->queue_head = req;
    w->queue_tail = req;
    ucp_shim_worker_unlock(w);
}

/* Runs every queued completion. Called from ucp_worker_progress, never inside an initiating
 * call. The queue is detached first so callbacks may post (and complete) new operations. */
unsigned ucp_shim_deliver_completions(struct ucp_worker* w) {
    if (w->queue_head == NULL) return 0; /* racy peek is fine: a miss is seen next time */
    ucp_shim_worker_lock(w);
    ucp_shim_request_t* req = w->queue_head;
    w->queue_head = w->queue_tail = NULL;
    ucp_shim_worker_unlock(w);
    unsigned n = 0;
    while (req != NULL) {
        ucp_shim_request_t* next = req->next;
        req->flags &= ~UCP_SHIM_REQ_QUEUED;
        req->status = req->final_status;
        if (!(req->flags & UCP_SHIM_REQ_POOLED)) {
            /* Caller memory: the callback may reuse it for a new operation at once, so
             * nothing of it is touched after the callback. */
            req->flags |= UCP_SHIM_REQ_COMPLETED;
            if (req->complete != NULL) req->complete(req);
            ++n;
            req = next;
            continue;
        }
        if (req->complete != NULL) req->complete(req);
        /* After the callback (which may have freed the request), as UCX does. */
        ucp_shim_worker_lock(w);
        req->flags |= UCP_SHIM_REQ_COMPLETED;
        int release = (req->flags & UCP_SHIM_REQ_RELEASED) != 0;
        ucp_shim_worker_unlock(w);
        if (release) ucp_shim_req_put(req);
        ++n;
        req = next;
    }
    return n;
}

ucs_status_ptr_t ucp_shim_req_post_result(ucp_shim_request_t* req, swy_status_t st,
                                          swy_request_h sreq, int no_imm) {
    if (st == SWY_INPROGRESS) {
        swy_request_h expected = NULL;
        /* The callback may already have run (another thread progressing): then it stored
         * UCP_SHIM_SWY_DONE and freed sreq itself. */
        atomic_compare_exchange_strong(&req->swy, &expected, sreq);
        return ucp_shim_req_user(req);
    }
    if (st == SWY_OK || st == SWY_ERR_MESSAGE_TRUNCATED) {
        if (!no_imm) {
            ucs_status_t s = ucp_shim_status(st);
            if (req->imm_recv_info != NULL) *req->imm_recv_info = req->recv_info;
            req->status = s; /* caller memory: ucp_request_check_status sees it */
            ucp_shim_req_put(req);
            return UCS_STATUS_PTR(s);
        }
        atomic_store(&req->swy, UCP_SHIM_SWY_DONE);
        ucp_shim_req_complete_later(req, ucp_shim_status(st));
        return ucp_shim_req_user(req);
    }
    req->status = ucp_shim_status(st);
    ucp_shim_req_put(req);
    return UCS_STATUS_PTR(ucp_shim_status(st));
}

void ucp_shim_swy_send_cb(swy_request_h sreq, swy_status_t status, void* user_data) {
    ucp_shim_request_t* req = user_data;
    atomic_store(&req->swy, UCP_SHIM_SWY_DONE);
    swy_request_free(sreq);
    ucp_shim_req_complete_later(req, ucp_shim_status(status));
}

void ucp_shim_swy_recv_cb(swy_request_h sreq, swy_status_t status, const swy_tag_recv_info_t* info,
                          void* user_data) {
    ucp_shim_request_t* req = user_data;
    if (info != NULL) {
        req->recv_info.sender_tag = info->sender_tag;
        req->recv_info.length = info->length;
    }
    atomic_store(&req->swy, UCP_SHIM_SWY_DONE);
    swy_request_free(sreq);
    ucp_shim_req_complete_later(req, ucp_shim_status(status));
}

void ucp_shim_complete_send(ucp_shim_request_t* req) {
    req->cb.send(ucp_shim_req_user(req), req->status);
}

void ucp_shim_complete_send_nbx(ucp_shim_request_t* req) {
    req->cb.send_nbx(ucp_shim_req_user(req), req->status, req->user_data);
}

void ucp_shim_complete_recv(ucp_shim_request_t* req) {
    req->cb.recv(ucp_shim_req_user(req), req->status, &req->recv_info);
}

void ucp_shim_complete_recv_nbx(ucp_shim_request_t* req) {
    req->cb.recv_nbx(ucp_shim_req_user(req), req->status, &req->recv_info, req->user_data);
}

/* ---------------------------------------------------------------------------------------- */
/* Public request calls                                                                      */
/* ---------------------------------------------------------------------------------------- */

ucs_status_t ucp_request_check_status(void* request) {
    ucp_shim_request_t* req = ucp_shim_req_check(request, "ucp_request_check_status");
    if (req == NULL) return UCS_ERR_INVALID_PARAM;
    return req->status;
}

int ucp_request_is_completed(void* request) {
    ucp_shim_request_t* req = ucp_shim_req_check(request, "ucp_request_is_completed");
    return req == NULL || req->status != UCS_INPROGRESS;
}

ucs_status_t ucp_request_test(void* request, ucp_tag_recv_info_t* info) {
    ucp_shim_request_t* req = ucp_shim_req_check(request, "ucp_request_test");
    if (req == NULL) return UCS_ERR_INVALID_PARAM;
    if (req->status != UCS_INPROGRESS && info != NULL) *info = req->recv_info;
    return req->status;
}

void ucp_request_free(void* request) {
    ucp_shim_request_t* req = ucp_shim_req_check(request, "ucp_request_free");
    if (req == NULL || !(req->flags & UCP_SHIM_REQ_POOLED)) return; /* caller memory: theirs */
    struct ucp_worker* w = req->worker;
    ucp_shim_worker_lock(w);
    int done = (req->flags & UCP_SHIM_REQ_COMPLETED) != 0;
    if (!done) req->flags |= UCP_SHIM_REQ_RELEASED;
    ucp_shim_worker_unlock(w);
    if (done) ucp_shim_req_put(req);
}

void ucp_request_release(void* request) { ucp_request_free(request); }

void ucp_request_cancel(ucp_worker_h worker, void* request) {
    ucp_shim_request_t* req = ucp_shim_req_check(request, "ucp_request_cancel");
    if (req == NULL || worker == NULL) return;
    swy_request_h sreq = atomic_load(&req->swy);
    if (sreq == NULL || sreq == UCP_SHIM_SWY_DONE) return; /* finished, or nothing to cancel */
    /* A matched receive or a send is not canceled (SWY_ERR_BUSY): UCX behaves alike. */
    (void)swy_request_cancel(worker->swy, sreq);
}

ucs_status_t ucp_request_query(void* request, ucp_request_attr_t* attr) {
    ucp_shim_request_t* req = ucp_shim_req_check(request, "ucp_request_query");
    if (req == NULL || attr == NULL) return UCS_ERR_INVALID_PARAM;
    if (attr->field_mask & UCP_REQUEST_ATTR_FIELD_STATUS) attr->status = req->status;
    if (attr->field_mask & UCP_REQUEST_ATTR_FIELD_MEM_TYPE) attr->mem_type = UCS_MEMORY_TYPE_HOST;
    if ((attr->field_mask & UCP_REQUEST_ATTR_FIELD_INFO_STRING) && attr->debug_string != NULL &&
        attr->debug_string_size > 0)
        snprintf(attr->debug_string, attr->debug_string_size, "switchyard request %s",
                 ucs_status_string(req->status));
    if (attr->field_mask & UCP_REQUEST_ATTR_FIELD_INFO_STRING_SIZE) attr->debug_string_size = 64;
    return UCS_OK;
}

/* Release every pooled request at worker destroy (request_cleanup once per object). */
void ucp_shim_requests_destroy(struct ucp_worker* w) {
    ucp_shim_request_t* req = w->all_pooled;
    while (req != NULL) {
        ucp_shim_request_t* next = req->all_next;
        if (w->context->request_cleanup != NULL)
            w->context->request_cleanup(ucp_shim_req_user(req));
        free(req);
        req = next;
    }
    w->all_pooled = NULL;
    w->free_list = NULL;
    w->queue_head = w->queue_tail = NULL;
}

ucs_status_t ucp_shim_wait_blocking(struct ucp_worker* w, ucs_status_ptr_t result) {
    if (result == NULL) return UCS_OK;
    if (UCS_PTR_IS_ERR(result)) return UCS_PTR_STATUS(result);
    ucs_status_t s;
    while ((s = ucp_request_check_status(result)) == UCS_INPROGRESS)
        ucp_worker_progress(w);
    ucp_request_free(result);
    return s;
}
