/*
 * osc swy accumulate, origin side of the message path: turns one accumulate-family call into
 * request messages (osc_swy_acc_wire.h) and completes it from the replies.
 */
#ifndef OSC_SWY_ACC_ORIGIN_H
#define OSC_SWY_ACC_ORIGIN_H

#include "osc_swy_accumulate.h"

/** One call of the accumulate family on the message path, as the entry points describe it. */
typedef struct ompi_osc_swy_acc_call {
    uint8_t kind; /**< enum osc_swy_acc_kind */
    uint8_t wire_op;
    const void* origin_addr; /**< operands (unused for MPI_NO_OP) */
    int origin_count;
    ompi_datatype_t* origin_dt;
    const void* compare_addr; /**< compare_and_swap: the value compared (one element) */
    void* result_addr;        /**< get_accumulate / compare_and_swap: old values */
    int result_count;
    ompi_datatype_t* result_dt;
    int target;
    uint64_t target_addr; /**< the target displacement's address (ompi_osc_swy_target) */
    int target_count;
    ompi_datatype_t* target_dt;
    ompi_datatype_t* element;        /**< the one predefined type of target_dt */
    ompi_osc_swy_request_t* request; /**< raccumulate / rget_accumulate, else NULL */
} ompi_osc_swy_acc_call_t;

/**
 * Start @p call: send its requests (waiting first as the ordering rules of
 * osc_swy_accumulate.h require). @p call->request, if any, gets one reference that the last
 * reply drops. @return OMPI_SUCCESS (an error met after some requests were sent becomes
 * the operation's status and the next flush's), or an error with nothing sent and the
 * request untouched (MPI_ERR_TYPE for operands that do not match the target's elements,
 * MPI_ERR_NO_MEM).
 */
int ompi_osc_swy_acc_start(ompi_osc_swy_module_t* module, const ompi_osc_swy_acc_call_t* call);

/**
 * Call @p fn for each run of whole elements (@p size bytes each) the target datatype of
 * @p call covers, in type-map order: @p addr in the target's address space, @p count
 * elements; adjacent pieces are merged. @return MPI_SUCCESS, MPI_ERR_TYPE (a run that is not
 * whole elements), or the first error @p fn returned (which stops the walk).
 */
int ompi_osc_swy_acc_walk_runs(const ompi_osc_swy_acc_call_t* call, size_t size,
                               int (*fn)(void* ctx, uint64_t addr, size_t count), void* ctx);

/** Progress until no request to @p target (-1: any) is unanswered. */
void ompi_osc_swy_acc_drain(ompi_osc_swy_module_t* module, int target);

/**
 * The same-host shortcut (osc_swy_acc_direct.c): apply @p call at the origin when the
 * target's window (@p direct: the local pointer of call->target_addr, or NULL) and control
 * area are mapped here and the MCA parameter osc_swy_acc_direct allows it.
 * @return false: not applicable, nothing done; true: done (complete at the target), *rc the
 * result (MPI_ERR_TYPE for operands that do not match the target's elements).
 */
bool ompi_osc_swy_acc_direct(ompi_osc_swy_module_t* module, const ompi_osc_swy_acc_call_t* call,
                             char* direct, int* rc);

/** Before applying at the origin: wait for what was sent to @p target earlier (requests and
 *  Switchyard atomics), when the window keeps accumulate ordering. */
void ompi_osc_swy_acc_order_before_direct(ompi_osc_swy_module_t* module, int target);

/** Free the operation table (window free; nothing is outstanding then). */
void ompi_osc_swy_acc_ops_fini(ompi_osc_swy_acc_state_t* acc);

#endif /* OSC_SWY_ACC_ORIGIN_H */
