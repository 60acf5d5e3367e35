/* UCP memory mapping and remote keys on Switchyard (swy_mem_map, swy_rkey_*): ucp_mem_map,
 * ucp_mem_unmap, ucp_mem_query, ucp_mem_advise, ucp_rkey_pack, ucp_rkey_buffer_release,
 * ucp_ep_rkey_unpack, ucp_rkey_destroy, ucp_rkey_ptr; and the context and endpoint hooks of
 * the one-sided half (SWY_UCP_MEM_MAP, keys of a closing endpoint). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ucp_rma_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* Hooks                                                                                    */
/* ---------------------------------------------------------------------------------------- */

ucs_status_t ucp_shim_rma_context_init(struct ucp_context* context) {
    ucp_shim_rma_context_t* rc = calloc(1, sizeof(*rc));
    if (rc == NULL) return UCS_ERR_NO_MEMORY;
    /* SWY_UCP_MEM_MAP (a bool of the config table: the values Switchyard reads as false). */
    const char* v = getenv("SWY_UCP_MEM_MAP");
    rc->mem_map_enabled = 1;
    static const char* const kFalse[] = {"n", "no", "0", "off", "false"};
    for (size_t i = 0; v != NULL && i < sizeof(kFalse) / sizeof(kFalse[0]); ++i) {
        if (strcasecmp(v, kFalse[i]) == 0) rc->mem_map_enabled = 0;
    }
    context->rma = rc;
    return UCS_OK;
}

void ucp_shim_rma_context_cleanup(struct ucp_context* context) {
    free(context->rma);
    context->rma = NULL;
}

/* Switchyard keys must go before their endpoint: a consumer that destroys its keys after
 * closing the endpoint (allowed by nothing, done by some) finds them dead, not dangling. */
