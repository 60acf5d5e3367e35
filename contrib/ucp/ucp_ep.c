/* Endpoints: create from a worker address (never blocks: Switchyard wires shm at once and makes
 * tcp connections from progress), close (nb, nbx, disconnect, destroy), flush, print. */
#include <stdlib.h>
#include <string.h>

#include "ucp_shim.h"
#include "ucp_shim_addr.h"
#include "ucp_shim_internal.h"

/* Delivers an endpoint failure to the consumer's handler from ucp_worker_progress (a request
 * object carries it through the completion queue: op[0] = ep). */
static void deliver_ep_error(ucp_shim_request_t* req) {
    struct ucp_ep* ep = req->op[0];
    if (ep->err.cb != NULL) ep->err.cb(ep->err.arg, ep, req->status);
}

static void on_swy_ep_error(void* arg, swy_ep_h sep, swy_status_t status) {
    (void)sep;
    struct ucp_ep* ep = arg;
    if (ep->closing || ep->err.cb == NULL) return; /* nobody to tell */
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, NULL, deliver_ep_error);
    if (req == NULL) return;
    req->complete = deliver_ep_error;
    req->op[0] = ep;
    req->flags |= UCP_SHIM_REQ_RELEASED; /* nobody holds it: back to the pool after */
    ucp_shim_req_complete_later(req, ucp_shim_status(status));
}

static void ep_list_remove(struct ucp_ep* ep) {
    struct ucp_worker* w = ep->worker;
    ucp_shim_worker_lock(w);
    for (struct ucp_ep** p = &w->eps; *p != NULL; p = &(*p)->next) {
        if (*p == ep) {
            *p = ep->next;
            break;
        }
    }
    ucp_shim_worker_unlock(w);
}

ucs_status_t ucp_ep_create(ucp_worker_h w, const ucp_ep_params_t* params, ucp_ep_h* ep_p) {
    if (w == NULL || params == NULL || ep_p == NULL) return UCS_ERR_INVALID_PARAM;
    uint64_t m = params->field_mask;
    if (!(m & UCP_EP_PARAM_FIELD_REMOTE_ADDRESS) || params->address == NULL) {
        ucp_shim_error("ucp_ep_create",
                       "only endpoints to a worker address are supported here (sockaddr and "
                       "connection requests are not)");
        return UCS_ERR_UNSUPPORTED;
    }
    const ucp_shim_addr_header_t* h = (const ucp_shim_addr_header_t*)params->address;
    if (h->magic != UCP_SHIM_ADDR_MAGIC) {
        ucp_shim_error("ucp_ep_create",
                       "the address is not a Switchyard worker address (from real UCX? every "
                       "process of the job must run over the same library)");
        return UCS_ERR_INVALID_ADDR;
    }
    if (h->version != UCP_SHIM_ADDR_VERSION || h->swy_length == 0 ||
        h->swy_length > UCP_SHIM_ADDR_MAX_SWY) {
        ucp_shim_error("ucp_ep_create", "malformed address (version %u, length %u)",
                       (unsigned)h->version, (unsigned)h->swy_length);
        return UCS_ERR_INVALID_ADDR;
    }
    struct ucp_ep* ep = calloc(1, sizeof(*ep));
    if (ep == NULL) return UCS_ERR_NO_MEMORY;
    ep->worker = w;
    if (m & UCP_EP_PARAM_FIELD_USER_DATA) ep->user_data = params->user_data;
    if (m & UCP_EP_PARAM_FIELD_ERR_HANDLER) ep->err = params->err_handler;
    /* ERR_HANDLING_MODE, FLAGS, NAME, LOCAL/REMOTE sockaddr: nothing more to do here. */
    swy_ep_params_t ep_params = {
        .field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER,
        .remote_address = h + 1,
        .remote_address_length = h->swy_length,
        .err_cb = on_swy_ep_error,
        .err_arg = ep};
    swy_status_t st = swy_ep_create(w->swy, &ep_params, &ep->swy);
    if (st != SWY_OK) {
        ucp_shim_error("ucp_ep_create", "%s", swy_status_string(st));
        free(ep);
        return ucp_shim_status(st);
    }
    ucp_shim_worker_lock(w);
    ep->next = w->eps;
    w->eps = ep;
    ucp_shim_worker_unlock(w);
    *ep_p = ep;
    return UCS_OK;
}

void ucp_shim_ep_drop(struct ucp_ep* ep, int force) {
    ep_list_remove(ep);
    ucp_shim_rma_ep_cleanup(ep);
    swy_request_h sreq = NULL;
    if (swy_ep_close_nb(ep->swy, force ? SWY_EP_CLOSE_FORCE : SWY_EP_CLOSE_FLUSH, &sreq) ==
            SWY_INPROGRESS &&
        sreq != NULL)
        swy_request_free(sreq); /* released on completion */
    free(ep);
}

/* Starts closing @p ep for @p req. Switchyard's close takes no callback, so a close still
 * running is polled from ucp_worker_progress (worker->closing). */
