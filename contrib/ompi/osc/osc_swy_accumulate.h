/*
 * osc swy: state of the accumulate family (accumulate, get_accumulate, fetch_and_op,
 * compare_and_swap, raccumulate, rget_accumulate), behind ompi_osc_swy_module_t.acc.
 *
 * Paths:
 *   - fetch_and_op on 4/8-byte integers with SUM, BAND, BOR, BXOR, REPLACE or NO_OP, and
 *     compare_and_swap on 4/8-byte types: one swy_atomic_nb (a CPU atomic on the target
 *     word, by this process where the window is mapped here, else by the target).
 *   - any other operation on a window mapped here (MPI_Win_allocate, same host): applied by
 *     the origin itself with the target's engine and lock (osc_swy_acc_direct.c).
 *   - everything else: a request active message (osc_swy_acc_wire.h) applied by the
 *     target's progress (osc_swy_acc_target.c, osc_swy_acc_apply.c), answered by a reply
 *     that carries the old values (get_accumulate) or only the status (accumulate). Large
 *     operations are split into requests of at most OSC_SWY_ACC_MAX_CHUNK operand bytes.
 * Completion: every request is counted per target until its reply arrives; flush, unlock,
 * complete and fence wait for that count (ompi_osc_swy_acc_flush) and report the first error
 * a target sent back (MPI_ERR_RMA_RANGE for an address outside its window).
 * Ordering (MPI's default accumulate_ordering rar,raw,war,waw; info "none" turns it off):
 * requests to one target are applied in send order, except that a rendezvous request is
 * applied when its data has been pulled, so nothing else is sent to that target until it is
 * answered; and the two paths (atomics, requests) are drained before switching between
 * them for one target.
 */
#ifndef OSC_SWY_ACCUMULATE_H
#define OSC_SWY_ACCUMULATE_H

#include "osc_swy.h"

#include "opal/threads/mutex.h"

struct ompi_osc_swy_acc_op;

/** Accumulate state of one target at this origin. */
typedef struct ompi_osc_swy_acc_peer {
    int outstanding;    /**< requests sent to it and not answered */
    bool rndv_inflight; /**< one of them went rendezvous: send nothing more until answered */
    int error;          /**< first error a reply reported since the last flush (OMPI code) */
} ompi_osc_swy_acc_peer_t;

/** module->acc. Under MPI_THREAD_MULTIPLE, `lock` guards the operation table, the per-target
 *  counts and errors (application threads start operations while progress answers them);
 *  it is never held across a Switchyard call, whose worker lock a handler already holds. */
typedef struct ompi_osc_swy_acc_state {
    opal_mutex_t lock;
    ompi_osc_swy_acc_peer_t* peers; /**< [nranks] */
    /* Operations waiting for replies, found by op_id = generation << 32 | slot. */
    struct ompi_osc_swy_acc_op** ops; /**< [ops_capacity], NULL = never used */
    uint32_t ops_capacity;
    uint32_t* free_slots; /**< stack of free slot indices */
    uint32_t free_count;
    bool ordered; /**< info accumulate_ordering is not "none" */
    /* Messages refused as malformed (never applied), for diagnostics (atomic). */
    uint64_t refused;
    /* Target side: rendezvous requests whose data is still being pulled (atomic); the
     * window is not freed under them. */
    int pulls;
} ompi_osc_swy_acc_state_t;

/** Register the accumulate family's MCA parameters (osc_swy_acc_direct); called from the
 *  component's register function. */
void ompi_osc_swy_acc_register(const mca_base_component_t* version);

/* Target side (osc_swy_acc_target.c). */

/** Handle a request message from rank @p source (already checked by the dispatcher). */
swy_status_t ompi_osc_swy_acc_handle_request(ompi_osc_swy_module_t* module, int source,
                                             const void* header, size_t header_length, void* data,
                                             size_t data_length, const swy_am_recv_param_t* param);

/* Origin side (osc_swy_accumulate.c). */

/** Handle a reply message from rank @p source. */
swy_status_t ompi_osc_swy_acc_handle_reply(ompi_osc_swy_module_t* module, int source,
                                           const void* header, size_t header_length, void* data,
                                           size_t data_length, const swy_am_recv_param_t* param);

#endif /* OSC_SWY_ACCUMULATE_H */