void ucp_shim_rma_ep_cleanup(struct ucp_ep* ep) {
    ucp_shim_worker_lock(ep->worker);
    struct ucp_rkey* k = ep->rma;
    ep->rma = NULL;
    ucp_shim_worker_unlock(ep->worker);
    while (k != NULL) {
        struct ucp_rkey* next = k->next;
        if (k->swy != NULL) swy_rkey_destroy(k->swy);
        k->swy = NULL;
        k->ep = NULL;
        k->prev = k->next = NULL;
        k = next;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Memory                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static struct ucp_mem* mem_check(ucp_mem_h memh, const char* call) {
    if (memh == NULL || memh->magic != UCP_SHIM_MEM_MAGIC) {
        ucp_shim_error(call, "not a mapped memory handle");
        return NULL;
    }
    return memh;
}

/* UCP protection bits -> Switchyard access. UCP has no atomic bit: remote write grants it. */
static uint32_t access_of(unsigned prot) {
    uint32_t access = 0;
    if (prot & UCP_MEM_MAP_PROT_REMOTE_READ) access |= SWY_ACCESS_REMOTE_READ;
    if (prot & UCP_MEM_MAP_PROT_REMOTE_WRITE)
        access |= SWY_ACCESS_REMOTE_WRITE | SWY_ACCESS_REMOTE_ATOMIC;
    return access;
}

ucs_status_t ucp_mem_map(ucp_context_h context, const ucp_mem_map_params_t* params,
                         ucp_mem_h* memh_p) {
    static const char call[] = "ucp_mem_map";
    if (context == NULL || params == NULL || memh_p == NULL) {
        ucp_shim_error(call, "context, params and memh_p must not be NULL");
        return UCS_ERR_INVALID_PARAM;
    }
    const ucp_shim_rma_context_t* rc = context->rma;
    if (rc != NULL && !rc->mem_map_enabled) return UCS_ERR_UNSUPPORTED; /* SWY_UCP_MEM_MAP=0 */
    const uint64_t m = params->field_mask;
    if (!(m & UCP_MEM_MAP_PARAM_FIELD_LENGTH)) {
        ucp_shim_error(call, "length is required (UCP_MEM_MAP_PARAM_FIELD_LENGTH)");
        return UCS_ERR_INVALID_PARAM;
    }
    void* address = (m & UCP_MEM_MAP_PARAM_FIELD_ADDRESS) ? params->address : NULL;
    const size_t length = params->length;
    const unsigned flags = (m & UCP_MEM_MAP_PARAM_FIELD_FLAGS) ? params->flags : 0;
    const int allocate = (flags & UCP_MEM_MAP_ALLOCATE) != 0;
    const int fixed = (flags & UCP_MEM_MAP_FIXED) != 0;
    ucs_memory_type_t mem_type = (m & UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE)
                                     ? params->memory_type
                                     : (allocate ? UCS_MEMORY_TYPE_HOST : UCS_MEMORY_TYPE_UNKNOWN);
    /* UCP's matrix of behaviour: FIXED needs ALLOCATE and an address; registering needs an
       address. (ALLOCATE with an address and without FIXED is a hint: not followed.) */
    if (fixed && (!allocate || address == NULL)) {
        ucp_shim_error(call, "UCP_MEM_MAP_FIXED needs UCP_MEM_MAP_ALLOCATE and an address");
        return UCS_ERR_INVALID_PARAM;
    }
    if (!allocate && address == NULL && length != 0) {
        ucp_shim_error(call, "no address to register (and no UCP_MEM_MAP_ALLOCATE)");
        return UCS_ERR_INVALID_PARAM;
    }
    if (mem_type != UCS_MEMORY_TYPE_HOST && mem_type != UCS_MEMORY_TYPE_UNKNOWN) {
        return UCS_ERR_UNSUPPORTED; /* device memory is not mapped for remote access */
    }
    struct ucp_mem* mem = calloc(1, sizeof(*mem));
    if (mem == NULL) return UCS_ERR_NO_MEMORY;
    mem->mem_type = UCS_MEMORY_TYPE_HOST;
    if (length == 0) { /* UCX maps nothing and hands out a handle: so do we */
        mem->address = address;
        mem->magic = UCP_SHIM_MEM_MAGIC;
        *memh_p = mem;
        return UCS_OK;
    }
    swy_mem_map_params_t sp;
    memset(&sp, 0, sizeof(sp));
    sp.field_mask = SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_FLAGS;
    sp.length = length;
    if (allocate) {
        sp.flags = SWY_MEM_MAP_ALLOCATE;
        if (fixed) {
            sp.flags |= SWY_MEM_MAP_FIXED;
            sp.field_mask |= SWY_MEM_MAP_FIELD_ADDRESS;
            sp.address = address;
        }
    } else {
        sp.field_mask |= SWY_MEM_MAP_FIELD_ADDRESS;
        sp.address = address;
        if (mem_type == UCS_MEMORY_TYPE_HOST) {
            sp.field_mask |= SWY_MEM_MAP_FIELD_MEMTYPE;
            sp.memtype = SWY_MEMTYPE_HOST;
        }
    }
    if (m & UCP_MEM_MAP_PARAM_FIELD_PROT) {
        sp.field_mask |= SWY_MEM_MAP_FIELD_ACCESS;
        sp.access = access_of(params->prot);
    }
    swy_status_t s = swy_mem_map(context->swy, &sp, &mem->swy);
    if (s != SWY_OK) {
        free(mem);
        return ucp_shim_status(s);
    }
    swy_mem_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS | SWY_MEM_ATTR_FIELD_LENGTH;
    swy_mem_query(mem->swy, &attr);
    mem->address = attr.address;
    mem->length = attr.length;
    mem->allocated = allocate;
    mem->magic = UCP_SHIM_MEM_MAGIC;
    *memh_p = mem;
    return UCS_OK;
}

ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh) {
    struct ucp_mem* mem = mem_check(memh, "ucp_mem_unmap");
    if (context == NULL || mem == NULL) return UCS_ERR_INVALID_PARAM;
    if (mem->swy != NULL) {
        swy_status_t s = swy_mem_unmap(context->swy, mem->swy);
        if (s != SWY_OK) return ucp_shim_status(s);
    }
    mem->magic = 0;
    free(mem);
    return UCS_OK;
}

ucs_status_t ucp_mem_query(const ucp_mem_h memh, ucp_mem_attr_t* attr) {
    struct ucp_mem* mem = mem_check(memh, "ucp_mem_query");
    if (mem == NULL || attr == NULL) return UCS_ERR_INVALID_PARAM;
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_ADDRESS) attr->address = mem->address;
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_LENGTH) attr->length = mem->length;
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_MEM_TYPE) attr->mem_type = mem->mem_type;
    return UCS_OK;
}

