/**
 * @file switchyard/switchyard.h
 * @brief Switchyard public C API: context, worker, endpoint, tagged messaging.
 *
 * Object model (a child keeps its parent alive; destroy children first):
 *   context  -- configuration, transports and memory types found on this host; one per process.
 *   worker   -- progress engine: transport interfaces, tag matcher, requests. Not thread-safe
 *               unless created with SWY_THREAD_MODE_MULTI (then every call takes one lock).
 *   endpoint -- connection from a worker to one remote worker, created from that worker's
 *               address blob (swy_worker_get_address()), from a listener's sockaddr, or from
 *               a connection request a listener received.
 *   listener -- accepts connections on a sockaddr and offers them as connection requests.
 *   request  -- one non-blocking operation.
 *
 * Completion model for non-blocking calls (swy_tag_send_nb, swy_tag_recv_nb, ...):
 *   - returns SWY_OK and sets *req to NULL: finished immediately, no callback is called;
 *   - returns SWY_INPROGRESS and sets *req: the callback (if any) runs from
 *     swy_worker_progress() once the operation completes, and swy_request_test()/wait()
 *     report the final status; the caller releases the request with swy_request_free()
 *     (freeing before completion is allowed: the request is then released on completion);
 *   - returns an error (< 0) and sets *req to NULL: nothing was started, no callback runs.
 *   A receive that completes immediately with a truncation returns SWY_ERR_MESSAGE_TRUNCATED.
 *   A request freed before it completes still runs its callback on completion.
 *   Sends never return SWY_ERR_NO_RESOURCE: a full queue parks the send on the endpoint and
 *   it goes out from progress, in order.
 *
 * Progress: a send that returned SWY_OK has copied its data out (the buffer may be reused),
 * but both workers must keep calling swy_worker_progress() while messages are outstanding
 * between them: the receiver to deliver, and the sender to serve rendezvous requests (a
 * receiver pulling a large message needs nothing from the sender's CPU; a pipelined or put
 * rendezvous does). swy_ep_close_nb(FLUSH) waits for local completion of every send.
 * Requests should be freed before their worker is destroyed (swy_worker_destroy() warns with
 * the number it found unfreed).
 *
 * Handles and their lifetime: request and endpoint handles are checked on every call. A
 * request handle is spent by swy_request_free(); an endpoint handle by a close that completed
 * (swy_ep_close_nb() returning SWY_OK, or its request completing). A spent handle — a double
 * free, a test after free, a send on a closed endpoint — is refused with
 * SWY_ERR_INVALID_PARAM and a log line naming the call (builds without NDEBUG abort there
 * instead, with the same message); it never reaches another request or endpoint that reuses
 * the memory. Checking costs one load and compare per call. (A handle is the object's
 * address with a 16-bit generation in its top bits: a stale handle whose slot has since been
 * reused a multiple of 65 536 times is not detected. Handles are meaningless once their
 * worker is destroyed.)
 *
 * fork(): a worker belongs to the process that created it. In a child created by fork() the
 * copy of the worker is inert: every call on it, its endpoints, requests or listeners returns
 * SWY_ERR_UNSUPPORTED with a log line (swy_worker_progress() returns 0, logging once), and
 * nothing the child does reaches the parent's shared-memory rings or connections.
 * swy_worker_destroy() in the child drops its copy without closing anything. Create a new
 * context and worker in the child to communicate there. (Needs Linux 4.14 or later,
 * MADV_WIPEONFORK; on older kernels the child's copy is not detected.)
 *
 * Configuration: every SWY_* environment variable is listed by `swy-info -c` and in
 * docs/configuration.md; swy_config_set() overrides a variable for one context.
 */
#ifndef SWITCHYARD_SWITCHYARD_H
#define SWITCHYARD_SWITCHYARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <switchyard/datatype.h>
#include <switchyard/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------- */
/* Handles and basic types                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct swy_config* swy_config_h;     /**< Configuration set (from env + overrides). */
typedef struct swy_context* swy_context_h;   /**< Process-wide context. */
typedef struct swy_worker* swy_worker_h;     /**< Progress engine. */
typedef struct swy_ep* swy_ep_h;             /**< Connection to one remote worker. */
typedef struct swy_request* swy_request_h;   /**< One non-blocking operation. */
typedef struct swy_message* swy_message_h;   /**< A message removed by a matched probe. */
typedef struct swy_listener* swy_listener_h; /**< Accepts connections on a sockaddr. */
typedef struct swy_conn_request* swy_conn_request_h; /**< A connection a listener accepted. */
typedef uint64_t swy_tag_t;                          /**< 64-bit message tag. */

/** Memory type of a user buffer. SWY_MEMTYPE_UNKNOWN asks Switchyard to detect it. */
typedef enum swy_memtype {
    SWY_MEMTYPE_UNKNOWN = 0,
    SWY_MEMTYPE_HOST = 1,
    SWY_MEMTYPE_SIMDEV = 2,
    SWY_MEMTYPE_DMABUF = 3,
    SWY_MEMTYPE_CUDA = 4
} swy_memtype_t;

/** Version of the library as "MAJOR.MINOR.PATCH". Thread safety: any thread. */
const char* swy_version_string(void);

/* ---------------------------------------------------------------------------------------- */
/* Configuration                                                                            */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief Read every SWY_* variable from the environment into a new configuration set.
 * @param[out] config  receives the set; release with swy_config_release().
 * @return SWY_OK; SWY_ERR_INVALID_PARAM if a variable has a value of the wrong type (the
 *         log names the variable); SWY_ERR_NO_MEMORY. Unknown SWY_* variables give a warning.
 */
