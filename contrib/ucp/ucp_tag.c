/* Tag matching: send (nb, nbx, sync, nbr), receive (nb, nbx, nbr), probe, message receive.
 * Tags are Switchyard's full 64 bits, so MPICH's layout (all 64 used) needs no mapping. */
#include <string.h>

#include "ucp_shim.h"

/* A probe without removal found a message: UCX returns a non-NULL handle that the consumer
 * only compares with NULL. */
static struct ucp_recv_desc* const probe_found = (struct ucp_recv_desc*)(uintptr_t)0x10;

/* UCX completes the sender of a message the receiver truncated with success (only the
 * receive reports it); Switchyard reports the truncation on both sides. */
static void swy_tag_send_cb(swy_request_h sreq, swy_status_t status, void* user_data) {
    ucp_shim_swy_send_cb(sreq, status == SWY_ERR_MESSAGE_TRUNCATED ? SWY_OK : status, user_data);
}

static ucs_status_ptr_t tag_send(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                 const ucp_request_param_t* param, ucp_shim_request_t* req,
                                 int sync, int no_imm) {
    swy_request_params_t p;
    size_t swy_count;
    ucs_status_t s = ucp_shim_swy_params(req, param, count, swy_tag_send_cb, NULL, &p, &swy_count);
    if (s != UCS_OK) {
        ucp_shim_req_put(req);
        return UCS_STATUS_PTR(s);
    }
    if (sync) {
        p.field_mask |= SWY_REQ_PARAM_FIELD_FLAGS;
        p.flags = SWY_REQ_FLAG_SYNC;
    }
    swy_request_h sreq = NULL;
    swy_status_t st = swy_tag_send_nb(ep->swy, buffer, swy_count, tag, &p, &sreq);
    if (st == SWY_ERR_MESSAGE_TRUNCATED) st = SWY_OK;
    return ucp_shim_req_post_result(req, st, sreq, no_imm);
}

static int ep_usable(ucp_ep_h ep, const char* call) {
    if (ep == NULL || ep->closing) {
        ucp_shim_error(call, "%s endpoint", ep == NULL ? "NULL" : "closed");
        return 0;
    }
    return 1;
}

ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t* param) {
    if (!ep_usable(ep, "ucp_tag_send_nbx")) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, param, ucp_shim_complete_send_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    return tag_send(ep, buffer, count, tag, param, req, 0, ucp_shim_no_imm(param));
}

ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                       const ucp_request_param_t* param) {
    if (!ep_usable(ep, "ucp_tag_send_sync_nbx")) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, param, ucp_shim_complete_send_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    return tag_send(ep, buffer, count, tag, param, req, 1, ucp_shim_no_imm(param));
}

/* The old-style calls: a datatype argument and a callback without user data. */
static ucs_status_ptr_t tag_send_old(ucp_ep_h ep, const void* buffer, size_t count,
                                     ucp_datatype_t datatype, ucp_tag_t tag, ucp_send_callback_t cb,
                                     int sync, const char* call) {
    if (!ep_usable(ep, call)) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = datatype};
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, &param, NULL);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (cb != NULL) {
        req->cb.send = cb;
        req->complete = ucp_shim_complete_send;
    }
    return tag_send(ep, buffer, count, tag, &param, req, sync, 0);
}

ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void* buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_send_callback_t cb) {
    return tag_send_old(ep, buffer, count, datatype, tag, cb, 0, "ucp_tag_send_nb");
}

ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void* buffer, size_t count,
                                      ucp_datatype_t datatype, ucp_tag_t tag,
                                      ucp_send_callback_t cb) {
    return tag_send_old(ep, buffer, count, datatype, tag, cb, 1, "ucp_tag_send_sync_nb");
}

ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void* buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, void* req) {
    if (!ep_usable(ep, "ucp_tag_send_nbr") || req == NULL) return UCS_ERR_INVALID_PARAM;
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REQUEST,
        .datatype = datatype,
        .request = req};
    ucs_status_ptr_t r = ucp_tag_send_nbx(ep, buffer, count, tag, &param);
    if (UCS_PTR_IS_ERR(r)) return UCS_PTR_STATUS(r);
    return r == NULL ? UCS_OK : UCS_INPROGRESS;
}

/* ---------------------------------------------------------------------------------------- */
/* Receives                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* Switchyard parameters for receive @p req (tag or matched message). On failure @p req goes
 * back to its pool and the status is the caller's result. */
static ucs_status_t recv_params(ucp_shim_request_t* req, const ucp_request_param_t* param,
                                size_t count, swy_request_params_t* p, size_t* swy_count) {
    ucs_status_t s =
        ucp_shim_swy_params(req, param, count, NULL, ucp_shim_swy_recv_cb, p, swy_count);
    if (s != UCS_OK) {
        ucp_shim_req_put(req);
        return s;
    }
    req->flags |= UCP_SHIM_REQ_RECV;
    return UCS_OK;
}

