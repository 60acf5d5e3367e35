/*
 * osc swy: window creation for every flavour, MPI_Win_free, MPI_Win_shared_query, and the
 * endpoints of the component's own worker.
 *
 * Creation: connect to every rank (exchanging worker addresses when the worker is our own)
 * and wait until the endpoints are wired; map this rank's window memory (registered in place
 * for MPI_Win_create, allocated by Switchyard for MPI_Win_allocate so that same-host peers
 * load/store it, one allocation by rank 0 for MPI_Win_allocate_shared so that the ranks'
 * segments are contiguous, each rank registering its own segment) and its control area
 * (always allocated: lock words are CPU atomics for same-host peers), then one allgather of
 * a fixed-size record per rank (addresses, sizes, displacement unit, both keys).
 */
#include "osc_swy_window.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/coll.h"
#include "ompi/proc/proc.h"
#include "opal/util/info.h"

/* What each rank tells the others about its part of a window. */
typedef struct window_record {
    uint64_t base;
    uint64_t size;
    int64_t disp_unit;
    uint64_t ctrl_addr;
    uint64_t win_rkey_length;
    uint64_t ctrl_rkey_length;
    uint8_t win_rkey[OSC_SWY_RKEY_MAX];
    uint8_t ctrl_rkey[OSC_SWY_RKEY_MAX];
} window_record_t;

static const ompi_osc_base_module_t module_template = {
    .osc_win_shared_query = ompi_osc_swy_shared_query,
    .osc_win_attach = ompi_osc_swy_attach,
    .osc_win_detach = ompi_osc_swy_detach,
    .osc_free = ompi_osc_swy_free,
    .osc_put = ompi_osc_swy_put,
    .osc_get = ompi_osc_swy_get,
    .osc_accumulate = ompi_osc_swy_accumulate,
    .osc_compare_and_swap = ompi_osc_swy_compare_and_swap,
    .osc_fetch_and_op = ompi_osc_swy_fetch_and_op,
    .osc_get_accumulate = ompi_osc_swy_get_accumulate,
    .osc_rput = ompi_osc_swy_rput,
    .osc_rget = ompi_osc_swy_rget,
    .osc_raccumulate = ompi_osc_swy_raccumulate,
    .osc_rget_accumulate = ompi_osc_swy_rget_accumulate,
    .osc_fence = ompi_osc_swy_fence,
    .osc_start = ompi_osc_swy_start,
    .osc_complete = ompi_osc_swy_complete,
    .osc_post = ompi_osc_swy_post,
    .osc_wait = ompi_osc_swy_wait_epoch,
    .osc_test = ompi_osc_swy_test,
    .osc_lock = ompi_osc_swy_lock,
    .osc_unlock = ompi_osc_swy_unlock,
    .osc_lock_all = ompi_osc_swy_lock_all,
    .osc_unlock_all = ompi_osc_swy_unlock_all,
    .osc_sync = ompi_osc_swy_sync,
    .osc_flush = ompi_osc_swy_flush,
    .osc_flush_all = ompi_osc_swy_flush_all,
    .osc_flush_local = ompi_osc_swy_flush_local,
    .osc_flush_local_all = ompi_osc_swy_flush_local_all,
};

/* ---- endpoints of our own worker ------------------------------------------------------- */

static uint64_t proc_key(ompi_proc_t* proc) {
    uint64_t key;
    _Static_assert(sizeof(proc->super.proc_name) == sizeof(key), "process name is 64 bits");
    memcpy(&key, &proc->super.proc_name, sizeof(key));
    return key;
}

static void ep_error(void* arg, swy_ep_h ep, swy_status_t status) {
    (void)arg;
    (void)ep;
    opal_output(0, "osc swy: a connection failed: %s", swy_status_string(status));
}