swy_status_t swy_config_read(swy_config_h* config);

/**
 * @brief Override one variable, named with or without the "SWY_" prefix.
 * @return SWY_OK; SWY_ERR_NOT_FOUND for an unknown name; SWY_ERR_INVALID_PARAM for a value
 *         that does not parse as the variable's type.
 */
swy_status_t swy_config_set(swy_config_h config, const char* name, const char* value);

/**
 * @brief Read the current value of a variable as text into @p buf (NUL-terminated).
 * @return SWY_OK; SWY_ERR_NOT_FOUND; SWY_ERR_NO_RESOURCE if @p buf is too small.
 */
swy_status_t swy_config_get(swy_config_h config, const char* name, char* buf, size_t buflen);

/** @brief Release a configuration set (contexts keep their own copy). */
void swy_config_release(swy_config_h config);

/* ---------------------------------------------------------------------------------------- */
/* Context                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/*
 * Every parameter and attribute struct starts with a field_mask: a params struct's bits say
 * which fields the caller set (a field whose bit is clear keeps its default, whatever it
 * holds), an attr struct's bits say which fields the caller wants filled (the others are left
 * untouched). Bits this library does not know are refused with SWY_ERR_INVALID_PARAM and an
 * error in the log naming the struct and the bits. New fields are only ever appended, each
 * with a new bit, so a program built against an older header keeps working with a newer
 * library of the same SONAME. A NULL params pointer, where allowed, means all defaults.
 *
 *     swy_request_params_t p = {0};
 *     p.field_mask = SWY_REQ_PARAM_FIELD_FLAGS | SWY_REQ_PARAM_FIELD_CALLBACK;
 *     p.flags = SWY_REQ_FLAG_SYNC;   // without its bit this would be ignored
 *     p.send_cb = on_sent;
 */

/** swy_context_params_t.field_mask bits. */
enum swy_context_param_field {
    SWY_CONTEXT_PARAM_FIELD_CONFIG = 1u << 0 /**< config */
};

/** Parameters for swy_context_create(). Zero-initialise, then set fields and their bits. */
typedef struct swy_context_params {
    uint64_t field_mask; /**< enum swy_context_param_field */
    swy_config_h config; /**< NULL: read the environment. Copied; caller keeps ownership. */
} swy_context_params_t;

/**
 * @brief Create a context: parse configuration, discover transports and memory types.
 * @param params  may be NULL (same as all-zero).
 * @return SWY_OK; SWY_ERR_INVALID_PARAM for a bad configuration; SWY_ERR_NO_MEMORY.
 */
swy_status_t swy_context_create(const swy_context_params_t* params, swy_context_h* context);

/** @brief Destroy a context. Every worker created from it must already be destroyed. */
void swy_context_destroy(swy_context_h context);

/* ---------------------------------------------------------------------------------------- */
/* Worker                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/** Threading mode of a worker. */
typedef enum swy_thread_mode {
    SWY_THREAD_MODE_SINGLE = 0, /**< Only one thread uses the worker at a time (fastest). */
    SWY_THREAD_MODE_MULTI = 1   /**< Any thread may call; calls serialise on one lock. */
} swy_thread_mode_t;

/** swy_worker_params_t.field_mask bits. */
enum swy_worker_param_field {
    SWY_WORKER_PARAM_FIELD_THREAD_MODE = 1u << 0 /**< thread_mode */
};

/** Parameters for swy_worker_create(). Zero-initialise, then set fields and their bits. */
typedef struct swy_worker_params {
    uint64_t field_mask;           /**< enum swy_worker_param_field */
    swy_thread_mode_t thread_mode; /**< default SWY_THREAD_MODE_SINGLE */
} swy_worker_params_t;

/**
 * @brief Create a worker with every transport the context enabled (SWY_TLS).
 * @param params may be NULL.
 * @return SWY_OK; SWY_ERR_NO_MEMORY; SWY_ERR_IO if a shared segment cannot be created.
 */
swy_status_t swy_worker_create(swy_context_h context, const swy_worker_params_t* params,
                               swy_worker_h* worker);

/**
 * @brief Destroy a worker. Endpoints still open are closed with force, and every request
 * still outstanding — sends, posted receives, rendezvous, one-sided operations, AM data
 * fetches — completes with SWY_ERR_CANCELED, its callback running before this returns. A
 * callback run here may free its request; it must not start new operations on the worker.
 * Requests the application never freed are released with a warning that gives their number;
 * their handles are invalid afterwards. In a fork()ed child that inherited @p worker, only
 * this process's copy is dropped (see "fork()" above).
 */
void swy_worker_destroy(swy_worker_h worker);

/**
 * @brief Make progress on every transport and protocol of the worker.
 * The first call after swy_worker_arm() returned SWY_OK also ends the armed state and
 * consumes the wake-ups that made the event fd readable.
 * @return the number of events processed (0 when nothing happened). Completion callbacks
 *         run from inside this call.
 */
unsigned swy_worker_progress(swy_worker_h worker);

