/*
 * osc swy: an Open MPI 4.1 one-sided (MPI RMA) component over Switchyard's one-sided API
 * (switchyard/rma.h). Built out of tree against Debian's installed Open MPI headers, like
 * pml swy; see README.md in this directory for the design.
 *
 * Shape: one Switchyard worker per process -- pml swy's when pml swy is the selected PML
 * (found through its exported accessor, mca_pml_swy_shared_worker), else one the component
 * creates itself (worker addresses exchanged by an allgather on each window's communicator,
 * progress registered with opal_progress). Each window maps its memory with swy_mem_map and a
 * small control area (lock word, PSCW counters, the dynamic window's region table) with
 * SWY_MEM_MAP_ALLOCATE, so that same-host peers drive locks and counters with CPU atomics and
 * reach MPI_Win_allocate memory by load/store (swy_rkey_ptr). Everything else goes through
 * swy_put_nb / swy_get_nb / swy_atomic_nb, and completion through swy_ep_flush_nb.
 *
 * The accumulate family lives in osc_swy_accumulate.c (its own state behind module->acc and
 * the hooks declared at the end of this file).
 */
#ifndef OSC_SWY_H
#define OSC_SWY_H

#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/request/request.h"
#include "ompi/win/win.h"
#include "opal/class/opal_hash_table.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

#include <switchyard/switchyard.h>

/** Largest packed remote key we exchange (Switchyard's keys are 64 bytes, docs/rma.md). */
#define OSC_SWY_RKEY_MAX 64

/** Active-message id of the window messages (one handler per worker, dispatching by window). */
#define OSC_SWY_AM_ID 0x4f53

/** Lock word (ompi_osc_swy_ctrl_t.lock): this bit is the exclusive holder, the bits below
 *  count shared holders (and shared requesters backing off). */
#define OSC_SWY_LOCK_EXCLUSIVE (UINT64_C(1) << 62)

/* ---- the control area every rank exposes per window ------------------------------------- */

/** One region attached to a dynamic window, as peers read it from the owner's table. */
typedef struct ompi_osc_swy_region {
    uint64_t base;                  /**< start of the region in the owner's address space */
    uint64_t size;                  /**< bytes */
    uint64_t rkey_length;           /**< bytes used in rkey */
    uint8_t rkey[OSC_SWY_RKEY_MAX]; /**< packed key of the region's mapping */
} ompi_osc_swy_region_t;

/**
 * The fixed head of a rank's control area (allocated by swy_mem_map, so same-host peers run
 * their atomics on it directly). After the head come, at offsets ompi_osc_swy_ctrl_post_off()
 * etc.: post[nranks], complete[nranks] (uint64_t each) and, for dynamic windows, the region
 * table (max_attach entries of ompi_osc_swy_region_t).
 */
typedef struct ompi_osc_swy_ctrl {
    uint64_t lock;        /**< passive-target lock: OSC_SWY_LOCK_EXCLUSIVE | shared count */
    uint64_t acc_lock;    /**< for osc_swy_accumulate.c: serialises accumulates at this rank */
    uint64_t dyn_gen;     /**< dynamic windows: region table generation (odd while written) */
    uint64_t dyn_count;   /**< dynamic windows: entries in use in the region table */
    uint64_t acc_word[4]; /**< reserved for osc_swy_accumulate.c */
} ompi_osc_swy_ctrl_t;

/* ---- per-target state at the origin ----------------------------------------------------- */

/** A dynamic window's region as cached by an origin (key unpacked on the target's endpoint). */
typedef struct ompi_osc_swy_dyn_entry {
    uint64_t base;
    uint64_t size;
    swy_rkey_h rkey;
    char* direct; /**< swy_rkey_ptr of base, or NULL */
} ompi_osc_swy_dyn_entry_t;

