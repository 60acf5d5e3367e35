/*
 * osc swy: put, get, rput, rget, and the helpers every operation uses (target resolution and
 * range checks, waiting, control-area atomics, error mapping).
 *
 * A transfer walks the origin and target layouts as contiguous pieces and moves the common
 * runs: by memcpy when the target's memory is mapped here (MPI_Win_allocate and shared
 * windows on this host, and this rank's own window), else with swy_put_nb / swy_get_nb. Each
 * Switchyard operation that does not complete in the call is counted on its target (and its
 * MPI request), so flush_local waits for the count and flush adds swy_ep_flush_nb.
 */
#include "osc_swy.h"

#include <string.h>

#include "opal/runtime/opal_progress.h"

#include "osc_swy_dynamic.h"
#include "osc_swy_sync.h"

int ompi_osc_swy_error(swy_status_t status) {
    switch (status) {
        case SWY_OK:
        case SWY_INPROGRESS: return OMPI_SUCCESS;
        case SWY_ERR_NO_MEMORY: return OMPI_ERR_OUT_OF_RESOURCE;
        case SWY_ERR_INVALID_PARAM: return OMPI_ERR_BAD_PARAM;
        case SWY_ERR_ACCESS_DENIED: return OMPI_ERR_RMA_RANGE;
        case SWY_ERR_UNSUPPORTED: return OMPI_ERR_NOT_SUPPORTED;
        case SWY_ERR_UNREACHABLE: return OMPI_ERR_UNREACH;
        default: return OMPI_ERROR;
    }
}

/* How many direct polls of the worker between two full opal_progress() calls. */
enum { PROGRESS_ITERATIONS = 64 };

void ompi_osc_swy_progress_step(unsigned* countdown) {
    if (*countdown > 1) {
        --*countdown;
        (void)swy_worker_progress(mca_osc_swy_component.worker);
    } else {
        *countdown = PROGRESS_ITERATIONS;
        opal_progress();
    }
}

int ompi_osc_swy_wait(swy_status_t status, swy_request_h req) {
    if (status == SWY_INPROGRESS) {
        unsigned countdown = PROGRESS_ITERATIONS;
        while ((status = swy_request_test(req)) == SWY_INPROGRESS) {
            ompi_osc_swy_progress_step(&countdown);
        }
        swy_request_free(req);
    }
    return ompi_osc_swy_error(status);
}

int ompi_osc_swy_ctrl_atomic(ompi_osc_swy_module_t* module, int target, swy_atomic_op_t op,
                             size_t offset, uint64_t operand, uint64_t compare, uint64_t* result) {
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    if (peer->ctrl_direct != NULL) {
        uint64_t* word = (uint64_t*)((char*)peer->ctrl_direct + offset);
        uint64_t old;
        switch (op) {
            case SWY_ATOMIC_OP_ADD:
                old = __atomic_fetch_add(word, operand, __ATOMIC_SEQ_CST);
                break;
            case SWY_ATOMIC_OP_AND:
                old = __atomic_fetch_and(word, operand, __ATOMIC_SEQ_CST);
                break;
            case SWY_ATOMIC_OP_OR: old = __atomic_fetch_or(word, operand, __ATOMIC_SEQ_CST); break;
            case SWY_ATOMIC_OP_XOR:
                old = __atomic_fetch_xor(word, operand, __ATOMIC_SEQ_CST);
                break;
            case SWY_ATOMIC_OP_SWAP:
                old = __atomic_exchange_n(word, operand, __ATOMIC_SEQ_CST);
                break;
            case SWY_ATOMIC_OP_CSWAP:
                old = compare;
                (void)__atomic_compare_exchange_n(word, &old, operand, false, __ATOMIC_SEQ_CST,
                                                  __ATOMIC_SEQ_CST);
                break;
            default: return OMPI_ERR_BAD_PARAM;
        }
        if (result != NULL) {
            *result = old;
        }
        return OMPI_SUCCESS;
    }
    uint64_t fetched = 0;
    swy_request_h req = NULL;
    swy_request_params_t params = {.field_mask = 0};
    swy_status_t s = swy_atomic_nb(peer->ep, op, sizeof(uint64_t), &operand,
                                   op == SWY_ATOMIC_OP_CSWAP ? &compare : NULL, &fetched,
                                   peer->ctrl_addr + offset, peer->ctrl_rkey, &params, &req);
    int rc = ompi_osc_swy_wait(s, req);
    if (rc == OMPI_SUCCESS && result != NULL) {
        *result = fetched;
    }
    return rc;
}

