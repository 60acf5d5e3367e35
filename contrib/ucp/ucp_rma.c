/* UCP one-sided operations on Switchyard (swy_put_nb, swy_get_nb, swy_atomic_nb): ucp_put,
 * ucp_get, ucp_put_nb/nbi/nbx, ucp_get_nb/nbi/nbx, ucp_atomic_post, ucp_atomic_fetch_nb,
 * ucp_atomic_op_nbx (ucp_worker_fence, in ucp_worker.c, is swy_worker_fence). Remote completion is Switchyard's flush, which the
 * core's ucp_ep_flush* and ucp_worker_flush* call: it covers every operation started here,
 * the implicit (_nbi) ones included. */
#include <string.h>

#include "ucp_rma_internal.h"

/* The key an operation of @p length bytes on @p ep may use, or an error status: NULL
 * arguments, a key of another endpoint or a dead one. *@p empty is set for a zero-length
 * key, which serves only zero-length operations. */
static ucs_status_t rma_check(ucp_ep_h ep, ucp_rkey_h rkey, const char* call,
                              struct ucp_rkey** key) {
    if (ep == NULL) {
        ucp_shim_error(call, "ep must not be NULL");
        return UCS_ERR_INVALID_PARAM;
    }
    *key = ucp_shim_rkey_check(rkey, call);
    if (*key == NULL) return UCS_ERR_INVALID_PARAM;
    if ((*key)->ep != ep) {
        ucp_shim_error(call, (*key)->ep == NULL ? "the key's endpoint was closed"
                                                : "the key was unpacked on another endpoint");
        return UCS_ERR_INVALID_PARAM;
    }
    if (ep->closing) return UCS_ERR_CANCELED;
    return UCS_OK;
}

/* Operations on a zero-length key: nothing to move for zero bytes, a range error otherwise. */
static ucs_status_t empty_key_result(size_t bytes, const char* call) {
    if (bytes == 0) return UCS_OK;
    ucp_shim_error(call, "the remote key maps no memory");
    return UCS_ERR_INVALID_PARAM;
}

/* put (@p put) or get with a shim request: the _nb and _nbx calls. */
static ucs_status_ptr_t rma_request(ucp_ep_h ep, void* buffer, size_t count, uint64_t raddr,
                                    ucp_rkey_h rkey, const ucp_request_param_t* param,
                                    ucp_send_callback_t old_cb, int put, const char* call) {
    struct ucp_rkey* key = NULL;
    ucs_status_t c = rma_check(ep, rkey, call, &key);
    if (c != UCS_OK) return UCS_STATUS_PTR(c);
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, param, ucp_shim_complete_send_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (old_cb != NULL) {
        req->complete = ucp_shim_complete_send;
        req->cb.send = old_cb;
    }
    swy_request_params_t sp;
    size_t swy_count = 0;
    c = ucp_shim_swy_params(req, param, count, ucp_shim_swy_send_cb, NULL, &sp, &swy_count);
    if (c != UCS_OK) {
        ucp_shim_req_put(req);
        return UCS_STATUS_PTR(c);
    }
    swy_request_h sreq = NULL;
    swy_status_t s;
    if (key->swy == NULL) {
        /* A zero-length key: judged here, completed as Switchyard would have. */
        const size_t bytes = (sp.field_mask & SWY_REQ_PARAM_FIELD_DATATYPE) ? 1 : swy_count;
        s = ucp_shim_swy_status(empty_key_result(bytes, call));
    } else if (put) {
        s = swy_put_nb(ep->swy, buffer, swy_count, raddr, key->swy, &sp, &sreq);
    } else {
        s = swy_get_nb(ep->swy, buffer, swy_count, raddr, key->swy, &sp, &sreq);
    }
    return ucp_shim_req_post_result(req, s, sreq, ucp_shim_no_imm(param));
}

/* put or get without a request to return (_nbi): UCS_OK, UCS_INPROGRESS (completed by a
 * flush) or an error. */
static ucs_status_t rma_implicit(ucp_ep_h ep, void* buffer, size_t length, uint64_t raddr,
                                 ucp_rkey_h rkey, int put, const char* call) {
    struct ucp_rkey* key = NULL;
    ucs_status_t c = rma_check(ep, rkey, call, &key);
    if (c != UCS_OK) return c;
    if (key->swy == NULL) return empty_key_result(length, call);
    swy_request_h sreq = NULL;
    swy_status_t s = put ? swy_put_nb(ep->swy, buffer, length, raddr, key->swy, NULL, &sreq)
                         : swy_get_nb(ep->swy, buffer, length, raddr, key->swy, NULL, &sreq);
    if (s == SWY_INPROGRESS) {
        swy_request_free(sreq); /* released on completion; the flush waits for it */
        return UCS_INPROGRESS;
    }
    return ucp_shim_status(s);
}

ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey) {
    return rma_implicit(ep, (void*)buffer, length, remote_addr, rkey, 1, "ucp_put_nbi");
}