/**
 * @brief File descriptor that becomes readable when the worker may have work, for
 * poll/select/epoll (level-triggered, EPOLLIN). It is an epoll descriptor: the application
 * watches it but never reads from it, writes to it or closes it; the worker consumes what
 * made it readable inside swy_worker_progress(). The same fd for the worker's lifetime.
 *
 * The loop, from one thread:
 * @code
 * for (;;) {
 *     while (swy_worker_progress(w) > 0) {}
 *     if (swy_worker_arm(w) == SWY_OK) epoll_wait(...);  // efd and the application's fds
 *     // SWY_ERR_BUSY: work is waiting, progress again (nothing was left armed)
 * }
 * @endcode
 * Blocking without a successful arm may miss a wake-up. Readable means "may have work":
 * after an arm, the fd becomes readable at most a few times per message that arrives,
 * and stays quiet while nothing arrives.
 */
swy_status_t swy_worker_get_efd(swy_worker_h worker, int* fd);

/**
 * @brief Arm the event fd for the next event.
 * Armed lasts until the next swy_worker_progress() (or the end of a swy_worker_wait()):
 * while armed, the first message from a peer makes the fd readable (one wake-up, a system
 * call on the sender's side); outside it, senders make no system call to wake this worker.
 * An arm that returns SWY_ERR_BUSY leaves nothing armed.
 * Sends waiting only for the peer to acknowledge their bytes (tcp: a send completes once the
 * peer's kernel acknowledged it) are no reason for SWY_ERR_BUSY: armed, the fd also becomes
 * readable by itself when checking again is worth it (a timer backing off from tens of
 * microseconds to a few milliseconds, set only while such sends wait).
 * @return SWY_OK: armed, safe to block; SWY_ERR_BUSY: events are pending, call progress.
 */
swy_status_t swy_worker_arm(swy_worker_h worker);

/**
 * @brief Block until the worker has an event, swy_worker_signal() is called, or
 * @p timeout_ms passes (-1: no limit). Equivalent to arm + poll(efd) + disarm: call
 * swy_worker_progress() afterwards. Returns at once (SWY_OK) when events are pending.
 * @return SWY_OK, SWY_ERR_TIMED_OUT, or SWY_ERR_IO if poll() failed.
 */
swy_status_t swy_worker_wait(swy_worker_h worker, int timeout_ms);

/**
 * @brief Wake the worker: a thread blocked in swy_worker_wait() returns, and the event fd
 * becomes readable (a thread blocked in poll/epoll on it returns). A signal given while no
 * thread is blocked is not lost: the next swy_worker_wait() (or the next block after
 * swy_worker_arm()) returns at once, and the following swy_worker_progress() consumes it.
 * Several signals before a wake-up count as one.
 *
 * Thread safety: callable from any thread, without the worker's lock, in any thread mode,
 * and from a signal handler (it writes to an eventfd and nothing else). Not after
 * swy_worker_destroy() started.
 * @return SWY_OK, or SWY_ERR_INVALID_PARAM for a NULL worker.
 */
swy_status_t swy_worker_signal(swy_worker_h worker);

/**
 * @brief Get this worker's address: an opaque blob another process passes to swy_ep_create().
 * @param[out] address  allocated by Switchyard; release with swy_worker_release_address().
 * @param[out] length   its length in bytes.
 */
swy_status_t swy_worker_get_address(swy_worker_h worker, void** address, size_t* length);

/** @brief Release an address returned by swy_worker_get_address(). */
void swy_worker_release_address(swy_worker_h worker, void* address);

/** swy_worker_attr_t.field_mask bits. */
enum swy_worker_attr_field {
    SWY_WORKER_ATTR_FIELD_PIO = 1u << 0,         /**< the four pio_* fields */
    SWY_WORKER_ATTR_FIELD_REQUEST_SIZE = 1u << 1 /**< request_size, request_alignment */
};

/** Attributes of a worker, for tools and tests. */
typedef struct swy_worker_attr {
    uint64_t field_mask;            /**< in: enum swy_worker_attr_field, the fields wanted */
    unsigned pio_endpoints_granted; /**< endpoints of this worker that hold a PIO lane */
    unsigned pio_endpoints_max;     /**< policy cap on such endpoints (SWY_PIO_MAX_EPS) */
    unsigned pio_window_slots;      /**< PIO rings this worker's receive window offers */
    unsigned pio_window_free;       /**< of which not yet taken by senders */
    /** Bytes a caller reserves for a request kept in its own memory
     *  (SWY_REQ_PARAM_FIELD_REQUEST): the same for every worker of this library build. */
    size_t request_size;
    /** The alignment that memory needs (a power of two; malloc'd memory has it). */
    size_t request_alignment;
} swy_worker_attr_t;

/**
 * @brief Query worker attributes: fills the groups attr->field_mask asks for, nothing else.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument, unknown field_mask bits).
 */
swy_status_t swy_worker_query(swy_worker_h worker, swy_worker_attr_t* attr);

/* ---------------------------------------------------------------------------------------- */
/* Endpoint                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/** Called once, from progress, when an endpoint fails (peer died, connection lost). */
typedef void (*swy_ep_error_cb_t)(void* arg, swy_ep_h ep, swy_status_t status);

/** Endpoint creation flags. */
enum swy_ep_flags {
    /** Ask for a PIO lane ahead of endpoints that do not ask (SWY_PIO_RESERVED slots). */
    SWY_EP_FLAG_PIO_FIRST = 1u << 0,
    /** Never take a PIO lane (leave the window to others). */
    SWY_EP_FLAG_NO_PIO = 1u << 1,
    /** Connect to a listener at params->sockaddr instead of using remote_address. */
    SWY_EP_FLAG_SOCKADDR = 1u << 2,
    /** Accept params->conn_request (from a listener's on_connect) instead of remote_address. */
    SWY_EP_FLAG_CONN_REQUEST = 1u << 3,
    /** With SWY_EP_FLAG_SOCKADDR only: prove params->auth_key to the listener and require the
        listener to prove it back before this worker's address is sent (see
        swy_listener_params_t.auth_key). */
    SWY_EP_FLAG_AUTH_KEY = 1u << 4
};

