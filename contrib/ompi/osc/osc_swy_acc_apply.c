/*
 * osc swy accumulate: target-side apply engine (see osc_swy_acc_apply.h for the atomicity
 * argument).
 */
#include "osc_swy_acc_apply.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype_internal.h"
#include "osc_swy_acc_wire.h"

/* ---- op and type tables ------------------------------------------------------------------ */

/* enum osc_swy_acc_op -> Open MPI op: a switch rather than an array because the ops are
 * objects in libmpi whose addresses are not constant expressions here. */
static ompi_op_t* wire_op_table(uint32_t code) {
    switch (code) {
        case OSC_SWY_ACC_OP_MAX: return &ompi_mpi_op_max.op;
        case OSC_SWY_ACC_OP_MIN: return &ompi_mpi_op_min.op;
        case OSC_SWY_ACC_OP_SUM: return &ompi_mpi_op_sum.op;
        case OSC_SWY_ACC_OP_PROD: return &ompi_mpi_op_prod.op;
        case OSC_SWY_ACC_OP_LAND: return &ompi_mpi_op_land.op;
        case OSC_SWY_ACC_OP_BAND: return &ompi_mpi_op_band.op;
        case OSC_SWY_ACC_OP_LOR: return &ompi_mpi_op_lor.op;
        case OSC_SWY_ACC_OP_BOR: return &ompi_mpi_op_bor.op;
        case OSC_SWY_ACC_OP_LXOR: return &ompi_mpi_op_lxor.op;
        case OSC_SWY_ACC_OP_BXOR: return &ompi_mpi_op_bxor.op;
        case OSC_SWY_ACC_OP_MAXLOC: return &ompi_mpi_op_maxloc.op;
        case OSC_SWY_ACC_OP_MINLOC: return &ompi_mpi_op_minloc.op;
        case OSC_SWY_ACC_OP_REPLACE: return &ompi_mpi_op_replace.op;
        case OSC_SWY_ACC_OP_NO_OP: return &ompi_mpi_op_no_op.op;
        default: return NULL;
    }
}

ompi_op_t* osc_swy_acc_ompi_op(uint32_t wire_op) { return wire_op_table(wire_op); }

uint8_t osc_swy_acc_wire_op(const ompi_op_t* op) {
    for (uint32_t code = 1; code < OSC_SWY_ACC_OP_COUNT; ++code) {
        if (wire_op_table(code) == op) {
            return (uint8_t)code;
        }
    }
    return 0;
}

int osc_swy_acc_apply_decode(uint32_t element_type, uint32_t wire_op, osc_swy_acc_apply_t* out) {
    if (element_type >= OMPI_DATATYPE_MPI_MAX_PREDEFINED) {
        return MPI_ERR_TYPE;
    }
    ompi_datatype_t* dt = (ompi_datatype_t*)ompi_datatype_basicDatatypes[element_type];
    if (NULL == dt || !ompi_datatype_is_predefined(dt)) {
        return MPI_ERR_TYPE;
    }
    size_t size = 0;
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    if (0 == size || size > OSC_SWY_ACC_MAX_ELEMENT || lb != 0 || extent < (ptrdiff_t)size ||
        extent > OSC_SWY_ACC_MAX_ELEMENT) {
        return MPI_ERR_TYPE; /* MPI_DATATYPE_NULL, MPI_UB/LB markers and the like */
    }
    ompi_op_t* op = wire_op_table(wire_op);
    if (NULL == op) {
        return MPI_ERR_OP;
    }
    if (OSC_SWY_ACC_OP_REPLACE != wire_op && OSC_SWY_ACC_OP_NO_OP != wire_op) {
        char* msg = NULL;
        bool valid = ompi_op_is_valid(op, dt, &msg, "osc swy accumulate");
        free(msg);
        if (!valid) {
            return MPI_ERR_OP;
        }
    } else {
        op = NULL; /* applied here, not by a reduction function */
    }
    out->dt = dt;
    out->op = op;
    out->size = size;
    out->extent = (size_t)extent;
    out->wire_op = (uint8_t)wire_op;
    out->integer = (dt->super.flags & OMPI_DATATYPE_FLAG_DATA_TYPE) == OMPI_DATATYPE_FLAG_DATA_INT;
    return OMPI_SUCCESS;
}

