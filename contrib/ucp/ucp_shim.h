/**
 * @file contrib/ucp/ucp_shim.h
 * @brief Internal header of the UCP compatibility library (libucp.so.0 on Switchyard).
 *
 * Shared by the core half (context, worker, endpoints, tag matching, datatypes, requests) and
 * the one-sided half (memory mapping, rkeys, put/get, atomics, active messages): see
 * contrib/ucp/README.md for who owns which file. Additions are fine; what is here stays.
 *
 * Objects. Each UCP handle is a shim object holding its Switchyard handle:
 *   ucp_context_h -> struct ucp_context { swy_context_h swy; ... }
 *   ucp_worker_h  -> struct ucp_worker  { swy_worker_h swy; ... }
 *   ucp_ep_h      -> struct ucp_ep      { swy_ep_h swy; ... }
 *   a request     -> ucp_shim_request_t  { swy_request_h swy; ... } (see below)
 *
 * Requests (the UCP way, so that consumers' baked-in assumptions hold):
 *   - The pointer a UCP call returns ("user pointer") has ucp_params.request_size bytes of
 *     consumer space AT it, and the shim request (ucp_shim_request_t) immediately IN FRONT of
 *     it: shim = (ucp_shim_request_t*)user - 1. ucp_context_query(REQUEST_SIZE) reports
 *     sizeof(ucp_shim_request_t), which is what a consumer passing its own memory
 *     (UCP_OP_ATTR_FIELD_REQUEST: param->request = its_buffer + request_size) must leave
 *     in front of that pointer (Open MPI's pml ucx does exactly that).
 *   - Pooled requests (no caller memory) come from a per-worker free list; request_init is
 *     called once per pooled object when it is first made, request_cleanup once at worker
 *     destroy. Caller-provided requests are never pooled, never initialised by us beyond the
 *     shim part, and ucp_request_free() on them is a no-op.
 *   - Return conventions (UCS_PTR_*): UCS_OK (NULL) = completed at once, no callback;
 *     UCS_STATUS_PTR(err) = failed, nothing started, no callback; otherwise the user pointer.
 *   - Completion callbacks NEVER run inside the initiating call: a Switchyard completion (from
 *     inside swy_worker_progress) only queues the request on the worker's completion queue,
 *     and ucp_worker_progress() runs the queued callbacks after swy_worker_progress() returns.
 *     An operation that finished at once but must not complete immediately
 *     (UCP_OP_ATTR_FLAG_NO_IMM_CMPL, or the old _nb receives) is queued the same way.
 *   - The user-visible status (ucp_request_check_status) changes from UCS_INPROGRESS right
 *     before the callback runs. A request freed before completion (ucp_request_free/release)
 *     still gets its callback, and returns to the pool afterwards.
 *
 * Thread modes: a worker created with UCS_THREAD_MODE_MULTI gets a Switchyard MULTI worker
 * and a shim lock (worker->lock) around the completion queue and the free list; never held
 * while calling into Switchyard or a user callback.
 */
#ifndef UCP_SHIM_H
#define UCP_SHIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <switchyard/switchyard.h>
#include <ucp/api/ucp.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The UCP API version this library reports (ucp_get_version, ucp_init_version). */
enum { UCP_SHIM_API_MAJOR = 1, UCP_SHIM_API_MINOR = 13, UCP_SHIM_API_RELEASE = 0 };

/* ---------------------------------------------------------------------------------------- */
/* Configuration (ucp_config_t)                                                             */
/* ---------------------------------------------------------------------------------------- */

/** ucp_config_t: the Switchyard configuration set the UCX_* variables were mapped into. */
struct ucp_config {
    swy_config_h swy; /**< SWY_* from the environment, plus the mapped UCX_* values */
    char* env_prefix; /**< the prefix ucp_config_read was given (NULL: "UCX_") */
};

/* ---------------------------------------------------------------------------------------- */
/* Context                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/** ucp_context_h. */
struct ucp_context {
    swy_context_h swy;                              /**< the Switchyard context */
    uint64_t features;                              /**< ucp_params.features (UCP_FEATURE_*) */
    size_t request_size;                            /**< consumer bytes per request */
    ucp_request_init_callback_t request_init;       /**< NULL if not given */
    ucp_request_cleanup_callback_t request_cleanup; /**< NULL if not given */
    int mt_workers_shared;                          /**< ucp_params.mt_workers_shared */
    char name[64];                                  /**< ucp_params.name or "switchyard" */
    void* rma;                                      /**< owned by the one-sided half */
};