/** swy_ep_params_t.field_mask bits. */
enum swy_ep_param_field {
    SWY_EP_PARAM_FIELD_REMOTE_ADDRESS = 1u << 0, /**< remote_address, remote_address_length */
    SWY_EP_PARAM_FIELD_FLAGS = 1u << 1,          /**< flags */
    SWY_EP_PARAM_FIELD_ERR_HANDLER = 1u << 2,    /**< err_cb, err_arg */
    SWY_EP_PARAM_FIELD_SOCKADDR = 1u << 3,       /**< sockaddr, sockaddr_length */
    SWY_EP_PARAM_FIELD_CONN_REQUEST = 1u << 4,   /**< conn_request */
    SWY_EP_PARAM_FIELD_AUTH_KEY = 1u << 5        /**< auth_key, auth_key_length */
};

/**
 * Parameters for swy_ep_create(). Zero-initialise, then set what you need and its bits.
 * Exactly one way to name the peer: remote_address (no flag), sockaddr (SWY_EP_FLAG_SOCKADDR)
 * or conn_request (SWY_EP_FLAG_CONN_REQUEST); each flag needs its field's bit too (refused
 * with SWY_ERR_INVALID_PARAM otherwise), as does SWY_EP_FLAG_AUTH_KEY.
 */
typedef struct swy_ep_params {
    uint64_t field_mask;             /**< enum swy_ep_param_field */
    const void* remote_address;      /**< blob from swy_worker_get_address() (no flag) */
    size_t remote_address_length;    /**< its length */
    uint32_t flags;                  /**< enum swy_ep_flags */
    swy_ep_error_cb_t err_cb;        /**< optional; without it errors only fail requests */
    void* err_arg;                   /**< passed to err_cb */
    const struct sockaddr* sockaddr; /**< SWY_EP_FLAG_SOCKADDR: a listener's address (IPv4 or
                                          IPv6); copied, the caller keeps ownership */
    size_t sockaddr_length;          /**< its length (sizeof(struct sockaddr_in/_in6)) */
    swy_conn_request_h conn_request; /**< SWY_EP_FLAG_CONN_REQUEST: consumed by the call */
    const void* auth_key;            /**< SWY_EP_FLAG_AUTH_KEY: the key shared with the listener,
                                        16 to 256 bytes; copied, the caller keeps ownership */
    size_t auth_key_length;          /**< SWY_EP_FLAG_AUTH_KEY: its length in bytes */
} swy_ep_params_t;

/**
 * @brief Connect to a remote worker.
 *
 * From an address (no flag): the endpoint is wired before this returns, without blocking on
 * the network: a tcp lane makes its TCP connection (and, with SWY_AUTH_KEY, its authenticated
 * hello) from swy_worker_progress(), its sends queued meanwhile. If no address of the peer
 * answers within SWY_TCP_CONNECT_TIMEOUT, the endpoint fails (err_cb) with SWY_ERR_TIMED_OUT
 * or SWY_ERR_UNREACHABLE; SWY_ERR_UNREACHABLE at once if every address refused already.
 *
 * From a sockaddr (SWY_EP_FLAG_SOCKADDR): non-blocking. The endpoint is usable at once; sends
 * posted before the connection is established wait on the endpoint (SWY_INPROGRESS) and go
 * out, in order, once the listener accepted and the lanes are wired (shm/cma when the server
 * runs on the same host, tcp otherwise), from swy_worker_progress(). If the connection fails
 * (refused or unreachable: SWY_ERR_UNREACHABLE; the server rejected it or closed the socket:
 * SWY_ERR_CONNECTION_RESET; no answer in 30 s: SWY_ERR_TIMED_OUT; a malformed handshake:
 * SWY_ERR_MALFORMED), the waiting sends complete with that status, later sends return it, and
 * err_cb is called once, from progress. swy_ep_query() reports transport "" until wired.
 * Authentication (SWY_EP_FLAG_AUTH_KEY, params->auth_key): the listener must prove the same
 * key before this worker's address is sent, and the client proves it in turn; a listener with
 * another key or none, or a keyed listener reached without a key, fails the endpoint with
 * SWY_ERR_CONNECTION_RESET and an "authentication failed" error in the log (on the listener's
 * side too). Nothing of the server (its worker address) is received before it accepted.
 *
 * From a connection request (SWY_EP_FLAG_CONN_REQUEST): the server's side; the endpoint is
 * wired from the client's address before this returns and the client is told to proceed.
 * The request is consumed whatever the result (on failure the client is rejected).
 *
 * One endpoint per pair: a request from a worker that already has an endpoint here (including
 * one this worker is still connecting from a sockaddr) is accepted for that endpoint without
 * calling on_connect, so simultaneous connects between two workers leave exactly one endpoint
 * on each side: the one each application created (see docs/user-guide.md).
 *
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (no peer, several ways to name it, a bad sockaddr, a
 *         conn_request that is not waiting for an answer, SWY_EP_FLAG_AUTH_KEY without
 *         SWY_EP_FLAG_SOCKADDR, a key shorter than 16 or longer than 256 bytes);
 *         SWY_ERR_IO (no random nonce); SWY_ERR_MALFORMED (the address
 *         failed validation); SWY_ERR_UNREACHABLE (no enabled transport reaches the peer,
 *         e.g. another host and no network transport, or the peer's segment cannot be mapped).
 */