static ucs_status_ptr_t tag_recv(ucp_worker_h w, void* buffer, size_t count, ucp_tag_t tag,
                                 ucp_tag_t tag_mask, const ucp_request_param_t* param,
                                 ucp_shim_request_t* req, int no_imm) {
    swy_request_params_t p;
    size_t swy_count;
    ucs_status_t s = recv_params(req, param, count, &p, &swy_count);
    if (s != UCS_OK) return UCS_STATUS_PTR(s);
    swy_request_h sreq = NULL;
    swy_status_t st = swy_tag_recv_nb(w->swy, buffer, swy_count, tag, tag_mask, &p, &sreq);
    return ucp_shim_req_post_result(req, st, sreq, no_imm);
}

ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h w, void* buffer, size_t count, ucp_tag_t tag,
                                  ucp_tag_t tag_mask, const ucp_request_param_t* param) {
    if (w == NULL) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(w, param, ucp_shim_complete_recv_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_RECV_INFO))
        req->imm_recv_info = param->recv_info.tag_info;
    return tag_recv(w, buffer, count, tag, tag_mask, param, req, ucp_shim_no_imm(param));
}

ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h w, void* buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_tag_t tag_mask,
                                 ucp_tag_recv_callback_t cb) {
    if (w == NULL) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = datatype};
    ucp_shim_request_t* req = ucp_shim_req_alloc(w, &param, NULL);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (cb != NULL) {
        req->cb.recv = cb;
        req->complete = ucp_shim_complete_recv;
    }
    /* The old receive always returns a request (its callback runs from progress). */
    return tag_recv(w, buffer, count, tag, tag_mask, &param, req, 1);
}

ucs_status_t ucp_tag_recv_nbr(ucp_worker_h w, void* buffer, size_t count, ucp_datatype_t datatype,
                              ucp_tag_t tag, ucp_tag_t tag_mask, void* req) {
    if (w == NULL || req == NULL) return UCS_ERR_INVALID_PARAM;
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REQUEST,
        .datatype = datatype,
        .request = req};
    ucs_status_ptr_t r = ucp_tag_recv_nbx(w, buffer, count, tag, tag_mask, &param);
    return UCS_PTR_IS_ERR(r) ? UCS_PTR_STATUS(r) : UCS_OK;
}

ucp_tag_message_h ucp_tag_probe_nb(ucp_worker_h w, ucp_tag_t tag, ucp_tag_t tag_mask, int remove,
                                   ucp_tag_recv_info_t* info) {
    if (w == NULL) return NULL;
    swy_tag_recv_info_t si;
    swy_message_h msg = NULL;
    swy_status_t st =
        swy_tag_probe_nb(w->swy, tag, tag_mask, remove ? 1 : 0, &si, remove ? &msg : NULL);
    if (st != SWY_OK) return NULL;
    if (info != NULL) {
        info->sender_tag = si.sender_tag;
        info->length = si.length;
    }
    return remove ? (ucp_tag_message_h)msg : probe_found;
}

static ucs_status_ptr_t msg_recv(ucp_worker_h w, void* buffer, size_t count,
                                 ucp_tag_message_h message, const ucp_request_param_t* param,
                                 ucp_shim_request_t* req, int no_imm) {
    if (message == probe_found) {
        ucp_shim_req_put(req);
        ucp_shim_error("ucp_tag_msg_recv", "the message was probed without removal");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    swy_request_params_t p;
    size_t swy_count;
    ucs_status_t s = recv_params(req, param, count, &p, &swy_count);
    if (s != UCS_OK) return UCS_STATUS_PTR(s);
    swy_request_h sreq = NULL;
    swy_status_t st =
        swy_tag_msg_recv_nb(w->swy, buffer, swy_count, (swy_message_h)message, &p, &sreq);
    return ucp_shim_req_post_result(req, st, sreq, no_imm);
}

ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h w, void* buffer, size_t count,
                                      ucp_tag_message_h message, const ucp_request_param_t* param) {
    if (w == NULL || message == NULL) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_shim_request_t* req = ucp_shim_req_alloc(w, param, ucp_shim_complete_recv_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FIELD_RECV_INFO))
        req->imm_recv_info = param->recv_info.tag_info;
    return msg_recv(w, buffer, count, message, param, req, ucp_shim_no_imm(param));
}

ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h w, void* buffer, size_t count,
                                     ucp_datatype_t datatype, ucp_tag_message_h message,
                                     ucp_tag_recv_callback_t cb) {
    if (w == NULL || message == NULL) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = datatype};
    ucp_shim_request_t* req = ucp_shim_req_alloc(w, &param, NULL);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (cb != NULL) {
        req->cb.recv = cb;
        req->complete = ucp_shim_complete_recv;
    }
    return msg_recv(w, buffer, count, message, &param, req, 1);
}