ucs_status_t ucp_get_nbi(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey) {
    return rma_implicit(ep, buffer, length, remote_addr, rkey, 0, "ucp_get_nbi");
}

ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr,
                            ucp_rkey_h rkey, ucp_send_callback_t cb) {
    return rma_request(ep, (void*)buffer, length, remote_addr, rkey, NULL, cb, 1, "ucp_put_nb");
}

ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr,
                            ucp_rkey_h rkey, ucp_send_callback_t cb) {
    return rma_request(ep, buffer, length, remote_addr, rkey, NULL, cb, 0, "ucp_get_nb");
}

ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void* buffer, size_t count, uint64_t remote_addr,
                             ucp_rkey_h rkey, const ucp_request_param_t* param) {
    return rma_request(ep, (void*)buffer, count, remote_addr, rkey, param, NULL, 1, "ucp_put_nbx");
}

ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void* buffer, size_t count, uint64_t remote_addr,
                             ucp_rkey_h rkey, const ucp_request_param_t* param) {
    return rma_request(ep, buffer, count, remote_addr, rkey, param, NULL, 0, "ucp_get_nbx");
}

/* The blocking calls: local completion (UCP's ucp_put returns once the buffer may be reused;
 * remote completion still needs a flush). */
ucs_status_t ucp_put(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr,
                     ucp_rkey_h rkey) {
    if (ep == NULL) return UCS_ERR_INVALID_PARAM;
    return ucp_shim_wait_blocking(ep->worker, rma_request(ep, (void*)buffer, length, remote_addr,
                                                          rkey, NULL, NULL, 1, "ucp_put"));
}

ucs_status_t ucp_get(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr,
                     ucp_rkey_h rkey) {
    if (ep == NULL) return UCS_ERR_INVALID_PARAM;
    return ucp_shim_wait_blocking(
        ep->worker, rma_request(ep, buffer, length, remote_addr, rkey, NULL, NULL, 0, "ucp_get"));
}

/* ---------------------------------------------------------------------------------------- */
/* Atomics                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* One atomic: @p op on the @p size-byte word at @p raddr. @p operand and @p compare are
 * read at the call; @p result (NULL: posted) receives the old value. @p req NULL: no request
 * for the consumer (posted atomics), else the shim request to complete. */
static ucs_status_ptr_t atomic_post(ucp_ep_h ep, swy_atomic_op_t op, size_t size,
                                    const void* operand, const void* compare, void* result,
                                    uint64_t raddr, ucp_rkey_h rkey, ucp_shim_request_t* req,
                                    int no_imm, const char* call) {
    struct ucp_rkey* key = NULL;
    ucs_status_t c = rma_check(ep, rkey, call, &key);
    if (c == UCS_OK && key->swy == NULL) c = empty_key_result(size, call);
    if (c != UCS_OK) {
        if (req != NULL) ucp_shim_req_put(req);
        return UCS_STATUS_PTR(c);
    }
    swy_request_params_t sp;
    memset(&sp, 0, sizeof(sp));
    if (req != NULL) {
        sp.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
        sp.send_cb = ucp_shim_swy_send_cb;
        sp.user_data = req;
    }
    swy_request_h sreq = NULL;
    swy_status_t s = swy_atomic_nb(ep->swy, op, size, operand, compare, result, raddr, key->swy,
                                   req != NULL ? &sp : NULL, &sreq);
    if (req != NULL) return ucp_shim_req_post_result(req, s, sreq, no_imm);
    if (s == SWY_INPROGRESS) {
        swy_request_free(sreq); /* a flush completes it */
        return UCS_STATUS_PTR(UCS_INPROGRESS);
    }
    return UCS_STATUS_PTR(ucp_shim_status(s));
}

static int size_ok(size_t size, const char* call) {
    if (size == 4 || size == 8) return 1;
    ucp_shim_error(call, "operand size %zu (4 or 8 bytes)", size);
    return 0;
}

