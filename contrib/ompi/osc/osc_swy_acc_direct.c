/*
 * osc swy accumulate, the same-host shortcut: when the target's window memory and its
 * control area are mapped here (MPI_Win_allocate on this host: Switchyard allocated both with
 * swy_mem_map ALLOCATE, and swy_rkey_ptr reaches them), the origin applies the operation
 * itself with the engine the target would use (osc_swy_acc_apply.c): CPU atomics on 4/8-byte
 * elements, and for the other elements the target's accumulate lock, which lives in the
 * shared control area (ctrl->acc_lock) and which the target's own apply takes too. So an
 * element is updated atomically whoever applies it -- this origin, the target serving a
 * request from a peer on another host, or a Switchyard atomic -- and the operation is
 * complete at the target when the call returns, without the target's progress.
 *
 * MCA parameter osc_swy_acc_direct (default 1) turns it off: everything then takes the
 * Switchyard atomics and requests of osc_swy_accumulate.h.
 */
#include <stdlib.h>
#include <string.h>

#include "osc_swy_acc_apply.h"
#include "osc_swy_acc_origin.h"
#include "osc_swy_acc_wire.h"

/** MCA osc_swy_acc_direct (storage must outlive the MCA variable system: a static). */
static bool acc_direct_enabled = true;

void ompi_osc_swy_acc_register(const mca_base_component_t* version) {
    (void)mca_base_component_var_register(
        version, "acc_direct",
        "Apply accumulates to same-host windows of MPI_Win_allocate at the origin (CPU atomics, "
        "the target's accumulate lock for other element sizes) instead of sending them to the "
        "target",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_GROUP,
        &acc_direct_enabled);
}

/** Buffers of at most this many bytes live on the stack. */
enum { STACK_BYTES = 512 };

typedef struct direct_walk {
    const osc_swy_acc_apply_t* a;
    char* local; /**< local pointer of call->target_addr */
    uint64_t target_addr;
    const unsigned char* operands; /**< packed, NULL for MPI_NO_OP */
    unsigned char* results;        /**< packed, NULL for accumulate */
    size_t done;                   /**< bytes of elements applied so far */
    uint64_t* lock;
} direct_walk_t;

static int apply_run_cb(void* ctx, uint64_t addr, size_t count) {
    direct_walk_t* w = ctx;
    char* local = w->local + (int64_t)(addr - w->target_addr);
    osc_swy_acc_apply_run(w->a, local, w->operands ? w->operands + w->done : NULL,
                          w->results ? w->results + w->done : NULL, count, w->lock);
    w->done += count * w->a->size;
    return MPI_SUCCESS;
}

/* @p count elements of @p dt at @p buf as one packed run of @p bytes: the buffer itself when
 * contiguous, else packed into @p scratch (or the heap: *heap). */
static const unsigned char* packed_view(const void* buf, int count, ompi_datatype_t* dt,
                                        size_t bytes, unsigned char* scratch,
                                        unsigned char** heap) {
    *heap = NULL;
    if (ompi_datatype_is_contiguous_memory_layout(dt, count)) {
        ptrdiff_t true_lb = 0, true_extent = 0;
        ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
        return (const unsigned char*)buf + true_lb;
    }
    unsigned char* out = scratch;
    if (bytes > STACK_BYTES) {
        out = *heap = malloc(bytes);
        if (NULL == out) {
            return NULL;
        }
    }
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    size_t packed = 0;
    if (OPAL_SUCCESS == opal_convertor_copy_and_prepare_for_send(
                            ompi_mpi_local_convertor, &dt->super, (size_t)count, buf, 0, &conv)) {
        struct iovec iov = {.iov_base = out, .iov_len = bytes};
        uint32_t n = 1;
        packed = bytes;
        opal_convertor_pack(&conv, &iov, &n, &packed);
    }
    OBJ_DESTRUCT(&conv);
    if (packed != bytes) {
        free(*heap);
        *heap = NULL;
        return NULL;
    }
    return out;
}

static int unpack_into(void* buf, int count, ompi_datatype_t* dt, unsigned char* packed,
                       size_t bytes) {
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    size_t unpacked = 0;
    if (OPAL_SUCCESS == opal_convertor_copy_and_prepare_for_recv(
                            ompi_mpi_local_convertor, &dt->super, (size_t)count, buf, 0, &conv)) {
        struct iovec iov = {.iov_base = packed, .iov_len = bytes};
        uint32_t n = 1;
        unpacked = bytes;
        opal_convertor_unpack(&conv, &iov, &n, &unpacked);
    }
    OBJ_DESTRUCT(&conv);
    return unpacked == bytes ? MPI_SUCCESS : MPI_ERR_TYPE;
}

