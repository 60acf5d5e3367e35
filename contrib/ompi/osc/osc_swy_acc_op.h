/*
 * osc swy accumulate, origin side: the operations waiting for replies (a table indexed by
 * op id = generation << 32 | slot, so a stale or forged id never matches), their completion,
 * and the handling of replies. Internal to osc_swy_acc_origin.c and osc_swy_acc_op.c.
 */
#ifndef OSC_SWY_ACC_OP_H
#define OSC_SWY_ACC_OP_H

#include "osc_swy_acc_origin.h"

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

/** A free operation, busy from now on; *op_id names it in requests. Call with acc->lock held.
 *  NULL on OOM. */
ompi_osc_swy_acc_op_t* ompi_osc_swy_acc_op_alloc(ompi_osc_swy_acc_state_t* acc, uint64_t* op_id);

/** Drop one pending reference of @p op; the last one unpacks the results, completes the MPI
 *  request and frees the operation. Call with acc->lock held. */
void ompi_osc_swy_acc_op_put(ompi_osc_swy_module_t* module, ompi_osc_swy_acc_op_t* op,
                             uint64_t op_id);

/** Keep the first error: store @p error in *@p slot if that holds MPI_SUCCESS. */
void ompi_osc_swy_acc_record_error(int* slot, int error);

/** Pull a rendezvous active message's data (@p desc) into @p buffer: @p done(arg) runs once,
 *  from progress when the pull goes on, or from here when it ends at once (either way with
 *  the pull's status and receive info). */
void ompi_osc_swy_acc_pull(swy_worker_h worker, void* desc, void* buffer, size_t length,
                           swy_recv_cb_t done, void* arg);

#endif /* OSC_SWY_ACC_OP_H */