/** What an origin knows about one target rank of a window. */
typedef struct ompi_osc_swy_peer {
    swy_ep_h ep;          /**< endpoint to the rank (pml swy's, or the component's cache) */
    uint64_t base;        /**< window memory in the target's address space (0: none/dynamic) */
    size_t size;          /**< window bytes at the target */
    int disp_unit;        /**< the target's displacement unit */
    swy_rkey_h rkey;      /**< window memory key; NULL when size is 0 or the window is dynamic */
    char* direct;         /**< base reachable by load/store here (swy_rkey_ptr), or NULL */
    uint64_t ctrl_addr;   /**< the target's control area */
    swy_rkey_h ctrl_rkey; /**< its key */
    ompi_osc_swy_ctrl_t* ctrl_direct; /**< the control area by load/store, or NULL */
    int lock_type;     /**< lock this origin holds on the target: 0, MPI_LOCK_SHARED/EXCLUSIVE */
    bool lock_nocheck; /**< the lock was taken with MPI_MODE_NOCHECK (nothing to release) */
    bool pscw_access;  /**< the target is in the current MPI_Win_start group */
    int outstanding;   /**< Switchyard operations to it not yet locally complete (atomic) */
    int error;         /**< first OMPI error of such an operation (reported by the flush) */
    /* dynamic windows: regions cached from the target's table */
    ompi_osc_swy_dyn_entry_t* dyn;
    int dyn_count;
    uint64_t dyn_gen; /**< generation of the cached table */
    bool dyn_verify;  /**< check the generation before trusting the cache (set at epoch start) */
} ompi_osc_swy_peer_t;

/** A region this rank attached to its dynamic window. */
typedef struct ompi_osc_swy_attached {
    char* base;
    size_t size;
    swy_mem_h mem;
    int refs; /**< MPI allows attaching the same region more than once */
} ompi_osc_swy_attached_t;

struct ompi_osc_swy_acc_state; /* osc_swy_accumulate.h */

/** The window module: Open MPI's function table first. */
typedef struct ompi_osc_swy_module {
    ompi_osc_base_module_t super;
    struct ompi_win_t* win;
    ompi_communicator_t* comm; /**< private dup of the window's communicator */
    uint32_t win_id;           /**< comm's context id: the same at every rank, unique here */
    int rank;
    int nranks;
    int flavor; /**< MPI_WIN_FLAVOR_* */

    swy_context_h context;
    swy_worker_h worker;

    /* this rank's window memory */
    char* base;
    size_t size;
    int disp_unit;
    swy_mem_h mem;  /**< its mapping (NULL: size 0, dynamic, shared non-owner) */
    bool free_base; /**< base came from swy_mem_map ALLOCATE (unmap frees it) */

    /* this rank's control area */
    swy_mem_h ctrl_mem;
    ompi_osc_swy_ctrl_t* ctrl;
    size_t ctrl_size;

    ompi_osc_swy_peer_t* peers; /**< [nranks] */

    /* epochs (origin side) */
    bool fence_open; /**< a fence opened an epoch (no MPI_MODE_NOSUCCEED) */
    bool lock_all;   /**< inside lock_all */
    bool lock_all_nocheck;
    int passive_locks; /**< targets locked with MPI_Win_lock */
    int* start_ranks;  /**< PSCW access group (window ranks), NULL outside */
    int start_n;
    int* post_ranks; /**< PSCW exposure group (window ranks), NULL outside */
    int post_n;
    uint64_t* post_seen;     /**< [nranks]: posts from each rank already consumed */
    uint64_t* complete_seen; /**< [nranks]: completes from each rank already consumed */

    /* dynamic windows (target side) */
    ompi_osc_swy_attached_t* attached;
    int attached_count;
    int max_attach;

    /* hints */
    bool no_locks; /**< info no_locks=true */

    /** Owned by osc_swy_accumulate.c (created by ompi_osc_swy_acc_init). */
    struct ompi_osc_swy_acc_state* acc;
} ompi_osc_swy_module_t;

/** Exported by pml swy (pml_swy.c) for osc swy: its context and worker, and the endpoint to
 *  a process (connecting on first use). Looked up with dlsym so that osc swy also loads
 *  without pml swy. */
typedef struct mca_pml_swy_shared_worker {
    swy_context_h context;
    swy_worker_h worker;
    swy_ep_h (*ep_for_proc)(ompi_proc_t* proc);
} mca_pml_swy_shared_worker_t;