/* Switchyard maps memory at once (no UCP_MEM_MAP_NONBLOCK deferral), so there is nothing to
 * speed up: WILLNEED only asks the kernel to fault the range in. */
ucs_status_t ucp_mem_advise(ucp_context_h context, ucp_mem_h memh,
                            ucp_mem_advise_params_t* params) {
    static const char call[] = "ucp_mem_advise";
    struct ucp_mem* mem = mem_check(memh, call);
    if (context == NULL || mem == NULL || params == NULL) return UCS_ERR_INVALID_PARAM;
    const uint64_t all = UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS | UCP_MEM_ADVISE_PARAM_FIELD_LENGTH |
                         UCP_MEM_ADVISE_PARAM_FIELD_ADVICE;
    if ((params->field_mask & all) != all) {
        ucp_shim_error(call, "address, length and advice are all required");
        return UCS_ERR_INVALID_PARAM;
    }
    const uintptr_t start = (uintptr_t)params->address, base = (uintptr_t)mem->address;
    if (start < base || params->length > mem->length ||
        start - base > mem->length - params->length) {
        ucp_shim_error(call, "the range is not inside the mapping");
        return UCS_ERR_INVALID_PARAM;
    }
    switch (params->advice) {
        case UCP_MADV_NORMAL: return UCS_OK;
        case UCP_MADV_WILLNEED: {
            const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
            const uintptr_t from = start & ~(page - 1);
            if (params->length != 0) {
                (void)madvise((void*)from, start + params->length - from, MADV_WILLNEED);
            }
            return UCS_OK;
        }
        default: ucp_shim_error(call, "unknown advice %d", (int)params->advice);
    }
    return UCS_ERR_INVALID_PARAM;
}

