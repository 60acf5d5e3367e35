/* Windows, synchronisation modes and timed loops shared by the one-sided OSU-style
 * benchmarks in bench/osu/ (osu_put_latency.c, osu_get_bw.c, ...).
 *
 * Written for Switchyard, measuring as OSU's one-sided benchmarks do:
 *   -w create|allocate|dynamic  how the window is made (MPI_Win_create over page-aligned
 *                               memory, MPI_Win_allocate, MPI_Win_create_dynamic + attach);
 *   -s lock|flush|flush_local|lock_all|pscw|fence  how operations are completed.
 * Rank 0 is the origin; rank 1 the target. In the passive modes rank 1 only waits in a
 * barrier (its MPI progresses there):
 *   lock         per round: lock(shared, 1), the operations, unlock(1)
 *   flush        lock(shared, 1) once; per round: the operations, flush(1)
 *   flush_local  the same with flush_local(1)
 *   lock_all     per round: lock_all, the operations, unlock_all
 * In the active modes rank 1 takes part. Latency runs a ping-pong (each rank in turn
 * accesses the other; the figure is half a round trip); bandwidth streams one way:
 *   pscw   latency: 0: start, ops, complete, post, wait; 1: post, wait, start, ops, complete
 *          bandwidth: 0: start, ops, complete; 1: post, wait
 *   fence  latency: 0: fence, ops, fence, fence; 1: fence, fence, ops, fence
 *          bandwidth: both: fence, (0: ops), fence
 * One window is made per run, large enough for the largest size (times the window of
 * operations in flight for bandwidth), and touched before the first timed round.
 */
#ifndef SWY_OSU_RMA_H
#define SWY_OSU_RMA_H

#include "osu_common.h"

typedef enum { OSU_WIN_CREATE, OSU_WIN_ALLOCATE, OSU_WIN_DYNAMIC } osu_win_kind_t;

typedef enum {
    OSU_SYNC_LOCK,
    OSU_SYNC_FLUSH,
    OSU_SYNC_FLUSH_LOCAL,
    OSU_SYNC_LOCK_ALL,
    OSU_SYNC_PSCW,
    OSU_SYNC_FENCE,
    OSU_SYNC_COUNT
} osu_sync_t;

/* Bit masks of the synchronisation modes a program accepts. */
enum {
    OSU_SYNC_ALL = (1u << OSU_SYNC_COUNT) - 1,
    OSU_SYNC_ACTIVE = (1u << OSU_SYNC_PSCW) | (1u << OSU_SYNC_FENCE)
};

static const char* const osu_win_names[] = {"create", "allocate", "dynamic"};
static const char* const osu_win_calls[] = {"MPI_Win_create", "MPI_Win_allocate",
                                            "MPI_Win_create_dynamic"};
static const char* const osu_sync_names[] = {"lock",     "flush", "flush_local",
                                             "lock_all", "pscw",  "fence"};
static const char* const osu_sync_calls[] = {
    "MPI_Win_lock/unlock",      "MPI_Win_flush",
    "MPI_Win_flush_local",      "MPI_Win_lock_all/unlock_all",
    "Post/Start/Complete/Wait", "MPI_Win_fence"};

/* Data types of the accumulate benchmark (-T). */
typedef enum { OSU_TYPE_CHAR, OSU_TYPE_INT, OSU_TYPE_LONG_LONG, OSU_TYPE_DOUBLE } osu_type_t;
static const char* const osu_type_names[] = {"char", "int", "long_long", "double"};
static const char* const osu_type_calls[] = {"MPI_CHAR", "MPI_INT", "MPI_LONG_LONG", "MPI_DOUBLE"};

/* A one-sided program's own options. */
typedef struct {
    osu_win_kind_t win;
    osu_sync_t sync;
    unsigned sync_allowed; /* mask of accepted modes */
    int with_type;         /* whether -T is offered */
    osu_type_t type;
    int decimals; /* digits after the point in the table (-d; OSU prints 2) */
} osu_rma_opts_t;

/* Index of `arg` in names[0..n), or -1. */
static inline int osu_lookup(const char* arg, const char* const* names, int n) {
    for (int i = 0; i < n; ++i)
        if (strcmp(arg, names[i]) == 0) return i;
    return -1;
}

/* osu_extra_opts_t handler for -w, -s and -T. */
static inline int osu_rma_handle(int c, const char* arg, void* ctx) {
    osu_rma_opts_t* r = (osu_rma_opts_t*)ctx;
    int i;
    switch (c) {
        case 'w':
            if ((i = osu_lookup(arg, osu_win_names, 3)) < 0) return 1;
            r->win = (osu_win_kind_t)i;
            return 0;
        case 's':
            if ((i = osu_lookup(arg, osu_sync_names, OSU_SYNC_COUNT)) < 0) return 1;
            if (!(r->sync_allowed & (1u << i))) return 1;
            r->sync = (osu_sync_t)i;
            return 0;
        case 'T':
            if (!r->with_type || (i = osu_lookup(arg, osu_type_names, 4)) < 0) return 1;
            r->type = (osu_type_t)i;
            return 0;
        case 'd': r->decimals = atoi(arg); return r->decimals >= 1 && r->decimals <= 6 ? 0 : 1;
        default: return 1;
    }
}