/* The endpoint to @p proc on our own worker, created from @p address on first use. */
static swy_ep_h own_endpoint(ompi_proc_t* proc, const void* address, size_t length) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    void* value = NULL;
    uint64_t key = proc_key(proc);
    if (opal_hash_table_get_value_uint64(&c->endpoints, key, &value) == OPAL_SUCCESS) {
        return (swy_ep_h)value;
    }
    swy_ep_params_t params = {
        .field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS | SWY_EP_PARAM_FIELD_ERR_HANDLER,
        .remote_address = address,
        .remote_address_length = length,
        .err_cb = ep_error,
        .err_arg = NULL,
    };
    swy_ep_h ep = NULL;
    swy_status_t s = swy_ep_create(c->worker, &params, &ep);
    if (s != SWY_OK) {
        opal_output(0, "osc swy: cannot connect to %s: %s", OMPI_NAME_PRINT(&proc->super.proc_name),
                    swy_status_string(s));
        return NULL;
    }
    (void)opal_hash_table_set_value_uint64(&c->endpoints, key, ep);
    return ep;
}

void ompi_osc_swy_close_endpoints(void) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    uint64_t key;
    void* value;
    void* node = NULL;
    int rc = opal_hash_table_get_first_key_uint64(&c->endpoints, &key, &value, &node);
    while (rc == OPAL_SUCCESS) {
        swy_request_h req = NULL;
        /* Peers may be gone already at finalize: cancel rather than wait for them. */
        if (swy_ep_close_nb((swy_ep_h)value, SWY_EP_CLOSE_FORCE, &req) == SWY_INPROGRESS) {
            while (swy_request_test(req) == SWY_INPROGRESS) {
                (void)swy_worker_progress(c->worker);
            }
            swy_request_free(req);
        }
        rc = opal_hash_table_get_next_key_uint64(&c->endpoints, &key, &value, node, &node);
    }
    opal_hash_table_remove_all(&c->endpoints);
}

/* Endpoints to every rank of the window: pml swy's, or ours (after exchanging addresses). */
static int connect_peers(ompi_osc_swy_module_t* module) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    ompi_communicator_t* comm = module->comm;
    if (c->pml != NULL) {
        for (int r = 0; r < module->nranks; ++r) {
            module->peers[r].ep = c->pml->ep_for_proc(ompi_comm_peer_lookup(comm, r));
            if (module->peers[r].ep == NULL) {
                return OMPI_ERR_UNREACH;
            }
        }
        return OMPI_SUCCESS;
    }
    void* address = NULL;
    size_t length = 0;
    swy_status_t s = swy_worker_get_address(c->worker, &address, &length);
    if (s != SWY_OK) {
        return ompi_osc_swy_error(s);
    }
    int mylen = (int)length;
    int* lengths = malloc(sizeof(int) * (size_t)module->nranks);
    int* displs = malloc(sizeof(int) * (size_t)module->nranks);
    char* all = NULL;
    int rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (lengths == NULL || displs == NULL) {
        goto out;
    }
    rc = comm->c_coll->coll_allgather(&mylen, 1, MPI_INT, lengths, 1, MPI_INT, comm,
                                      comm->c_coll->coll_allgather_module);
    if (rc != OMPI_SUCCESS) {
        goto out;
    }
    size_t total = 0;
    for (int r = 0; r < module->nranks; ++r) {
        displs[r] = (int)total;
        total += (size_t)lengths[r];
    }
    all = malloc(total > 0 ? total : 1);
    if (all == NULL) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    rc = comm->c_coll->coll_allgatherv(address, mylen, MPI_BYTE, all, lengths, displs, MPI_BYTE,
                                       comm, comm->c_coll->coll_allgatherv_module);
    if (rc != OMPI_SUCCESS) {
        goto out;
    }
    for (int r = 0; r < module->nranks; ++r) {
        module->peers[r].ep =
            own_endpoint(ompi_comm_peer_lookup(comm, r), all + displs[r], (size_t)lengths[r]);
        if (module->peers[r].ep == NULL) {
            rc = OMPI_ERR_UNREACH;
            goto out;
        }
    }
    rc = OMPI_SUCCESS;
