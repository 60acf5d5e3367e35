/*
 * osc swy: dynamic windows (MPI_Win_create_dynamic, MPI_Win_attach, MPI_Win_detach).
 *
 * Each rank keeps a table of the regions it attached in its control area (so peers read it
 * with one-sided gets, without the owner running anything): max_attach entries of
 * {base, size, packed key}, guarded by a seqlock -- dyn_gen is odd while the owner rewrites
 * the table and bumped again when done; a reader reads gen, count, entries, gen again and
 * retries unless both gens are equal and even. Each region is mapped with swy_mem_map on
 * attach and unmapped on the last detach.
 *
 * Origins cache a target's table (keys unpacked on the endpoint to the target). The cache
 * is re-read when an access is not covered by it, and re-validated (one 8-byte read of the
 * generation) on the first access after an epoch starts (fence, lock, lock_all, start), so a
 * region detached and another attached at the same address between epochs is seen.
 */
#include "osc_swy_dynamic.h"

#include <stdlib.h>
#include <string.h>

#include "osc_swy_window.h"

/* ---- owner side ---------------------------------------------------------------------------- */

static ompi_osc_swy_region_t* table(ompi_osc_swy_module_t* module) {
    return (ompi_osc_swy_region_t*)((char*)module->ctrl +
                                    ompi_osc_swy_ctrl_regions_off(module->nranks));
}

/* Rewrite the published table from module->attached, under the seqlock. */
static void publish(ompi_osc_swy_module_t* module, const ompi_osc_swy_region_t* changed,
                    int index) {
    ompi_osc_swy_ctrl_t* ctrl = module->ctrl;
    uint64_t gen = __atomic_load_n(&ctrl->dyn_gen, __ATOMIC_RELAXED);
    __atomic_store_n(&ctrl->dyn_gen, gen + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    if (changed != NULL) {
        memcpy(&table(module)[index], changed, sizeof(*changed));
    }
    __atomic_store_n(&ctrl->dyn_count, (uint64_t)module->attached_count, __ATOMIC_RELAXED);
    __atomic_store_n(&ctrl->dyn_gen, gen + 2, __ATOMIC_RELEASE);
}

int ompi_osc_swy_attach(struct ompi_win_t* win, void* base, size_t size) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (module->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        return OMPI_ERR_RMA_FLAVOR;
    }
    if (size == 0) {
        return OMPI_SUCCESS; /* nothing can be accessed in it */
    }
    for (int i = 0; i < module->attached_count; ++i) {
        ompi_osc_swy_attached_t* a = &module->attached[i];
        if (a->base == (char*)base && a->size == size) {
            ++a->refs;
            return OMPI_SUCCESS;
        }
    }
    if (module->attached_count >= module->max_attach) {
        opal_output_verbose(1, mca_osc_swy_component.output,
                            "osc swy: no room for another attached region (osc_swy_max_attach "
                            "is %d)",
                            module->max_attach);
        return OMPI_ERR_RMA_ATTACH;
    }
    swy_mem_map_params_t params = {
        .field_mask = SWY_MEM_MAP_FIELD_ADDRESS | SWY_MEM_MAP_FIELD_LENGTH,
        .address = base,
        .length = size,
    };
    swy_mem_h mem = NULL;
    swy_status_t s = swy_mem_map(module->context, &params, &mem);
    if (s != SWY_OK) {
        return s == SWY_ERR_INVALID_PARAM ? OMPI_ERR_RMA_ATTACH : ompi_osc_swy_error(s);
    }
    ompi_osc_swy_region_t entry;
    memset(&entry, 0, sizeof(entry));
    entry.base = (uint64_t)(uintptr_t)base;
    entry.size = size;
    void* key = NULL;
    size_t key_length = 0;
    s = swy_rkey_pack(module->context, mem, &key, &key_length);
    if (s != SWY_OK || key_length > OSC_SWY_RKEY_MAX) {
        if (s == SWY_OK) {
            swy_rkey_buffer_release(key);
        }
        swy_mem_unmap(module->context, mem);
        return s != SWY_OK ? ompi_osc_swy_error(s) : OMPI_ERR_NOT_SUPPORTED;
    }
    memcpy(entry.rkey, key, key_length);
    entry.rkey_length = key_length;
    swy_rkey_buffer_release(key);

    int index = module->attached_count++;
    module->attached[index] =
        (ompi_osc_swy_attached_t){.base = base, .size = size, .mem = mem, .refs = 1};
    publish(module, &entry, index);
    return OMPI_SUCCESS;
}

int ompi_osc_swy_detach(struct ompi_win_t* win, const void* base) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (module->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        return OMPI_ERR_RMA_FLAVOR;
    }
    for (int i = 0; i < module->attached_count; ++i) {
        ompi_osc_swy_attached_t* a = &module->attached[i];
        if (a->base != (const char*)base) {
            continue;
        }
        if (--a->refs > 0) {
            return OMPI_SUCCESS;
        }
        swy_mem_h mem = a->mem;
        /* the last entry takes the freed slot */
        int last = --module->attached_count;
        ompi_osc_swy_region_t moved;
        if (i != last) {
            module->attached[i] = module->attached[last];
            memcpy(&moved, &table(module)[last], sizeof(moved));
        }
        publish(module, i != last ? &moved : NULL, i);
        /* after the table no longer names it: peers that re-read it never see the stale key */
        swy_mem_unmap(module->context, mem);
        return OMPI_SUCCESS;
    }
    /* Attached with size 0 (never recorded), or never attached. */
    return OMPI_SUCCESS;
}

/* ---- origin side ----------------------------------------------------------------------- */

