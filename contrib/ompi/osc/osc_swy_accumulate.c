/*
 * osc swy: the accumulate family's entry points (accumulate, get_accumulate, fetch_and_op,
 * compare_and_swap, raccumulate, rget_accumulate), the window hooks (init, fini, flush, the
 * active-message handler) and the Switchyard-atomic fast paths. The paths and the ordering
 * rules are described in osc_swy_accumulate.h.
 */
#include "osc_swy_accumulate.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/osc/base/osc_base_obj_convert.h"
#include "osc_swy_acc_apply.h"
#include "osc_swy_acc_origin.h"
#include "osc_swy_acc_wire.h"

/* ---- window hooks ------------------------------------------------------------------------ */

int ompi_osc_swy_acc_init(ompi_osc_swy_module_t* module) {
    ompi_osc_swy_acc_state_t* acc = calloc(1, sizeof(*acc));
    if (NULL == acc) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    acc->peers = calloc((size_t)module->nranks, sizeof(*acc->peers));
    if (NULL == acc->peers) {
        free(acc);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OBJ_CONSTRUCT(&acc->lock, opal_mutex_t);
    /* Open MPI parsed the info keys into the window before selecting the component.
     * accumulate_ordering=none lifts the ordering waits. accumulate_ops (same_op_no_op, the
     * default, or same_op) needs nothing: every path applies 4/8-byte elements with CPU
     * atomics and the others under one lock, so any mix of ops stays element-wise atomic. */
    acc->ordered = NULL == module->win || !(module->win->w_acc_order & OMPI_WIN_ACC_ORDER_NONE);
    module->acc = acc;
    return OMPI_SUCCESS;
}

void ompi_osc_swy_acc_fini(ompi_osc_swy_module_t* module) {
    ompi_osc_swy_acc_state_t* acc = module->acc;
    if (NULL == acc) {
        return;
    }
    /* Every origin flushed before the window's last barrier, so only a misbehaving peer
     * leaves a pull running here; it must not land in a freed module. */
    unsigned countdown = 0;
    while (__atomic_load_n(&acc->pulls, __ATOMIC_ACQUIRE) > 0) {
        ompi_osc_swy_progress_step(&countdown);
    }
    if (acc->refused > 0) {
        opal_output_verbose(1, mca_osc_swy_component.output,
                            "osc swy: window %u refused %llu malformed accumulate messages",
                            module->win_id, (unsigned long long)acc->refused);
    }
    ompi_osc_swy_acc_ops_fini(acc);
    OBJ_DESTRUCT(&acc->lock);
    free(acc->peers);
    free(acc);
    module->acc = NULL;
}

int ompi_osc_swy_acc_flush(ompi_osc_swy_module_t* module, int target) {
    ompi_osc_swy_acc_state_t* acc = module->acc;
    if (NULL == acc) {
        return OMPI_SUCCESS;
    }
    ompi_osc_swy_acc_drain(module, target);
    int rc = MPI_SUCCESS;
    OPAL_THREAD_LOCK(&acc->lock);
    for (int t = target < 0 ? 0 : target; t < (target < 0 ? module->nranks : target + 1); ++t) {
        if (MPI_SUCCESS == rc) {
            rc = acc->peers[t].error;
        }
        acc->peers[t].error = MPI_SUCCESS;
    }
    OPAL_THREAD_UNLOCK(&acc->lock);
    return rc;
}

swy_status_t ompi_osc_swy_acc_am_handler(ompi_osc_swy_module_t* module, int source,
                                         const void* header, size_t header_length, void* data,
                                         size_t data_length, const swy_am_recv_param_t* param) {
    ompi_osc_swy_am_header_t hdr;
    memcpy(&hdr, header, sizeof(hdr)); /* the dispatcher checked the length */
    /* Identity from the lane where it vouches for the sender: the rank the message claims
     * must be the one whose endpoint it came in on (reply_ep is NULL over tcp, where each
     * direction has its own connection: nothing to compare there). */
    const bool lane_ok = NULL == param || !(param->field_mask & SWY_AM_RECV_PARAM_FIELD_REPLY_EP) ||
                         NULL == param->reply_ep || param->reply_ep == module->peers[source].ep;
    if (NULL != module->acc && lane_ok) {
        if (OSC_SWY_AM_KIND_ACC_REQUEST == hdr.kind) {
            return ompi_osc_swy_acc_handle_request(module, source, header, header_length, data,
                                                   data_length, param);
        }
        if (OSC_SWY_AM_KIND_ACC_REPLY == hdr.kind) {
            return ompi_osc_swy_acc_handle_reply(module, source, header, header_length, data,
                                                 data_length, param);
        }
    }
    if (NULL != module->acc) {
        __atomic_add_fetch(&module->acc->refused, 1, __ATOMIC_RELAXED);
    }
    if (NULL != param && (param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) &&
        (param->flags & SWY_AM_RECV_FLAG_RNDV)) {
        swy_am_data_release(module->worker, data);
    }
    return SWY_OK;
}

/* ---- shared checks ----------------------------------------------------------------------- */

/* The one predefined type a legal accumulate datatype is built from. */
static ompi_datatype_t* element_type(ompi_datatype_t* dt) {
    if (ompi_datatype_is_predefined(dt)) {
        return dt;
    }
    ompi_datatype_t* prim = NULL;
    uint32_t count = 0;
    if (OMPI_SUCCESS != ompi_osc_base_get_primitive_type_info(dt, &prim, &count) || NULL == prim) {
        return NULL;
    }
    return prim;
}

/* 4- or 8-byte two's-complement integer: the element types Switchyard atomics apply. */
static bool atomic_integer(const ompi_datatype_t* dt) {
    size_t size = 0;
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    return ompi_datatype_is_predefined(dt) && (4 == size || 8 == size) &&
           (ptrdiff_t)size == extent &&
           (dt->super.flags & OMPI_DATATYPE_FLAG_DATA_TYPE) == OMPI_DATATYPE_FLAG_DATA_INT;
}

/* The Switchyard atomic of a wire op on integers; false when there is none. MPI_NO_OP
 * fetches by adding 0. */
static bool swy_atomic_of(uint8_t wire_op, swy_atomic_op_t* out) {
    switch (wire_op) {
        case OSC_SWY_ACC_OP_SUM:
        case OSC_SWY_ACC_OP_NO_OP: *out = SWY_ATOMIC_OP_ADD; return true;
        case OSC_SWY_ACC_OP_BAND: *out = SWY_ATOMIC_OP_AND; return true;
        case OSC_SWY_ACC_OP_BOR: *out = SWY_ATOMIC_OP_OR; return true;
        case OSC_SWY_ACC_OP_BXOR: *out = SWY_ATOMIC_OP_XOR; return true;
        case OSC_SWY_ACC_OP_REPLACE: *out = SWY_ATOMIC_OP_SWAP; return true;
        default: return false;
    }
}

/* Before a Switchyard atomic to @p target: requests sent earlier must be applied first. */
static void order_before_atomic(ompi_osc_swy_module_t* module, int target) {
    if (module->acc->ordered &&
        __atomic_load_n(&module->acc->peers[target].outstanding, __ATOMIC_ACQUIRE) > 0) {
        ompi_osc_swy_acc_drain(module, target);
    }
}

/* Before a request message to @p target: Switchyard atomics started earlier must be done
 * (they travel on other queues than active messages). */
static void order_before_request(ompi_osc_swy_module_t* module, int target) {
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    if (module->acc->ordered && __atomic_load_n(&peer->outstanding, __ATOMIC_ACQUIRE) > 0) {
        unsigned countdown = 0;
        while (__atomic_load_n(&peer->outstanding, __ATOMIC_ACQUIRE) > 0) {
            ompi_osc_swy_progress_step(&countdown);
        }
    }
}

void ompi_osc_swy_acc_order_before_direct(ompi_osc_swy_module_t* module, int target) {
    order_before_atomic(module, target);
    order_before_request(module, target);
}

/* One Switchyard atomic on @p target's word at @p addr; @p result NULL: posted. Counted in
 * the peer's outstanding operations until it completes (flush waits for them). */
static int swy_atomic(ompi_osc_swy_module_t* module, int target, swy_atomic_op_t op, size_t size,
                      const void* operand, const void* compare, void* result, uint64_t addr,
                      swy_rkey_h rkey, ompi_osc_swy_request_t* request) {
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    swy_request_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    if (NULL != request) {
        params.send_cb = ompi_osc_swy_request_swy_cb;
        params.user_data = request;
        __atomic_add_fetch(&request->outstanding, 1, __ATOMIC_ACQ_REL);
    } else {
        params.send_cb = ompi_osc_swy_peer_swy_cb;
        params.user_data = peer;
    }
    __atomic_add_fetch(&peer->outstanding, 1, __ATOMIC_ACQ_REL);
    swy_request_h sreq = NULL;
    swy_status_t st =
        swy_atomic_nb(peer->ep, op, size, operand, compare, result, addr, rkey, &params, &sreq);
    if (SWY_INPROGRESS == st) {
        swy_request_free(sreq); /* the callback drops the counts */
        return OMPI_SUCCESS;
    }
    __atomic_sub_fetch(&peer->outstanding, 1, __ATOMIC_ACQ_REL);
    if (NULL != request) {
        __atomic_sub_fetch(&request->outstanding, 1, __ATOMIC_ACQ_REL);
    }
    return SWY_OK == st ? OMPI_SUCCESS : ompi_osc_swy_error(st);
}

/* ---- the message path, shared by all entry points ----------------------------------------- */

static int via_requests(ompi_osc_swy_module_t* module, ompi_osc_swy_acc_call_t* call,
                        struct ompi_request_t** request) {
    if (NULL != request) {
        call->request = ompi_osc_swy_request_alloc(NULL);
        if (NULL == call->request) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        /* An error status makes MPI_Wait call the window's error handler. */
        call->request->super.req_mpi_object.win = module->win;
    }
    order_before_request(module, call->target);
    int rc = ompi_osc_swy_acc_start(module, call);
    if (NULL != request) {
        ompi_request_t* r = &call->request->super;
        if (MPI_SUCCESS != rc) {
            ompi_osc_swy_request_release_ref(call->request); /* nothing started: drop it */
            ompi_request_free(&r);
            return rc;
        }
        *request = r;
    }
    return rc;
}

/* The same-host shortcut when it applies, else requests. A request-based call applied
 * directly gets a request that is already complete. */
static int direct_or_requests(ompi_osc_swy_module_t* module, ompi_osc_swy_acc_call_t* call,
                              char* direct, struct ompi_request_t** request) {
    int rc = MPI_SUCCESS;
    if (ompi_osc_swy_acc_direct(module, call, direct, &rc)) {
        if (MPI_SUCCESS == rc && NULL != request) {
            ompi_osc_swy_request_t* req = ompi_osc_swy_request_alloc(NULL);
            if (NULL == req) {
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
            req->super.req_mpi_object.win = module->win;
            *request = &req->super;
            ompi_osc_swy_request_release_ref(req); /* complete */
        }
        return rc;
    }
    return via_requests(module, call, request);
}

/* Resolve the target, pick the element type and check the op against it. */
static int prepare(ompi_osc_swy_module_t* module, ompi_osc_swy_acc_call_t* call, ompi_op_t* op,
                   ptrdiff_t target_disp, swy_rkey_h* rkey, char** direct) {
    call->wire_op = osc_swy_acc_wire_op(op);
    if (0 == call->wire_op) {
        return MPI_ERR_OP; /* MPI allows only predefined ops in one-sided calls */
    }
    int rc = ompi_osc_swy_target(module, call->target, target_disp, (size_t)call->target_count,
                                 call->target_dt, &call->target_addr, rkey, direct);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    call->element = element_type(call->target_dt);
    if (NULL == call->element) {
        return MPI_ERR_TYPE;
    }
    osc_swy_acc_apply_t a;
    return osc_swy_acc_apply_decode((uint32_t)call->element->id, call->wire_op, &a);
}

/* ---- entry points ------------------------------------------------------------------------ */

static int accumulate(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      ompi_datatype_t* target_dt, ompi_op_t* op, struct ompi_win_t* win,
                      struct ompi_request_t** request) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    ompi_osc_swy_acc_call_t call;
    memset(&call, 0, sizeof(call));
    call.kind = OSC_SWY_ACC_KIND_ACCUMULATE;
    call.origin_addr = origin_addr;
    call.origin_count = origin_count;
    call.origin_dt = origin_dt;
    call.target = target;
    call.target_count = target_count;
    call.target_dt = target_dt;
    swy_rkey_h rkey = NULL;
    char* direct = NULL;
    int rc = prepare(module, &call, op, target_disp, &rkey, &direct);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL == request && OSC_SWY_ACC_OP_NO_OP == call.wire_op) {
        return OMPI_SUCCESS; /* accumulate with MPI_NO_OP changes nothing */
    }
    (void)rkey;
    return direct_or_requests(module, &call, direct, request);
}

