/*
 * pml swy: an Open MPI 4.1 point-to-point messaging layer (PML) component that carries MPI
 * messages over Switchyard's tagged API. Built out of tree against Debian's installed Open
 * MPI headers; loaded by an unmodified mpirun (see README.md).
 *
 * Shape: one Switchyard context and worker per process (created at component init), worker
 * addresses published through the modex, endpoints created on first send to a peer, MPI
 * matching done by Switchyard's tag matcher (tag layout in pml_swy_tag.h), progress driven
 * from opal_progress(). Requests are ompi_request_t subclasses from an opal_free_list; each
 * holds the Switchyard request handle of the operation it stands for, and the Switchyard
 * request itself lives at its end (swy_space, SWY_REQ_PARAM_FIELD_REQUEST): one allocation.
 * Per-communicator lookups (peer endpoints, the send tag's fixed fields) are cached in
 * comm->c_pml_comm.
 */
#ifndef PML_SWY_H
#define PML_SWY_H

#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "opal/class/opal_free_list.h"
#include "opal/class/opal_pointer_array.h"
#include "opal/runtime/opal_progress.h"
#include "opal/threads/mutex.h"
#include "opal/util/output.h"

#include <sched.h>
#include <switchyard/switchyard.h>

#include "pml_swy_tag.h"

/** The module: Open MPI's function table first, then this process's Switchyard state. */
typedef struct mca_pml_swy_module {
    mca_pml_base_module_t super;

    swy_context_h context;
    swy_worker_h worker;

    /** Bytes at the end of each request for its Switchyard request (swy_space), from
     *  swy_worker_query(SWY_WORKER_ATTR_FIELD_REQUEST_SIZE); 0: Switchyard's pool is used. */
    size_t swy_request_size;
    /** Bumped by del_procs (endpoints closed): every communicator's cached endpoints are
     *  dropped at their next use. */
    unsigned eps_epoch;
    /** Every request this PML hands out (non-persistent and persistent). */
    opal_free_list_t requests;
    bool requests_ready;
    /** Returned by isend when Switchyard completed the send in place: no request to wait on. */
    ompi_request_t completed_send_req;
    /** A request taken from the free list and offered to the next MPI_Isend (its user_data
     *  and request memory) without being initialised or handed to Open MPI: a send that
     *  completes in place leaves it here for the next one, so such a send costs no free-list
     *  get, init and return. Only without MPI_THREAD_MULTIPLE (see mca_pml_swy_isend). */
    struct mca_pml_swy_request* spare_send;

    /* Derived datatypes (pml_swy_datatype.c). */
    opal_free_list_t dt_states; /**< convertor states of operations in flight */
    bool dt_states_ready;
    opal_mutex_t dt_lock; /**< serialises making an MPI type's generic Switchyard type */
    int dt_keyval;        /**< TYPE_ATTR key that destroys it with the MPI type */
    /** Every MPI type whose pml_data holds a generic Switchyard type (cleanup drops them). */
    opal_pointer_array_t dt_cached;

    /* MCA parameters (pml_swy_*) */
    int priority;
    int verbose;
    int progress_iterations;
    /** pml_swy_single_node: a job whose processes all share this node opens no network
     *  transport (SWY_TLS=^tcp,verbs unless the user set SWY_TLS): see mca_pml_swy_init. */
    bool single_node;
    int output; /**< opal_output stream with pml_swy_verbose as its verbosity */
} mca_pml_swy_module_t;

/** The component Open MPI's loader looks up by name (the only exported symbol). */
OMPI_MODULE_DECLSPEC extern mca_pml_base_component_2_0_0_t mca_pml_swy_component;
extern mca_pml_swy_module_t ompi_pml_swy;

/* ---- lifetime (pml_swy.c) ---------------------------------------------------------------- */

/** Create the Switchyard context and worker, publish the address, register progress.
 *  @return OMPI_SUCCESS or OMPI_ERROR (the reason is logged). */
int mca_pml_swy_init(int enable_mpi_threads);
/** Undo mca_pml_swy_init: unregister progress, destroy worker and context. */
int mca_pml_swy_cleanup(void);

/* ---- module functions (the mca_pml_base_module_t table) --------------------------------- */