bool ompi_osc_swy_acc_direct(ompi_osc_swy_module_t* module, const ompi_osc_swy_acc_call_t* call,
                             char* direct, int* rc) {
    ompi_osc_swy_peer_t* peer = &module->peers[call->target];
    if (!acc_direct_enabled || NULL == direct || NULL == peer->ctrl_direct) {
        return false;
    }
    osc_swy_acc_apply_t a;
    *rc = osc_swy_acc_apply_decode((uint32_t)call->element->id, call->wire_op, &a);
    if (MPI_SUCCESS != *rc) {
        return true;
    }
    size_t target_bytes = 0;
    ompi_datatype_type_size(call->target_dt, &target_bytes);
    target_bytes *= (size_t)call->target_count;
    if (target_bytes % a.size) {
        *rc = MPI_ERR_TYPE;
        return true;
    }
    const bool with_operands =
        OSC_SWY_ACC_OP_NO_OP != call->wire_op && OSC_SWY_ACC_KIND_CAS != call->kind;
    if (with_operands) {
        size_t origin_size = 0;
        ompi_datatype_type_size(call->origin_dt, &origin_size);
        if (origin_size * (size_t)call->origin_count != target_bytes) {
            *rc = MPI_ERR_TYPE;
            return true;
        }
    }
    /* Earlier requests and Switchyard atomics to this target come first (ordering). */
    ompi_osc_swy_acc_order_before_direct(module, call->target);
    if (0 == target_bytes) {
        *rc = MPI_SUCCESS;
        return true;
    }
    uint64_t* lock = &peer->ctrl_direct->acc_lock;
    if (OSC_SWY_ACC_KIND_CAS == call->kind) {
        osc_swy_acc_apply_cas(&a, direct, call->origin_addr, call->compare_addr, call->result_addr,
                              lock);
        *rc = MPI_SUCCESS;
        return true;
    }

    _Alignas(16) unsigned char operand_scratch[STACK_BYTES];
    _Alignas(16) unsigned char result_scratch[STACK_BYTES];
    unsigned char* operand_heap = NULL;
    unsigned char* result_heap = NULL;
    const unsigned char* operands = NULL;
    unsigned char* results = NULL;
    bool unpack = false;
    *rc = MPI_SUCCESS;
    if (with_operands) {
        operands = packed_view(call->origin_addr, call->origin_count, call->origin_dt, target_bytes,
                               operand_scratch, &operand_heap);
        if (NULL == operands) {
            *rc = MPI_ERR_TYPE;
        }
    }
    if (MPI_SUCCESS == *rc && OSC_SWY_ACC_KIND_GET_ACCUMULATE == call->kind) {
        size_t result_size = 0;
        ompi_datatype_type_size(call->result_dt, &result_size);
        if (result_size * (size_t)call->result_count != target_bytes) {
            *rc = MPI_ERR_TYPE;
        } else if (ompi_datatype_is_contiguous_memory_layout(call->result_dt, call->result_count)) {
            ptrdiff_t true_lb = 0, true_extent = 0;
            ompi_datatype_get_true_extent(call->result_dt, &true_lb, &true_extent);
            results = (unsigned char*)call->result_addr + true_lb;
        } else {
            results =
                target_bytes <= STACK_BYTES ? result_scratch : (result_heap = malloc(target_bytes));
            unpack = true;
            if (NULL == results) {
                *rc = MPI_ERR_NO_MEM;
            }
        }
    }
    if (MPI_SUCCESS == *rc) {
        direct_walk_t w = {.a = &a,
                           .local = direct,
                           .target_addr = call->target_addr,
                           .operands = operands,
                           .results = results,
                           .done = 0,
                           .lock = lock};
        *rc = ompi_osc_swy_acc_walk_runs(call, a.size, apply_run_cb, &w);
    }
    if (MPI_SUCCESS == *rc && unpack) {
        *rc = unpack_into(call->result_addr, call->result_count, call->result_dt, results,
                          target_bytes);
    }
    free(operand_heap);
    free(result_heap);
    return true;
}
