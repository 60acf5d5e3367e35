/**
 * @file switchyard/rma.h
 * @brief One-sided communication: registered memory, remote keys, put/get, atomics,
 * flush and fence. Included by switchyard.h.
 *
 * Model:
 *   - A process exposes memory with swy_mem_map() (registers its own buffer, or allocates one
 *     with SWY_MEM_MAP_ALLOCATE), packs a remote key for it (swy_rkey_pack) and hands the key
 *     to peers out of band (e.g. in a tag message). A peer unpacks it against its endpoint to
 *     the owner (swy_ep_rkey_unpack) and names remote memory by (address, rkey).
 *   - A key grants exactly the mapped range with the access given at swy_mem_map() time, and
 *     nothing after swy_mem_unmap(): an operation outside the range or without the right fails
 *     at the initiator with SWY_ERR_INVALID_PARAM before anything moves; a stale key (its
 *     memory unmapped) or a forged one fails with SWY_ERR_ACCESS_DENIED and never touches
 *     the owner's memory.
 *   - Local completion of swy_put_nb means the local buffer may be reused; of swy_get_nb and
 *     a fetching atomic, that the data is in the local buffer. Remote completion (the data is
 *     in the target's memory) is known only after a flush.
 *   - The target does not need to call anything for memory the initiator can reach directly
 *     (same host: memory allocated by swy_mem_map is mapped by peers; registered memory is
 *     reached with process_vm_writev/readv), but it must keep calling swy_worker_progress()
 *     for operations it executes itself (network transports, atomics on registered memory).
 *
 * Atomicity: SWY_ATOMIC_MODE (configuration) chooses one mode per context. "cpu" (the default
 * and the only one today): every atomic is a CPU atomic instruction -- the initiator's on
 * memory it has mapped (same host, allocated by swy_mem_map) or the target's, executed from
 * its progress -- so atomics on one location are atomic with respect to each other whichever
 * lane carries them, and also with respect to the owner's own __atomic operations on the
 * location. Adapter (RDMA) atomics are not coherent with CPU atomics and are not used.
 */
#ifndef SWITCHYARD_RMA_H
#define SWITCHYARD_RMA_H

#include <stddef.h>
#include <stdint.h>

#include <switchyard/switchyard.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct swy_mem* swy_mem_h;   /**< Memory mapped for remote access. */
typedef struct swy_rkey* swy_rkey_h; /**< A peer's memory, as unpacked on one endpoint. */

/* ---------------------------------------------------------------------------------------- */
/* Memory                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/** swy_mem_map_params_t.field_mask bits: which fields the caller set. */
enum swy_mem_map_field {
    SWY_MEM_MAP_FIELD_ADDRESS = 1u << 0, /**< address */
    SWY_MEM_MAP_FIELD_LENGTH = 1u << 1,  /**< length (required) */
    SWY_MEM_MAP_FIELD_FLAGS = 1u << 2,   /**< flags */
    SWY_MEM_MAP_FIELD_ACCESS = 1u << 3,  /**< access (default: read, write and atomic) */
    SWY_MEM_MAP_FIELD_MEMTYPE = 1u << 4  /**< memtype (default: detect; host if allocated) */
};

/** swy_mem_map_params_t.flags. */
enum swy_mem_map_flags {
    /** Allocate the memory (page-aligned, zero-filled) instead of registering the caller's.
        Allocated host memory lives in a shareable segment: same-host peers map it, so their
        put/get are copies, their atomics CPU atomics, and swy_rkey_ptr() works. */
    SWY_MEM_MAP_ALLOCATE = 1u << 0,
    /** With ALLOCATE: place it exactly at @c address (page-aligned; must not overlap an
        existing mapping), or fail with SWY_ERR_NO_RESOURCE. */
    SWY_MEM_MAP_FIXED = 1u << 1
};

/** Remote access rights (swy_mem_map_params_t.access). */
enum swy_mem_access {
    SWY_ACCESS_REMOTE_READ = 1u << 0,  /**< peers may get from it */
    SWY_ACCESS_REMOTE_WRITE = 1u << 1, /**< peers may put into it */
    SWY_ACCESS_REMOTE_ATOMIC = 1u << 2 /**< peers may run atomics on it */
};

