/*
 * osc swy accumulate: the target-side apply engine. Applies one reduction op to runs of
 * elements of one predefined type in window memory, optionally returning the old values,
 * with the atomicity MPI asks of accumulates:
 *   - 4- and 8-byte elements at addresses aligned to their size are updated with CPU atomic
 *     instructions (fetch-add/and/or/xor, exchange, or a compare-and-swap loop around the
 *     Open MPI reduction function). Switchyard's atomicity mode "cpu" makes every
 *     swy_atomic_nb on the window (a peer's fetch_and_op applied directly to the mapped
 *     memory, concurrently with us) the same kind of instruction on the same word, so the
 *     two never lose an update.
 *   - every other element (1, 2, 12, 16... bytes, or misaligned) is applied under the
 *     window's accumulate lock, which only this engine takes; no Switchyard atomic reaches
 *     such elements, so the lock alone serialises them.
 * Knows nothing about the wire or the window: the caller validates and resolves addresses.
 */
#ifndef OSC_SWY_ACC_APPLY_H
#define OSC_SWY_ACC_APPLY_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

/** Largest element (size and extent) the engine handles: every predefined MPI type fits. */
enum { OSC_SWY_ACC_MAX_ELEMENT = 64 };

/** A decoded (element type, op) pair, ready to apply. */
typedef struct osc_swy_acc_apply {
    ompi_datatype_t* dt; /**< predefined element type */
    ompi_op_t* op;       /**< reduction (NULL for REPLACE and NO_OP, applied here) */
    size_t size;         /**< element size in bytes (packed) */
    size_t extent;       /**< element extent (may exceed size: MPI_DOUBLE_INT) */
    uint8_t wire_op;     /**< enum osc_swy_acc_op */
    bool integer;        /**< two's-complement integer: SUM/BAND/BOR/BXOR map onto CPU ops */
} osc_swy_acc_apply_t;

/**
 * Decode and check an element type id and wire op as received from a peer.
 * @return OMPI_SUCCESS; MPI_ERR_TYPE (no such predefined type, or too large); MPI_ERR_OP
 *         (unknown op, or an op MPI does not define on the type, e.g. BAND on double).
 */
int osc_swy_acc_apply_decode(uint32_t element_type, uint32_t wire_op, osc_swy_acc_apply_t* out);

/** The wire code of an Open MPI op, or 0 if it is not a predefined one. */
uint8_t osc_swy_acc_wire_op(const ompi_op_t* op);

/** The Open MPI op of a wire code (REPLACE and NO_OP included); NULL if invalid. */
ompi_op_t* osc_swy_acc_ompi_op(uint32_t wire_op);

/**
 * Apply the op to @p count elements stored contiguously (by size, as packed data) at
 * @p target. @p operands: @p count packed elements, any alignment (unused for NO_OP).
 * @p old_values: NULL, or room for @p count packed elements that receive the values
 * before the update (each read atomically with its update). @p lock: the window's
 * accumulate lock (0 = free; the control area's acc_lock). Never fails: the caller validated everything.
 */
void osc_swy_acc_apply_run(const osc_swy_acc_apply_t* a, void* target, const void* operands,
                           void* old_values, size_t count, uint64_t* lock);

/**
 * Compare-and-swap one element: if the bytes at @p target equal @p compare, store
 * @p operand. @p old_value receives the bytes before (always).
 */
void osc_swy_acc_apply_cas(const osc_swy_acc_apply_t* a, void* target, const void* operand,
                           const void* compare, void* old_value, uint64_t* lock);

#endif /* OSC_SWY_ACC_APPLY_H */