/* ---------------------------------------------------------------------------------------- */
/* Requests                                                                                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct ucp_shim_request ucp_shim_request_t;

/** Runs the consumer's callback of a completed request (from ucp_worker_progress only). */
typedef void (*ucp_shim_complete_fn_t)(ucp_shim_request_t* req);

/** ucp_shim_request_t.flags. */
enum ucp_shim_request_flag {
    UCP_SHIM_REQ_POOLED = 1u << 0,    /**< from the worker's pool (not caller memory) */
    UCP_SHIM_REQ_USER_MEM = 1u << 1,  /**< caller-provided memory (UCP_OP_ATTR_FIELD_REQUEST) */
    UCP_SHIM_REQ_COMPLETED = 1u << 2, /**< callback has run (or there was none) */
    UCP_SHIM_REQ_RELEASED = 1u << 3,  /**< the consumer freed it: back to the pool on completion */
    UCP_SHIM_REQ_QUEUED = 1u << 4,    /**< on the worker's completion queue */
    UCP_SHIM_REQ_RECV = 1u << 5       /**< recv_info is meaningful (ucp_request_test) */
};

/** Sentinel stored in ucp_shim_request_t.swy once the Switchyard request completed. */
#define UCP_SHIM_SWY_DONE ((swy_request_h)(uintptr_t)1)

/**
 * The shim's part of a request, in front of the consumer's request_size bytes.
 * Size is a multiple of 16 (consumers put it in front of an alloca'd pointer).
 */
struct ucp_shim_request {
    uint32_t magic;                  /**< UCP_SHIM_REQ_MAGIC while in use */
    uint32_t flags;                  /**< enum ucp_shim_request_flag */
    ucs_status_t status;             /**< UCS_INPROGRESS until the completion is delivered */
    ucs_status_t final_status;       /**< set when queued, copied to status on delivery */
    struct ucp_worker* worker;       /**< owning worker */
    _Atomic(swy_request_h) swy;      /**< NULL, the running swy request, or UCP_SHIM_SWY_DONE */
    ucp_shim_complete_fn_t complete; /**< how to call the consumer (NULL: no callback) */
    union {                          /**< the consumer's callback, by kind */
        ucp_send_callback_t send;    /**< old _nb send/flush/close style */
        ucp_send_nbx_callback_t send_nbx;
        ucp_tag_recv_callback_t recv;
        ucp_tag_recv_nbx_callback_t recv_nbx;
        ucp_stream_recv_nbx_callback_t recv_stream;
        ucp_am_recv_data_nbx_callback_t recv_am;
        void (*any)(void);
    } cb;
    void* user_data;                    /**< passed to nbx callbacks */
    ucp_tag_recv_info_t recv_info;      /**< receives: what matched */
    ucp_tag_recv_info_t* imm_recv_info; /**< nbx receive: param->recv_info.tag_info or NULL */
    size_t length;                      /**< stream/AM receives: bytes received */
    void* op[4];                        /**< free for the operation (e.g. the one-sided half) */
    struct ucp_ep* ep;                  /**< close/flush requests: the endpoint */
    ucp_shim_request_t* next;           /**< completion queue or free list link */
    ucp_shim_request_t* all_next;       /**< every pooled object of the worker (cleanup) */
    ucp_shim_request_t* poll_next;      /**< worker->closing list (endpoint closes) */
} __attribute__((aligned(16)));

#define UCP_SHIM_REQ_MAGIC 0x53575952u /* "SWYR" */

/** The consumer's pointer of a shim request. */
static inline void* ucp_shim_req_user(ucp_shim_request_t* req) { return req + 1; }

/** The shim request of a consumer's pointer (no check: see ucp_shim_req_check). */
static inline ucp_shim_request_t* ucp_shim_req_from_user(void* user) {
    return (ucp_shim_request_t*)user - 1;
}

/**
 * The shim request of a consumer's pointer, or NULL (with a log line naming @p call) when
 * @p user is NULL, an error pointer, or not a request of this library.
 */
ucp_shim_request_t* ucp_shim_req_check(void* user, const char* call);