static ucs_status_ptr_t ep_close(struct ucp_ep* ep, ucp_shim_request_t* req, int force,
                                 int no_imm) {
    struct ucp_worker* w = ep->worker;
    ep->closing = 1;
    ep_list_remove(ep);
    ucp_shim_rma_ep_cleanup(ep);
    swy_request_h sreq = NULL;
    swy_status_t st =
        swy_ep_close_nb(ep->swy, force ? SWY_EP_CLOSE_FORCE : SWY_EP_CLOSE_FLUSH, &sreq);
    if (st == SWY_INPROGRESS) {
        atomic_store(&req->swy, sreq);
        req->ep = ep;
        ucp_shim_worker_lock(w);
        req->poll_next = w->closing;
        w->closing = req;
        ucp_shim_worker_unlock(w);
        return ucp_shim_req_user(req);
    }
    free(ep);
    /* A failed close still releases the endpoint (as UCX does with force). */
    return ucp_shim_req_post_result(req, st == SWY_OK || force ? SWY_OK : st, NULL, no_imm);
}

unsigned ucp_shim_closes_progress(struct ucp_worker* w) {
    unsigned n = 0;
    ucp_shim_worker_lock(w);
    ucp_shim_request_t** p = &w->closing;
    ucp_shim_request_t* done = NULL;
    while (*p != NULL) {
        ucp_shim_request_t* req = *p;
        swy_status_t st = swy_request_test(atomic_load(&req->swy));
        if (st == SWY_INPROGRESS) {
            p = &req->poll_next;
            continue;
        }
        *p = req->poll_next;
        req->final_status = ucp_shim_status(st);
        req->poll_next = done;
        done = req;
    }
    ucp_shim_worker_unlock(w);
    while (done != NULL) {
        ucp_shim_request_t* req = done;
        done = req->poll_next;
        swy_request_free(atomic_load(&req->swy));
        atomic_store(&req->swy, UCP_SHIM_SWY_DONE);
        free(req->ep);
        req->ep = NULL;
        ucp_shim_req_complete_later(req, req->final_status);
        ++n;
    }
    return n;
}

void ucp_shim_closes_drop(struct ucp_worker* w) {
    while (w->closing != NULL) {
        ucp_shim_request_t* req = w->closing;
        w->closing = req->poll_next;
        swy_request_free(atomic_load(&req->swy));
        free(req->ep);
    }
}

ucs_status_ptr_t ucp_ep_close_nbx(ucp_ep_h ep, const ucp_request_param_t* param) {
    if (ep == NULL || ep->closing) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    int force = param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_FLAGS) &&
                (param->flags & UCP_EP_CLOSE_FLAG_FORCE);
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, param, ucp_shim_complete_send_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    return ep_close(ep, req, force, ucp_shim_no_imm(param));
}

ucs_status_ptr_t ucp_ep_close_nb(ucp_ep_h ep, unsigned mode) {
    if (ep == NULL || ep->closing) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, NULL, NULL);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    return ep_close(ep, req, mode == UCP_EP_CLOSE_MODE_FORCE, 0);
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep) {
    return ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH);
}

void ucp_ep_destroy(ucp_ep_h ep) {
    if (ep == NULL) return;
    struct ucp_worker* w = ep->worker;
    (void)ucp_shim_wait_blocking(w, ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH));
}

/* Posts an endpoint flush for @p req. */
static ucs_status_ptr_t ep_flush(ucp_ep_h ep, ucp_shim_request_t* req, int no_imm) {
    swy_request_params_t p = {
        .field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA,
        .send_cb = ucp_shim_swy_send_cb,
        .user_data = req};
    swy_request_h sreq = NULL;
    swy_status_t st = swy_ep_flush_nb(ep->swy, &p, &sreq);
    return ucp_shim_req_post_result(req, st, sreq, no_imm);
}

ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const ucp_request_param_t* param) {
    if (ep == NULL || ep->closing) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, param, ucp_shim_complete_send_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    return ep_flush(ep, req, ucp_shim_no_imm(param));
}

ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned flags, ucp_send_callback_t cb) {
    (void)flags;
    if (ep == NULL || ep->closing) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, NULL, NULL);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (cb != NULL) {
        req->cb.send = cb;
        req->complete = ucp_shim_complete_send;
    }
    return ep_flush(ep, req, 0);
}

ucs_status_t ucp_ep_flush(ucp_ep_h ep) {
    if (ep == NULL) return UCS_ERR_INVALID_PARAM;
    return ucp_shim_wait_blocking(ep->worker, ucp_ep_flush_nb(ep, 0, NULL));
}

void ucp_ep_print_info(ucp_ep_h ep, FILE* stream) {
    if (ep == NULL || stream == NULL) return;
    char buf[4096];
    swy_ep_attr_t a = {.field_mask = SWY_EP_ATTR_FIELD_LANE};
    if (swy_ep_query(ep->swy, &a) == SWY_OK)
        fprintf(stream, "#\n# UCP endpoint on Switchyard: transport %s, small sends %s\n#\n",
                a.transport, a.small_protocol);
    if (swy_ep_print_protocols(ep->swy, SWY_MEMTYPE_HOST, buf, sizeof(buf)) !=
        SWY_ERR_INVALID_PARAM)
        fprintf(stream, "%s\n", buf);
}

ucs_status_ptr_t ucp_ep_modify_nb(ucp_ep_h ep, const ucp_ep_params_t* params) {
    (void)params;
    if (ep == NULL) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_error("ucp_ep_modify_nb", "not supported on Switchyard");
    return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
}