out:
    swy_worker_release_address(c->worker, address);
    free(all);
    free(displs);
    free(lengths);
    return rc;
}

/* Wait until every endpoint of the window is wired (its lane chosen): a key unpacked on an
 * endpoint that is not wired yet never gets a direct path (load/store, CPU atomics, CMA). */
static int wait_wired(ompi_osc_swy_module_t* module) {
    unsigned countdown = 1;
    for (int r = 0; r < module->nranks; ++r) {
        for (;;) {
            swy_ep_attr_t attr = {.field_mask = SWY_EP_ATTR_FIELD_LANE};
            swy_status_t s = swy_ep_query(module->peers[r].ep, &attr);
            if (s != SWY_OK) {
                return ompi_osc_swy_error(s);
            }
            if (!attr.connected) {
                opal_output(0, "osc swy: the connection to rank %d of a window failed", r);
                return OMPI_ERR_UNREACH;
            }
            if (attr.small_protocol != NULL && attr.small_protocol[0] != '\0') {
                break; /* "" until wired */
            }
            ompi_osc_swy_progress_step(&countdown);
        }
    }
    return OMPI_SUCCESS;
}

/* ---- memory ------------------------------------------------------------------------------ */

static int map_memory(ompi_osc_swy_module_t* module, void* address, size_t length, bool allocate,
                      swy_mem_h* mem, char** mapped) {
    swy_mem_map_params_t params = {
        .field_mask = SWY_MEM_MAP_FIELD_LENGTH | SWY_MEM_MAP_FIELD_FLAGS,
        .length = length,
        .flags = allocate ? SWY_MEM_MAP_ALLOCATE : 0,
    };
    if (!allocate) {
        params.field_mask |= SWY_MEM_MAP_FIELD_ADDRESS;
        params.address = address;
    }
    swy_status_t s = swy_mem_map(module->context, &params, mem);
    if (s != SWY_OK) {
        opal_output(0, "osc swy: swy_mem_map of %zu bytes failed: %s", length,
                    swy_status_string(s));
        return ompi_osc_swy_error(s);
    }
    swy_mem_attr_t attr = {.field_mask = SWY_MEM_ATTR_FIELD_ADDRESS};
    s = swy_mem_query(*mem, &attr);
    if (s != SWY_OK) {
        return ompi_osc_swy_error(s);
    }
    *mapped = attr.address;
    return OMPI_SUCCESS;
}

static int pack_key(ompi_osc_swy_module_t* module, swy_mem_h mem, uint8_t* out,
                    uint64_t* out_length) {
    void* buffer = NULL;
    size_t length = 0;
    swy_status_t s = swy_rkey_pack(module->context, mem, &buffer, &length);
    if (s != SWY_OK) {
        return ompi_osc_swy_error(s);
    }
    if (length > OSC_SWY_RKEY_MAX) {
        opal_output(0, "osc swy: a %zu-byte remote key does not fit %d bytes", length,
                    OSC_SWY_RKEY_MAX);
        swy_rkey_buffer_release(buffer);
        return OMPI_ERR_NOT_SUPPORTED;
    }
    memcpy(out, buffer, length);
    *out_length = length;
    swy_rkey_buffer_release(buffer);
    return OMPI_SUCCESS;
}