/* ---- the accumulate lock ----------------------------------------------------------------- */

static void acc_lock(uint64_t* lock) {
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE) != 0) {
        while (__atomic_load_n(lock, __ATOMIC_RELAXED) != 0) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }
}

static void acc_unlock(uint64_t* lock) { __atomic_store_n(lock, 0, __ATOMIC_RELEASE); }

/* ---- 4- and 8-byte elements: CPU atomics ------------------------------------------------- */

/* One element through a compare-and-swap loop around the reduction function: correct for
 * every op and type of this size (float, MAX, PROD, MAXLOC on MPI_2INT...), and atomic with
 * respect to every other atomic on the word. T is uint32_t or uint64_t. */
#define OSC_SWY_DEFINE_WORD_OPS(T, BITS)                                                           \
    static T word_apply_##BITS(const osc_swy_acc_apply_t* a, T* p, T operand) {                    \
        switch (a->wire_op) {                                                                      \
            case OSC_SWY_ACC_OP_NO_OP: return __atomic_load_n(p, __ATOMIC_SEQ_CST);                \
            case OSC_SWY_ACC_OP_REPLACE: return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST); \
            default: break;                                                                        \
        }                                                                                          \
        if (a->integer) {                                                                          \
            switch (a->wire_op) {                                                                  \
                case OSC_SWY_ACC_OP_SUM: return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);  \
                case OSC_SWY_ACC_OP_BAND: return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST); \
                case OSC_SWY_ACC_OP_BOR: return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);   \
                case OSC_SWY_ACC_OP_BXOR: return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST); \
                default: break;                                                                    \
            }                                                                                      \
        }                                                                                          \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                              \
        T desired;                                                                                 \
        do {                                                                                       \
            T source = operand;                                                                    \
            desired = old;                                                                         \
            ompi_op_reduce(a->op, &source, &desired, 1, a->dt);                                    \
        } while (!__atomic_compare_exchange_n(p, &old, desired, false, __ATOMIC_SEQ_CST,           \
                                              __ATOMIC_RELAXED));                                  \
        return old;                                                                                \
    }
OSC_SWY_DEFINE_WORD_OPS(uint32_t, 32)
OSC_SWY_DEFINE_WORD_OPS(uint64_t, 64)
#undef OSC_SWY_DEFINE_WORD_OPS

static bool word_sized(const osc_swy_acc_apply_t* a, const void* target) {
    /* extent == size: a pair type with padding inside its extent (none has 4 or 8 bytes
     * of data, but the check keeps the claim "the whole element is one word" true). */
    return (a->size == 4 || a->size == 8) && a->extent == a->size &&
           ((uintptr_t)target & (a->size - 1)) == 0;
}

static void run_words(const osc_swy_acc_apply_t* a, unsigned char* target,
                      const unsigned char* operands, unsigned char* old_values, size_t count) {
    const size_t size = a->size;
    for (size_t i = 0; i < count; ++i) {
        if (4 == size) {
            uint32_t operand = 0, old;
            if (NULL != operands) {
                memcpy(&operand, operands + i * 4, 4); /* operands may be unaligned */
            }
            old = word_apply_32(a, (uint32_t*)(void*)(target + i * 4), operand);
            if (NULL != old_values) {
                memcpy(old_values + i * 4, &old, 4);
            }
        } else {
            uint64_t operand = 0, old;
            if (NULL != operands) {
                memcpy(&operand, operands + i * 8, 8);
            }
            old = word_apply_64(a, (uint64_t*)(void*)(target + i * 8), operand);
            if (NULL != old_values) {
                memcpy(old_values + i * 8, &old, 8);
            }
        }
    }
}