/* Wait until every Switchyard operation to @p peer is locally complete. */
static int wait_outstanding(ompi_osc_swy_peer_t* peer) {
    unsigned countdown = PROGRESS_ITERATIONS;
    while (__atomic_load_n(&peer->outstanding, __ATOMIC_ACQUIRE) > 0) {
        ompi_osc_swy_progress_step(&countdown);
    }
    int rc = peer->error;
    peer->error = OMPI_SUCCESS;
    return rc;
}

static int flush_one(ompi_osc_swy_module_t* module, int target, bool remote) {
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    int rc = wait_outstanding(peer);
    if (remote) {
        swy_request_h req = NULL;
        swy_request_params_t params = {.field_mask = 0};
        swy_status_t s = swy_ep_flush_nb(peer->ep, &params, &req);
        int rc2 = ompi_osc_swy_wait(s, req);
        if (rc == OMPI_SUCCESS) {
            rc = rc2;
        }
    }
    return rc;
}

int ompi_osc_swy_flush_target(ompi_osc_swy_module_t* module, int target) {
    int rc = ompi_osc_swy_acc_flush(module, target);
    if (target >= 0) {
        int rc2 = flush_one(module, target, true);
        return rc != OMPI_SUCCESS ? rc : rc2;
    }
    for (int r = 0; r < module->nranks; ++r) {
        int rc2 = flush_one(module, r, true);
        if (rc == OMPI_SUCCESS) {
            rc = rc2;
        }
    }
    return rc;
}

/* Local completion only (flush_local): our buffers are reusable / hold the data. */
int ompi_osc_swy_flush_local_target(ompi_osc_swy_module_t* module, int target) {
    int rc = ompi_osc_swy_acc_flush(module, target);
    if (target >= 0) {
        int rc2 = flush_one(module, target, false);
        return rc != OMPI_SUCCESS ? rc : rc2;
    }
    for (int r = 0; r < module->nranks; ++r) {
        int rc2 = flush_one(module, r, false);
        if (rc == OMPI_SUCCESS) {
            rc = rc2;
        }
    }
    return rc;
}

/* [lo, hi): the bytes @p count elements of @p dt touch, relative to the buffer address. */
static void dt_span(ompi_datatype_t* dt, size_t count, ptrdiff_t* lo, ptrdiff_t* hi) {
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    ptrdiff_t last = (ptrdiff_t)(count - 1) * extent;
    if (last >= 0) {
        *lo = true_lb;
        *hi = last + true_lb + true_extent;
    } else { /* negative extent: later elements lie below */
        *lo = last + true_lb;
        *hi = true_lb + true_extent;
    }
}

int ompi_osc_swy_target(ompi_osc_swy_module_t* module, int target, ptrdiff_t disp, size_t count,
                        ompi_datatype_t* dt, uint64_t* remote_addr, swy_rkey_h* rkey,
                        char** direct) {
    if (OPAL_UNLIKELY(target < 0 || target >= module->nranks)) {
        return OMPI_ERR_BAD_PARAM;
    }
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    if (OPAL_UNLIKELY(!(module->fence_open || module->lock_all || peer->lock_type != 0 ||
                        peer->pscw_access))) {
        return OMPI_ERR_RMA_SYNC;
    }
    ptrdiff_t lo = 0;
    ptrdiff_t hi = 0;
    if (count > 0) {
        dt_span(dt, count, &lo, &hi);
    }
    if (module->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        /* displacements are absolute addresses in the target */
        uint64_t addr = (uint64_t)disp;
        const ompi_osc_swy_dyn_entry_t* region = NULL;
        if (count == 0 || hi <= lo) {
            *remote_addr = addr;
            *rkey = NULL;
            *direct = NULL;
            return OMPI_SUCCESS;
        }
        int rc = ompi_osc_swy_dyn_lookup(module, target, addr + (uint64_t)lo, addr + (uint64_t)hi,
                                         &region);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        *remote_addr = addr;
        *rkey = region->rkey;
        *direct = region->direct != NULL ? region->direct + (addr - region->base) : NULL;
        return OMPI_SUCCESS;
    }
    ptrdiff_t offset;
    if (OPAL_UNLIKELY(__builtin_mul_overflow(disp, (ptrdiff_t)peer->disp_unit, &offset))) {
        return OMPI_ERR_RMA_RANGE;
    }
    if (count > 0 && hi > lo) {
        ptrdiff_t first, end;
        if (__builtin_add_overflow(offset, lo, &first) ||
            __builtin_add_overflow(offset, hi, &end) || first < 0 ||
            (uint64_t)end > (uint64_t)peer->size) {
            return OMPI_ERR_RMA_RANGE;
        }
    }
    *remote_addr = peer->base + (uint64_t)offset;
    *rkey = peer->rkey;
    *direct = peer->direct != NULL ? peer->direct + offset : NULL;
    return OMPI_SUCCESS;
}

