/* Shared helpers for the MPI one-sided (RMA) programs, rma_*.c.
 *
 * Like the rest of the suite these are plain MPI programs: they run over any OSC component
 * (swy, rdma, pt2pt, ucx), so a failure can be told apart from a bug in the test by rerunning
 * with another one (-DSWY_MPI_TEST_OSC=..., see CMakeLists.txt). A window is opened in any of
 * the four flavours through one helper, and addressed through rt_disp(), which hides the one
 * difference the programs care about: a dynamic window is addressed by the target's absolute
 * address, the others by a displacement in units of disp_unit.
 */
#ifndef SWY_RMATEST_H
#define SWY_RMATEST_H

#include "mpitest.h"

/* ---- window flavours ---- */

typedef enum { RT_CREATE, RT_ALLOCATE, RT_SHARED, RT_DYNAMIC, RT_NFLAVOURS } rt_flavour;

static const char* const rt_flavour_names[RT_NFLAVOURS] = {"create", "allocate", "shared",
                                                           "dynamic"};

/* Returns the flavour called `name`, or fails the job. */
static inline rt_flavour rt_flavour_parse(const char* name) {
    for (int f = 0; f < RT_NFLAVOURS; ++f)
        if (strcmp(name, rt_flavour_names[f]) == 0) return (rt_flavour)f;
    MT_FAIL("unknown window flavour '%s' (create, allocate, shared, dynamic)", name);
    return RT_NFLAVOURS; /* not reached: MT_FAIL ends the job */
}

/* Bytes of guard before and after the memory of create and dynamic windows, which the
 * program allocates itself: an RMA operation must never write outside what was exposed. */
enum { RT_GUARD = 256, RT_GUARD_BYTE = 0x5A };

/* One window and what a program needs to address every rank's part of it. */
typedef struct {
    MPI_Win win;
    rt_flavour flavour;
    int disp_unit;    /* 1 for dynamic windows, which are addressed in bytes */
    size_t bytes;     /* this rank's window memory */
    char* base;       /* this rank's window memory (NULL when bytes == 0 may happen) */
    char* region;     /* create/dynamic: what was malloc'd, guard + memory + guard */
    MPI_Aint* remote; /* dynamic: every rank's attached address; else NULL */
    int unified;      /* MPI_WIN_MODEL is MPI_WIN_UNIFIED */
    MPI_Comm comm;    /* what the window was opened over (rt_win_close synchronises on it) */
} rt_win;

/* Opens a window of `bytes` bytes on this rank (ranks may differ) in `flavour` over `comm`.
 * Dynamic windows attach one region of `bytes` (when non-zero) and exchange addresses.
 * `info` may be MPI_INFO_NULL. Collective. */
static inline void rt_win_open(rt_win* w, rt_flavour flavour, size_t bytes, int disp_unit,
                               MPI_Info info, MPI_Comm comm) {
    memset(w, 0, sizeof *w);
    w->flavour = flavour;
    w->bytes = bytes;
    w->disp_unit = flavour == RT_DYNAMIC ? 1 : disp_unit;
    w->comm = comm;
    if (flavour == RT_CREATE || flavour == RT_DYNAMIC) {
        w->region = (char*)mt_malloc(bytes + 2 * RT_GUARD);
        memset(w->region, RT_GUARD_BYTE, bytes + 2 * RT_GUARD);
        w->base = w->region + RT_GUARD;
    }
    switch (flavour) {
        case RT_CREATE:
            MT_MPI(MPI_Win_create(bytes ? w->base : NULL, (MPI_Aint)bytes, disp_unit, info, comm,
                                  &w->win));
            break;
        case RT_ALLOCATE:
            MT_MPI(MPI_Win_allocate((MPI_Aint)bytes, disp_unit, info, comm, &w->base, &w->win));
            break;
        case RT_SHARED:
            MT_MPI(
                MPI_Win_allocate_shared((MPI_Aint)bytes, disp_unit, info, comm, &w->base, &w->win));
            break;
        case RT_DYNAMIC: {
            MT_MPI(MPI_Win_create_dynamic(info, comm, &w->win));
            if (bytes) MT_MPI(MPI_Win_attach(w->win, w->base, (MPI_Aint)bytes));
            int np;
            MPI_Comm_size(comm, &np);
            w->remote = (MPI_Aint*)mt_malloc((size_t)np * sizeof(MPI_Aint));
            MPI_Aint mine = 0;
            MT_MPI(MPI_Get_address(w->base, &mine));
            MT_MPI(MPI_Allgather(&mine, 1, MPI_AINT, w->remote, 1, MPI_AINT, comm));
            break;
        }
        default: MT_FAIL("bad flavour %d", (int)flavour);
    }
    int* model = NULL;
    int found = 0;
    MT_MPI(MPI_Win_get_attr(w->win, MPI_WIN_MODEL, &model, &found));
    w->unified = found && *model == MPI_WIN_UNIFIED;
    /* The window reports the flavour it was made as: a component that quietly served
     * another would make the flavour under test a lie. */
    int* kind = NULL;
    MT_MPI(MPI_Win_get_attr(w->win, MPI_WIN_CREATE_FLAVOR, &kind, &found));
    static const int want[RT_NFLAVOURS] = {MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE,
                                           MPI_WIN_FLAVOR_SHARED, MPI_WIN_FLAVOR_DYNAMIC};
    MT_CHECK(found && *kind == want[flavour], "%s window reports flavour %d",
             rt_flavour_names[flavour], found ? *kind : -1);
}