/* osu_extra_opts_t usage lines for -w, -s and -T. */
static inline void osu_rma_usage(void* ctx) {
    const osu_rma_opts_t* r = (const osu_rma_opts_t*)ctx;
    fprintf(stderr,
            "  -w  window: create, allocate or dynamic (default %s)\n  -s  synchronisation:",
            osu_win_names[r->win]);
    for (int i = 0; i < OSU_SYNC_COUNT; ++i)
        if (r->sync_allowed & (1u << i)) fprintf(stderr, " %s", osu_sync_names[i]);
    fprintf(stderr, " (default %s)\n", osu_sync_names[r->sync]);
    if (r->with_type)
        fprintf(stderr, "  -T  data type: char, int, long_long or double (default %s)\n",
                osu_type_names[r->type]);
    fprintf(stderr,
            "  -d  digits after the point, 1 to 6 (default 2, as OSU; 3 resolves\n"
            "      shared-memory latencies of a few tens of nanoseconds)\n");
}

/* osu_start_with() for a one-sided program: 2 ranks, common options plus -w/-s (and -T when
 * r->with_type); *r holds the program's defaults. Same return as osu_start_with(). */
static inline int osu_rma_start(int* argc, char*** argv, osu_opts_t* o, osu_rma_opts_t* r,
                                int* rank) {
    const char* letters = r->with_type ? "w:s:d:T:" : "w:s:d:";
    const osu_extra_opts_t x = {letters, osu_rma_handle, osu_rma_usage, r};
    int np;
    return osu_start_with(argc, argv, o, OSU_TWO_RANKS, &x, rank, &np);
}

/* Prints OSU's header shape: title, window flavour, synchronisation, the data type when
 * `datatype` is not NULL, column names. */
static inline void osu_rma_header(const char* title, const osu_rma_opts_t* r, const char* datatype,
                                  const char* columns) {
    printf("# %s (Switchyard bench/osu)\n", title);
    printf("# Window creation: %s\n", osu_win_calls[r->win]);
    printf("# Synchronization: %s\n", osu_sync_calls[r->sync]);
    if (datatype) printf("# Datatype: %s\n", datatype);
    printf("%s\n", columns);
    fflush(stdout);
}

/* A window of `bytes` bytes on each of the two ranks. */
typedef struct {
    MPI_Win win;
    osu_win_kind_t kind;
    char* base;         /* this rank's window memory */
    MPI_Aint peer_disp; /* displacement of the peer's byte 0: 0, or its address (dynamic) */
    MPI_Group peer;     /* the other rank, for post/start */
} osu_win_t;

/* Makes the window (collective over MPI_COMM_WORLD) and touches its memory, so that page
 * faults stay out of the timed loops. Aborts on failure. */
