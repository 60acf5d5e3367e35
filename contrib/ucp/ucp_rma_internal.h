/**
 * @file contrib/ucp/ucp_rma_internal.h
 * @brief Objects of the one-sided half of the UCP library: mapped memory (ucp_mem_h), unpacked
 * remote keys (ucp_rkey_h), the per-context and per-worker state behind context->rma and
 * worker->rma, and the key format ucp_rkey_pack writes.
 */
#ifndef UCP_RMA_INTERNAL_H
#define UCP_RMA_INTERNAL_H

#include "ucp_shim.h"

#ifdef __cplusplus
extern "C" {
#endif

/** context->rma. */
typedef struct ucp_shim_rma_context {
    /** 0 when SWY_UCP_MEM_MAP=0: ucp_mem_map refuses everything with UCS_ERR_UNSUPPORTED (MPICH
        then runs MPI RMA over active messages). */
    int mem_map_enabled;
} ucp_shim_rma_context_t;

/** ucp_mem_h. A zero-length mapping (which UCX allows) has no Switchyard mapping. */
struct ucp_mem {
    uint32_t magic; /**< UCP_SHIM_MEM_MAGIC while mapped */
    swy_mem_h swy;  /**< NULL for a zero-length mapping */
    void* address;
    size_t length;
    ucs_memory_type_t mem_type;
    int allocated; /**< memory allocated by the mapping (UCP_MEM_MAP_ALLOCATE) */
};

#define UCP_SHIM_MEM_MAGIC 0x53574d4du /* "SWMM" */

/** ucp_rkey_h: a Switchyard key unpacked on one endpoint. */
struct ucp_rkey {
    uint32_t magic;    /**< UCP_SHIM_RKEY_MAGIC until destroyed */
    swy_rkey_h swy;    /**< NULL: zero-length key, or its endpoint was closed */
    struct ucp_ep* ep; /**< NULL once the endpoint was closed (key is dead) */
    uint64_t address;  /**< the owner's range, for messages */
    uint64_t length;
    struct ucp_rkey* prev; /**< the endpoint's key list (ep->rma) */
    struct ucp_rkey* next;
};

#define UCP_SHIM_RKEY_MAGIC 0x53575253u /* "SWRS" */

/**
 * The packed key: this header, then @c swy_length bytes of the Switchyard key. UCP's unpack
 * takes no length, so the header says it, and the magic tells a key of this library from a
 * UCX one (refused with a clear error).
 */
typedef struct ucp_shim_packed_rkey {
    uint32_t magic;   /**< UCP_SHIM_PACKED_MAGIC */
    uint16_t version; /**< UCP_SHIM_PACKED_VERSION */
    uint16_t flags;   /**< UCP_SHIM_PACKED_EMPTY: a zero-length mapping, no Switchyard key */
    uint64_t address; /**< the mapped range */
    uint64_t length;
    uint32_t swy_length; /**< bytes of Switchyard key that follow (at most UCP_SHIM_PACKED_MAX) */
    uint32_t reserved;
} ucp_shim_packed_rkey_t;

enum {
    UCP_SHIM_PACKED_MAGIC = 0x4b595753u, /* "SWYK" */
    UCP_SHIM_PACKED_VERSION = 1,
    UCP_SHIM_PACKED_EMPTY = 1u << 0,
    UCP_SHIM_PACKED_MAX = 4096
};

/** The live key behind @p rkey, or NULL (log line naming @p call) if it is not one. */
struct ucp_rkey* ucp_shim_rkey_check(ucp_rkey_h rkey, const char* call);

#ifdef __cplusplus
}
#endif

#endif
