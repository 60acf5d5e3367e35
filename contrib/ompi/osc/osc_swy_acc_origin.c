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
#include "osc_swy_acc_origin.h"

#include <stdlib.h>
#include <string.h>

#include "osc_swy_acc_wire.h"

/** Segments per request at most (the wire allows more; this bounds the origin's buffer). */
enum { ORIGIN_MAX_SEGMENTS = 4096 };

/** An operation waiting for replies. */
typedef struct ompi_osc_swy_acc_op {
    uint32_t generation; /**< bumped on every reuse of the slot: stale op ids never match */
    bool busy;
    int target;
    uint32_t pending; /**< unanswered requests, plus one while still sending */
    int error;        /**< first error (MPI class), 0 if none */
    size_t element_size;
    unsigned char* results; /**< packed old values (NULL: none wanted) */
    size_t results_length;
    bool results_owned; /**< malloc'd: unpack into result_addr when done */
    void* result_addr;
    int result_count;
    ompi_datatype_t* result_dt; /**< retained while owned results wait to be unpacked */
    ompi_osc_swy_request_t* request;
} ompi_osc_swy_acc_op_t;

/* ---- the operation table ----------------------------------------------------------------- */

static ompi_osc_swy_acc_op_t* op_alloc(ompi_osc_swy_acc_state_t* acc, uint64_t* op_id) {
    if (0 == acc->free_count) {
        uint32_t old_capacity = acc->ops_capacity;
        uint32_t capacity = old_capacity ? 2 * old_capacity : 64;
        ompi_osc_swy_acc_op_t** ops = realloc(acc->ops, capacity * sizeof(*ops));
        if (NULL == ops) {
            return NULL;
        }
        acc->ops = ops;
        uint32_t* free_slots = realloc(acc->free_slots, capacity * sizeof(*free_slots));
        if (NULL == free_slots) {
            return NULL;
        }
        acc->free_slots = free_slots;
        for (uint32_t i = old_capacity; i < capacity; ++i) {
            ops[i] = NULL;
        }
        for (uint32_t i = capacity; i > old_capacity; --i) {
            acc->free_slots[acc->free_count++] = i - 1;
        }
        acc->ops_capacity = capacity;
    }
    uint32_t slot = acc->free_slots[acc->free_count - 1];
    ompi_osc_swy_acc_op_t* op = acc->ops[slot];
    if (NULL == op) {
        op = calloc(1, sizeof(*op));
        if (NULL == op) {
            return NULL;
        }
        acc->ops[slot] = op;
    }
    --acc->free_count;
    uint32_t generation = op->generation + 1;
    memset(op, 0, sizeof(*op));
    op->generation = generation;
    op->busy = true;
    *op_id = (uint64_t)generation << 32 | slot;
    return op;
}

static ompi_osc_swy_acc_op_t* op_find(ompi_osc_swy_acc_state_t* acc, uint64_t op_id) {
    uint32_t slot = (uint32_t)op_id;
    if (slot >= acc->ops_capacity || NULL == acc->ops[slot]) {
        return NULL;
    }
    ompi_osc_swy_acc_op_t* op = acc->ops[slot];
    return op->busy && op->generation == (uint32_t)(op_id >> 32) ? op : NULL;
}

static void op_free(ompi_osc_swy_acc_state_t* acc, ompi_osc_swy_acc_op_t* op, uint64_t op_id) {
    op->busy = false;
    acc->free_slots[acc->free_count++] = (uint32_t)op_id;
}

void ompi_osc_swy_acc_ops_fini(ompi_osc_swy_acc_state_t* acc) {
    for (uint32_t i = 0; i < acc->ops_capacity; ++i) {
        free(acc->ops[i]);
    }
    free(acc->ops);
    free(acc->free_slots);
    acc->ops = NULL;
    acc->free_slots = NULL;
    acc->ops_capacity = acc->free_count = 0;
}

/* ---- completion -------------------------------------------------------------------------- */

static void record_error(int* slot, int error) {
    if (MPI_SUCCESS == *slot && MPI_SUCCESS != error) {
        *slot = error;
    }
}