/** Parameters of swy_mem_map(). Zero-initialise, set fields and their field_mask bits. */
typedef struct swy_mem_map_params {
    uint64_t field_mask;   /**< enum swy_mem_map_field; unknown bits: SWY_ERR_INVALID_PARAM */
    void* address;         /**< memory to register (required without ALLOCATE); with
                               ALLOCATE|FIXED the address to allocate at */
    size_t length;         /**< bytes (> 0) */
    uint32_t flags;        /**< enum swy_mem_map_flags */
    uint32_t access;       /**< enum swy_mem_access */
    swy_memtype_t memtype; /**< memory type of @c address (registration only) */
} swy_mem_map_params_t;

/**
 * @brief Map memory for remote access.
 * @return SWY_OK; SWY_ERR_INVALID_PARAM (no length, no address without ALLOCATE, FIXED without
 *         ALLOCATE, unknown flags, access or field bits); SWY_ERR_NO_MEMORY; SWY_ERR_NO_RESOURCE
 *         (FIXED address not available); SWY_ERR_IO (a shareable segment could not be made).
 * Thread safety: any thread.
 */
swy_status_t swy_mem_map(swy_context_h context, const swy_mem_map_params_t* params,
                         swy_mem_h* memh);

/**
 * @brief Unmap: every key of @p memh stops working at once (operations peers start from now on
 * fail with SWY_ERR_ACCESS_DENIED); allocated memory is freed. Operations already executing
 * may still complete. @return SWY_OK; SWY_ERR_INVALID_PARAM.
 */
swy_status_t swy_mem_unmap(swy_context_h context, swy_mem_h memh);

/** swy_mem_attr_t.field_mask bits: which fields to fill. */
enum swy_mem_attr_field {
    SWY_MEM_ATTR_FIELD_ADDRESS = 1u << 0,
    SWY_MEM_ATTR_FIELD_LENGTH = 1u << 1,
    SWY_MEM_ATTR_FIELD_MEMTYPE = 1u << 2,
    SWY_MEM_ATTR_FIELD_ACCESS = 1u << 3,
    SWY_MEM_ATTR_FIELD_SHARED = 1u << 4
};

/** What swy_mem_query() reports. */
typedef struct swy_mem_attr {
    uint64_t field_mask;   /**< in: enum swy_mem_attr_field, the fields wanted */
    void* address;         /**< start of the mapped range */
    size_t length;         /**< its length */
    swy_memtype_t memtype; /**< its memory type */
    uint32_t access;       /**< enum swy_mem_access granted to peers */
    int shared;            /**< 1: same-host peers map it (allocated host memory) */
} swy_mem_attr_t;

/** @brief Query a mapping. @return SWY_OK; SWY_ERR_INVALID_PARAM (NULL, unknown bits). */
swy_status_t swy_mem_query(swy_mem_h memh, swy_mem_attr_t* attr);

/* ---------------------------------------------------------------------------------------- */
/* Remote keys                                                                              */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief Pack a remote key for @p memh: an opaque, position-independent byte string to send
 * to peers. @param[out] buffer release with swy_rkey_buffer_release().
 */
swy_status_t swy_rkey_pack(swy_context_h context, swy_mem_h memh, void** buffer, size_t* length);

/** @brief Release a buffer from swy_rkey_pack(). */
void swy_rkey_buffer_release(void* buffer);

/**
 * @brief Unpack a key a peer packed, for use on @p ep (the endpoint to that peer only).
 * @return SWY_OK; SWY_ERR_MALFORMED (not a key, or truncated: every byte is checked);
 *         SWY_ERR_INVALID_PARAM; SWY_ERR_NO_MEMORY.
 */
swy_status_t swy_ep_rkey_unpack(swy_ep_h ep, const void* buffer, size_t length, swy_rkey_h* rkey);

/** @brief Destroy an unpacked key (before its endpoint). */
void swy_rkey_destroy(swy_rkey_h rkey);

/**
 * @brief A pointer through which this process reaches @p remote_address directly (loads,
 * stores, CPU atomics): the owner's memory is allocated by swy_mem_map and mapped here.
 * Valid until the key is destroyed. @return SWY_OK; SWY_ERR_UNREACHABLE (not mapped here:
 * another host, or registered memory); SWY_ERR_INVALID_PARAM (outside the key's range);
 * SWY_ERR_ACCESS_DENIED (stale key).
 */