/* ---------------------------------------------------------------------------------------- */
/* Worker                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/** ucp_worker_h. */
struct ucp_worker {
    struct ucp_context* context;
    swy_worker_h swy;
    ucs_thread_mode_t thread_mode; /**< what was granted (SINGLE, SERIALIZED or MULTI) */
    int locked;                    /**< 1 in MULTI mode: lock guards the lists below */
    pthread_mutex_t lock;
    ucp_shim_request_t* queue_head; /**< completions to deliver from ucp_worker_progress */
    ucp_shim_request_t* queue_tail;
    ucp_shim_request_t* free_list; /**< pooled requests ready for reuse */
    ucp_shim_request_t* all_pooled;
    struct ucp_ep* eps;          /**< every endpoint not yet closed (list through ep->next) */
    ucp_shim_request_t* closing; /**< endpoint closes Switchyard still runs (polled) */
    uint64_t uid;                /**< a random id, for ucp_worker_print_info and the address */
    char name[64];
    void* rma; /**< owned by the one-sided half (AM handlers, ...) */
};

/* ---------------------------------------------------------------------------------------- */
/* Endpoint                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/** ucp_ep_h. */
struct ucp_ep {
    struct ucp_worker* worker;
    swy_ep_h swy;
    void* user_data;       /**< UCP_EP_PARAM_FIELD_USER_DATA */
    ucp_err_handler_t err; /**< UCP_EP_PARAM_FIELD_ERR_HANDLER (cb may be NULL) */
    int closing;           /**< a close was started: no new operations */
    struct ucp_ep* next;   /**< worker->eps list */
    void* rma;             /**< owned by the one-sided half (rkeys, ...) */
};

/* ---------------------------------------------------------------------------------------- */
/* Helpers for both halves                                                                  */
/* ---------------------------------------------------------------------------------------- */

/** Switchyard status -> UCS status (SWY_INPROGRESS -> UCS_INPROGRESS). */
ucs_status_t ucp_shim_status(swy_status_t status);

/** UCS status -> Switchyard status (for values returned from consumer callbacks). */
swy_status_t ucp_shim_swy_status(ucs_status_t status);

/**
 * Allocate the request for an operation with @p param (may be NULL): caller memory when
 * param has UCP_OP_ATTR_FIELD_REQUEST, else the worker's pool. Fills the shim part (status
 * UCS_INPROGRESS, no callback), takes the nbx callback and user_data from @p param when
 * masked (callback kind by @p complete: pass ucp_shim_complete_send_nbx for send-like
 * operations, ucp_shim_complete_recv_nbx for tag receives, or your own).
 * @return NULL only when the pool cannot grow (out of memory).
 */
ucp_shim_request_t* ucp_shim_req_alloc(struct ucp_worker* worker, const ucp_request_param_t* param,
                                       ucp_shim_complete_fn_t complete);

/**
 * Give back a request that was never handed to the consumer (an operation that completed at
 * once or failed): pooled ones return to the free list, caller memory is left alone.
 */
void ucp_shim_req_put(ucp_shim_request_t* req);

/**
 * Complete @p req with @p status later: queue it so that the next ucp_worker_progress()
 * sets its status and runs its callback. Safe from a Switchyard callback and from the
 * initiating call. Thread-safe in MULTI mode.
 */
void ucp_shim_req_complete_later(ucp_shim_request_t* req, ucs_status_t status);

/**
 * The common tail of a non-blocking call that posted a Switchyard operation for @p req with
 * swy params built by ucp_shim_swy_params() (user_data = req, callback = ucp_shim_swy_*_cb).
 * @param st    what the Switchyard call returned; @param sreq  its request (for INPROGRESS).
 * @param no_imm  1: the consumer must get a request even if it finished at once
 *                (UCP_OP_ATTR_FLAG_NO_IMM_CMPL, old-style receives).
 * @return the UCP return value: UCS_OK (request put back), an error pointer (put back), or
 *         the user pointer.
 */
ucs_status_ptr_t ucp_shim_req_post_result(ucp_shim_request_t* req, swy_status_t st,
                                          swy_request_h sreq, int no_imm);

/** 1 when @p param asks for UCP_OP_ATTR_FLAG_NO_IMM_CMPL. */
static inline int ucp_shim_no_imm(const ucp_request_param_t* param) {
    return param != NULL && (param->op_attr_mask & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) != 0;
}