static int unpack_results(ompi_osc_swy_acc_op_t* op) {
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    int rc = opal_convertor_copy_and_prepare_for_recv(
        ompi_mpi_local_convertor, &op->result_dt->super, (size_t)op->result_count, op->result_addr,
        0, &conv);
    if (OPAL_SUCCESS == rc) {
        struct iovec iov = {.iov_base = op->results, .iov_len = op->results_length};
        uint32_t n = 1;
        size_t bytes = op->results_length;
        opal_convertor_unpack(&conv, &iov, &n, &bytes);
        rc = bytes == op->results_length ? OPAL_SUCCESS : OPAL_ERROR;
    }
    OBJ_DESTRUCT(&conv);
    return OPAL_SUCCESS == rc ? MPI_SUCCESS : MPI_ERR_TYPE;
}

/* Drop one pending reference of @p op; the last one finishes it. */
static void op_put(ompi_osc_swy_module_t* module, ompi_osc_swy_acc_op_t* op, uint64_t op_id) {
    if (--op->pending > 0) {
        return;
    }
    if (op->results_owned) {
        if (MPI_SUCCESS == op->error) {
            record_error(&op->error, unpack_results(op));
        }
        free(op->results);
        OBJ_RELEASE(op->result_dt);
    }
    if (NULL != op->request) {
        if (MPI_SUCCESS != op->error && OMPI_SUCCESS == op->request->error) {
            op->request->error = op->error;
        }
        ompi_osc_swy_request_release_ref(op->request);
    }
    op_free(module->acc, op, op_id);
}

/* One request of @p op was answered with @p status (or failed locally). */
static void request_done(ompi_osc_swy_module_t* module, ompi_osc_swy_acc_op_t* op, uint64_t op_id,
                         int status) {
    ompi_osc_swy_acc_peer_t* peer = &module->acc->peers[op->target];
    record_error(&op->error, status);
    record_error(&peer->error, status);
    if (--peer->outstanding == 0) {
        peer->rndv_inflight = false;
    }
    op_put(module, op, op_id);
}

void ompi_osc_swy_acc_drain(ompi_osc_swy_module_t* module, int target) {
    ompi_osc_swy_acc_state_t* acc = module->acc;
    unsigned countdown = 0;
    for (int t = target < 0 ? 0 : target; t < (target < 0 ? module->nranks : target + 1); ++t) {
        while (acc->peers[t].outstanding > 0) {
            ompi_osc_swy_progress_step(&countdown);
        }
    }
}

/* ---- replies ----------------------------------------------------------------------------- */

typedef struct reply_pull {
    ompi_osc_swy_module_t* module;
    uint64_t op_id;
    size_t length;
} reply_pull_t;

static void reply_pulled(swy_request_h sreq, swy_status_t status, const swy_tag_recv_info_t* info,
                         void* user_data) {
    (void)sreq;
    reply_pull_t* pull = user_data;
    ompi_osc_swy_acc_op_t* op = op_find(pull->module->acc, pull->op_id);
    if (NULL != op) {
        bool ok = SWY_OK == status && NULL != info && info->length == pull->length;
        request_done(pull->module, op, pull->op_id, ok ? MPI_SUCCESS : MPI_ERR_OTHER);
    }
    free(pull);
}

/* A status from the wire: 0, or an MPI error class; anything else becomes MPI_ERR_OTHER. */
static int wire_status(int32_t status) {
    if (MPI_SUCCESS == status) {
        return MPI_SUCCESS;
    }
    return status > 0 && status <= MPI_ERR_LASTCODE ? status : MPI_ERR_OTHER;
}

