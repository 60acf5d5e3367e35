/*
 * osc swy: active-target synchronisation -- fence and post/start/complete/wait/test.
 *
 * Fence: complete everything this rank started (at the targets), then a barrier.
 *
 * PSCW: counters in the control areas, one per (owner, peer) pair, so that epochs with
 * different groups never mix. MPI_Win_post at target T adds 1 to post[T] in the control area
 * of each origin of its group; MPI_Win_start at origin O waits until post[T] exceeds the
 * posts it already consumed from T (post_seen), for each T of its group. MPI_Win_complete
 * flushes each target and then adds 1 to complete[O] in the target's control area;
 * MPI_Win_wait/test at T wait for complete[O] > complete_seen[O] for each origin of the post
 * group. The counters only grow, so a post for the next epoch that arrives early is simply
 * consumed by the next start.
 */
#include "osc_swy.h"

#include <stdlib.h>

#include "ompi/mca/coll/coll.h"

#include "osc_swy_dynamic.h"
#include "osc_swy_window.h"

int ompi_osc_swy_fence(int assert, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (module->start_ranks != NULL || module->post_ranks != NULL || module->lock_all ||
        module->passive_locks > 0) {
        return OMPI_ERR_RMA_SYNC;
    }
    int rc = OMPI_SUCCESS;
    if (!(assert& MPI_MODE_NOPRECEDE)) {
        rc = ompi_osc_swy_flush_target(module, -1);
    }
    int rc2 =
        module->comm->c_coll->coll_barrier(module->comm, module->comm->c_coll->coll_barrier_module);
    module->fence_open = !(assert& MPI_MODE_NOSUCCEED);
    ompi_osc_swy_dyn_invalidate(module);
    return rc != OMPI_SUCCESS ? rc : rc2;
}

/* The window ranks of @p group's members (malloc'd array of ompi_group_size entries). */
static int group_ranks(ompi_osc_swy_module_t* module, ompi_group_t* group, int** out, int* n) {
    int size = ompi_group_size(group);
    int* in = calloc((size_t)(size > 0 ? size : 1), sizeof(int));
    int* ranks = malloc(sizeof(int) * (size_t)(size > 0 ? size : 1));
    if (in == NULL || ranks == NULL) {
        free(in);
        free(ranks);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < size; ++i) {
        in[i] = i;
    }
    int rc = ompi_group_translate_ranks(group, size, in, module->comm->c_local_group, ranks);
    free(in);
    if (rc != OMPI_SUCCESS) {
        free(ranks);
        return rc;
    }
    for (int i = 0; i < size; ++i) {
        if (ranks[i] == MPI_UNDEFINED) {
            free(ranks);
            return OMPI_ERR_BAD_PARAM; /* not a member of the window */
        }
    }
    *out = ranks;
    *n = size;
    return OMPI_SUCCESS;
}

/* The counter at @p offset of this rank's own control area (peers add to it). */
static uint64_t own_counter(ompi_osc_swy_module_t* module, size_t offset) {
    return __atomic_load_n(ompi_osc_swy_ctrl_word(module, offset), __ATOMIC_ACQUIRE);
}

int ompi_osc_swy_post(struct ompi_group_t* group, int assert, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    (void)assert;
    if (module->post_ranks != NULL) {
        return OMPI_ERR_RMA_SYNC;
    }
    int* ranks = NULL;
    int n = 0;
    int rc = group_ranks(module, group, &ranks, &n);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    module->post_ranks = ranks;
    module->post_n = n;
    /* our memory is ready: everything we stored before post is visible to the origins */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int i = 0; i < n; ++i) {
        rc = ompi_osc_swy_ctrl_atomic(module, ranks[i], SWY_ATOMIC_OP_ADD,
                                      ompi_osc_swy_ctrl_post_off(module->rank), 1, 0, NULL);
        if (rc != OMPI_SUCCESS) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

int ompi_osc_swy_start(struct ompi_group_t* group, int assert, struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    (void)assert;
    if (module->start_ranks != NULL) {
        return OMPI_ERR_RMA_SYNC;
    }
    int* ranks = NULL;
    int n = 0;
    int rc = group_ranks(module, group, &ranks, &n);
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    unsigned countdown = 1;
    for (int i = 0; i < n; ++i) {
        int t = ranks[i];
        size_t off = ompi_osc_swy_ctrl_post_off(t);
        while (own_counter(module, off) <= module->post_seen[t]) {
            ompi_osc_swy_progress_step(&countdown);
        }
        ++module->post_seen[t];
        module->peers[t].pscw_access = true;
    }
    module->start_ranks = ranks;
    module->start_n = n;
    ompi_osc_swy_dyn_invalidate(module);
    return OMPI_SUCCESS;
}

int ompi_osc_swy_complete(struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (module->start_ranks == NULL) {
        return OMPI_ERR_RMA_SYNC;
    }
    int rc = OMPI_SUCCESS;
    for (int i = 0; i < module->start_n; ++i) {
        int t = module->start_ranks[i];
        int rc2 = ompi_osc_swy_flush_target(module, t);
        /* the target must learn we are done even if an operation failed */
        int rc3 = ompi_osc_swy_ctrl_atomic(
            module, t, SWY_ATOMIC_OP_ADD,
            ompi_osc_swy_ctrl_complete_off(module->nranks, module->rank), 1, 0, NULL);
        if (rc == OMPI_SUCCESS) {
            rc = rc2 != OMPI_SUCCESS ? rc2 : rc3;
        }
        module->peers[t].pscw_access = false;
    }
    free(module->start_ranks);
    module->start_ranks = NULL;
    module->start_n = 0;
    return rc;
}

/* True when every origin of the post group completed (nothing consumed yet). */
static bool all_completed(ompi_osc_swy_module_t* module) {
    for (int i = 0; i < module->post_n; ++i) {
        int o = module->post_ranks[i];
        if (own_counter(module, ompi_osc_swy_ctrl_complete_off(module->nranks, o)) <=
            module->complete_seen[o]) {
            return false;
        }
    }
    return true;
}

static void end_exposure(ompi_osc_swy_module_t* module) {
    for (int i = 0; i < module->post_n; ++i) {
        ++module->complete_seen[module->post_ranks[i]];
    }
    free(module->post_ranks);
    module->post_ranks = NULL;
    module->post_n = 0;
    /* the origins' stores are visible to our loads from here on */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int ompi_osc_swy_wait_epoch(struct ompi_win_t* win) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (module->post_ranks == NULL) {
        return OMPI_ERR_RMA_SYNC;
    }
    unsigned countdown = 1;
    while (!all_completed(module)) {
        ompi_osc_swy_progress_step(&countdown);
    }
    end_exposure(module);
    return OMPI_SUCCESS;
}

int ompi_osc_swy_test(struct ompi_win_t* win, int* flag) {
    ompi_osc_swy_module_t* module = ompi_osc_swy_module(win);
    if (module->post_ranks == NULL) {
        return OMPI_ERR_RMA_SYNC;
    }
    if (!all_completed(module)) {
        unsigned countdown = 1; /* one full progress pass, so that a test loop advances */
        ompi_osc_swy_progress_step(&countdown);
        *flag = all_completed(module);
    } else {
        *flag = 1;
    }
    if (*flag) {
        end_exposure(module);
    }
    return OMPI_SUCCESS;
}