swy_status_t swy_rkey_ptr(swy_rkey_h rkey, uint64_t remote_address, void** local_ptr);

/* ---------------------------------------------------------------------------------------- */
/* RMA                                                                                      */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief Write @p count items of @p buffer (datatype from params; bytes by default) to
 * @p remote_address in the memory @p rkey names. Completion model as swy_tag_send_nb
 * (params->send_cb). SWY_OK: the buffer may be reused. Needs SWY_ACCESS_REMOTE_WRITE.
 */
swy_status_t swy_put_nb(swy_ep_h ep, const void* buffer, size_t count, uint64_t remote_address,
                        swy_rkey_h rkey, const swy_request_params_t* params, swy_request_h* req);

/**
 * @brief Read into @p buffer from @p remote_address. Needs SWY_ACCESS_REMOTE_READ.
 * Completes (SWY_OK or the callback) once the data is in @p buffer.
 */
swy_status_t swy_get_nb(swy_ep_h ep, void* buffer, size_t count, uint64_t remote_address,
                        swy_rkey_h rkey, const swy_request_params_t* params, swy_request_h* req);

/** Atomic operations. */
typedef enum swy_atomic_op {
    SWY_ATOMIC_OP_ADD = 0,  /**< *remote += operand */
    SWY_ATOMIC_OP_AND = 1,  /**< *remote &= operand */
    SWY_ATOMIC_OP_OR = 2,   /**< *remote |= operand */
    SWY_ATOMIC_OP_XOR = 3,  /**< *remote ^= operand */
    SWY_ATOMIC_OP_SWAP = 4, /**< *remote = operand */
    SWY_ATOMIC_OP_CSWAP = 5 /**< if (*remote == *compare) *remote = operand */
} swy_atomic_op_t;

/**
 * @brief An atomic operation on the @p size-byte (4 or 8) word at @p remote_address (aligned
 * to @p size). Needs SWY_ACCESS_REMOTE_ATOMIC.
 * @param operand  the operand (size bytes).
 * @param compare  CSWAP only: the value expected (size bytes); NULL for other ops.
 * @param result   NULL: posted (completes locally at once; remote completion by flush);
 *                 otherwise fetching: receives the value the word had before (size bytes).
 * @return as swy_put_nb; SWY_ERR_INVALID_PARAM (size, alignment, op, CSWAP without compare).
 */
swy_status_t swy_atomic_nb(swy_ep_h ep, swy_atomic_op_t op, size_t size, const void* operand,
                           const void* compare, void* result, uint64_t remote_address,
                           swy_rkey_h rkey, const swy_request_params_t* params, swy_request_h* req);

/* ---------------------------------------------------------------------------------------- */
/* Ordering and completion                                                                  */
/* ---------------------------------------------------------------------------------------- */

/**
 * @brief Complete every put, get and atomic started on @p ep before this call *at the
 * target*. Completion model as swy_tag_send_nb. Completes with the first error any of those
 * operations met at the target (e.g. SWY_ERR_ACCESS_DENIED for a put with a stale key) since
 * the last flush, else SWY_OK.
 */
swy_status_t swy_ep_flush_nb(swy_ep_h ep, const swy_request_params_t* params, swy_request_h* req);

/**
 * @brief swy_ep_flush_nb() for every endpoint of @p worker. An endpoint that failed (its
 * peer died, its connection broke) with operations no completed flush covered makes the next
 * worker flush complete with that failure: they may never have been performed. A flush
 * under way when its endpoint fails completes with the failure too, never with SWY_OK.
 */
swy_status_t swy_worker_flush_nb(swy_worker_h worker, const swy_request_params_t* params,
                                 swy_request_h* req);

/**
 * @brief Order: every put, get and atomic started on @p worker before the fence is executed
 * at its target before any started after it (on the same target). Does not wait.
 * @return SWY_OK.
 */
swy_status_t swy_worker_fence(swy_worker_h worker);

#ifdef __cplusplus
}
#endif

#endif