swy_status_t ompi_osc_swy_acc_handle_reply(ompi_osc_swy_module_t* module, int source,
                                           const void* header, size_t header_length, void* data,
                                           size_t data_length, const swy_am_recv_param_t* param) {
    const bool rndv = NULL != param && (param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) &&
                      (param->flags & SWY_AM_RECV_FLAG_RNDV);
    osc_swy_acc_reply_t reply;
    ompi_osc_swy_acc_op_t* op = NULL;
    if (header_length >= sizeof(reply)) {
        memcpy(&reply, header, sizeof(reply));
        op = op_find(module->acc, reply.op_id);
    }
    const bool inline_values = header_length > sizeof(reply);
    /* Only a reply from the rank the operation went to, for an operation still waiting. */
    if (NULL == op || op->target != source || OSC_SWY_ACC_WIRE_VERSION != reply.version ||
        (inline_values && (rndv || 0 != data_length))) {
        ++module->acc->refused;
        if (rndv) {
            swy_am_data_release(module->worker, data);
        }
        return SWY_OK;
    }
    int status = wire_status(reply.status);
    const size_t length = inline_values ? header_length - sizeof(reply) : data_length;
    if (MPI_SUCCESS == status && length > 0 &&
        (NULL == op->results || reply.result_offset > op->results_length ||
         length > op->results_length - reply.result_offset)) {
        status = MPI_ERR_OTHER; /* values we did not ask for, or outside the results */
    }
    if (MPI_SUCCESS != status || 0 == length) {
        if (rndv) {
            swy_am_data_release(module->worker, data);
        }
        request_done(module, op, reply.op_id, status);
        return SWY_OK;
    }
    unsigned char* dest = op->results + reply.result_offset;
    if (!rndv) {
        memcpy(dest, inline_values ? (const unsigned char*)header + sizeof(reply) : data, length);
        request_done(module, op, reply.op_id, MPI_SUCCESS);
        return SWY_OK;
    }
    reply_pull_t* pull = malloc(sizeof(*pull));
    if (NULL == pull) {
        swy_am_data_release(module->worker, data);
        request_done(module, op, reply.op_id, MPI_ERR_NO_MEM);
        return SWY_OK;
    }
    pull->module = module;
    pull->op_id = reply.op_id;
    pull->length = length;
    swy_tag_recv_info_t info;
    memset(&info, 0, sizeof(info));
    swy_request_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA |
                        SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.recv_cb = reply_pulled;
    params.user_data = pull;
    params.recv_info = &info;
    swy_request_h sreq = NULL;
    swy_status_t st = swy_am_recv_data_nb(module->worker, data, dest, length, &params, &sreq);
    if (SWY_INPROGRESS == st) {
        swy_request_free(sreq);
    } else {
        reply_pulled(NULL, st, &info, pull);
    }
    return SWY_OK;
}

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
    if (module->acc->ordered && peer->rndv_inflight) {
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
    ++peer->outstanding; /* before the send: its reply may come from any later progress */
    ++b->op->pending;
    swy_request_h sreq = NULL;
    swy_status_t st =
        swy_am_send_nb(ep, OSC_SWY_AM_ID, header, header_length, data, data_length, &params, &sreq);
    if (SWY_INPROGRESS == st) {
        swy_request_free(sreq); /* free_on_send still runs */
    } else {
        free(data);
    }
    if (SWY_OK != st && SWY_INPROGRESS != st) {
        --b->op->pending;
        --peer->outstanding;
        return ompi_osc_swy_error(st);
    }
    if (rndv) {
        peer->rndv_inflight = true;
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

/* Walk the target datatype and send everything. */
static int build_and_send(builder_t* b) {
    const ompi_osc_swy_acc_call_t* call = b->call;
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
    while (MPI_SUCCESS == rc && ompi_osc_swy_dt_iter_next(&it, &ptr, &len)) {
        uint64_t addr = (uint64_t)(uintptr_t)ptr;
        if (run_len > 0 && addr == run_addr + run_len) {
            run_len += len;
            continue;
        }
        if (run_len > 0) {
            rc = run_len % b->size ? MPI_ERR_TYPE : add_run(b, run_addr, run_len / b->size);
        }
        run_addr = addr;
        run_len = len;
    }
    ompi_osc_swy_dt_iter_fini(&it);
    if (MPI_SUCCESS == rc && run_len > 0) {
        rc = run_len % b->size ? MPI_ERR_TYPE : add_run(b, run_addr, run_len / b->size);
    }
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
    ompi_osc_swy_acc_op_t* op = op_alloc(acc, &op_id);
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
        op->pending = 1;
        op_put(module, op, op_id);
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
    if (MPI_SUCCESS != rc && 0 == b.sent) {
        op->request = NULL; /* nothing started: the call fails, the caller keeps the request */
        op_put(module, op, op_id);
        return rc;
    }
    /* Requests already sent complete the operation; an error met after them is its status
     * (the request's, and the next flush's). */
    record_error(&op->error, rc);
    record_error(&acc->peers[call->target].error, rc);
    op_put(module, op, op_id);
    return MPI_SUCCESS;
}