/** The component: Open MPI's struct first, then process-wide Switchyard state. */
typedef struct ompi_osc_swy_component {
    ompi_osc_base_component_t super;
    int priority;       /**< MCA osc_swy_priority: used when pml swy is the PML */
    int priority_other; /**< MCA osc_swy_priority_other_pml: with any other PML */
    int verbose;
    int output;
    int max_attach; /**< MCA osc_swy_max_attach: regions per dynamic window */
    bool enable_mpi_threads;

    bool ready;      /**< worker obtained (first window) */
    bool own_worker; /**< we created context/worker (not pml swy's) */
    bool progress_registered;
    swy_context_h context;
    swy_worker_h worker;
    const mca_pml_swy_shared_worker_t* pml; /**< pml swy's accessor, or NULL */
    opal_hash_table_t endpoints;            /**< own worker: process name (uint64) -> swy_ep_h */
    opal_hash_table_t windows;              /**< win_id -> module, for the AM dispatcher */
    int num_windows;
} ompi_osc_swy_component_t;

OMPI_MODULE_DECLSPEC extern ompi_osc_swy_component_t mca_osc_swy_component;

/* ---- requests (osc_swy_request.c) ------------------------------------------------------- */

/** An MPI request for rput/rget/raccumulate/rget_accumulate (completed when the operation
 *  is locally complete, as MPI requires). */
typedef struct ompi_osc_swy_request {
    ompi_request_t super;
    int outstanding;           /**< Switchyard operations still running (completes at 0) */
    int error;                 /**< first OMPI error met (OMPI_SUCCESS otherwise) */
    ompi_osc_swy_peer_t* peer; /**< target: its outstanding count follows ours */
} ompi_osc_swy_request_t;
OBJ_CLASS_DECLARATION(ompi_osc_swy_request_t);

/** A fresh request for operations to @p peer, active, with one "outstanding" reference held
 *  by the caller (drop it with ompi_osc_swy_request_release_ref once every operation is
 *  started). NULL on OOM. */
ompi_osc_swy_request_t* ompi_osc_swy_request_alloc(ompi_osc_swy_peer_t* peer);
/** Drop one outstanding reference; at 0 the request completes with @p req->error. */
void ompi_osc_swy_request_release_ref(ompi_osc_swy_request_t* req);
/** A Switchyard send_cb whose user_data is an ompi_osc_swy_request_t: records the status,
 *  drops a reference and the peer's outstanding count. */
void ompi_osc_swy_request_swy_cb(swy_request_h sreq, swy_status_t status, void* user_data);
/** A Switchyard send_cb whose user_data is an ompi_osc_swy_peer_t: drops its outstanding
 *  count (operations without an MPI request; errors are reported by the next flush). */
void ompi_osc_swy_peer_swy_cb(swy_request_h sreq, swy_status_t status, void* user_data);

/* ---- shared helpers (osc_swy_module.c, osc_swy_comm.c) ---------------------------------- */

/** Map a Switchyard status to an OMPI error code (MPI class through the error handler). */
int ompi_osc_swy_error(swy_status_t status);

/** Drive progress once: the shared worker, and Open MPI's progress now and then. */
void ompi_osc_swy_progress_step(unsigned* countdown);

/** Wait for a Switchyard operation that returned @p status (and @p req when INPROGRESS),
 *  freeing the request. @return OMPI_SUCCESS or the mapped error. */
int ompi_osc_swy_wait(swy_status_t status, swy_request_h req);

/**
 * Resolve a target access: checks the epoch (MPI_ERR_RMA_SYNC outside one), that the
 * @p count elements of @p dt at @p disp lie inside the target's window (or inside one region
 * attached to a dynamic window), and returns the remote address of displacement @p disp (the
 * datatype's lower bound NOT added), the key, and the local pointer of that address when the
 * target's memory is mapped here (else NULL).
 * @return OMPI_SUCCESS; OMPI_ERR_RMA_RANGE; OMPI_ERR_RMA_SYNC; another OMPI error.
 */