/* Unpack a key of @p peer and find where it is mapped here (if it is). */
static int unpack_key(ompi_osc_swy_peer_t* peer, const uint8_t* bytes, uint64_t length,
                      uint64_t address, swy_rkey_h* rkey, char** direct) {
    *rkey = NULL;
    *direct = NULL;
    if (length == 0) {
        return OMPI_SUCCESS;
    }
    if (length > OSC_SWY_RKEY_MAX) {
        return OMPI_ERR_BAD_PARAM;
    }
    swy_status_t s = swy_ep_rkey_unpack(peer->ep, bytes, (size_t)length, rkey);
    if (s != SWY_OK) {
        opal_output(0, "osc swy: cannot unpack a peer's remote key: %s", swy_status_string(s));
        return ompi_osc_swy_error(s);
    }
    void* ptr = NULL;
    if (swy_rkey_ptr(*rkey, address, &ptr) == SWY_OK) {
        *direct = ptr;
    }
    return OMPI_SUCCESS;
}

/* MPI_Win_allocate_shared: rank 0 allocates every rank's segment in one mapping (contiguous,
 * as MPI's default asks) and broadcasts its key; every rank maps that memory through the key
 * and registers its own segment as it sees it, so that peers address each segment like any
 * window's memory: in its owner's address space, with a key of its owner. Sets module->base,
 * @p sizes and @p offsets (of each segment in the mapping) and @p shared (the mapping here). */
static int allocate_shared(ompi_osc_swy_module_t* module, size_t size, uint64_t* offsets,
                           uint64_t* sizes, char** shared) {
    ompi_communicator_t* comm = module->comm;
    uint64_t my_size = size;
    int rc = comm->c_coll->coll_allgather(&my_size, 1, MPI_UINT64_T, sizes, 1, MPI_UINT64_T, comm,
                                          comm->c_coll->coll_allgather_module);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    uint64_t total = 0;
    for (int r = 0; r < module->nranks; ++r) {
        offsets[r] = total;
        /* keep every segment 16-byte aligned (MPI gives no promise, atomics want 8) */
        total += (sizes[r] + 15) & ~UINT64_C(15);
    }
    struct {
        uint64_t base;
        uint64_t key_length;
        uint8_t key[OSC_SWY_RKEY_MAX];
    } owner;
    memset(&owner, 0, sizeof(owner));
    if (module->rank == 0 && total > 0) {
        char* mapped = NULL;
        rc = map_memory(module, NULL, total, true, &module->mem, &mapped);
        if (rc == OMPI_SUCCESS) {
            module->free_base = true;
            owner.base = (uint64_t)(uintptr_t)mapped;
            rc = pack_key(module, module->mem, owner.key, &owner.key_length);
        }
        if (rc != OMPI_SUCCESS) {
            owner.key_length = UINT64_MAX; /* tell the others */
        }
    }
    int rc2 = comm->c_coll->coll_bcast(&owner, sizeof(owner), MPI_BYTE, 0, comm,
                                       comm->c_coll->coll_bcast_module);
    if (rc != OMPI_SUCCESS || rc2 != OMPI_SUCCESS) {
        return rc != OMPI_SUCCESS ? rc : rc2;
    }
    if (owner.key_length == UINT64_MAX) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *shared = NULL;
    module->base = NULL;
    if (owner.key_length == 0) {
        return OMPI_SUCCESS; /* every segment is empty */
    }
    rc = unpack_key(&module->peers[0], owner.key, owner.key_length, owner.base,
                    &module->shared_rkey, shared);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    if (*shared == NULL) {
        opal_output(0,
                    "osc swy: MPI_Win_allocate_shared: rank 0's memory is not mapped here "
                    "(another host?)");
        return OMPI_ERR_RMA_SHARED;
    }
    if (size > 0) {
        char* mapped = NULL;
        module->base = *shared + offsets[module->rank];
        rc = map_memory(module, module->base, size, false, &module->segment_mem, &mapped);
    }
    return rc;
}