ucs_status_t ucp_atomic_post(ucp_ep_h ep, ucp_atomic_post_op_t opcode, uint64_t value,
                             size_t op_size, uint64_t remote_addr, ucp_rkey_h rkey) {
    static const char call[] = "ucp_atomic_post";
    swy_atomic_op_t op;
    switch (opcode) {
        case UCP_ATOMIC_POST_OP_ADD: op = SWY_ATOMIC_OP_ADD; break;
        case UCP_ATOMIC_POST_OP_AND: op = SWY_ATOMIC_OP_AND; break;
        case UCP_ATOMIC_POST_OP_OR: op = SWY_ATOMIC_OP_OR; break;
        case UCP_ATOMIC_POST_OP_XOR: op = SWY_ATOMIC_OP_XOR; break;
        default:
            ucp_shim_error(call, "unknown opcode %d", (int)opcode);
            return UCS_ERR_INVALID_PARAM;
    }
    if (!size_ok(op_size, call)) return UCS_ERR_INVALID_PARAM;
    const uint32_t v32 = (uint32_t)value;
    const void* operand = op_size == 4 ? (const void*)&v32 : (const void*)&value;
    ucs_status_ptr_t r =
        atomic_post(ep, op, op_size, operand, NULL, NULL, remote_addr, rkey, NULL, 0, call);
    return UCS_PTR_STATUS(r) == UCS_INPROGRESS ? UCS_OK : UCS_PTR_STATUS(r);
}

ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, ucp_atomic_fetch_op_t opcode, uint64_t value,
                                     void* result, size_t op_size, uint64_t remote_addr,
                                     ucp_rkey_h rkey, ucp_send_callback_t cb) {
    static const char call[] = "ucp_atomic_fetch_nb";
    swy_atomic_op_t op;
    switch (opcode) {
        case UCP_ATOMIC_FETCH_OP_FADD: op = SWY_ATOMIC_OP_ADD; break;
        case UCP_ATOMIC_FETCH_OP_SWAP: op = SWY_ATOMIC_OP_SWAP; break;
        case UCP_ATOMIC_FETCH_OP_CSWAP: op = SWY_ATOMIC_OP_CSWAP; break;
        case UCP_ATOMIC_FETCH_OP_FAND: op = SWY_ATOMIC_OP_AND; break;
        case UCP_ATOMIC_FETCH_OP_FOR: op = SWY_ATOMIC_OP_OR; break;
        case UCP_ATOMIC_FETCH_OP_FXOR: op = SWY_ATOMIC_OP_XOR; break;
        default:
            ucp_shim_error(call, "unknown opcode %d", (int)opcode);
            return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (ep == NULL || result == NULL || !size_ok(op_size, call)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    /* CSWAP: value is the compare, *result the value swapped in (read now: Switchyard copies
       the operand before it writes the result). */
    uint64_t value64 = value, swap64 = 0;
    uint32_t value32 = (uint32_t)value, swap32 = 0;
    const void* operand = op_size == 4 ? (const void*)&value32 : (const void*)&value64;
    const void* compare = NULL;
    if (op == SWY_ATOMIC_OP_CSWAP) {
        compare = operand;
        if (op_size == 4) {
            memcpy(&swap32, result, 4);
            operand = &swap32;
        } else {
            memcpy(&swap64, result, 8);
            operand = &swap64;
        }
    }
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, NULL, NULL);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    if (cb != NULL) {
        req->complete = ucp_shim_complete_send;
        req->cb.send = cb;
    }
    return atomic_post(ep, op, op_size, operand, compare, result, remote_addr, rkey, req, 0, call);
}

ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, ucp_atomic_op_t opcode, const void* buffer,
                                   size_t count, uint64_t remote_addr, ucp_rkey_h rkey,
                                   const ucp_request_param_t* param) {
    static const char call[] = "ucp_atomic_op_nbx";
    if (ep == NULL || buffer == NULL || param == NULL ||
        !(param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE)) {
        ucp_shim_error(call, "ep, buffer and a param with the datatype are required");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (count != 1) {
        ucp_shim_error(call, "count must be 1 (got %zu)", count);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    /* ucp_dt_make_contig(4) or (8): the element size sits above the class bits. */
    const ucp_datatype_t dt = param->datatype;
    if ((dt & UCP_DATATYPE_CLASS_MASK) != UCP_DATATYPE_CONTIG) {
        ucp_shim_error(call, "the datatype must be ucp_dt_make_contig(4) or (8)");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    const size_t size = (size_t)(dt >> UCP_DATATYPE_SHIFT);
    if (!size_ok(size, call)) return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    void* reply =
        (param->op_attr_mask & UCP_OP_ATTR_FIELD_REPLY_BUFFER) ? param->reply_buffer : NULL;
    swy_atomic_op_t op;
    switch (opcode) {
        case UCP_ATOMIC_OP_ADD: op = SWY_ATOMIC_OP_ADD; break;
        case UCP_ATOMIC_OP_AND: op = SWY_ATOMIC_OP_AND; break;
        case UCP_ATOMIC_OP_OR: op = SWY_ATOMIC_OP_OR; break;
        case UCP_ATOMIC_OP_XOR: op = SWY_ATOMIC_OP_XOR; break;
        case UCP_ATOMIC_OP_SWAP: op = SWY_ATOMIC_OP_SWAP; break;
        case UCP_ATOMIC_OP_CSWAP: op = SWY_ATOMIC_OP_CSWAP; break;
        default:
            ucp_shim_error(call, "unknown opcode %d", (int)opcode);
            return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if ((op == SWY_ATOMIC_OP_SWAP || op == SWY_ATOMIC_OP_CSWAP) && reply == NULL) {
        ucp_shim_error(call, "SWAP and CSWAP need param->reply_buffer");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    /* CSWAP: *buffer is the compare, *reply_buffer the value swapped in, then the old one. */
    const void* operand = buffer;
    const void* compare = NULL;
    uint64_t swap = 0;
    if (op == SWY_ATOMIC_OP_CSWAP) {
        memcpy(&swap, reply, size);
        operand = &swap;
        compare = buffer;
    }
    ucp_shim_request_t* req = ucp_shim_req_alloc(ep->worker, param, ucp_shim_complete_send_nbx);
    if (req == NULL) return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    return atomic_post(ep, op, size, operand, compare, reply, remote_addr, rkey, req,
                       ucp_shim_no_imm(param), call);
}
