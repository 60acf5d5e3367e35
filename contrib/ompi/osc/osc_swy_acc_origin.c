/*
 * osc swy accumulate, origin side of the message path (see osc_swy_acc_origin.h).
 *
 * The target datatype is walked as contiguous pieces of the target's address space
 * (ompi_osc_swy_dt_iter, which never dereferences them); adjacent pieces are merged into
 * runs of whole elements; runs are cut into requests of at most OSC_SWY_ACC_MAX_CHUNK bytes
 * of elements and ORIGIN_MAX_SEGMENTS segments. The operands are packed from the origin
 * datatype in the same element order, straight into the message. Each request's reply
 * carries its result offset, so replies may arrive in any order and results land in place.
 */
#include "osc_swy_acc_op.h"

#include <stdlib.h>
#include <string.h>

#include "osc_swy_acc_wire.h"

/** Segments per request at most (the wire allows more; this bounds the origin's buffer). */
enum { ORIGIN_MAX_SEGMENTS = 4096 };

/* ---- sending requests -------------------------------------------------------------------- */

/** What is being cut into requests. */
typedef struct builder {
    ompi_osc_swy_module_t* module;
    const ompi_osc_swy_acc_call_t* call;
    ompi_osc_swy_acc_op_t* op;
    uint64_t op_id;
    size_t size;           /**< element size */
    bool operands;         /**< requests carry operands (not MPI_NO_OP) */
    opal_convertor_t pack; /**< origin operands, when operands */
    osc_swy_acc_segment_t* segs;
    uint32_t nseg;
    uint32_t seg_capacity;
    size_t elements;      /**< in the request being built */
    size_t max_elements;  /**< per request */
    size_t result_offset; /**< bytes of elements before the request being built */
    uint32_t sent;        /**< requests sent */
} builder_t;

static void free_on_send(swy_request_h req, swy_status_t status, void* user_data) {
    (void)req;
    (void)status;
    free(user_data);
}

/* Serialise (segments, operands) into @p out. */
static int fill_payload(builder_t* b, unsigned char* out, size_t operand_bytes) {
    memcpy(out, b->segs, b->nseg * sizeof(osc_swy_acc_segment_t));
    out += b->nseg * sizeof(osc_swy_acc_segment_t);
    if (OSC_SWY_ACC_KIND_CAS == b->call->kind) {
        memcpy(out, b->call->origin_addr, b->size);
        memcpy(out + b->size, b->call->compare_addr, b->size);
        return MPI_SUCCESS;
    }
    if (0 == operand_bytes) {
        return MPI_SUCCESS;
    }
    struct iovec iov = {.iov_base = out, .iov_len = operand_bytes};
    uint32_t n = 1;
    size_t bytes = operand_bytes;
    opal_convertor_pack(&b->pack, &iov, &n, &bytes);
    return bytes == operand_bytes ? MPI_SUCCESS : MPI_ERR_TYPE;
}

/* Send the request being built. */
static int send_request(builder_t* b) {
    ompi_osc_swy_module_t* module = b->module;
    const int target = b->call->target;
    ompi_osc_swy_acc_peer_t* peer = &module->acc->peers[target];
    swy_ep_h ep = module->peers[target].ep;
    if (module->acc->ordered && __atomic_load_n(&peer->rndv_inflight, __ATOMIC_ACQUIRE)) {
        ompi_osc_swy_acc_drain(module, target); /* it would be applied after this one */
    }
    const size_t operand_bytes = OSC_SWY_ACC_KIND_CAS == b->call->kind ? 2 * b->size
                                 : b->operands                         ? b->elements * b->size
                                                                       : 0;
    const size_t payload = b->nseg * sizeof(osc_swy_acc_segment_t) + operand_bytes;

    osc_swy_acc_request_t req;
    memset(&req, 0, sizeof(req));
    req.am.win_id = module->win_id;
    req.am.source = module->rank;
    req.am.kind = OSC_SWY_AM_KIND_ACC_REQUEST;
    req.op_id = b->op_id;
    req.result_offset = b->result_offset;
    req.segment_count = b->nseg;
    req.element_type = (uint16_t)b->call->element->id;
    req.kind = b->call->kind;
    req.op = b->call->wire_op;
    req.version = OSC_SWY_ACC_WIRE_VERSION;

    _Alignas(8) unsigned char header[SWY_AM_MAX_HEADER];
    memcpy(header, &req, sizeof(req));
    size_t header_length = sizeof(req);
    unsigned char* data = NULL;
    size_t data_length = 0;
    int rc;
    if (sizeof(req) + payload <= SWY_AM_MAX_HEADER) {
        rc = fill_payload(b, header + sizeof(req), operand_bytes);
        header_length += payload;
    } else {
        data = malloc(payload);
        if (NULL == data) {
            return MPI_ERR_NO_MEM;
        }
        rc = fill_payload(b, data, operand_bytes);
        data_length = payload;
    }
    if (MPI_SUCCESS != rc) {
        free(data);
        return rc;
    }
    size_t eager_max = 0;
    (void)swy_ep_am_eager_max(ep, &eager_max);
    const bool rndv = header_length + data_length > eager_max;

    swy_request_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA;
    params.send_cb = free_on_send;
    params.user_data = data;
    /* Counted before the send: the reply may come from any progress after it. */
    OPAL_THREAD_LOCK(&module->acc->lock);
    __atomic_add_fetch(&peer->outstanding, 1, __ATOMIC_ACQ_REL);
    ++b->op->pending;
    OPAL_THREAD_UNLOCK(&module->acc->lock);
    swy_request_h sreq = NULL;
    swy_status_t st =
        swy_am_send_nb(ep, OSC_SWY_AM_ID, header, header_length, data, data_length, &params, &sreq);
    if (SWY_INPROGRESS == st) {
        swy_request_free(sreq); /* free_on_send still runs */
    } else {
        free(data);
    }
    if (SWY_OK != st && SWY_INPROGRESS != st) {
        OPAL_THREAD_LOCK(&module->acc->lock);
        --b->op->pending; /* the op's own reference keeps it alive */
        __atomic_sub_fetch(&peer->outstanding, 1, __ATOMIC_ACQ_REL);
        OPAL_THREAD_UNLOCK(&module->acc->lock);
        return ompi_osc_swy_error(st);
    }
    if (rndv) {
        /* Set after the send: a reply that already came and cleared it covered this one. */
        OPAL_THREAD_LOCK(&module->acc->lock);
        if (__atomic_load_n(&peer->outstanding, __ATOMIC_ACQUIRE) > 0) {
            peer->rndv_inflight = true;
        }
        OPAL_THREAD_UNLOCK(&module->acc->lock);
    }
    ++b->sent;
    b->result_offset += b->elements * b->size;
    b->nseg = 0;
    b->elements = 0;
    return MPI_SUCCESS;
}