swy_status_t swy_ep_create(swy_worker_h worker, const swy_ep_params_t* params, swy_ep_h* ep);

/** How swy_ep_close_nb() treats outstanding operations. */
typedef enum swy_ep_close_mode {
    SWY_EP_CLOSE_FLUSH = 0, /**< complete every outstanding send first */
    SWY_EP_CLOSE_FORCE = 1  /**< cancel outstanding sends (they complete with SWY_ERR_CANCELED) */
} swy_ep_close_mode_t;

/**
 * @brief Close an endpoint.
 * @param[out] req  set when the close is still in progress (wait on it, then free it).
 * @return SWY_OK (closed, *req NULL), SWY_INPROGRESS, or an error. The handle is invalid
 *         once the close completes: every later call with it returns SWY_ERR_INVALID_PARAM
 *         (logged), never touches another endpoint that took its memory.
 */
swy_status_t swy_ep_close_nb(swy_ep_h ep, swy_ep_close_mode_t mode, swy_request_h* req);

/** swy_ep_attr_t.field_mask bits. */
enum swy_ep_attr_field {
    SWY_EP_ATTR_FIELD_LANE = 1u << 0,      /**< pio .. cma: the lane and its credits */
    SWY_EP_ATTR_FIELD_PIO_DETAIL = 1u << 1 /**< pio_inline_size .. pio_window */
};

/** What an endpoint got at wire-up. Nothing is hidden: a PIO-less endpoint says so. */
typedef struct swy_ep_attr {
    uint64_t field_mask;           /**< in: enum swy_ep_attr_field, the fields wanted */
    int pio;                       /**< 1 if the endpoint holds a PIO lane */
    uint32_t credits;              /**< send credits on its lane (cells it may have in flight);
                                     UINT32_MAX means unlimited (self) */
    int credits_shared;            /**< 1 if those credits are shared with other senders */
    size_t pio_max_size;           /**< largest payload sent by PIO (0 without PIO) */
    size_t bcopy_max_size;         /**< largest payload of one bcopy fragment */
    const char* transport;         /**< "self", "shm", ... (static strings: valid forever) */
    const char* small_protocol;    /**< protocol for an 8-byte host send, e.g. "eager_short" */
    const char* fallback_protocol; /**< what small sends use without PIO, e.g. "eager_bcopy" */
    int connected;                 /**< 0 once the endpoint failed */
    int cma;                       /**< 1 if zero-copy CMA reaches the peer */
    /* PIO in detail (SWY_EP_ATTR_FIELD_PIO_DETAIL). */
    size_t pio_inline_size; /**< verbs: largest header+payload sent inline (written into
                                     the work request); 0 on other transports */
    size_t pio_dm_size;     /**< bytes of device memory (a PIO window on the adapter) this
                                     endpoint holds; 0: none */
    uint32_t pio_credits;   /**< PIO sends it may have in flight: the device-memory cells
                                     when it holds device memory, else its credits; 0 without
                                     PIO */
    const char* pio_window; /**< what PIO it got and why, e.g. "device memory: slot 2 of 16,
                                     4 cells of 2048 B" or "inline only: every device-memory
                                     slot is taken"; "" where there is nothing to say. Valid
                                     while the endpoint exists */
} swy_ep_attr_t;

/**
 * @brief Query what an endpoint got: fills the groups attr->field_mask asks for, nothing else.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument, unknown field_mask bits).
 */
swy_status_t swy_ep_query(swy_ep_h ep, swy_ep_attr_t* attr);

/**
 * @brief Write the endpoint's protocol table (size ranges → protocol, with reasons) as text.
 * @param memtype  memory type of the send buffer (SWY_MEMTYPE_HOST for host).
 * @return SWY_OK, or SWY_ERR_NO_RESOURCE if @p buf was too small (output truncated).
 */
swy_status_t swy_ep_print_protocols(swy_ep_h ep, swy_memtype_t memtype, char* buf, size_t buflen);

/* ---------------------------------------------------------------------------------------- */
/* Listener (connection establishment through sockaddr)                                     */
/* ---------------------------------------------------------------------------------------- */

/**
 * Called from swy_worker_progress() for each connection request a listener received (its
 * client's address validated and, on a keyed listener, its proof of the key checked). Answer
 * it, in the callback or later, with swy_ep_create(SWY_EP_FLAG_CONN_REQUEST) or
 * swy_listener_reject(); the client waits until then (at most 30 s). Requests from a worker that already has an endpoint here are never offered (see
 * swy_ep_create()).
 */
typedef void (*swy_listener_conn_cb_t)(swy_conn_request_h conn_request, void* arg);

/** Listener creation flags (swy_listener_params_t.flags). */
enum swy_listener_flags {
    /** Require clients to prove auth_key (shared-key challenge-response, HMAC-SHA256). */
    SWY_LISTENER_FLAG_AUTH_KEY = 1u << 0
};

/** swy_listener_params_t.field_mask bits. */
enum swy_listener_param_field {
    SWY_LISTENER_PARAM_FIELD_SOCKADDR = 1u << 0,     /**< sockaddr, sockaddr_length (required) */
    SWY_LISTENER_PARAM_FIELD_CONN_HANDLER = 1u << 1, /**< on_connect, arg (required) */
    SWY_LISTENER_PARAM_FIELD_FLAGS = 1u << 2,        /**< flags */
    SWY_LISTENER_PARAM_FIELD_AUTH_KEY = 1u << 3      /**< auth_key, auth_key_length */
};