/* Returns 1 when the guards around a create/dynamic window still hold their fill byte (always
 * 1 for the flavours whose memory MPI allocates). */
static inline int rt_guards_intact(const rt_win* w) {
    if (!w->region) return 1;
    for (size_t i = 0; i < RT_GUARD; ++i)
        if ((uint8_t)w->region[i] != RT_GUARD_BYTE ||
            (uint8_t)w->region[RT_GUARD + w->bytes + i] != RT_GUARD_BYTE)
            return 0;
    return 1;
}

/* Frees the window; fails the job if anything wrote around it. Collective. */
static inline void rt_win_close(rt_win* w) {
    /* MPI_Win_free synchronises, but MPI_Win_detach does not: a rank that detached while its
     * neighbour still had a get to issue in its last epoch would pull the memory from under
     * it (osc swy then rightly refuses the stale key with MPI_ERR_RMA_RANGE). Every rank is
     * done with the window once all have reached this barrier. */
    if (w->flavour == RT_DYNAMIC) {
        MT_MPI(MPI_Barrier(w->comm)); /* on every rank: ranks without memory too */
        if (w->bytes) MT_MPI(MPI_Win_detach(w->win, w->base));
    }
    MT_MPI(MPI_Win_free(&w->win));
    /* After MPI_Win_free, which completes every rank's operations: a late stray write is seen. */
    MT_CHECK(rt_guards_intact(w), "%s window: guard memory around the window was written",
             rt_flavour_names[w->flavour]);
    free(w->region);
    free(w->remote);
    memset(w, 0, sizeof *w);
}

/* The target displacement of byte `offset` of rank `target`'s window memory: an absolute
 * address for dynamic windows, else offset / disp_unit (which must divide it). */
static inline MPI_Aint rt_disp(const rt_win* w, int target, size_t offset) {
    if (w->flavour == RT_DYNAMIC) return MPI_Aint_add(w->remote[target], (MPI_Aint)offset);
    MT_CHECK(offset % (size_t)w->disp_unit == 0, "offset %zu is not a multiple of %d", offset,
             w->disp_unit);
    return (MPI_Aint)(offset / (size_t)w->disp_unit);
}

/* Local access to this rank's own window memory (initialising it, checking it) outside any
 * epoch: an exclusive lock on oneself makes the stores and loads well-defined in both memory
 * models. Call rt_local_end and then a barrier before others access it. */
static inline void rt_local_begin(const rt_win* w) {
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank(), 0, w->win));
}

static inline void rt_local_end(const rt_win* w) { MT_MPI(MPI_Win_unlock(mt_rank(), w->win)); }

/* ---- synchronisation modes ---- */

typedef enum {
    RT_FENCE,
    RT_PSCW,
    RT_LOCK_SHARED,
    RT_LOCK_EXCLUSIVE,
    RT_LOCK_ALL_FLUSH,
    RT_LOCK_ALL_FLUSH_LOCAL,
    RT_LOCK_ALL_FLUSH_ALL,
    RT_LOCK_ALL_FLUSH_LOCAL_ALL,
    RT_SYNC,
    RT_NMODES
} rt_mode;

static const char* const rt_mode_names[RT_NMODES] = {"fence",
                                                     "pscw",
                                                     "lock_shared",
                                                     "lock_exclusive",
                                                     "lock_all+flush",
                                                     "lock_all+flush_local",
                                                     "lock_all+flush_all",
                                                     "lock_all+flush_local_all",
                                                     "lock_all+sync"};

/* Passive-target modes: the only ones where request-based operations are allowed. */
static inline int rt_mode_passive(rt_mode m) { return m >= RT_LOCK_SHARED; }