int ompi_osc_swy_window_create(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                               struct ompi_communicator_t* comm, struct opal_info_t* info,
                               int flavor, int* model) {
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    ompi_osc_swy_module_t* module = calloc(1, sizeof(*module));
    window_record_t* records = NULL;
    uint64_t* offsets = NULL;
    uint64_t* sizes = NULL;
    window_record_t mine;
    char* shared = NULL;
    int rc;
    if (module == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memset(&mine, 0, sizeof(mine));
    module->super = module_template;
    module->win = win;
    module->flavor = flavor;
    module->context = c->context;
    module->worker = c->worker;
    module->disp_unit = disp_unit;
    module->max_attach = c->max_attach;
    rc = ompi_comm_dup(comm, &module->comm);
    if (rc != OMPI_SUCCESS) {
        free(module);
        return rc;
    }
    module->win_id = module->comm->c_contextid;
    module->rank = ompi_comm_rank(module->comm);
    module->nranks = ompi_comm_size(module->comm);
    if (info != NULL) {
        bool value = false;
        int flag = 0;
        if (opal_info_get_bool(info, "no_locks", &value, &flag) == OPAL_SUCCESS && flag) {
            module->no_locks = value;
        }
    }
    size_t n = (size_t)module->nranks;
    module->peers = calloc(n, sizeof(*module->peers));
    module->post_seen = calloc(n, sizeof(uint64_t));
    module->complete_seen = calloc(n, sizeof(uint64_t));
    records = calloc(n, sizeof(*records));
    offsets = calloc(n, sizeof(uint64_t));
    sizes = calloc(n, sizeof(uint64_t));
    if (module->peers == NULL || module->post_seen == NULL || module->complete_seen == NULL ||
        records == NULL || offsets == NULL || sizes == NULL) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto err;
    }
    /* Registered before anything can reach us: the dispatcher finds the window by id. */
    rc = opal_hash_table_set_value_uint32(&c->windows, module->win_id, module);
    if (rc != OPAL_SUCCESS) {
        goto err;
    }
    win->w_osc_module = &module->super;

    rc = connect_peers(module);
    if (rc == OMPI_SUCCESS) {
        rc = wait_wired(module);
    }
    if (rc != OMPI_SUCCESS) {
        goto err;
    }

    /* this rank's memory */
    switch (flavor) {
        case MPI_WIN_FLAVOR_CREATE:
            module->base = *base;
            module->size = size;
            if (size > 0) {
                char* mapped = NULL;
                rc = map_memory(module, *base, size, false, &module->mem, &mapped);
                if (rc != OMPI_SUCCESS) {
                    goto err;
                }
            }
            break;
        case MPI_WIN_FLAVOR_ALLOCATE:
            module->size = size;
            if (size > 0) {
                rc = map_memory(module, NULL, size, true, &module->mem, &module->base);
                if (rc != OMPI_SUCCESS) {
                    goto err;
                }
                module->free_base = true;
            }
            *base = module->base;
            break;
        case MPI_WIN_FLAVOR_SHARED:
            module->size = size;
            rc = allocate_shared(module, size, offsets, sizes, &shared);
            if (rc != OMPI_SUCCESS) {
                goto err;
            }
            *base = module->base;
            break;
        case MPI_WIN_FLAVOR_DYNAMIC:
            module->attached = calloc((size_t)module->max_attach, sizeof(*module->attached));
            if (module->attached == NULL) {
                rc = OMPI_ERR_OUT_OF_RESOURCE;
                goto err;
            }
            break;
        default: rc = OMPI_ERR_NOT_SUPPORTED; goto err;
    }
    mine.base = (uint64_t)(uintptr_t)module->base;
    {
        swy_mem_h own = flavor == MPI_WIN_FLAVOR_SHARED ? module->segment_mem : module->mem;
        if (own != NULL) {
            rc = pack_key(module, own, mine.win_rkey, &mine.win_rkey_length);
            if (rc != OMPI_SUCCESS) {
                goto err;
            }
        }
    }
    mine.size = module->size;
    mine.disp_unit = disp_unit;

    /* control area */
    module->ctrl_size = ompi_osc_swy_ctrl_regions_off(module->nranks);
    if (flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        module->ctrl_size += sizeof(ompi_osc_swy_region_t) * (size_t)module->max_attach;
    }
    {
        char* mapped = NULL;
        rc = map_memory(module, NULL, module->ctrl_size, true, &module->ctrl_mem, &mapped);
        if (rc != OMPI_SUCCESS) {
            goto err;
        }
        module->ctrl = (ompi_osc_swy_ctrl_t*)mapped;
    }
    mine.ctrl_addr = (uint64_t)(uintptr_t)module->ctrl;
    rc = pack_key(module, module->ctrl_mem, mine.ctrl_rkey, &mine.ctrl_rkey_length);
    if (rc != OMPI_SUCCESS) {
        goto err;
    }

    rc = module->comm->c_coll->coll_allgather(&mine, sizeof(mine), MPI_BYTE, records, sizeof(mine),
                                              MPI_BYTE, module->comm,
                                              module->comm->c_coll->coll_allgather_module);
    if (rc != OMPI_SUCCESS) {
        goto err;
    }
    for (int r = 0; r < module->nranks; ++r) {
        ompi_osc_swy_peer_t* peer = &module->peers[r];
        const window_record_t* rec = &records[r];
        peer->base = rec->base;
        peer->size = rec->size;
        peer->disp_unit = (int)rec->disp_unit;
        peer->ctrl_addr = rec->ctrl_addr;
        char* ctrl_direct = NULL;
        rc = unpack_key(peer, rec->ctrl_rkey, rec->ctrl_rkey_length, rec->ctrl_addr,
                        &peer->ctrl_rkey, &ctrl_direct);
        if (rc != OMPI_SUCCESS) {
            goto err;
        }
        peer->ctrl_direct = (ompi_osc_swy_ctrl_t*)ctrl_direct;
        rc = unpack_key(peer, rec->win_rkey, rec->win_rkey_length, rec->base, &peer->rkey,
                        &peer->direct);
        if (rc != OMPI_SUCCESS) {
            goto err;
        }
        if (flavor == MPI_WIN_FLAVOR_SHARED) {
            /* registered memory has no direct pointer: it is in rank 0's mapping here */
            peer->direct = peer->size > 0 ? shared + offsets[r] : NULL;
        }
    }
    rc = ompi_osc_swy_acc_init(module);
    if (rc != OMPI_SUCCESS) {
        goto err;
    }
    *model = MPI_WIN_UNIFIED;
    ++c->num_windows;
    opal_output_verbose(2, c->output, "osc swy: window %u flavor %d, %zu bytes at %p, %d ranks",
                        module->win_id, flavor, module->size, (void*)module->base, module->nranks);
    free(records);
    free(offsets);
    free(sizes);
    /* Nobody touches a peer's window before the peer finished creating it. */
    return module->comm->c_coll->coll_barrier(module->comm,
                                              module->comm->c_coll->coll_barrier_module);

err:
    free(records);
    free(offsets);
    free(sizes);
    win->w_osc_module = NULL;
    if (module->peers != NULL) {
        for (int r = 0; r < module->nranks; ++r) {
            if (module->peers[r].rkey != NULL) {
                swy_rkey_destroy(module->peers[r].rkey);
            }
            if (module->peers[r].ctrl_rkey != NULL) {
                swy_rkey_destroy(module->peers[r].ctrl_rkey);
            }
        }
    }
    if (module->shared_rkey != NULL) {
        swy_rkey_destroy(module->shared_rkey);
    }
    if (module->ctrl_mem != NULL) {
        swy_mem_unmap(module->context, module->ctrl_mem);
    }
    if (module->segment_mem != NULL) {
        swy_mem_unmap(module->context, module->segment_mem);
    }
    if (module->mem != NULL) {
        swy_mem_unmap(module->context, module->mem);
    }
    (void)opal_hash_table_remove_value_uint32(&c->windows, module->win_id);
    free(module->attached);
    free(module->post_seen);
    free(module->complete_seen);
    free(module->peers);
    ompi_comm_free(&module->comm);
    free(module);
    return rc;
}

