/**
 * @file contrib/ucp/ucp_shim_addr.h
 * @brief The worker address the shim hands out: a header, then Switchyard's address blob.
 * UCP addresses travel without their length (ucp_ep_create gets a pointer only), so the
 * header carries it; its magic lets ucp_ep_create refuse an address from real UCX clearly.
 */
#ifndef UCP_SHIM_ADDR_H
#define UCP_SHIM_ADDR_H

#include <stdint.h>

enum {
    UCP_SHIM_ADDR_MAGIC = 0x41595753, /* "SWYA" little-endian */
    UCP_SHIM_ADDR_VERSION = 1,
    UCP_SHIM_ADDR_MAX_SWY = 64 * 1024 /* larger claims are refused as malformed */
};

/** In front of the Switchyard address blob (swy_length bytes follow). */
typedef struct ucp_shim_addr_header {
    uint32_t magic;      /**< UCP_SHIM_ADDR_MAGIC */
    uint16_t version;    /**< UCP_SHIM_ADDR_VERSION */
    uint16_t reserved;   /**< 0 */
    uint32_t swy_length; /**< bytes of the Switchyard blob after this header */
    uint32_t reserved2;  /**< 0 */
    uint64_t uid;        /**< the worker's id (ucp_worker_address_query) */
} ucp_shim_addr_header_t;

#endif