/**
 * Parameters for swy_listener_create(). Zero-initialise, then set fields and their bits
 * (SOCKADDR and CONN_HANDLER are required). SWY_LISTENER_FLAG_AUTH_KEY needs
 * SWY_LISTENER_PARAM_FIELD_AUTH_KEY. Zero-initialised parameters mean no key.
 */
typedef struct swy_listener_params {
    uint64_t field_mask;               /**< enum swy_listener_param_field */
    const struct sockaddr* sockaddr;   /**< required: IPv4 or IPv6 address to bind (the IPv6
                                          wildcard also accepts IPv4 clients); port 0 lets
                                          the kernel choose (see swy_listener_query()) */
    size_t sockaddr_length;            /**< its length */
    swy_listener_conn_cb_t on_connect; /**< required */
    void* arg;                         /**< passed to on_connect */
    uint32_t flags;                    /**< enum swy_listener_flags */
    const void* auth_key;              /**< SWY_LISTENER_FLAG_AUTH_KEY: the shared key, 16 to
                                          256 bytes (random bytes, not a password); copied,
                                          the caller keeps ownership */
    size_t auth_key_length;            /**< SWY_LISTENER_FLAG_AUTH_KEY: its length in bytes */
} swy_listener_params_t;

/**
 * @brief Listen for connections on a TCP sockaddr. Accepting, the handshake and the
 * callbacks all run from swy_worker_progress() of @p worker (its event fd covers the
 * listener). A malformed, truncated or silent handshake closes that one connection with an
 * error in the log; the listener keeps accepting.
 *
 * The handshake reveals nothing of this worker before it must: a client gets a random nonce
 * (and, with a key, a proof of it) until its request is accepted; this worker's address goes
 * out only with the accept. With SWY_LISTENER_FLAG_AUTH_KEY, a client that does not prove the
 * key (none, or another) is closed with "authentication failed from <addr>" in the log
 * before on_connect could see it; its endpoint fails with SWY_ERR_CONNECTION_RESET. Without a
 * key anyone who reaches the port may ask; on_connect (with swy_conn_request_query()) decides.
 * The key authenticates the handshake only: messages on the wired lanes are not encrypted.
 *
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument, no callback, a family other than
 *         AF_INET/AF_INET6 or a short length, unknown flags, a key shorter than 16 or longer
 *         than 256 bytes); SWY_ERR_IO (bind or listen failed, e.g. the port is in use; the
 *         log says why).
 * Thread safety: as any call on @p worker.
 */
swy_status_t swy_listener_create(swy_worker_h worker, const swy_listener_params_t* params,
                                 swy_listener_h* listener);

/**
 * @brief The same call as swy_listener_create(), under the name 0.1 headers mapped it to (a
 * macro, before the field_mask made a second entry point unnecessary). Kept so that sources
 * naming it still build; new code calls swy_listener_create().
 */
swy_status_t swy_listener_create_v2(swy_worker_h worker, const swy_listener_params_t* params,
                                    swy_listener_h* listener);

/** swy_listener_attr_t.field_mask bits. */
enum swy_listener_attr_field {
    SWY_LISTENER_ATTR_FIELD_SOCKADDR = 1u << 0 /**< sockaddr, sockaddr_length, port */
};

/** What a listener is bound to. */
typedef struct swy_listener_attr {
    uint64_t field_mask;              /**< in: enum swy_listener_attr_field */
    struct sockaddr_storage sockaddr; /**< bound address (the port the kernel chose for 0) */
    size_t sockaddr_length;           /**< valid bytes in sockaddr */
    uint16_t port;                    /**< bound port, host byte order */
} swy_listener_attr_t;

/**
 * @brief Query the bound address (with SWY_LISTENER_ATTR_FIELD_SOCKADDR).
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument, unknown field_mask bits).
 */
swy_status_t swy_listener_query(swy_listener_h listener, swy_listener_attr_t* attr);

/**
 * @brief Reject a connection request offered by @p listener: its client's endpoint fails with
 * SWY_ERR_CONNECTION_RESET. @return SWY_OK; SWY_ERR_INVALID_PARAM if the request is not one
 * of this listener's waiting for an answer.
 */
swy_status_t swy_listener_reject(swy_listener_h listener, swy_conn_request_h conn_request);

/** swy_conn_request_attr_t.field_mask bits. */
enum swy_conn_request_attr_field {
    SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_SOCKADDR = 1u << 0, /**< client_sockaddr(_length) */
    SWY_CONN_REQUEST_ATTR_FIELD_CLIENT_UID = 1u << 1       /**< client_worker_uid */
};

/** What is known of a connection request's client. */
typedef struct swy_conn_request_attr {
    uint64_t field_mask;                     /**< in: enum swy_conn_request_attr_field */
    struct sockaddr_storage client_sockaddr; /**< the client's address as accepted */
    size_t client_sockaddr_length;
    uint64_t client_worker_uid; /**< the client worker's unique id (from the
                                                  address it sent; on a keyed listener the
                                                  client proved the key over that address) */
} swy_conn_request_attr_t;

/**
 * @brief Query a request before answering it: fills the fields attr->field_mask asks for.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL argument, unknown field_mask bits).
 */
swy_status_t swy_conn_request_query(swy_conn_request_h conn_request, swy_conn_request_attr_t* attr);