int ompi_osc_swy_target(ompi_osc_swy_module_t* module, int target, ptrdiff_t disp, size_t count,
                        ompi_datatype_t* dt, uint64_t* remote_addr, swy_rkey_h* rkey,
                        char** direct);

/** Blocking atomic on the 8-byte word at @p offset of @p target's control area (direct CPU
 *  atomic when mapped here). @p result may be NULL for a non-fetching op. */
int ompi_osc_swy_ctrl_atomic(ompi_osc_swy_module_t* module, int target, swy_atomic_op_t op,
                             size_t offset, uint64_t operand, uint64_t compare, uint64_t* result);

/** Make every operation this origin started to @p target (-1: all targets) complete at the
 *  target, accumulates included. */
int ompi_osc_swy_flush_target(ompi_osc_swy_module_t* module, int target);

/* ---- datatypes as contiguous pieces (osc_swy_dt.c) --------------------------------------- */

/** Pieces fetched from the convertor per refill. */
#define OSC_SWY_DT_IOV_BATCH 32

/** Walks (buffer, count, datatype) as contiguous (pointer, length) pieces in type-map order.
 *  The buffer may be a remote address (nothing is dereferenced). */
typedef struct ompi_osc_swy_dt_iter {
    opal_convertor_t convertor;
    struct iovec iov[OSC_SWY_DT_IOV_BATCH];
    uint32_t iov_count; /**< pieces in iov */
    uint32_t iov_index; /**< next piece to hand out */
    bool use_convertor; /**< false: one contiguous piece in iov[0] */
    bool done;          /**< the convertor has no more pieces */
} ompi_osc_swy_dt_iter_t;

/** Start walking @p count elements of @p dt at @p buf. @return OMPI_SUCCESS or an error. */
int ompi_osc_swy_dt_iter_init(ompi_osc_swy_dt_iter_t* it, const void* buf, size_t count,
                              ompi_datatype_t* dt);
/** The next non-empty piece. @return false when there is none left. */
bool ompi_osc_swy_dt_iter_next(ompi_osc_swy_dt_iter_t* it, char** ptr, size_t* len);
/** Release the walker. */
void ompi_osc_swy_dt_iter_fini(ompi_osc_swy_dt_iter_t* it);

/* ---- module functions (the ompi_osc_base_module_t table) -------------------------------- */

int ompi_osc_swy_shared_query(struct ompi_win_t* win, int rank, size_t* size, int* disp_unit,
                              void* baseptr);
int ompi_osc_swy_attach(struct ompi_win_t* win, void* base, size_t size);
int ompi_osc_swy_detach(struct ompi_win_t* win, const void* base);
int ompi_osc_swy_free(struct ompi_win_t* win);

int ompi_osc_swy_put(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                     int target, ptrdiff_t target_disp, int target_count,
                     ompi_datatype_t* target_dt, struct ompi_win_t* win);
int ompi_osc_swy_get(void* origin_addr, int origin_count, ompi_datatype_t* origin_dt, int target,
                     ptrdiff_t target_disp, int target_count, ompi_datatype_t* target_dt,
                     struct ompi_win_t* win);
int ompi_osc_swy_rput(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      ompi_datatype_t* target_dt, struct ompi_win_t* win,
                      struct ompi_request_t** request);
int ompi_osc_swy_rget(void* origin_addr, int origin_count, ompi_datatype_t* origin_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t* target_dt,
                      struct ompi_win_t* win, struct ompi_request_t** request);

int ompi_osc_swy_fence(int assert, struct ompi_win_t* win);
int ompi_osc_swy_start(struct ompi_group_t* group, int assert, struct ompi_win_t* win);
int ompi_osc_swy_complete(struct ompi_win_t* win);
int ompi_osc_swy_post(struct ompi_group_t* group, int assert, struct ompi_win_t* win);
int ompi_osc_swy_wait_epoch(struct ompi_win_t* win);
int ompi_osc_swy_test(struct ompi_win_t* win, int* flag);