/** Switchyard send-style callback: completes the shim request (user_data) later. */
void ucp_shim_swy_send_cb(swy_request_h sreq, swy_status_t status, void* user_data);

/** Switchyard receive callback: records the tag info and completes the shim request later. */
void ucp_shim_swy_recv_cb(swy_request_h sreq, swy_status_t status, const swy_tag_recv_info_t* info,
                          void* user_data);

/**
 * Fill Switchyard request parameters for @p req: callback @p send_cb or @p recv_cb (one of
 * them NULL), user_data = req, and, when @p param masks them, datatype (translated with
 * ucp_shim_datatype) and memory type. @p count is the UCP count: *swy_count receives the
 * Switchyard count (bytes for contig types).
 * @return UCS_OK or UCS_ERR_INVALID_PARAM (unknown datatype class).
 */
ucs_status_t ucp_shim_swy_params(ucp_shim_request_t* req, const ucp_request_param_t* param,
                                 size_t count, swy_send_cb_t send_cb, swy_recv_cb_t recv_cb,
                                 swy_request_params_t* out, size_t* swy_count);

/**
 * Translate a UCP datatype and count into a Switchyard datatype and count: contig
 * (elem size << 3) -> SWY_DATATYPE_CONTIG with count * elem size bytes; iov -> SWY_DATATYPE_IOV
 * (same entry layout); generic -> the Switchyard generic type made by ucp_dt_create_generic.
 * @return UCS_OK or UCS_ERR_INVALID_PARAM (strided or unknown class).
 */
ucs_status_t ucp_shim_datatype(ucp_datatype_t dt, size_t count, swy_datatype_t* swy_dt,
                               size_t* swy_count);

/** Standard completion functions (ucp_shim_complete_fn_t). */
void ucp_shim_complete_send(ucp_shim_request_t* req);     /**< cb.send(user, status) */
void ucp_shim_complete_send_nbx(ucp_shim_request_t* req); /**< cb.send_nbx(user, st, ud) */
void ucp_shim_complete_recv(ucp_shim_request_t* req);     /**< cb.recv(user, st, &info) */
void ucp_shim_complete_recv_nbx(ucp_shim_request_t* req); /**< cb.recv_nbx(user,st,&info,ud) */

/**
 * Wait for the result of a non-blocking call: progress @p worker until the request completes,
 * free it, and return its status (for blocking calls built on _nb ones: ucp_ep_flush, ucp_put).
 * @p result may be UCS_OK, an error pointer or a request.
 */
ucs_status_t ucp_shim_wait_blocking(struct ucp_worker* worker, ucs_status_ptr_t result);

/** Lock / unlock the worker's shim lists (no-op unless MULTI). */
static inline void ucp_shim_worker_lock(struct ucp_worker* w) {
    if (w->locked) pthread_mutex_lock(&w->lock);
}
static inline void ucp_shim_worker_unlock(struct ucp_worker* w) {
    if (w->locked) pthread_mutex_unlock(&w->lock);
}

/** Log an error line "ucp(switchyard): <call>: <message>" to stderr. printf-style. */
void ucp_shim_error(const char* call, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/** 1 when SWY_UCP_VERBOSE is set to a non-zero value. */
int ucp_shim_verbose(void);

/* ---------------------------------------------------------------------------------------- */
/* Hooks the one-sided half implements (weak no-op defaults in ucp_hooks.c)                 */
/* ---------------------------------------------------------------------------------------- */

/** Called at the end of ucp_init_version (context->rma is NULL before). */
ucs_status_t ucp_shim_rma_context_init(struct ucp_context* context);
/** Called at the start of ucp_cleanup. */
void ucp_shim_rma_context_cleanup(struct ucp_context* context);
/** Called at the end of ucp_worker_create. */
ucs_status_t ucp_shim_rma_worker_init(struct ucp_worker* worker);
/** Called at the start of ucp_worker_destroy (before the Switchyard worker goes). */
void ucp_shim_rma_worker_cleanup(struct ucp_worker* worker);
/** Called when an endpoint is closed or destroyed, before its Switchyard endpoint closes. */
void ucp_shim_rma_ep_cleanup(struct ucp_ep* ep);
/** Called from ucp_worker_progress after swy_worker_progress; returns events processed. */
unsigned ucp_shim_rma_progress(struct ucp_worker* worker);

#ifdef __cplusplus
}
#endif

#endif