/** Nothing is connected here: endpoints are created on first send (mca_pml_swy_get_ep). */
int mca_pml_swy_add_procs(struct ompi_proc_t** procs, size_t nprocs);
/** Flush and close the endpoints of @p procs that were connected. */
int mca_pml_swy_del_procs(struct ompi_proc_t** procs, size_t nprocs);
/** Called on the selected PML only; logs "pml swy selected" at verbosity 1. */
int mca_pml_swy_enable(bool enable);
/** opal_progress callback: one Switchyard progress pass. @return events processed. */
int mca_pml_swy_progress(void);
/** Refuses communicators whose ranks or context id do not fit the tag layout. */
int mca_pml_swy_add_comm(struct ompi_communicator_t* comm);
/** Nothing to undo: communicators hold no PML state. */
int mca_pml_swy_del_comm(struct ompi_communicator_t* comm);

/*
 * The MPI entry points below implement the mca_pml_base_module_t contract of
 * ompi/mca/pml/pml.h (arguments already validated by the MPI layer; MPI_PROC_NULL handled
 * there). They return OMPI_SUCCESS or an OMPI/MPI error code; a receive's status carries
 * MPI_ERR_TRUNCATE when the message was longer than the buffer.
 */

/** Persistent receive (MPI_Recv_init): inactive until mca_pml_swy_start. */
int mca_pml_swy_irecv_init(void* buf, size_t count, ompi_datatype_t* datatype, int src, int tag,
                           struct ompi_communicator_t* comm, struct ompi_request_t** request);
/** MPI_Irecv: posts a Switchyard tagged receive; completes by callback. */
int mca_pml_swy_irecv(void* buf, size_t count, ompi_datatype_t* datatype, int src, int tag,
                      struct ompi_communicator_t* comm, struct ompi_request_t** request);
/** MPI_Recv: polls its own Switchyard request (no PML request); fills @p status. */
int mca_pml_swy_recv(void* buf, size_t count, ompi_datatype_t* datatype, int src, int tag,
                     struct ompi_communicator_t* comm, ompi_status_public_t* status);
/** Persistent send (MPI_Send_init family, any mode); connects to @p dst now. */
int mca_pml_swy_isend_init(const void* buf, size_t count, ompi_datatype_t* datatype, int dst,
                           int tag, mca_pml_base_send_mode_t mode, struct ompi_communicator_t* comm,
                           struct ompi_request_t** request);
/** MPI_Isend / Issend / Ibsend / Irsend. A send completed in place returns the shared
 *  completed request. */
int mca_pml_swy_isend(const void* buf, size_t count, ompi_datatype_t* datatype, int dst, int tag,
                      mca_pml_base_send_mode_t mode, struct ompi_communicator_t* comm,
                      struct ompi_request_t** request);
/** MPI_Send / Ssend / Bsend / Rsend. */
int mca_pml_swy_send(const void* buf, size_t count, ompi_datatype_t* datatype, int dst, int tag,
                     mca_pml_base_send_mode_t mode, struct ompi_communicator_t* comm);
/** MPI_Iprobe: one probe; on a miss, one progress step. */
int mca_pml_swy_iprobe(int src, int tag, struct ompi_communicator_t* comm, int* matched,
                       ompi_status_public_t* status);
/** MPI_Probe: probes and progresses until a match. */
int mca_pml_swy_probe(int src, int tag, struct ompi_communicator_t* comm,
                      ompi_status_public_t* status);
/** MPI_Improbe: a match is removed from matching and returned as @p message. */
int mca_pml_swy_improbe(int src, int tag, struct ompi_communicator_t* comm, int* matched,
                        struct ompi_message_t** message, ompi_status_public_t* status);
/** MPI_Mprobe: blocking form of improbe. */
int mca_pml_swy_mprobe(int src, int tag, struct ompi_communicator_t* comm,
                       struct ompi_message_t** message, ompi_status_public_t* status);
/** MPI_Imrecv: receive a message taken by (i)mprobe; *message becomes MPI_MESSAGE_NULL. */
int mca_pml_swy_imrecv(void* buf, size_t count, ompi_datatype_t* datatype,
                       struct ompi_message_t** message, struct ompi_request_t** request);
/** MPI_Mrecv: blocking form of imrecv. */
int mca_pml_swy_mrecv(void* buf, size_t count, ompi_datatype_t* datatype,
                      struct ompi_message_t** message, ompi_status_public_t* status);
/** MPI_Start / MPI_Startall on persistent requests made by *_init above. */
int mca_pml_swy_start(size_t count, ompi_request_t** requests);
/** Prints the Switchyard endpoint of every connected peer of @p comm (protocol tables with
 *  @p verbose > 0). */