/* Start one contiguous Switchyard transfer of @p len bytes; counted until locally complete. */
static int issue(ompi_osc_swy_peer_t* peer, bool put, char* local, size_t len, uint64_t remote,
                 swy_rkey_h rkey, ompi_osc_swy_request_t* req) {
    if (OPAL_UNLIKELY(rkey == NULL)) {
        return OMPI_ERR_RMA_RANGE;
    }
    swy_request_params_t params = {
        .field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA,
        .send_cb = req != NULL ? ompi_osc_swy_request_swy_cb : ompi_osc_swy_peer_swy_cb,
        .user_data = req != NULL ? (void*)req : (void*)peer,
    };
    swy_request_h sreq = NULL;
    (void)__atomic_add_fetch(&peer->outstanding, 1, __ATOMIC_ACQ_REL);
    if (req != NULL) {
        (void)__atomic_add_fetch(&req->outstanding, 1, __ATOMIC_ACQ_REL);
    }
    swy_status_t s = put ? swy_put_nb(peer->ep, local, len, remote, rkey, &params, &sreq)
                         : swy_get_nb(peer->ep, local, len, remote, rkey, &params, &sreq);
    if (s == SWY_INPROGRESS) {
        swy_request_free(sreq); /* released on completion; the callback still runs */
        return OMPI_SUCCESS;
    }
    (void)__atomic_sub_fetch(&peer->outstanding, 1, __ATOMIC_ACQ_REL);
    if (req != NULL) {
        (void)__atomic_sub_fetch(&req->outstanding, 1, __ATOMIC_ACQ_REL);
    }
    return ompi_osc_swy_error(s);
}

/* Move one run between local memory and the target (mapped: memcpy). */
static inline int move(ompi_osc_swy_peer_t* peer, bool put, char* local, size_t len,
                       uint64_t remote, char* direct, swy_rkey_h rkey,
                       ompi_osc_swy_request_t* req) {
    if (direct != NULL) {
        if (put) {
            memcpy(direct, local, len);
        } else {
            memcpy(local, direct, len);
        }
        return OMPI_SUCCESS;
    }
    return issue(peer, put, local, len, remote, rkey, req);
}