/**
 * @brief Stop listening and release the listener. Requests not yet answered are rejected and
 * their handles become invalid; endpoints already created are not affected.
 */
void swy_listener_destroy(swy_listener_h listener);

/* ---------------------------------------------------------------------------------------- */
/* Requests                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/** What a receive matched. */
typedef struct swy_tag_recv_info {
    swy_tag_t sender_tag; /**< the tag the sender used */
    size_t length;        /**< the sender's message length (may exceed the buffer) */
} swy_tag_recv_info_t;

/** Send completion callback, run from progress. */
typedef void (*swy_send_cb_t)(swy_request_h req, swy_status_t status, void* user_data);
/** Receive completion callback, run from progress; @p info is valid only during the call. */
typedef void (*swy_recv_cb_t)(swy_request_h req, swy_status_t status,
                              const swy_tag_recv_info_t* info, void* user_data);

/** Request parameter flags. */
enum swy_request_flags {
    /** Synchronous send: completes only once a receive matched the message. */
    SWY_REQ_FLAG_SYNC = 1u << 0,
    /** Never complete immediately: always return a request (callback always runs). */
    SWY_REQ_FLAG_NO_IMM_COMPLETE = 1u << 1
};

/** swy_request_params_t.field_mask bits. */
enum swy_request_param_field {
    SWY_REQ_PARAM_FIELD_FLAGS = 1u << 0,     /**< flags */
    SWY_REQ_PARAM_FIELD_CALLBACK = 1u << 1,  /**< send_cb or recv_cb (whichever applies) */
    SWY_REQ_PARAM_FIELD_USER_DATA = 1u << 2, /**< user_data */
    SWY_REQ_PARAM_FIELD_MEMTYPE = 1u << 3,   /**< memtype */
    SWY_REQ_PARAM_FIELD_RECV_INFO = 1u << 4, /**< recv_info */
    SWY_REQ_PARAM_FIELD_DATATYPE = 1u << 5,  /**< datatype (switchyard/datatype.h) */
    SWY_REQ_PARAM_FIELD_REQUEST = 1u << 6    /**< request, request_size (caller's memory) */
};

/**
 * Per-operation parameters. May be NULL (no callback, detect the memory type, contiguous).
 * A field is read only when its bit is in field_mask; unknown bits make the operation fail
 * with SWY_ERR_INVALID_PARAM before anything is posted.
 */
typedef struct swy_request_params {
    uint64_t field_mask;            /**< enum swy_request_param_field */
    uint32_t flags;                 /**< enum swy_request_flags (and enum swy_am_send_flags) */
    swy_send_cb_t send_cb;          /**< for sends, put, get, atomics, flush */
    swy_recv_cb_t recv_cb;          /**< for receives */
    void* user_data;                /**< passed to the callback */
    swy_memtype_t memtype;          /**< memory type of the buffer; UNKNOWN: detect */
    swy_tag_recv_info_t* recv_info; /**< receives: filled when completing immediately */
    swy_datatype_t datatype;        /**< how buffer and count are read (default contiguous) */
    /** Memory of the caller's for the request (see "Requests in the caller's memory"
     *  below): request_size bytes or more, aligned to request_alignment (swy_worker_query,
     *  SWY_WORKER_ATTR_FIELD_REQUEST_SIZE). Tagged sends and receives only. */
    void* request;
    size_t request_size; /**< bytes at request; fewer than the query's request_size is refused */
} swy_request_params_t;

/*
 * Requests in the caller's memory (SWY_REQ_PARAM_FIELD_REQUEST; as UCP's request_size and
 * UCP_OP_ATTR_FIELD_REQUEST): a tagged send or receive (swy_tag_send_nb, swy_tag_recv_nb,
 * swy_tag_msg_recv_nb) that does not complete at once keeps its request inside the caller's
 * memory instead of taking one from the worker's pool, so the caller's own request object and
 * Switchyard's are one allocation. Ask the size once:
 *
 *     swy_worker_attr_t a = {.field_mask = SWY_WORKER_ATTR_FIELD_REQUEST_SIZE};
 *     swy_worker_query(worker, &a);      // a.request_size, a.request_alignment
 *     ...
 *     p.field_mask |= SWY_REQ_PARAM_FIELD_REQUEST;
 *     p.request = my_req->swy_space;     // a.request_size bytes, suitably aligned
 *     p.request_size = a.request_size;
 *
 * Ownership: from the call until swy_request_free() of the handle it returned, the memory
 * belongs to Switchyard; the caller must not write, move or release it. A call that returns
 * SWY_OK (completed at once) or an error leaves the memory the caller's at once. The handle is
 * used as any other (test, wait, cancel, recv_info, free), with one difference: such a request
 * may be freed only once it has completed (its callback ran, or test/wait returned its final
 * status); swy_request_free() before that returns SWY_ERR_BUSY (logged) and changes nothing.
 * Once swy_request_free() returned SWY_OK — in the completion callback too — the memory is
 * the caller's again and may be reused at once, for a new request or anything else.
 * The handle is not the memory's address: it names a slot the worker owns, so a freed or
 * stale handle is refused with SWY_ERR_INVALID_PARAM whatever the caller has done with the
 * memory since. swy_worker_destroy() completes and releases such requests as it does pool
 * ones (the memory must stay valid until it returns).
 * Refused with SWY_ERR_INVALID_PARAM (and a log line saying why): a NULL request, a
 * request_size below the query's, memory not aligned to request_alignment, and the field on
 * operations other than tagged sends and receives (active messages; one-sided operations
 * refuse it as an unknown bit).
 */

