/*
 * A smoke test of MPI one-sided communication (put/get, every window flavour and
 * synchronisation mode, derived datatypes, lock contention, range errors), element-checked.
 * Runs under any osc component; see run.sh:
 *   mpirun -np 4 --mca pml swy --mca osc swy ... ./rma
 * Exit status 0 and "rma: all checks passed" on rank 0 when every check held. RMA_NO_SHARED=1
 * skips MPI_Win_allocate_shared (for transports between hosts).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 64 };

static int rank, nranks, failures;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            ++failures;                                                    \
        }                                                                  \
    } while (0)

static int value(int owner, int i) { return owner * 1000 + i; }

typedef struct window {
    MPI_Win win;
    int* base;
    void* dyn_mem;   /* dynamic: attached memory */
    MPI_Aint* addrs; /* dynamic: every rank's attached address */
} window_t;

enum flavor { CREATE, ALLOCATE, SHARED, DYNAMIC, NFLAVORS };
static const char* flavor_name[] = {"create", "allocate", "allocate_shared", "dynamic"};

static void make_window(enum flavor f, window_t* w) {
    memset(w, 0, sizeof(*w));
    MPI_Aint bytes = N * sizeof(int);
    switch (f) {
        case CREATE:
            w->base = malloc(bytes);
            MPI_Win_create(w->base, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
            break;
        case ALLOCATE:
            MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->base, &w->win);
            break;
        case SHARED:
            MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->base,
                                    &w->win);
            break;
        case DYNAMIC: {
            MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
            w->base = malloc(bytes);
            w->dyn_mem = w->base;
            MPI_Win_attach(w->win, w->base, bytes);
            MPI_Aint mine;
            MPI_Get_address(w->base, &mine);
            w->addrs = malloc(sizeof(MPI_Aint) * nranks);
            MPI_Allgather(&mine, 1, MPI_AINT, w->addrs, 1, MPI_AINT, MPI_COMM_WORLD);
            break;
        }
        default: break;
    }
}

static MPI_Aint disp(enum flavor f, window_t* w, int target, int index) {
    if (f == DYNAMIC) {
        return w->addrs[target] + (MPI_Aint)(index * sizeof(int));
    }
    return index;
}

static void free_window(enum flavor f, window_t* w) {
    if (f == DYNAMIC) {
        MPI_Win_detach(w->win, w->dyn_mem);
    }
    MPI_Win_free(&w->win);
    if (f == CREATE || f == DYNAMIC) {
        free(w->base);
    }
    free(w->addrs);
}

static void fill_own(window_t* w, int tag) {
    for (int i = 0; i < N; ++i) {
        w->base[i] = value(rank, i) + tag;
    }
}

enum sync { FENCE, PSCW, LOCK, LOCK_ALL, NSYNCS };
static const char* sync_name[] = {"fence", "pscw", "lock", "lock_all"};

static MPI_Group world_group;

/* Open an epoch on the window for access to `target` (and exposure to `origin`). */
static void open_epoch(enum sync s, window_t* w, int target, int origin) {
    MPI_Group g;
    switch (s) {
        case FENCE: MPI_Win_fence(0, w->win); break;
        case PSCW:
            MPI_Group_incl(world_group, 1, &origin, &g);
            MPI_Win_post(g, 0, w->win);
            MPI_Group_free(&g);
            MPI_Group_incl(world_group, 1, &target, &g);
            MPI_Win_start(g, 0, w->win);
            MPI_Group_free(&g);
            break;
        case LOCK: MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win); break;
        case LOCK_ALL: MPI_Win_lock_all(0, w->win); break;
        default: break;
    }
}