static inline void osu_win_open(osu_win_t* w, osu_win_kind_t kind, size_t bytes, int rank) {
    const int peer = 1 - rank;
    MPI_Group world;
    w->kind = kind;
    w->peer_disp = 0;
    switch (kind) {
        case OSU_WIN_CREATE:
            w->base = (char*)osu_alloc(bytes);
            MPI_Win_create(w->base, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
            break;
        case OSU_WIN_ALLOCATE:
            MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->base, &w->win);
            memset(w->base, 'b', bytes);
            break;
        case OSU_WIN_DYNAMIC: {
            MPI_Aint mine;
            w->base = (char*)osu_alloc(bytes);
            MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
            MPI_Win_attach(w->win, w->base, (MPI_Aint)(bytes ? bytes : 1));
            MPI_Get_address(w->base, &mine);
            MPI_Sendrecv(&mine, 1, MPI_AINT, peer, 77, &w->peer_disp, 1, MPI_AINT, peer, 77,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        }
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &peer, &w->peer);
    MPI_Group_free(&world);
}

/* Frees the window and the memory osu_win_open() took for it (collective). */
static inline void osu_win_close(osu_win_t* w) {
    MPI_Group_free(&w->peer);
    if (w->kind == OSU_WIN_DYNAMIC) MPI_Win_detach(w->win, w->base);
    MPI_Win_free(&w->win);
    if (w->kind != OSU_WIN_ALLOCATE) free(w->base);
}

/* Issues one operation of `size` bytes towards `target`, at byte `offset` of its window (the
 * program adds w->peer_disp) and of its own local buffers. */
typedef void (*osu_rma_issue_fn)(void* ctx, const osu_win_t* w, int target, size_t offset,
                                 size_t size);

/* A timed loop: `warm` untimed then `iters` timed rounds of `batch` operations of `size`
 * bytes at slots 0..slots-1 (round robin), completed as *r says. `pingpong`: the active modes
 * run the latency ping-pong instead of the one-way stream. Returns on rank 0 the seconds of
 * the timed rounds (0 elsewhere); collective. */
static inline double osu_rma_run(const osu_rma_opts_t* r, const osu_win_t* w, int rank, size_t size,
                                 int warm, int iters, int batch, int slots, int pingpong,
                                 osu_rma_issue_fn issue, void* ctx) {
    const int peer = 1 - rank;
    double t0 = 0, t = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    switch (r->sync) {
        case OSU_SYNC_LOCK:
        case OSU_SYNC_FLUSH:
        case OSU_SYNC_FLUSH_LOCAL:
        case OSU_SYNC_LOCK_ALL: {
            if (rank != 0) break;
            const int held = r->sync == OSU_SYNC_FLUSH || r->sync == OSU_SYNC_FLUSH_LOCAL;
            if (held) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w->win);
            for (int i = 0; i < warm + iters; ++i) {
                if (i == warm) t0 = MPI_Wtime();
                if (r->sync == OSU_SYNC_LOCK) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w->win);
                if (r->sync == OSU_SYNC_LOCK_ALL) MPI_Win_lock_all(0, w->win);
                for (int j = 0; j < batch; ++j)
                    issue(ctx, w, 1, (size_t)(j % slots) * size, size);
                switch (r->sync) {
                    case OSU_SYNC_LOCK: MPI_Win_unlock(1, w->win); break;
                    case OSU_SYNC_FLUSH: MPI_Win_flush(1, w->win); break;
                    case OSU_SYNC_FLUSH_LOCAL: MPI_Win_flush_local(1, w->win); break;
                    default: MPI_Win_unlock_all(w->win); break;
                }
            }
            t = MPI_Wtime() - t0;
            if (held) MPI_Win_unlock(1, w->win);
            break;
        }
        case OSU_SYNC_PSCW:
            for (int i = 0; i < warm + iters; ++i) {
                if (i == warm) t0 = MPI_Wtime();
                if (rank == 0 || pingpong) {
                    if (rank == 1) {
                        MPI_Win_post(w->peer, 0, w->win);
                        MPI_Win_wait(w->win);
                    }
                    MPI_Win_start(w->peer, 0, w->win);
                    for (int j = 0; j < batch; ++j)
                        issue(ctx, w, peer, (size_t)(j % slots) * size, size);
                    MPI_Win_complete(w->win);
                    if (rank == 0 && pingpong) {
                        MPI_Win_post(w->peer, 0, w->win);
                        MPI_Win_wait(w->win);
                    }
                } else {
                    MPI_Win_post(w->peer, 0, w->win);
                    MPI_Win_wait(w->win);
                }
            }
            t = MPI_Wtime() - t0;
            break;
        case OSU_SYNC_FENCE:
            for (int i = 0; i < warm + iters; ++i) {
                if (i == warm) t0 = MPI_Wtime();
                MPI_Win_fence(0, w->win);
                if (rank == 1 && pingpong) MPI_Win_fence(0, w->win);
                if (rank == 0 || pingpong)
                    for (int j = 0; j < batch; ++j)
                        issue(ctx, w, peer, (size_t)(j % slots) * size, size);
                MPI_Win_fence(0, w->win);
                if (rank == 0 && pingpong) MPI_Win_fence(0, w->win);
            }
            t = MPI_Wtime() - t0;
            break;
        default: break;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return rank == 0 ? t : 0;
}

/* Latency in microseconds of one operation of `size` bytes (rank 0; 0 elsewhere): the passive
 * modes time one operation and its completion, the active modes half a ping-pong. */
static inline double osu_rma_latency_us(const osu_rma_opts_t* r, const osu_win_t* w, int rank,
                                        size_t size, int warm, int iters, osu_rma_issue_fn issue,
                                        void* ctx) {
    const double t = osu_rma_run(r, w, rank, size, warm, iters, 1, 1, 1, issue, ctx);
    const int active = r->sync == OSU_SYNC_PSCW || r->sync == OSU_SYNC_FENCE;
    return t * 1e6 / iters / (active ? 2.0 : 1.0);
}

/* Prints one row of a latency or bandwidth table on rank 0, in OSU's columns. */
static inline void osu_rma_row(const osu_rma_opts_t* r, int rank, size_t size, double value) {
    if (rank != 0) return;
    printf("%-10zu%18.*f\n", size, r->decimals, value);
    fflush(stdout);
}

#endif