/* ---------------------------------------------------------------------------------------- */
/* Remote keys                                                                              */
/* ---------------------------------------------------------------------------------------- */

ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh, void** rkey_buffer_p,
                           size_t* size_p) {
    static const char call[] = "ucp_rkey_pack";
    struct ucp_mem* mem = mem_check(memh, call);
    if (context == NULL || mem == NULL || rkey_buffer_p == NULL || size_p == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    void* key = NULL;
    size_t key_length = 0;
    if (mem->swy != NULL) {
        swy_status_t s = swy_rkey_pack(context->swy, mem->swy, &key, &key_length);
        if (s != SWY_OK) return ucp_shim_status(s);
        if (key_length > UCP_SHIM_PACKED_MAX) {
            swy_rkey_buffer_release(key);
            ucp_shim_error(call, "Switchyard key of %zu bytes is too long", key_length);
            return UCS_ERR_NO_RESOURCE;
        }
    }
    ucp_shim_packed_rkey_t header;
    memset(&header, 0, sizeof(header));
    header.magic = UCP_SHIM_PACKED_MAGIC;
    header.version = UCP_SHIM_PACKED_VERSION;
    header.flags = mem->swy == NULL ? UCP_SHIM_PACKED_EMPTY : 0;
    header.address = (uint64_t)(uintptr_t)mem->address;
    header.length = mem->length;
    header.swy_length = (uint32_t)key_length;
    uint8_t* out = malloc(sizeof(header) + key_length);
    if (out == NULL) {
        if (key != NULL) swy_rkey_buffer_release(key);
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(out, &header, sizeof(header));
    if (key_length != 0) memcpy(out + sizeof(header), key, key_length);
    if (key != NULL) swy_rkey_buffer_release(key);
    *rkey_buffer_p = out;
    *size_p = sizeof(header) + key_length;
    return UCS_OK;
}

void ucp_rkey_buffer_release(void* rkey_buffer) { free(rkey_buffer); }

ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void* rkey_buffer, ucp_rkey_h* rkey_p) {
    static const char call[] = "ucp_ep_rkey_unpack";
    if (ep == NULL || rkey_buffer == NULL || rkey_p == NULL) {
        ucp_shim_error(call, "ep, rkey_buffer and rkey_p must not be NULL");
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_shim_packed_rkey_t header;
    memcpy(&header, rkey_buffer, sizeof(header));
    uint64_t md_map = 0;
    memcpy(&md_map, rkey_buffer, sizeof(md_map));
    if (md_map == 0) {
        /* What UCX makes of a key whose memory-domain map is empty: a key that reaches no
           memory (every access with it fails). Open MPI 4.1's osc ucx unpacks such bytes (a
           slot in front of its dynamic-window table) for MPI_Rput/MPI_Rget on dynamic
           windows and never uses the key, so refusing it would fail those calls. */
        memset(&header, 0, sizeof(header));
        header.magic = UCP_SHIM_PACKED_MAGIC;
        header.version = UCP_SHIM_PACKED_VERSION;
        header.flags = UCP_SHIM_PACKED_EMPTY;
    }
    if (header.magic != UCP_SHIM_PACKED_MAGIC || header.version != UCP_SHIM_PACKED_VERSION) {
        ucp_shim_error(call,
                       "not a key packed by this library (a key from UCX itself?): starts with "
                       "%08x %04x",
                       header.magic, header.version);
        return UCS_ERR_INVALID_PARAM;
    }
    const int empty = (header.flags & UCP_SHIM_PACKED_EMPTY) != 0;
    if ((header.flags & ~UCP_SHIM_PACKED_EMPTY) != 0 || header.swy_length > UCP_SHIM_PACKED_MAX ||
        (empty != (header.swy_length == 0))) {
        ucp_shim_error(call, "malformed key header");
        return UCS_ERR_INVALID_PARAM;
    }
    if (ep->closing) {
        ucp_shim_error(call, "the endpoint is closing");
        return UCS_ERR_INVALID_PARAM;
    }
    struct ucp_rkey* key = calloc(1, sizeof(*key));
    if (key == NULL) return UCS_ERR_NO_MEMORY;
    if (!empty) {
        swy_status_t s = swy_ep_rkey_unpack(ep->swy, (const uint8_t*)rkey_buffer + sizeof(header),
                                            header.swy_length, &key->swy);
        if (s != SWY_OK) {
            free(key);
            ucp_shim_error(call, "Switchyard refused the key");
            return s == SWY_ERR_MALFORMED ? UCS_ERR_INVALID_PARAM : ucp_shim_status(s);
        }
    }
    key->address = header.address;
    key->length = empty ? 0 : header.length;
    key->ep = ep;
    key->magic = UCP_SHIM_RKEY_MAGIC;
    ucp_shim_worker_lock(ep->worker);
    key->next = ep->rma;
    if (key->next != NULL) key->next->prev = key;
    ep->rma = key;
    ucp_shim_worker_unlock(ep->worker);
    *rkey_p = key;
    return UCS_OK;
}

struct ucp_rkey* ucp_shim_rkey_check(ucp_rkey_h rkey, const char* call) {
    if (rkey == NULL || rkey->magic != UCP_SHIM_RKEY_MAGIC) {
        ucp_shim_error(call, "not an unpacked remote key");
        return NULL;
    }
    return rkey;
}

void ucp_rkey_destroy(ucp_rkey_h rkey) {
    struct ucp_rkey* key = ucp_shim_rkey_check(rkey, "ucp_rkey_destroy");
    if (key == NULL) return;
    if (key->ep != NULL) { /* still on its endpoint's list */
        struct ucp_worker* w = key->ep->worker;
        ucp_shim_worker_lock(w);
        if (key->prev != NULL)
            key->prev->next = key->next;
        else
            key->ep->rma = key->next;
        if (key->next != NULL) key->next->prev = key->prev;
        ucp_shim_worker_unlock(w);
        if (key->swy != NULL) swy_rkey_destroy(key->swy);
    }
    key->magic = 0;
    free(key);
}

ucs_status_t ucp_rkey_ptr(ucp_rkey_h rkey, uint64_t raddr, void** addr_p) {
    static const char call[] = "ucp_rkey_ptr";
    struct ucp_rkey* key = ucp_shim_rkey_check(rkey, call);
    if (key == NULL || addr_p == NULL) return UCS_ERR_INVALID_PARAM;
    if (key->swy == NULL) return key->ep == NULL ? UCS_ERR_INVALID_PARAM : UCS_ERR_UNREACHABLE;
    swy_status_t s = swy_rkey_ptr(key->swy, raddr, addr_p);
    if (s == SWY_ERR_UNREACHABLE) return UCS_ERR_UNREACHABLE; /* not quiet: UCP's answer */
    return ucp_shim_status(s);
}