/* ---- everything else: under the window's accumulate lock --------------------------------- */

/* The largest power of two dividing n, at most 16: the alignment a reduction function may
 * assume for a packed array of elements of n bytes. */
static size_t natural_alignment(size_t n) {
    size_t a = n & (~n + 1);
    return a > 16 ? 16 : a;
}

static void reduce_locked(const osc_swy_acc_apply_t* a, unsigned char* target,
                          const unsigned char* operands, size_t count) {
    const size_t size = a->size;
    const size_t align = natural_alignment(size);
    if (a->extent == size && ((uintptr_t)target & (align - 1)) == 0 &&
        ((uintptr_t)operands & (align - 1)) == 0) {
        ompi_op_reduce(a->op, (void*)operands, target, count, a->dt);
        return;
    }
    /* Elements packed by size but laid out by extent (MPI_DOUBLE_INT), or misaligned: one at
     * a time through aligned copies, so the reduction function sees its own layout. */
    _Alignas(16) unsigned char src[OSC_SWY_ACC_MAX_ELEMENT];
    _Alignas(16) unsigned char dst[OSC_SWY_ACC_MAX_ELEMENT];
    for (size_t i = 0; i < count; ++i) {
        memcpy(src, operands + i * size, size);
        memcpy(dst, target + i * size, size);
        ompi_op_reduce(a->op, src, dst, 1, a->dt);
        memcpy(target + i * size, dst, size);
    }
}

static void run_locked(const osc_swy_acc_apply_t* a, unsigned char* target,
                       const unsigned char* operands, unsigned char* old_values, size_t count,
                       uint64_t* lock) {
    const size_t bytes = count * a->size;
    acc_lock(lock);
    if (NULL != old_values) {
        memcpy(old_values, target, bytes);
    }
    switch (a->wire_op) {
        case OSC_SWY_ACC_OP_NO_OP: break;
        case OSC_SWY_ACC_OP_REPLACE: memmove(target, operands, bytes); break;
        default: reduce_locked(a, target, operands, count); break;
    }
    acc_unlock(lock);
}

void osc_swy_acc_apply_run(const osc_swy_acc_apply_t* a, void* target, const void* operands,
                           void* old_values, size_t count, uint64_t* lock) {
    if (0 == count) {
        return;
    }
    if (OSC_SWY_ACC_OP_NO_OP == a->wire_op) {
        operands = NULL;
        if (NULL == old_values) {
            return; /* accumulate with MPI_NO_OP: nothing to do */
        }
    }
    if (word_sized(a, target)) {
        run_words(a, target, operands, old_values, count);
    } else {
        run_locked(a, target, operands, old_values, count, lock);
    }
}

void osc_swy_acc_apply_cas(const osc_swy_acc_apply_t* a, void* target, const void* operand,
                           const void* compare, void* old_value, uint64_t* lock) {
    if (word_sized(a, target)) {
        if (4 == a->size) {
            uint32_t expected, desired;
            memcpy(&expected, compare, 4);
            memcpy(&desired, operand, 4);
            __atomic_compare_exchange_n((uint32_t*)target, &expected, desired, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            memcpy(old_value, &expected, 4); /* the old value whether or not it swapped */
        } else {
            uint64_t expected, desired;
            memcpy(&expected, compare, 8);
            memcpy(&desired, operand, 8);
            __atomic_compare_exchange_n((uint64_t*)target, &expected, desired, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            memcpy(old_value, &expected, 8);
        }
        return;
    }
    acc_lock(lock);
    memcpy(old_value, target, a->size);
    if (0 == memcmp(target, compare, a->size)) {
        memcpy(target, operand, a->size);
    }
    acc_unlock(lock);
}