/* Add a run of @p count elements at target address @p addr, sending full requests. */
static int add_run(builder_t* b, uint64_t addr, size_t count) {
    while (count > 0) {
        size_t take = b->max_elements - b->elements;
        if (take > count) {
            take = count;
        }
        b->segs[b->nseg].offset = addr;
        b->segs[b->nseg].count = take;
        ++b->nseg;
        b->elements += take;
        addr += take * b->size;
        count -= take;
        if (b->elements == b->max_elements || b->nseg == b->seg_capacity) {
            int rc = send_request(b);
            if (MPI_SUCCESS != rc) {
                return rc;
            }
        }
    }
    return MPI_SUCCESS;
}

int ompi_osc_swy_acc_walk_runs(const ompi_osc_swy_acc_call_t* call, size_t size,
                               int (*fn)(void* ctx, uint64_t addr, size_t count), void* ctx) {
    ompi_osc_swy_dt_iter_t it;
    int rc = ompi_osc_swy_dt_iter_init(&it, (const void*)(uintptr_t)call->target_addr,
                                       (size_t)call->target_count, call->target_dt);
    if (OMPI_SUCCESS != rc) {
        return MPI_ERR_TYPE;
    }
    uint64_t run_addr = 0;
    size_t run_len = 0;
    char* ptr;
    size_t len;
    rc = MPI_SUCCESS;
    while (MPI_SUCCESS == rc && ompi_osc_swy_dt_iter_next(&it, &ptr, &len)) {
        uint64_t addr = (uint64_t)(uintptr_t)ptr;
        if (run_len > 0 && addr == run_addr + run_len) {
            run_len += len;
            continue;
        }
        if (run_len > 0) {
            rc = run_len % size ? MPI_ERR_TYPE : fn(ctx, run_addr, run_len / size);
        }
        run_addr = addr;
        run_len = len;
    }
    ompi_osc_swy_dt_iter_fini(&it);
    if (MPI_SUCCESS == rc && run_len > 0) {
        rc = run_len % size ? MPI_ERR_TYPE : fn(ctx, run_addr, run_len / size);
    }
    return rc;
}

static int add_run_cb(void* ctx, uint64_t addr, size_t count) {
    return add_run((builder_t*)ctx, addr, count);
}

/* Walk the target datatype and send everything. */
static int build_and_send(builder_t* b) {
    int rc = ompi_osc_swy_acc_walk_runs(b->call, b->size, add_run_cb, b);
    if (MPI_SUCCESS == rc && b->nseg > 0) {
        rc = send_request(b);
    }
    return rc;
}