int ompi_osc_swy_free(struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    ompi_osc_swy_component_t* c = &mca_osc_swy_component;
    /* Our operations are complete at their targets, then nobody's are outstanding. */
    int rc = ompi_osc_swy_flush_target(module, -1);
    int rc2 =
        module->comm->c_coll->coll_barrier(module->comm, module->comm->c_coll->coll_barrier_module);
    if (rc == OMPI_SUCCESS) {
        rc = rc2;
    }
    ompi_osc_swy_acc_fini(module);
    for (int r = 0; r < module->nranks; ++r) {
        ompi_osc_swy_peer_t* peer = &module->peers[r];
        for (int i = 0; i < peer->dyn_count; ++i) {
            if (peer->dyn[i].rkey != NULL) {
                swy_rkey_destroy(peer->dyn[i].rkey);
            }
        }
        free(peer->dyn);
        if (peer->rkey != NULL) {
            swy_rkey_destroy(peer->rkey);
        }
        if (peer->ctrl_rkey != NULL) {
            swy_rkey_destroy(peer->ctrl_rkey);
        }
    }
    for (int i = 0; i < module->attached_count; ++i) {
        swy_mem_unmap(module->context, module->attached[i].mem);
    }
    if (module->shared_rkey != NULL) {
        swy_rkey_destroy(module->shared_rkey);
    }
    if (module->segment_mem != NULL) {
        swy_mem_unmap(module->context, module->segment_mem);
    }
    if (module->mem != NULL) {
        swy_mem_unmap(module->context, module->mem);
    }
    swy_mem_unmap(module->context, module->ctrl_mem);
    (void)opal_hash_table_remove_value_uint32(&c->windows, module->win_id);
    --c->num_windows;
    free(module->start_ranks);
    free(module->post_ranks);
    free(module->attached);
    free(module->post_seen);
    free(module->complete_seen);
    free(module->peers);
    ompi_comm_free(&module->comm);
    win->w_osc_module = NULL;
    free(module);
    return rc;
}