static void close_epoch(enum sync s, window_t* w, int target) {
    switch (s) {
        case FENCE: MPI_Win_fence(0, w->win); break;
        case PSCW:
            MPI_Win_complete(w->win);
            MPI_Win_wait(w->win);
            break;
        case LOCK: MPI_Win_unlock(target, w->win); break;
        case LOCK_ALL: MPI_Win_unlock_all(w->win); break;
        default: break;
    }
    /* passive epochs: the target's memory is checked after everybody finished */
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Ring: each rank puts its values into the next rank, then gets them back from the previous;
 * with a vector datatype on the target side for odd rounds. */
static void test_put_get(enum flavor f, enum sync s) {
    window_t w;
    make_window(f, &w);
    int next = (rank + 1) % nranks;
    int prev = (rank + nranks - 1) % nranks;
    int src[N];
    int dst[N];
    MPI_Datatype every_other;
    MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);

    /* contiguous put */
    fill_own(&w, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; ++i) {
        src[i] = value(rank, i) + 7;
    }
    open_epoch(s, &w, next, prev);
    MPI_Put(src, N, MPI_INT, next, disp(f, &w, next, 0), N, MPI_INT, w.win);
    close_epoch(s, &w, next);
    for (int i = 0; i < N; ++i) {
        CHECK(w.base[i] == value(prev, i) + 7, "%s/%s put: [%d] = %d, want %d", flavor_name[f],
              sync_name[s], i, w.base[i], value(prev, i) + 7);
    }

    /* strided put: N/2 ints to every other element */
    fill_own(&w, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    open_epoch(s, &w, next, prev);
    MPI_Put(src, N / 2, MPI_INT, next, disp(f, &w, next, 0), 1, every_other, w.win);
    close_epoch(s, &w, next);
    for (int i = 0; i < N; ++i) {
        int want = (i % 2 == 0) ? value(prev, i / 2) + 7 : value(rank, i);
        CHECK(w.base[i] == want, "%s/%s vector put: [%d] = %d, want %d", flavor_name[f],
              sync_name[s], i, w.base[i], want);
    }

    /* contiguous and strided get */
    fill_own(&w, 3);
    MPI_Barrier(MPI_COMM_WORLD);
    memset(dst, 0, sizeof(dst));
    open_epoch(s, &w, prev, next);
    MPI_Get(dst, N, MPI_INT, prev, disp(f, &w, prev, 0), N, MPI_INT, w.win);
    close_epoch(s, &w, prev);
    for (int i = 0; i < N; ++i) {
        CHECK(dst[i] == value(prev, i) + 3, "%s/%s get: [%d] = %d, want %d", flavor_name[f],
              sync_name[s], i, dst[i], value(prev, i) + 3);
    }
    memset(dst, 0, sizeof(dst));
    open_epoch(s, &w, prev, next);
    MPI_Get(dst, 1, every_other, prev, disp(f, &w, prev, 1), N / 2, MPI_INT, w.win);
    close_epoch(s, &w, prev);
    for (int i = 0; i < N; ++i) {
        int want = (i % 2 == 0) ? value(prev, 1 + i / 2) + 3 : 0;
        if (i / 2 + 1 >= N) {
            want = 0;
        }
        CHECK(dst[i] == want, "%s/%s vector get: [%d] = %d, want %d", flavor_name[f], sync_name[s],
              i, dst[i], want);
    }

    /* rput / rget inside lock_all with flush */
    if (s == LOCK_ALL) {
        MPI_Request r[2];
        fill_own(&w, 0);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, w.win);
        MPI_Rput(src, N, MPI_INT, next, disp(f, &w, next, 0), N, MPI_INT, w.win, &r[0]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Win_flush(next, w.win);
        MPI_Barrier(MPI_COMM_WORLD);
        memset(dst, 0, sizeof(dst));
        MPI_Rget(dst, N, MPI_INT, prev, disp(f, &w, prev, 0), N, MPI_INT, w.win, &r[1]);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        MPI_Win_unlock_all(w.win);
        for (int i = 0; i < N; ++i) {
            /* prev's window holds what prev-1 put: value(prev-1, i) + 7 */
            int pp = (prev + nranks - 1) % nranks;
            CHECK(dst[i] == value(pp, i) + 7, "%s rput/rget: [%d] = %d, want %d", flavor_name[f], i,
                  dst[i], value(pp, i) + 7);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Type_free(&every_other);
    free_window(f, &w);
}

/* Every rank increments a counter at rank 0 under an exclusive lock (get, +1, put): the
 * result is exact only if the lock excludes. */
static void test_lock_contention(enum flavor f) {
    enum { ROUNDS = 20 };
    window_t w;
    make_window(f, &w);
    fill_own(&w, 0);
    if (rank == 0) {
        w.base[0] = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < ROUNDS; ++k) {
        int v = -1;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win);
        MPI_Get(&v, 1, MPI_INT, 0, disp(f, &w, 0, 0), 1, MPI_INT, w.win);
        MPI_Win_flush(0, w.win);
        ++v;
        MPI_Put(&v, 1, MPI_INT, 0, disp(f, &w, 0, 0), 1, MPI_INT, w.win);
        MPI_Win_unlock(0, w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win);
        int v = w.base[0];
        MPI_Win_unlock(0, w.win);
        CHECK(v == ROUNDS * nranks, "%s lock contention: counter %d, want %d", flavor_name[f], v,
              ROUNDS * nranks);
    }
    free_window(f, &w);
}

static void test_errors(enum flavor f) {
    window_t w;
    make_window(f, &w);
    MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN);
    fill_own(&w, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    int next = (rank + 1) % nranks;
    int src[N + 1];
    for (int i = 0; i <= N; ++i) {
        src[i] = -1;
    }
    MPI_Win_lock_all(0, w.win);
    int rc = MPI_Put(src, N + 1, MPI_INT, next, disp(f, &w, next, 0), N + 1, MPI_INT, w.win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "%s: put past the end gave class %d, want %d", flavor_name[f],
          cls, MPI_ERR_RMA_RANGE);
    rc = MPI_Get(src, 1, MPI_INT, next, disp(f, &w, next, -1), 1, MPI_INT, w.win);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE || cls == MPI_ERR_DISP, "%s: get before the start gave class %d",
          flavor_name[f], cls);
    rc = MPI_Put(src, 0, MPI_INT, next, disp(f, &w, next, N), 0, MPI_INT, w.win);
    CHECK(rc == MPI_SUCCESS, "%s: zero-count put failed (%d)", flavor_name[f], rc);
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; ++i) {
        CHECK(w.base[i] == value(rank, i), "%s: a refused put wrote [%d] = %d", flavor_name[f], i,
              w.base[i]);
    }
    free_window(f, &w);
}

