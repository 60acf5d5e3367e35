/* ucp_dt_create_generic / ucp_dt_destroy: a UCP generic datatype becomes a Switchyard generic
 * datatype whose callbacks call the consumer's. Switchyard streams the packed form fragment
 * by fragment (pack/unpack with offsets), as UCX does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ucp_shim.h"
#include "ucp_shim_dt.h"

/* Bytes of one element a pack may hold back: MPICH packs whole basic elements only, so a
 * fragment edge inside one makes its pack stop short (UCX takes what it got and asks again at
 * that offset; Switchyard wants every fragment full). */
enum { kCarryMax = 256 };

/* Per-operation state: the consumer's state plus its type, and the packed bytes of an element
 * that straddled the last fragment edge (carry_len bytes at packed offset carry_offset). */
typedef struct generic_state {
    const ucp_shim_generic_dt_t* type;
    void* user;
    size_t carry_offset;
    size_t carry_len;
    uint8_t carry[kCarryMax];
    /* Receives: MPICH unpacks whole elements only and fails a fragment that ends inside one.
     * Fragments go straight to the consumer while they unpack; from the first that fails
     * on, the rest is staged and unpacked in one call once all of it arrived (or at finish,
     * for a message shorter than the buffer). Re-unpacking the failed fragment's leading
     * whole elements writes the same bytes again. */
    size_t packed_size;  /* the receive's packed length */
    size_t direct_to;    /* bytes [0, direct_to) unpacked directly */
    size_t stage_from;   /* staged[0] is packed offset stage_from */
    size_t staged_bytes; /* bytes staged so far */
    uint8_t* staged;     /* NULL while fragments go straight through */
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
    s->carry_offset = 0;
    s->carry_len = 0;
    s->packed_size = 0;
    s->direct_to = 0;
    s->stage_from = 0;
    s->staged_bytes = 0;
    s->staged = NULL;
    return s;
}

static void* start_pack(void* context, const void* buffer, size_t count) {
    const ucp_shim_generic_dt_t* g = context;
    return wrap_state(g, g->ops.start_pack(g->context, buffer, count));
}

static void* start_unpack(void* context, void* buffer, size_t count) {
    const ucp_shim_generic_dt_t* g = context;
    generic_state_t* s = wrap_state(g, g->ops.start_unpack(g->context, buffer, count));
    if (s != NULL) s->packed_size = g->ops.packed_size(s->user);
    return s;
}

static size_t packed_size(void* state) {
    generic_state_t* s = state;
    return s->type->ops.packed_size(s->user);
}

/* Fills dest with max_length packed bytes from offset (fewer only at the end of the data),
 * whatever granularity the consumer's pack has: a short pack is followed by another at the
 * offset it reached; one that cannot place a whole element in the room left packs it into
 * the carry, whose head fills the fragment and whose tail starts the next one. */
static size_t pack(void* state, size_t offset, void* dest, size_t max_length) {
    generic_state_t* s = state;
    uint8_t* out = dest;
    size_t done = 0;
    if (s->carry_len > 0) {
        if (s->carry_offset == offset) {
            size_t c = s->carry_len < max_length ? s->carry_len : max_length;
            memcpy(out, s->carry, c);
            memmove(s->carry, s->carry + c, s->carry_len - c);
            s->carry_len -= c;
            s->carry_offset += c;
            done = c;
        } else {
            s->carry_len = 0; /* asked elsewhere: what was held back is stale */
        }
    }
    while (done < max_length) {
        size_t n = s->type->ops.pack(s->user, offset + done, out + done, max_length - done);
        if (n > 0) {
            done += n;
            continue;
        }
        size_t m = s->type->ops.pack(s->user, offset + done, s->carry, sizeof(s->carry));
        if (m == 0) break; /* end of the data */
        size_t c = m < max_length - done ? m : max_length - done;
        memcpy(out + done, s->carry, c);
        done += c;
        memmove(s->carry, s->carry + c, m - c);
        s->carry_len = m - c;
        s->carry_offset = offset + done;
    }
    return done;
}

static ucs_status_t flush_staged(generic_state_t* s) {
    ucs_status_t st = UCS_OK;
    if (s->staged != NULL && s->staged_bytes > 0)
        st = s->type->ops.unpack(s->user, s->stage_from, s->staged, s->staged_bytes);
    free(s->staged);
    s->staged = NULL;
    s->staged_bytes = 0;
    return st;
}

static swy_status_t unpack(void* state, size_t offset, const void* src, size_t length) {
    generic_state_t* s = state;
    if (s->staged == NULL && offset == s->direct_to) {
        ucs_status_t st = s->type->ops.unpack(s->user, offset, src, length);
        if (st == UCS_OK) {
            s->direct_to += length;
            return SWY_OK;
        }
    }
    if (s->staged == NULL) { /* from here on, stage */
        s->stage_from = s->direct_to;
        s->staged = malloc(s->packed_size - s->stage_from + 1);
        if (s->staged == NULL) return SWY_ERR_NO_MEMORY;
    }
    if (offset < s->stage_from || length > s->packed_size - offset) return SWY_ERR_INVALID_PARAM;
    memcpy(s->staged + (offset - s->stage_from), src, length);
    s->staged_bytes += length;
    if (s->stage_from + s->staged_bytes < s->packed_size) return SWY_OK;
    return ucp_shim_swy_status(flush_staged(s));
}

static void finish(void* state) {
    generic_state_t* s = state;
    (void)flush_staged(s); /* a message shorter than the buffer: what arrived */
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