int ompi_osc_swy_accumulate(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                            int target, ptrdiff_t target_disp, int target_count,
                            ompi_datatype_t* target_dt, struct ompi_op_t* op,
                            struct ompi_win_t* win) {
    return accumulate(origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                      target_dt, op, win, NULL);
}

int ompi_osc_swy_raccumulate(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                             int target, ptrdiff_t target_disp, int target_count,
                             ompi_datatype_t* target_dt, struct ompi_op_t* op,
                             struct ompi_win_t* win, struct ompi_request_t** request) {
    return accumulate(origin_addr, origin_count, origin_dt, target, target_disp, target_count,
                      target_dt, op, win, request);
}

static int get_accumulate(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                          void* result_addr, int result_count, ompi_datatype_t* result_dt,
                          int target, ptrdiff_t target_disp, int target_count,
                          ompi_datatype_t* target_dt, ompi_op_t* op, struct ompi_win_t* win,
                          struct ompi_request_t** request) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    ompi_osc_swy_acc_call_t call;
    memset(&call, 0, sizeof(call));
    call.kind = OSC_SWY_ACC_KIND_GET_ACCUMULATE;
    call.origin_addr = origin_addr;
    call.origin_count = origin_count;
    call.origin_dt = origin_dt;
    call.result_addr = result_addr;
    call.result_count = result_count;
    call.result_dt = result_dt;
    call.target = target;
    call.target_count = target_count;
    call.target_dt = target_dt;
    swy_rkey_h rkey = NULL;
    char* direct = NULL;
    int rc = prepare(module, &call, op, target_disp, &rkey, &direct);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    return direct_or_requests(module, &call, direct, request);
}