/**
 * @brief Check a request. @return SWY_INPROGRESS, or its final status;
 * SWY_ERR_INVALID_PARAM for a freed handle (see "Handles and their lifetime" above).
 * Does not make progress: call swy_worker_progress() in between.
 */
swy_status_t swy_request_test(swy_request_h req);

/**
 * @brief Progress @p worker until the request completes. @return its final status.
 * The request still has to be freed with swy_request_free().
 * @return SWY_ERR_INVALID_PARAM (logged) when called from a completion or error callback (or
 *         any other code the worker runs) for a request not yet complete: progress does not
 *         run inside itself there, so the wait could never end. Test the request after the
 *         callback has returned instead. Also for a freed handle, or a request of another
 *         worker.
 */
swy_status_t swy_request_wait(swy_worker_h worker, swy_request_h req);

/** @brief What a completed receive matched. @return SWY_OK, SWY_INPROGRESS if not done. */
swy_status_t swy_request_recv_info(swy_request_h req, swy_tag_recv_info_t* info);

/**
 * @brief Cancel a request.
 * A receive that has not been matched completes with SWY_ERR_CANCELED (callback runs from
 * the next progress). A receive already matched (its data is arriving) and sends are not
 * canceled: @return SWY_ERR_BUSY for those, SWY_OK when the cancel took effect.
 */
swy_status_t swy_request_cancel(swy_worker_h worker, swy_request_h req);

/**
 * @brief Release a request (before or after completion). The handle is spent: any later use,
 * a second free included, is refused.
 * @return SWY_OK (also for NULL); SWY_ERR_INVALID_PARAM (logged; abort in builds without
 *         NDEBUG) for a handle already freed; SWY_ERR_BUSY (logged, nothing changes) for a
 *         request in the caller's memory that has not completed yet (see "Requests in the
 *         caller's memory"); SWY_ERR_UNSUPPORTED for a request of a worker
 *         inherited through fork(). (It returned void before 0.3: callers that ignore the
 *         result are unaffected.)
 */
swy_status_t swy_request_free(swy_request_h req);

/**
 * @brief swy_request_test(), then on completion swy_request_recv_info() and
 * swy_request_free() of @p req, in one call: for a loop that progresses the worker and polls
 * one request (a blocking receive), where the three calls each resolved the handle again.
 * @return SWY_INPROGRESS: nothing changed, the request is still the caller's. Otherwise the
 *         operation's final status (SWY_OK, SWY_ERR_MESSAGE_TRUNCATED, ...): a receive's
 *         match information was copied to @p info (when @p info is not NULL; a send leaves
 *         it untouched) and the handle is spent, as after swy_request_free().
 *         SWY_ERR_INVALID_PARAM (logged) for NULL or a freed handle, SWY_ERR_UNSUPPORTED for
 *         a request of a worker inherited through fork(). A request with a completion
 *         callback may be passed too; one its callback freed is a freed handle here.
 */
swy_status_t swy_request_test_free(swy_request_h req, swy_tag_recv_info_t* info);

/* ---------------------------------------------------------------------------------------- */
/* Tagged messaging (MPI semantics)                                                         */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief Send @p length bytes with @p tag. Messages from one endpoint match in send order.
 * @param buffer  must stay valid and unchanged until completion; may be NULL if length is 0.
 * @return see the completion model at the top of this file. SWY_ERR_ENDPOINT_CLOSED or
 *         SWY_ERR_CONNECTION_RESET if the endpoint has failed.
 */
swy_status_t swy_tag_send_nb(swy_ep_h ep, const void* buffer, size_t length, swy_tag_t tag,
                             const swy_request_params_t* params, swy_request_h* req);

/**
 * @brief Receive a message whose tag matches: (sender_tag & tag_mask) == (tag & tag_mask).
 * Receives match in post order. A message larger than @p length completes with
 * SWY_ERR_MESSAGE_TRUNCATED, and nothing is written past @p length bytes.
 */
swy_status_t swy_tag_recv_nb(swy_worker_h worker, void* buffer, size_t length, swy_tag_t tag,
                             swy_tag_t tag_mask, const swy_request_params_t* params,
                             swy_request_h* req);

/**
 * @brief Look for an unexpected message that a receive with (tag, mask) would match.
 * @param remove   0: leave it (MPI_Iprobe); 1: take it out of matching (MPI_Improbe) and
 *                 return it in @p message for swy_tag_msg_recv_nb().
 * @param[out] info  its tag and length (may be NULL).
 * @param[out] message  required with remove = 1; ignored (may be NULL) with remove = 0.
 * @return SWY_OK if found; SWY_ERR_NO_MESSAGE if not (call progress and retry).
 */
swy_status_t swy_tag_probe_nb(swy_worker_h worker, swy_tag_t tag, swy_tag_t tag_mask, int remove,
                              swy_tag_recv_info_t* info, swy_message_h* message);

/**
 * @brief Receive a message removed by swy_tag_probe_nb(remove=1) (MPI_Mrecv).
 * Consumes @p message. Completion model as swy_tag_recv_nb().
 */
swy_status_t swy_tag_msg_recv_nb(swy_worker_h worker, void* buffer, size_t length,
                                 swy_message_h message, const swy_request_params_t* params,
                                 swy_request_h* req);

#ifdef __cplusplus
}
#endif

#include <switchyard/am.h>
#include <switchyard/rma.h>

#endif
