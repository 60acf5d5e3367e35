/*
 * osc swy accumulate, origin side: the operation table, completion of operations, and the
 * replies (see osc_swy_acc_op.h).
 */
#include "osc_swy_acc_op.h"

#include <stdlib.h>
#include <string.h>

#include "osc_swy_acc_wire.h"

/* ---- the operation table ----------------------------------------------------------------- */

ompi_osc_swy_acc_op_t* ompi_osc_swy_acc_op_alloc(ompi_osc_swy_acc_state_t* acc, uint64_t* op_id) {
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

void ompi_osc_swy_acc_record_error(int* slot, int error) {
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

/* Drop one pending reference of @p op; the last one finishes it. Called with acc->lock held
 * (as are request_done, ompi_osc_swy_acc_op_alloc, op_find and op_free). */
void ompi_osc_swy_acc_op_put(ompi_osc_swy_module_t* module, ompi_osc_swy_acc_op_t* op,
                             uint64_t op_id) {
    if (--op->pending > 0) {
        return;
    }
    if (op->results_owned) {
        if (MPI_SUCCESS == op->error) {
            ompi_osc_swy_acc_record_error(&op->error, unpack_results(op));
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
    ompi_osc_swy_acc_record_error(&op->error, status);
    ompi_osc_swy_acc_record_error(&peer->error, status);
    if (__atomic_sub_fetch(&peer->outstanding, 1, __ATOMIC_ACQ_REL) == 0) {
        peer->rndv_inflight = false;
    }
    ompi_osc_swy_acc_op_put(module, op, op_id);
}

void ompi_osc_swy_acc_drain(ompi_osc_swy_module_t* module, int target) {
    ompi_osc_swy_acc_state_t* acc = module->acc;
    unsigned countdown = 0;
    for (int t = target < 0 ? 0 : target; t < (target < 0 ? module->nranks : target + 1); ++t) {
        while (__atomic_load_n(&acc->peers[t].outstanding, __ATOMIC_ACQUIRE) > 0) {
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
    ompi_osc_swy_acc_state_t* acc = pull->module->acc;
    OPAL_THREAD_LOCK(&acc->lock);
    ompi_osc_swy_acc_op_t* op = op_find(acc, pull->op_id);
    if (NULL != op) {
        bool ok = SWY_OK == status && NULL != info && info->length == pull->length;
        request_done(pull->module, op, pull->op_id, ok ? MPI_SUCCESS : MPI_ERR_OTHER);
    }
    OPAL_THREAD_UNLOCK(&acc->lock);
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
    ompi_osc_swy_acc_state_t* acc = module->acc;
    const bool rndv = NULL != param && (param->field_mask & SWY_AM_RECV_PARAM_FIELD_FLAGS) &&
                      (param->flags & SWY_AM_RECV_FLAG_RNDV);
    const bool inline_values = header_length > sizeof(osc_swy_acc_reply_t);
    const size_t length = inline_values ? header_length - sizeof(osc_swy_acc_reply_t) : data_length;
    osc_swy_acc_reply_t reply;
    memset(&reply, 0, sizeof(reply));
    if (header_length >= sizeof(reply)) {
        memcpy(&reply, header, sizeof(reply));
    }
    unsigned char* pull_into = NULL; /* rendezvous values: pulled after the lock is dropped */
    OPAL_THREAD_LOCK(&acc->lock);
    ompi_osc_swy_acc_op_t* op = header_length >= sizeof(reply) ? op_find(acc, reply.op_id) : NULL;
    /* Only a reply from the rank the operation went to, for an operation still waiting. */
    if (NULL == op || op->target != source || OSC_SWY_ACC_WIRE_VERSION != reply.version ||
        (inline_values && (rndv || 0 != data_length))) {
        __atomic_add_fetch(&acc->refused, 1, __ATOMIC_RELAXED);
    } else {
        int status = wire_status(reply.status);
        if (MPI_SUCCESS == status && length > 0 &&
            (NULL == op->results || reply.result_offset > op->results_length ||
             length > op->results_length - reply.result_offset)) {
            status = MPI_ERR_OTHER; /* values we did not ask for, or outside the results */
        }
        if (MPI_SUCCESS != status || 0 == length) {
            request_done(module, op, reply.op_id, status);
        } else if (!rndv) {
            memcpy(op->results + reply.result_offset,
                   inline_values ? (const unsigned char*)header + sizeof(reply) : data, length);
            request_done(module, op, reply.op_id, MPI_SUCCESS);
        } else {
            pull_into = op->results + reply.result_offset; /* op waits for this request */
        }
    }
    OPAL_THREAD_UNLOCK(&acc->lock);
    if (NULL == pull_into) {
        if (rndv) {
            swy_am_data_release(module->worker, data);
        }
        return SWY_OK;
    }
    reply_pull_t* pull = malloc(sizeof(*pull));
    if (NULL == pull) {
        swy_am_data_release(module->worker, data);
        OPAL_THREAD_LOCK(&acc->lock);
        op = op_find(acc, reply.op_id);
        if (NULL != op) {
            request_done(module, op, reply.op_id, MPI_ERR_NO_MEM);
        }
        OPAL_THREAD_UNLOCK(&acc->lock);
        return SWY_OK;
    }
    pull->module = module;
    pull->op_id = reply.op_id;
    pull->length = length;
    ompi_osc_swy_acc_pull(module->worker, data, pull_into, length, reply_pulled, pull);
    return SWY_OK;
}

void ompi_osc_swy_acc_pull(swy_worker_h worker, void* desc, void* buffer, size_t length,
                           swy_recv_cb_t done, void* arg) {
    swy_tag_recv_info_t info;
    memset(&info, 0, sizeof(info));
    swy_request_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA |
                        SWY_REQ_PARAM_FIELD_RECV_INFO;
    params.recv_cb = done;
    params.user_data = arg;
    params.recv_info = &info;
    swy_request_h sreq = NULL;
    const swy_status_t st = swy_am_recv_data_nb(worker, desc, buffer, length, &params, &sreq);
    if (SWY_INPROGRESS == st) {
        swy_request_free(sreq); /* done runs on completion */
        return;
    }
    done(NULL, st, &info, arg);
}