static int transfer(ompi_osc_swy_module_t* module, bool put, const void* origin_addr,
                    int origin_count, ompi_datatype_t* origin_dt, int target, ptrdiff_t target_disp,
                    int target_count, ompi_datatype_t* target_dt, ompi_osc_swy_request_t* req) {
    size_t origin_size = 0;
    size_t target_size = 0;
    ompi_datatype_type_size(origin_dt, &origin_size);
    ompi_datatype_type_size(target_dt, &target_size);
    origin_size *= (size_t)origin_count;
    target_size *= (size_t)target_count;

    uint64_t remote = 0;
    swy_rkey_h rkey = NULL;
    char* direct = NULL;
    int rc = ompi_osc_swy_target(module, target, target_disp, (size_t)target_count, target_dt,
                                 &remote, &rkey, &direct);
    if (rc != OMPI_SUCCESS || origin_size == 0 || target_size == 0) {
        return rc;
    }
    if (origin_size != target_size) {
        return OMPI_ERR_BAD_PARAM; /* the type signatures cannot match */
    }
    ompi_osc_swy_peer_t* peer = &module->peers[target];

    /* both contiguous: one move */
    if (ompi_datatype_is_contiguous_memory_layout(origin_dt, origin_count) &&
        ompi_datatype_is_contiguous_memory_layout(target_dt, target_count)) {
        ptrdiff_t olb, oext, tlb, text;
        ompi_datatype_get_true_extent(origin_dt, &olb, &oext);
        ompi_datatype_get_true_extent(target_dt, &tlb, &text);
        return move(peer, put, (char*)origin_addr + olb, origin_size, remote + (uint64_t)tlb,
                    direct != NULL ? direct + tlb : NULL, rkey, req);
    }

    /* general: pair up the runs of both layouts */
    ompi_osc_swy_dt_iter_t oit;
    ompi_osc_swy_dt_iter_t tit;
    rc = ompi_osc_swy_dt_iter_init(&oit, origin_addr, (size_t)origin_count, origin_dt);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    /* the target walk runs on offsets from 0: remote and direct are added per run */
    rc = ompi_osc_swy_dt_iter_init(&tit, NULL, (size_t)target_count, target_dt);
    if (rc != OMPI_SUCCESS) {
        ompi_osc_swy_dt_iter_fini(&oit);
        return rc;
    }
    char* optr = NULL;
    size_t olen = 0;
    char* tptr = NULL;
    size_t tlen = 0;
    while (rc == OMPI_SUCCESS) {
        if (olen == 0 && !ompi_osc_swy_dt_iter_next(&oit, &optr, &olen)) {
            break;
        }
        if (tlen == 0 && !ompi_osc_swy_dt_iter_next(&tit, &tptr, &tlen)) {
            break;
        }
        size_t n = olen < tlen ? olen : tlen;
        ptrdiff_t toff = (ptrdiff_t)(uintptr_t)tptr;
        rc = move(peer, put, optr, n, remote + (uint64_t)toff,
                  direct != NULL ? direct + toff : NULL, rkey, req);
        optr += n;
        olen -= n;
        tptr += n;
        tlen -= n;
    }
    ompi_osc_swy_dt_iter_fini(&oit);
    ompi_osc_swy_dt_iter_fini(&tit);
    return rc;
}

int ompi_osc_swy_put(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                     int target, ptrdiff_t target_disp, int target_count,
                     ompi_datatype_t* target_dt, struct ompi_win_t* win) {
    return transfer(ompi_osc_swy_module(win), true, origin_addr, origin_count, origin_dt, target,
                    target_disp, target_count, target_dt, NULL);
}

int ompi_osc_swy_get(void* origin_addr, int origin_count, ompi_datatype_t* origin_dt, int target,
                     ptrdiff_t target_disp, int target_count, ompi_datatype_t* target_dt,
                     struct ompi_win_t* win) {
    return transfer(ompi_osc_swy_module(win), false, origin_addr, origin_count, origin_dt, target,
                    target_disp, target_count, target_dt, NULL);
}

static int request_transfer(bool put, const void* origin_addr, int origin_count,
                            ompi_datatype_t* origin_dt, int target, ptrdiff_t target_disp,
                            int target_count, ompi_datatype_t* target_dt, struct ompi_win_t* win,
                            struct ompi_request_t** request) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (target < 0 || target >= module->nranks) {
        return OMPI_ERR_BAD_PARAM;
    }
    ompi_osc_swy_request_t* req = ompi_osc_swy_request_alloc(&module->peers[target]);
    if (req == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = transfer(module, put, origin_addr, origin_count, origin_dt, target, target_disp,
                      target_count, target_dt, req);
    if (rc != OMPI_SUCCESS) {
        /* Nothing of a failed call may stay running: wait for what started, then drop it. */
        unsigned countdown = PROGRESS_ITERATIONS;
        while (__atomic_load_n(&req->outstanding, __ATOMIC_ACQUIRE) > 1) {
            ompi_osc_swy_progress_step(&countdown);
        }
        ompi_osc_swy_request_release_ref(req);
        ompi_request_t* r = &req->super;
        ompi_request_free(&r);
        return rc;
    }
    *request = &req->super;
    ompi_osc_swy_request_release_ref(req);
    return OMPI_SUCCESS;
}

int ompi_osc_swy_rput(const void* origin_addr, int origin_count, ompi_datatype_t* origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      ompi_datatype_t* target_dt, struct ompi_win_t* win,
                      struct ompi_request_t** request) {
    return request_transfer(true, origin_addr, origin_count, origin_dt, target, target_disp,
                            target_count, target_dt, win, request);
}

int ompi_osc_swy_rget(void* origin_addr, int origin_count, ompi_datatype_t* origin_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t* target_dt,
                      struct ompi_win_t* win, struct ompi_request_t** request) {
    return request_transfer(false, origin_addr, origin_count, origin_dt, target, target_disp,
                            target_count, target_dt, win, request);
}