static void test_zero_size(void) {
    MPI_Win win;
    int* base = NULL;
    int me = rank;
    MPI_Win_allocate(rank == 0 ? 0 : sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_fence(0, win);
    int rc = MPI_Put(&me, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "zero-size window: put gave class %d", cls);
    if (nranks > 1 && rank == 0) {
        MPI_Put(&me, 1, MPI_INT, 1, 0, 1, MPI_INT, win);
    }
    MPI_Win_fence(0, win);
    if (rank == 1) {
        CHECK(*base == 0, "zero-size window: rank 1 holds %d, want 0", *base);
    }
    MPI_Win_free(&win);
}

/* Windows with no memory anywhere: creation, an out-of-range access, free. */
static void test_all_empty(int shared_ok) {
    for (int f = 0; f < 3; ++f) {
        MPI_Win win;
        void* base = NULL;
        if (f == 0) {
            MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        } else if (f == 1) {
            MPI_Win_allocate(0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        } else if (shared_ok) {
            MPI_Win_allocate_shared(0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        } else {
            continue;
        }
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        int v = 1;
        int cls = -1;
        MPI_Win_lock_all(0, win);
        MPI_Error_class(MPI_Put(&v, 1, MPI_INT, (rank + 1) % nranks, 0, 1, MPI_INT, win), &cls);
        CHECK(cls == MPI_ERR_RMA_RANGE, "empty window %d: put gave class %d", f, cls);
        CHECK(MPI_Get(&v, 0, MPI_INT, (rank + 1) % nranks, 0, 0, MPI_INT, win) == MPI_SUCCESS,
              "empty window %d: zero-count get failed", f);
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
    }
}

static void test_shared_query(void) {
    MPI_Win win;
    int* base = NULL;
    MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                            &win);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < N; ++i) {
        base[i] = value(rank, i);
    }
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    for (int r = 0; r < nranks; ++r) {
        MPI_Aint size = 0;
        int du = 0;
        int* p = NULL;
        MPI_Win_shared_query(win, r, &size, &du, &p);
        CHECK(size == N * (MPI_Aint)sizeof(int) && du == (int)sizeof(int),
              "shared_query(%d): size %ld unit %d", r, (long)size, du);
        for (int i = 0; i < N && p != NULL; ++i) {
            CHECK(p[i] == value(r, i), "shared_query(%d)[%d] = %d", r, i, p[i]);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    /* Over a transport between hosts (SWY_TLS=tcp,self) there is no shared memory. */
    const int shared_ok = getenv("RMA_NO_SHARED") == NULL;
    for (int f = 0; f < NFLAVORS; ++f) {
        if (f == SHARED && !shared_ok) {
            continue;
        }
        for (int s = 0; s < NSYNCS; ++s) {
            test_put_get((enum flavor)f, (enum sync)s);
        }
        test_lock_contention((enum flavor)f);
        test_errors((enum flavor)f);
    }
    test_zero_size();
    test_all_empty(shared_ok);
    if (shared_ok) {
        test_shared_query();
    }
    MPI_Group_free(&world_group);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(total == 0 ? "rma: all checks passed\n" : "rma: %d checks failed\n", total);
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
