/*
 * osc swy: passive-target synchronisation -- lock/unlock, lock_all/unlock_all, flush,
 * flush_local (and their _all forms), sync.
 *
 * The lock is one 64-bit word in the target's control area, changed only by atomics (CPU
 * atomics for same-host peers and the owner, Switchyard atomics executed by the target's
 * progress otherwise): OSC_SWY_LOCK_EXCLUSIVE is the exclusive holder, the bits below count
 * shared holders. Exclusive: compare-and-swap 0 -> EXCLUSIVE until it succeeds. Shared: add 1;
 * if the exclusive bit was set, take the 1 back and wait until the bit clears, then retry.
 * Unlock completes every operation to the target (flush) before giving the lock back.
 * lock_all takes a shared lock on every rank, in rank order.
 */
#include "osc_swy.h"

#include "osc_swy_dynamic.h"
#include "osc_swy_sync.h"

static int acquire(ompi_osc_swy_module_t* module, int target, int lock_type) {
    const size_t off = offsetof(ompi_osc_swy_ctrl_t, lock);
    unsigned countdown = 1;
    uint64_t old = 0;
    int rc;
    if (lock_type == MPI_LOCK_EXCLUSIVE) {
        for (;;) {
            rc = ompi_osc_swy_ctrl_atomic(module, target, SWY_ATOMIC_OP_CSWAP, off,
                                          OSC_SWY_LOCK_EXCLUSIVE, 0, &old);
            if (rc != OMPI_SUCCESS || old == 0) {
                return rc;
            }
            ompi_osc_swy_progress_step(&countdown);
        }
    }
    for (;;) {
        rc = ompi_osc_swy_ctrl_atomic(module, target, SWY_ATOMIC_OP_ADD, off, 1, 0, &old);
        if (rc != OMPI_SUCCESS || !(old & OSC_SWY_LOCK_EXCLUSIVE)) {
            return rc;
        }
        rc =
            ompi_osc_swy_ctrl_atomic(module, target, SWY_ATOMIC_OP_ADD, off, (uint64_t)-1, 0, NULL);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
        /* back off until the exclusive holder leaves (a fetching no-op reads the word) */
        do {
            ompi_osc_swy_progress_step(&countdown);
            rc = ompi_osc_swy_ctrl_atomic(module, target, SWY_ATOMIC_OP_OR, off, 0, 0, &old);
            if (rc != OMPI_SUCCESS) {
                return rc;
            }
        } while (old & OSC_SWY_LOCK_EXCLUSIVE);
    }
}

static int release(ompi_osc_swy_module_t* module, int target, int lock_type) {
    uint64_t delta = lock_type == MPI_LOCK_EXCLUSIVE ? -OSC_SWY_LOCK_EXCLUSIVE : (uint64_t)-1;
    /* fetching, so that the release has happened when unlock returns */
    uint64_t old = 0;
    return ompi_osc_swy_ctrl_atomic(module, target, SWY_ATOMIC_OP_ADD,
                                    offsetof(ompi_osc_swy_ctrl_t, lock), delta, 0, &old);
}

int ompi_osc_swy_lock(int lock_type, int target, int assert, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (target < 0 || target >= module->nranks) {
        return OMPI_ERR_BAD_PARAM;
    }
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    if (peer->lock_type != 0 || module->lock_all || module->start_ranks != NULL) {
        return OMPI_ERR_RMA_SYNC;
    }
    bool nocheck = (assert& MPI_MODE_NOCHECK) != 0;
    if (!nocheck) {
        int rc = acquire(module, target, lock_type);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    peer->lock_type = lock_type;
    peer->lock_nocheck = nocheck;
    peer->dyn_verify = true;
    ++module->passive_locks;
    return OMPI_SUCCESS;
}

int ompi_osc_swy_unlock(int target, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (target < 0 || target >= module->nranks || module->peers[target].lock_type == 0) {
        return OMPI_ERR_RMA_SYNC;
    }
    ompi_osc_swy_peer_t* peer = &module->peers[target];
    int rc = ompi_osc_swy_flush_target(module, target);
    if (!peer->lock_nocheck) {
        int rc2 = release(module, target, peer->lock_type);
        if (rc == OMPI_SUCCESS) {
            rc = rc2;
        }
    }
    peer->lock_type = 0;
    peer->lock_nocheck = false;
    --module->passive_locks;
    return rc;
}

int ompi_osc_swy_lock_all(int assert, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (module->lock_all || module->passive_locks > 0 || module->start_ranks != NULL) {
        return OMPI_ERR_RMA_SYNC;
    }
    bool nocheck = (assert& MPI_MODE_NOCHECK) != 0;
    if (!nocheck) {
        for (int r = 0; r < module->nranks; ++r) {
            int rc = acquire(module, r, MPI_LOCK_SHARED);
            if (rc != OMPI_SUCCESS) {
                while (--r >= 0) {
                    (void)release(module, r, MPI_LOCK_SHARED);
                }
                return rc;
            }
        }
    }
    module->lock_all = true;
    module->lock_all_nocheck = nocheck;
    ompi_osc_swy_dyn_invalidate(module);
    return OMPI_SUCCESS;
}

int ompi_osc_swy_unlock_all(struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (!module->lock_all) {
        return OMPI_ERR_RMA_SYNC;
    }
    int rc = ompi_osc_swy_flush_target(module, -1);
    if (!module->lock_all_nocheck) {
        for (int r = 0; r < module->nranks; ++r) {
            int rc2 = release(module, r, MPI_LOCK_SHARED);
            if (rc == OMPI_SUCCESS) {
                rc = rc2;
            }
        }
    }
    module->lock_all = false;
    module->lock_all_nocheck = false;
    return rc;
}

/* Flushes are allowed only inside a passive-target epoch on the target. */
static bool passive_on(ompi_osc_swy_module_t* module, int target) {
    return module->lock_all || module->peers[target].lock_type != 0;
}

int ompi_osc_swy_flush(int target, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (target < 0 || target >= module->nranks || !passive_on(module, target)) {
        return OMPI_ERR_RMA_SYNC;
    }
    return ompi_osc_swy_flush_target(module, target);
}

int ompi_osc_swy_flush_all(struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (!module->lock_all && module->passive_locks == 0) {
        return OMPI_ERR_RMA_SYNC;
    }
    if (module->lock_all) {
        return ompi_osc_swy_flush_target(module, -1);
    }
    int rc = OMPI_SUCCESS;
    for (int r = 0; r < module->nranks; ++r) {
        if (module->peers[r].lock_type != 0) {
            int rc2 = ompi_osc_swy_flush_target(module, r);
            if (rc == OMPI_SUCCESS) {
                rc = rc2;
            }
        }
    }
    return rc;
}

int ompi_osc_swy_flush_local(int target, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (target < 0 || target >= module->nranks || !passive_on(module, target)) {
        return OMPI_ERR_RMA_SYNC;
    }
    return ompi_osc_swy_flush_local_target(module, target);
}

int ompi_osc_swy_flush_local_all(struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (!module->lock_all && module->passive_locks == 0) {
        return OMPI_ERR_RMA_SYNC;
    }
    return ompi_osc_swy_flush_local_target(module, -1);
}

int ompi_osc_swy_sync(struct ompi_win_t* win) {
    (void)win;
    /* MPI_WIN_UNIFIED: public and private copies are one; order our loads and stores. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    opal_progress();
    return OMPI_SUCCESS;
}
