/* ucp_dt_create_generic / ucp_dt_destroy: a UCP generic datatype becomes a Switchyard generic
 * datatype whose callbacks call the consumer's. Switchyard streams the packed form fragment
 * by fragment (pack/unpack with offsets), as UCX does. */
#include <stdlib.h>
#include <string.h>

#include "ucp_shim.h"
#include "ucp_shim_dt.h"

/* Per-operation state: the consumer's state plus its type (for unpack's status translation). */
typedef struct generic_state {
    const ucp_shim_generic_dt_t* type;
    void* user;
} generic_state_t;

static void* wrap_state(const ucp_shim_generic_dt_t* g, void* user) {
    if (user == NULL) return NULL;
    generic_state_t* s = malloc(sizeof(*s));
    if (s == NULL) {
        g->ops.finish(user);
        return NULL;
    }
    s->type = g;
    s->user = user;
    return s;
}

static void* start_pack(void* context, const void* buffer, size_t count) {
    const ucp_shim_generic_dt_t* g = context;
    return wrap_state(g, g->ops.start_pack(g->context, buffer, count));
}

static void* start_unpack(void* context, void* buffer, size_t count) {
    const ucp_shim_generic_dt_t* g = context;
    return wrap_state(g, g->ops.start_unpack(g->context, buffer, count));
}

static size_t packed_size(void* state) {
    generic_state_t* s = state;
    return s->type->ops.packed_size(s->user);
}

static size_t pack(void* state, size_t offset, void* dest, size_t max_length) {
    generic_state_t* s = state;
    return s->type->ops.pack(s->user, offset, dest, max_length);
}

static swy_status_t unpack(void* state, size_t offset, const void* src, size_t length) {
    generic_state_t* s = state;
    return ucp_shim_swy_status(s->type->ops.unpack(s->user, offset, src, length));
}

static void finish(void* state) {
    generic_state_t* s = state;
    s->type->ops.finish(s->user);
    free(s);
}

ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t* ops, void* context,
                                   ucp_datatype_t* datatype_p) {
    if (ops == NULL || datatype_p == NULL || ops->start_pack == NULL || ops->start_unpack == NULL ||
        ops->packed_size == NULL || ops->pack == NULL || ops->unpack == NULL ||
        ops->finish == NULL) {
        ucp_shim_error("ucp_dt_create_generic", "NULL argument or callback");
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_shim_generic_dt_t* g = aligned_alloc(8, sizeof(*g));
    if (g == NULL) return UCS_ERR_NO_MEMORY;
    g->ops = *ops;
    g->context = context;
    static const swy_dt_generic_ops_t wrappers = {start_pack, start_unpack, packed_size,
                                                  pack,       unpack,       finish};
    swy_status_t st = swy_dt_create_generic(&wrappers, g, &g->swy);
    if (st != SWY_OK) {
        free(g);
        return ucp_shim_status(st);
    }
    *datatype_p = (ucp_datatype_t)(uintptr_t)g | UCP_DATATYPE_GENERIC;
    return UCS_OK;
}

void ucp_dt_destroy(ucp_datatype_t datatype) {
    if ((datatype & UCP_DATATYPE_CLASS_MASK) != UCP_DATATYPE_GENERIC) return; /* predefined */
    ucp_shim_generic_dt_t* g = ucp_shim_generic_of(datatype);
    if (g == NULL) return;
    swy_dt_destroy(g->swy);
    free(g);
}