int ompi_osc_swy_get_accumulate(const void* origin_addr, int origin_count,
                                ompi_datatype_t* origin_dt, void* result_addr, int result_count,
                                ompi_datatype_t* result_dt, int target, ptrdiff_t target_disp,
                                int target_count, ompi_datatype_t* target_dt, struct ompi_op_t* op,
                                struct ompi_win_t* win) {
    return get_accumulate(origin_addr, origin_count, origin_dt, result_addr, result_count,
                          result_dt, target, target_disp, target_count, target_dt, op, win, NULL);
}

int ompi_osc_swy_rget_accumulate(const void* origin_addr, int origin_count,
                                 ompi_datatype_t* origin_dt, void* result_addr, int result_count,
                                 ompi_datatype_t* result_dt, int target, ptrdiff_t target_disp,
                                 int target_count, ompi_datatype_t* target_dt, struct ompi_op_t* op,
                                 struct ompi_win_t* win, struct ompi_request_t** request) {
    return get_accumulate(origin_addr, origin_count, origin_dt, result_addr, result_count,
                          result_dt, target, target_disp, target_count, target_dt, op, win,
                          request);
}

int ompi_osc_swy_fetch_and_op(const void* origin_addr, void* result_addr, ompi_datatype_t* dt,
                              int target, ptrdiff_t target_disp, struct ompi_op_t* op,
                              struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    ompi_osc_swy_acc_call_t call;
    memset(&call, 0, sizeof(call));
    call.kind = OSC_SWY_ACC_KIND_GET_ACCUMULATE;
    call.origin_addr = origin_addr;
    call.origin_count = 1;
    call.origin_dt = dt;
    call.result_addr = result_addr;
    call.result_count = 1;
    call.result_dt = dt;
    call.target = target;
    call.target_count = 1;
    call.target_dt = dt;
    swy_rkey_h rkey = NULL;
    char* direct = NULL;
    int rc = prepare(module, &call, op, target_disp, &rkey, &direct);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    swy_atomic_op_t sop;
    size_t size = 0;
    ompi_datatype_type_size(dt, &size);
    if (NULL != rkey && atomic_integer(dt) && swy_atomic_of(call.wire_op, &sop) &&
        0 == (call.target_addr & (size - 1))) {
        uint64_t operand = 0; /* MPI_NO_OP: add 0 (origin_addr may be anything) */
        if (OSC_SWY_ACC_OP_NO_OP != call.wire_op) {
            memcpy(&operand, origin_addr, size);
        }
        order_before_atomic(module, target);
        return swy_atomic(module, target, sop, size, &operand, NULL, result_addr, call.target_addr,
                          rkey, NULL);
    }
    return direct_or_requests(module, &call, direct, NULL);
}