int ompi_osc_swy_shared_query(struct ompi_win_t* win, int rank, size_t* size, int* disp_unit,
                              void* baseptr) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (module->flavor != MPI_WIN_FLAVOR_SHARED) {
        /* MPI-4 allows it for any flavour where the memory is reachable; we answer for
         * memory mapped here, else "no memory". */
        if (rank == MPI_PROC_NULL || rank < 0 || rank >= module->nranks) {
            return OMPI_ERR_BAD_PARAM;
        }
        ompi_osc_swy_peer_t* peer = &module->peers[rank];
        *size = peer->direct != NULL ? peer->size : 0;
        *disp_unit = peer->disp_unit;
        *(void**)baseptr = peer->direct;
        return OMPI_SUCCESS;
    }
    if (rank == MPI_PROC_NULL) {
        /* the first rank with a non-empty segment, as MPI specifies */
        for (int r = 0; r < module->nranks; ++r) {
            if (module->peers[r].size > 0) {
                *size = module->peers[r].size;
                *disp_unit = module->peers[r].disp_unit;
                *(void**)baseptr = module->peers[r].direct;
                return OMPI_SUCCESS;
            }
        }
        *size = 0;
        *disp_unit = module->peers[0].disp_unit;
        *(void**)baseptr = NULL;
        return OMPI_SUCCESS;
    }
    if (rank < 0 || rank >= module->nranks) {
        return OMPI_ERR_BAD_PARAM;
    }
    ompi_osc_swy_peer_t* peer = &module->peers[rank];
    *size = peer->size;
    *disp_unit = peer->disp_unit;
    *(void**)baseptr = peer->size > 0 ? peer->direct : NULL;
    return OMPI_SUCCESS;
}