int ompi_osc_swy_lock(int lock_type, int target, int assert, struct ompi_win_t* win);
int ompi_osc_swy_unlock(int target, struct ompi_win_t* win);
int ompi_osc_swy_lock_all(int assert, struct ompi_win_t* win);
int ompi_osc_swy_unlock_all(struct ompi_win_t* win);
int ompi_osc_swy_sync(struct ompi_win_t* win);
int ompi_osc_swy_flush(int target, struct ompi_win_t* win);
int ompi_osc_swy_flush_all(struct ompi_win_t* win);
int ompi_osc_swy_flush_local(int target, struct ompi_win_t* win);
int ompi_osc_swy_flush_local_all(struct ompi_win_t* win);

/* ---- the accumulate family (osc_swy_accumulate.c, owned by its own author) ------------- */

/** Create module->acc (called at the end of window creation, before the final barrier). */
int ompi_osc_swy_acc_init(ompi_osc_swy_module_t* module);
/** Free module->acc (window free, after the last barrier). */
void ompi_osc_swy_acc_fini(ompi_osc_swy_module_t* module);
/** Complete accumulates to @p target (-1: all) at the target: called by every flush,
 *  unlock, complete and fence before the Switchyard flush. */
int ompi_osc_swy_acc_flush(ompi_osc_swy_module_t* module, int target);
/** Active messages for this window (header starts with ompi_osc_swy_am_header_t). Runs from
 *  the worker's progress; @p source was checked to be a rank of the window. */
swy_status_t ompi_osc_swy_acc_am_handler(ompi_osc_swy_module_t* module, int source,
                                         const void* header, size_t header_length, void* data,
                                         size_t data_length, const swy_am_recv_param_t* param);

/** Header every window active message starts with (the dispatcher reads it). */
typedef struct ompi_osc_swy_am_header {
    uint32_t win_id; /**< ompi_osc_swy_module_t.win_id */
    int32_t source;  /**< the sender's rank in the window */
    uint32_t kind;   /**< the handler's own message kind */
    uint32_t reserved;
} ompi_osc_swy_am_header_t;

int ompi_osc_swy_accumulate(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                            int target, ptrdiff_t target_disp, int target_count,
                            ompi_datatype_t* target_dt, struct ompi_op_t* op,
                            struct ompi_win_t* win);
int ompi_osc_swy_compare_and_swap(const void* origin_addr, const void* compare_addr,
                                  void* result_addr, ompi_datatype_t* dt, int target,
                                  ptrdiff_t target_disp, struct ompi_win_t* win);
int ompi_osc_swy_fetch_and_op(const void* origin_addr, void* result_addr, ompi_datatype_t* dt,
                              int target, ptrdiff_t target_disp, struct ompi_op_t* op,
                              struct ompi_win_t* win);
int ompi_osc_swy_get_accumulate(const void* origin_addr, int origin_count,
                                ompi_datatype_t* origin_dt, void* result_addr, int result_count,
                                ompi_datatype_t* result_dt, int target, ptrdiff_t target_disp,
                                int target_count, ompi_datatype_t* target_dt, struct ompi_op_t* op,
                                struct ompi_win_t* win);
int ompi_osc_swy_raccumulate(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                             int target, ptrdiff_t target_disp, int target_count,
                             ompi_datatype_t* target_dt, struct ompi_op_t* op,
                             struct ompi_win_t* win, struct ompi_request_t** request);
int ompi_osc_swy_rget_accumulate(const void* origin_addr, int origin_count,
                                 ompi_datatype_t* origin_dt, void* result_addr, int result_count,
                                 ompi_datatype_t* result_dt, int target, ptrdiff_t target_disp,
                                 int target_count, ompi_datatype_t* target_dt, struct ompi_op_t* op,
                                 struct ompi_win_t* win, struct ompi_request_t** request);

/** The module of @p win. */
static inline ompi_osc_swy_module_t* ompi_osc_swy_module(struct ompi_win_t* win) {
    return (ompi_osc_swy_module_t*)win->w_osc_module;
}

#endif /* OSC_SWY_H */