/* Read @p len bytes at @p offset of @p target's control area. */
static int read_ctrl(ompi_osc_swy_module_t* module, int target, size_t offset, void* out,
                     size_t len) {
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    if (peer->ctrl_direct != NULL) {
        const char* src = (const char*)peer->ctrl_direct + offset;
        if (len == sizeof(uint64_t)) {
            uint64_t v = __atomic_load_n((const uint64_t*)src, __ATOMIC_ACQUIRE);
            memcpy(out, &v, sizeof(v));
        } else {
            memcpy(out, src, len);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
        }
        return OMPI_SUCCESS;
    }
    swy_request_h req = NULL;
    swy_request_params_t params = {.field_mask = 0};
    swy_status_t s =
        swy_get_nb(peer->ep, out, len, peer->ctrl_addr + offset, peer->ctrl_rkey, &params, &req);
    return ompi_osc_swy_wait(s, req);
}

static void drop_cache(ompi_osc_swy_peer_t* peer) {
    for (int i = 0; i < peer->dyn_count; ++i) {
        if (peer->dyn[i].rkey != NULL) {
            swy_rkey_destroy(peer->dyn[i].rkey);
        }
    }
    peer->dyn_count = 0;
}

/* Copy @p target's region table (consistent snapshot) and unpack its keys. */
static int fetch_table(ompi_osc_swy_module_t* module, int target) {
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    size_t max = (size_t)module->max_attach;
    ompi_osc_swy_region_t* snapshot = malloc(sizeof(*snapshot) * max);
    uint64_t gen = 0;
    uint64_t count = 0;
    int rc;
    unsigned countdown = 1;
    if (snapshot == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (;;) {
        uint64_t head[2];
        uint64_t gen2 = 0;
        rc = read_ctrl(module, target, offsetof(ompi_osc_swy_ctrl_t, dyn_gen), head, sizeof(head));
        if (rc != OMPI_SUCCESS) {
            goto out;
        }
        gen = head[0];
        count = head[1];
        if ((gen & 1) != 0) {
            ompi_osc_swy_progress_step(&countdown); /* being rewritten: try again */
            continue;
        }
        if (count > max) {
            rc = OMPI_ERROR; /* the owner never writes more than max_attach */
            goto out;
        }
        if (count > 0) {
            rc = read_ctrl(module, target, ompi_osc_swy_ctrl_regions_off(module->nranks), snapshot,
                           sizeof(*snapshot) * count);
            if (rc != OMPI_SUCCESS) {
                goto out;
            }
        }
        rc = read_ctrl(module, target, offsetof(ompi_osc_swy_ctrl_t, dyn_gen), &gen2, sizeof(gen2));
        if (rc != OMPI_SUCCESS) {
            goto out;
        }
        if (gen2 == gen) {
            break;
        }
    }
    drop_cache(peer);
    if (peer->dyn == NULL) {
        peer->dyn = calloc(max, sizeof(*peer->dyn));
        if (peer->dyn == NULL) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
            goto out;
        }
    }
    for (uint64_t i = 0; i < count; ++i) {
        const ompi_osc_swy_region_t* r = &snapshot[i];
        ompi_osc_swy_dyn_entry_t* e = &peer->dyn[peer->dyn_count];
        if (r->rkey_length == 0 || r->rkey_length > OSC_SWY_RKEY_MAX) {
            continue;
        }
        if (swy_ep_rkey_unpack(peer->ep, r->rkey, (size_t)r->rkey_length, &e->rkey) != SWY_OK) {
            continue; /* not a key: the region is unusable, accesses to it are out of range */
        }
        e->base = r->base;
        e->size = r->size;
        void* ptr = NULL;
        e->direct = swy_rkey_ptr(e->rkey, r->base, &ptr) == SWY_OK ? ptr : NULL;
        ++peer->dyn_count;
    }
    peer->dyn_gen = gen;
    rc = OMPI_SUCCESS;
out:
    free(snapshot);
    return rc;
}

static const ompi_osc_swy_dyn_entry_t* find(const ompi_osc_swy_peer_t* peer, uint64_t lo,
                                            uint64_t hi) {
    for (int i = 0; i < peer->dyn_count; ++i) {
        const ompi_osc_swy_dyn_entry_t* e = &peer->dyn[i];
        if (lo >= e->base && hi <= e->base + e->size && lo <= hi) {
            return e;
        }
    }
    return NULL;
}

int ompi_osc_swy_dyn_lookup(ompi_osc_swy_module_t* module, int target, uint64_t lo, uint64_t hi,
                            const ompi_osc_swy_dyn_entry_t** region) {
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    bool fresh = false;
    int rc;
    if (peer->dyn_verify || peer->dyn == NULL) {
        uint64_t gen = 0;
        rc = read_ctrl(module, target, offsetof(ompi_osc_swy_ctrl_t, dyn_gen), &gen, sizeof(gen));
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        if (peer->dyn == NULL || gen != peer->dyn_gen) {
            rc = fetch_table(module, target);
            if (rc != OMPI_SUCCESS) {
                return rc;
            }
            fresh = true;
        }
        peer->dyn_verify = false;
    }
    *region = find(peer, lo, hi);
    if (*region == NULL && !fresh) {
        rc = fetch_table(module, target);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        *region = find(peer, lo, hi);
    }
    return *region != NULL ? OMPI_SUCCESS : OMPI_ERR_RMA_RANGE;
}

void ompi_osc_swy_dyn_invalidate(ompi_osc_swy_module_t* module) {
    if (module->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        return;
    }
    for (int r = 0; r < module->nranks; ++r) {
        module->peers[r].dyn_verify = true;
    }
}