/* A group of the given ranks of MPI_COMM_WORLD (duplicates are dropped), for PSCW. */
static inline MPI_Group rt_group_of(const int* ranks, int n) {
    int* uniq = (int*)mt_malloc((size_t)n * sizeof(int));
    int k = 0;
    for (int i = 0; i < n; ++i) {
        int seen = 0;
        for (int j = 0; j < k; ++j)
            seen |= uniq[j] == ranks[i];
        if (!seen) uniq[k++] = ranks[i];
    }
    MPI_Group world, g;
    MT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MT_MPI(MPI_Group_incl(world, k, uniq, &g));
    MT_MPI(MPI_Group_free(&world));
    free(uniq);
    return g;
}

/* Opens the epoch of mode m in which this rank accesses `target` while `origin` accesses it
 * (the left and right neighbours of a ring, say): fence, post/start, a lock on the target, or
 * lock_all for the lock_all modes. Request-based operations need rt_mode_passive(m). */
static inline void rt_epoch_begin(MPI_Win win, rt_mode m, int target, int origin) {
    switch (m) {
        case RT_FENCE: MT_MPI(MPI_Win_fence(0, win)); break;
        case RT_PSCW: {
            MPI_Group exposed_to = rt_group_of(&origin, 1), accessing = rt_group_of(&target, 1);
            MT_MPI(MPI_Win_post(exposed_to, 0, win));
            MT_MPI(MPI_Win_start(accessing, 0, win));
            MT_MPI(MPI_Group_free(&exposed_to));
            MT_MPI(MPI_Group_free(&accessing));
            break;
        }
        case RT_LOCK_SHARED: MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win)); break;
        case RT_LOCK_EXCLUSIVE: MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win)); break;
        default: MT_MPI(MPI_Win_lock_all(0, win)); break;
    }
}

/* Completes what rt_epoch_begin opened: the flush of the mode (then unlock_all), unlock,
 * complete + wait, or the closing fence. Afterwards every operation this rank issued is
 * complete at the origin; at the target once every rank has returned (a barrier). */
static inline void rt_epoch_end(MPI_Win win, rt_mode m, int target) {
    switch (m) {
        case RT_FENCE: MT_MPI(MPI_Win_fence(0, win)); break;
        case RT_PSCW:
            MT_MPI(MPI_Win_complete(win));
            MT_MPI(MPI_Win_wait(win));
            break;
        case RT_LOCK_SHARED:
        case RT_LOCK_EXCLUSIVE: MT_MPI(MPI_Win_unlock(target, win)); break;
        default:
            if (m == RT_LOCK_ALL_FLUSH || m == RT_SYNC) MT_MPI(MPI_Win_flush(target, win));
            if (m == RT_LOCK_ALL_FLUSH_LOCAL) MT_MPI(MPI_Win_flush_local(target, win));
            if (m == RT_LOCK_ALL_FLUSH_ALL) MT_MPI(MPI_Win_flush_all(win));
            if (m == RT_LOCK_ALL_FLUSH_LOCAL_ALL) MT_MPI(MPI_Win_flush_local_all(win));
            if (m == RT_SYNC) MT_MPI(MPI_Win_sync(win));
            MT_MPI(MPI_Win_unlock_all(win));
            break;
    }
}

/* ---- values ---- */

/* A value that differs for every (index, seed) with near certainty and lies in
 * [-2^19, 2^19): sums over a few thousand origins fit an int, so accumulate checks compute
 * exact expectations, and products of a few stay exact in a double. */
static inline long rt_value(size_t i, unsigned seed) {
    return (long)(mt_pattern_word(i, seed) >> 44) - (1L << 19);
}

/* A datatype of one predefined type filled from rt_value, to test the same logic on int,
 * long and double. */
typedef enum { RT_INT, RT_LONG, RT_DOUBLE, RT_NTYPES } rt_type;

static const char* const rt_type_names[RT_NTYPES] = {"int", "long", "double"};

static inline MPI_Datatype rt_mpi_type(rt_type t) {
    return t == RT_INT ? MPI_INT : t == RT_LONG ? MPI_LONG : MPI_DOUBLE;
}

static inline size_t rt_type_size(rt_type t) {
    return t == RT_INT ? sizeof(int) : t == RT_LONG ? sizeof(long) : sizeof(double);
}

/* Element i of a buffer of type t, as a double (exact for every value the programs use). */
static inline double rt_get(const void* buf, rt_type t, size_t i) {
    switch (t) {
        case RT_INT: return ((const int*)buf)[i];
        case RT_LONG: return (double)((const long*)buf)[i];
        default: return ((const double*)buf)[i];
    }
}

static inline void rt_set(void* buf, rt_type t, size_t i, double v) {
    switch (t) {
        case RT_INT: ((int*)buf)[i] = (int)v; break;
        case RT_LONG: ((long*)buf)[i] = (long)v; break;
        default: ((double*)buf)[i] = v; break;
    }
}

#endif