int mca_pml_swy_dump(struct ompi_communicator_t* comm, int verbose);

/* ---- shared helpers ---------------------------------------------------------------------- */

/** Connect to @p proc (slow path of mca_pml_swy_get_ep). NULL on failure (logged). */
swy_ep_h mca_pml_swy_connect(ompi_proc_t* proc);

/**
 * What each communicator keeps for this PML (comm->c_pml_comm, made by add_comm, freed by
 * del_comm), so that a send or receive looks nothing up per call: the endpoint of every peer
 * rank (filled on first use) and the rank and context-id fields of this process's send tags.
 * (Receive tags need only c_contextid, one load.)
 */
struct mca_pml_comm_t {
    swy_tag_t send_tag_base; /**< pml_swy_send_tag(0, my rank, context id) */
    int size;                /**< peers: the remote group's size for an intercommunicator */
    unsigned eps_epoch;      /**< ompi_pml_swy.eps_epoch when eps was last valid */
    swy_ep_h eps[];          /**< by peer rank; NULL until the first send to it */
};

/** Endpoint to rank @p rank of @p comm when not cached yet: connect, then cache it. */
swy_ep_h mca_pml_swy_get_ep_slow(ompi_communicator_t* comm, int rank);

/** The endpoint to rank @p rank that @p pc (a communicator's c_pml_comm, may be NULL) has
 *  cached and that is still valid; NULL when there is none (then mca_pml_swy_get_ep_slow). */
static inline swy_ep_h mca_pml_swy_cached_ep(const struct mca_pml_comm_t* pc, int rank) {
    return OPAL_LIKELY(pc != NULL && pc->eps_epoch == ompi_pml_swy.eps_epoch) ? pc->eps[rank]
                                                                              : NULL;
}

/** Endpoint to rank @p rank of @p comm, connecting on first use. NULL on failure. */
static inline swy_ep_h mca_pml_swy_get_ep(ompi_communicator_t* comm, int rank) {
    swy_ep_h ep = mca_pml_swy_cached_ep(comm->c_pml_comm, rank);
    return OPAL_LIKELY(ep != NULL) ? ep : mca_pml_swy_get_ep_slow(comm, rank);
}

/** Tag of a message this process sends with MPI tag @p tag on @p comm. */
static inline swy_tag_t mca_pml_swy_comm_send_tag(ompi_communicator_t* comm, int tag) {
    const struct mca_pml_comm_t* pc = comm->c_pml_comm;
    if (OPAL_UNLIKELY(pc == NULL)) {
        return pml_swy_send_tag(tag, comm->c_my_rank, comm->c_contextid);
    }
    return pml_swy_send_tag_at(tag, pc->send_tag_base);
}

/**
 * One step of a blocking wait: a direct Switchyard progress pass, and every
 * pml_swy_progress_iterations-th step a full opal_progress() so that the rest of Open MPI
 * (runtime events, other frameworks) is not starved while we spin. @p countdown is the
 * caller's counter: start it at pml_swy_progress_iterations (0 runs opal_progress first).
 * When Open MPI yields when idle (mpirun sets it on an oversubscribed node), a pass that
 * found nothing gives the core away, as opal_progress() does: the peer this wait needs may
 * be the process waiting for this core.
 */
static inline void mca_pml_swy_wait_step(unsigned* countdown) {
    if (OPAL_LIKELY(*countdown > 1)) {
        --*countdown;
        if (swy_worker_progress(ompi_pml_swy.worker) == 0 &&
            OPAL_UNLIKELY(opal_progress_yield_when_idle)) {
            sched_yield();
        }
    } else {
        *countdown = (unsigned)ompi_pml_swy.progress_iterations;
        opal_progress();
    }
}

/** What osc swy shares of this PML (one Switchyard worker per process): the context, the
 *  worker and a connect-on-first-use endpoint lookup. Layout mirrored by osc_swy.h. */
typedef struct mca_pml_swy_shared_worker {
    swy_context_h context;
    swy_worker_h worker;
    swy_ep_h (*ep_for_proc)(ompi_proc_t* proc);
} mca_pml_swy_shared_worker_t;

/** Exported (found by osc swy with dlsym): this PML's worker, or NULL before init. */
OMPI_MODULE_DECLSPEC const mca_pml_swy_shared_worker_t* mca_pml_swy_shared_worker(void);

/** Map a Switchyard error to an MPI error class (for statuses and return codes). */
int mca_pml_swy_mpi_error(swy_status_t status);

#endif /* PML_SWY_H */