/* Where the old values go: straight into a contiguous result buffer, else a packed copy. */
static int setup_results(ompi_osc_swy_acc_op_t* op, const ompi_osc_swy_acc_call_t* call,
                         size_t bytes) {
    size_t result_size = 0;
    ompi_datatype_type_size(call->result_dt, &result_size);
    if (result_size * (size_t)call->result_count != bytes) {
        return MPI_ERR_TYPE;
    }
    op->results_length = bytes;
    if (ompi_datatype_is_contiguous_memory_layout(call->result_dt, call->result_count)) {
        ptrdiff_t true_lb = 0, true_extent = 0;
        ompi_datatype_get_true_extent(call->result_dt, &true_lb, &true_extent);
        op->results = (unsigned char*)call->result_addr + true_lb;
        return MPI_SUCCESS;
    }
    op->results = malloc(bytes);
    if (NULL == op->results) {
        return MPI_ERR_NO_MEM;
    }
    op->results_owned = true;
    op->result_addr = call->result_addr;
    op->result_count = call->result_count;
    op->result_dt = call->result_dt;
    OBJ_RETAIN(call->result_dt);
    return MPI_SUCCESS;
}

int ompi_osc_swy_acc_start(ompi_osc_swy_module_t* module, const ompi_osc_swy_acc_call_t* call) {
    ompi_osc_swy_acc_state_t* acc = module->acc;
    size_t size = 0, target_bytes = 0;
    ompi_datatype_type_size(call->element, &size);
    ompi_datatype_type_size(call->target_dt, &target_bytes);
    target_bytes *= (size_t)call->target_count;
    if (0 == size || target_bytes % size) {
        return MPI_ERR_TYPE;
    }
    const bool operands =
        OSC_SWY_ACC_OP_NO_OP != call->wire_op && OSC_SWY_ACC_KIND_CAS != call->kind;
    if (operands) {
        size_t origin_size = 0;
        ompi_datatype_type_size(call->origin_dt, &origin_size);
        if (origin_size * (size_t)call->origin_count != target_bytes) {
            return MPI_ERR_TYPE; /* MPI: the type signatures must match */
        }
    }
    if (0 == target_bytes) {
        if (NULL != call->request) {
            ompi_osc_swy_request_release_ref(call->request); /* nothing to do: complete */
        }
        return MPI_SUCCESS;
    }

    uint64_t op_id;
    OPAL_THREAD_LOCK(&acc->lock);
    ompi_osc_swy_acc_op_t* op = ompi_osc_swy_acc_op_alloc(acc, &op_id);
    OPAL_THREAD_UNLOCK(&acc->lock);
    if (NULL == op) {
        return MPI_ERR_NO_MEM;
    }
    op->target = call->target;
    op->element_size = size;
    op->pending = 1; /* ours, until everything is sent */
    op->request = call->request;
    int rc = MPI_SUCCESS;
    if (OSC_SWY_ACC_KIND_ACCUMULATE != call->kind) {
        rc = setup_results(op, call, target_bytes);
    }
    if (MPI_SUCCESS != rc) {
        op->request = NULL; /* the caller still owns it: nothing was started */
        OPAL_THREAD_LOCK(&acc->lock);
        ompi_osc_swy_acc_op_put(module, op, op_id);
        OPAL_THREAD_UNLOCK(&acc->lock);
        return rc;
    }

    osc_swy_acc_segment_t local_segs[8];
    builder_t b;
    memset(&b, 0, sizeof(b));
    b.module = module;
    b.call = call;
    b.op = op;
    b.op_id = op_id;
    b.size = size;
    b.operands = operands;
    b.max_elements = OSC_SWY_ACC_MAX_CHUNK / size;
    b.segs = local_segs;
    b.seg_capacity = 8;
    if (!ompi_datatype_is_contiguous_memory_layout(call->target_dt, call->target_count)) {
        osc_swy_acc_segment_t* heap = malloc(ORIGIN_MAX_SEGMENTS * sizeof(*heap));
        if (NULL != heap) {
            b.segs = heap;
            b.seg_capacity = ORIGIN_MAX_SEGMENTS;
        }
    }
    if (operands) {
        OBJ_CONSTRUCT(&b.pack, opal_convertor_t);
        if (OPAL_SUCCESS != opal_convertor_copy_and_prepare_for_send(
                                ompi_mpi_local_convertor, &call->origin_dt->super,
                                (size_t)call->origin_count, call->origin_addr, 0, &b.pack)) {
            rc = MPI_ERR_TYPE;
        }
    }
    if (MPI_SUCCESS == rc) {
        rc = build_and_send(&b);
    }
    if (operands) {
        OBJ_DESTRUCT(&b.pack);
    }
    if (b.segs != local_segs) {
        free(b.segs);
    }
    OPAL_THREAD_LOCK(&acc->lock);
    if (MPI_SUCCESS != rc && 0 == b.sent) {
        op->request = NULL; /* nothing started: the call fails, the caller keeps the request */
        ompi_osc_swy_acc_op_put(module, op, op_id);
        OPAL_THREAD_UNLOCK(&acc->lock);
        return rc;
    }
    /* Requests already sent complete the operation; an error met after them is its status
     * (the request's, and the next flush's). */
    ompi_osc_swy_acc_record_error(&op->error, rc);
    ompi_osc_swy_acc_record_error(&acc->peers[call->target].error, rc);
    ompi_osc_swy_acc_op_put(module, op, op_id);
    OPAL_THREAD_UNLOCK(&acc->lock);
    return MPI_SUCCESS;
}