int ompi_osc_swy_compare_and_swap(const void* origin_addr, const void* compare_addr,
                                  void* result_addr, ompi_datatype_t* dt, int target,
                                  ptrdiff_t target_disp, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    ompi_osc_swy_acc_call_t call;
    memset(&call, 0, sizeof(call));
    call.kind = OSC_SWY_ACC_KIND_CAS;
    call.origin_addr = origin_addr;
    call.origin_count = 1;
    call.origin_dt = dt;
    call.compare_addr = compare_addr;
    call.result_addr = result_addr;
    call.result_count = 1;
    call.result_dt = dt;
    call.target = target;
    call.target_count = 1;
    call.target_dt = dt;
    swy_rkey_h rkey = NULL;
    char* direct = NULL;
    /* Any predefined type: the comparison is bitwise. REPLACE stands for "writes". */
    int rc = prepare(module, &call, &ompi_mpi_op_replace.op, target_disp, &rkey, &direct);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    size_t size = 0;
    ompi_datatype_type_size(dt, &size);
    if (NULL != rkey && atomic_integer(dt) && 0 == (call.target_addr & (size - 1))) {
        order_before_atomic(module, target);
        return swy_atomic(module, target, SWY_ATOMIC_OP_CSWAP, size, origin_addr, compare_addr,
                          result_addr, call.target_addr, rkey, NULL);
    }
    return direct_or_requests(module, &call, direct, NULL);
}
