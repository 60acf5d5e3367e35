/**
 * @file contrib/ucp/ucp_shim_dt.h
 * @brief Generic datatypes of the UCP shim: a ucp_datatype_t of class UCP_DATATYPE_GENERIC
 * points (low 3 bits masked off) to a ucp_shim_generic_dt_t, which holds the consumer's
 * callbacks and the Switchyard generic datatype that calls them.
 */
#ifndef UCP_SHIM_DT_H
#define UCP_SHIM_DT_H

#include "ucp_shim.h"

/** A generic datatype (8-byte aligned: its address carries the class in the low bits). */
typedef struct ucp_shim_generic_dt {
    ucp_generic_dt_ops_t ops; /**< the consumer's callbacks (copied) */
    void* context;            /**< the consumer's context for start_pack/start_unpack */
    swy_datatype_t swy;       /**< the Switchyard generic type wrapping them */
} __attribute__((aligned(8))) ucp_shim_generic_dt_t;

/** The shim object of a generic ucp_datatype_t. */
static inline ucp_shim_generic_dt_t* ucp_shim_generic_of(ucp_datatype_t dt) {
    return (ucp_shim_generic_dt_t*)(uintptr_t)(dt & ~(ucp_datatype_t)UCP_DATATYPE_CLASS_MASK);
}

#endif
