/* One window flavour (argv[1]: create, allocate, shared or dynamic) through every
 * synchronisation mode x every RMA operation x sizes across Switchyard's thresholds.
 *
 * In each round (one mode, one size) every rank is an origin to its right neighbour and a
 * target of its left one, and issues every operation at once in one epoch, each on its own
 * region of the target's window: put, get, accumulate, get_accumulate (n longs), fetch_and_op
 * (one), compare_and_swap (two: one that swaps, one whose compare fails), and in passive
 * modes rput, rget, raccumulate and rget_accumulate. The regions rotate from round to round
 * and the n longs sit at the start of a region or end at its end, so every operation also
 * ends exactly at the end of the window once. Afterwards the whole window of every rank is
 * compared element by element with what it must hold (a shadow copy kept beside it), fetched
 * results are compared with the target's old values, and result buffers must be untouched
 * past what was fetched.
 *
 * Modes: fence, post/start/complete/wait, lock shared/exclusive, lock_all with flush /
 * flush_local / flush_all / flush_local_all, and lock_all with MPI_Win_sync (the window
 * initialised by plain stores that only MPI_Win_sync publishes). After a remote flush the
 * target checks its memory while the epoch is still open (unified model); after a local
 * flush the origin scribbles over its source buffers, which must no longer matter.
 *
 * RMA_TRACE=1 makes rank 0 name each round before running it; RMA_FILTER=<text> runs only
 * the modes whose name contains it.
 */
#include "rmatest.h"

typedef enum {
    OP_PUT,
    OP_GET,
    OP_ACC,
    OP_GET_ACC,
    OP_FOP,
    OP_CAS,
    OP_RPUT,
    OP_RGET,
    OP_RACC,
    OP_RGET_ACC,
    OP_N
} op_kind;

static const char* const op_names[OP_N] = {
    "put", "get",  "accumulate", "get_accumulate", "fop",
    "cas", "rput", "rget",       "raccumulate",    "rget_accumulate"};

static int op_request_based(op_kind k) { return k >= OP_RPUT; }
static int op_fetches(op_kind k) {
    return k != OP_PUT && k != OP_ACC && k != OP_RPUT && k != OP_RACC;
}
static int op_writes(op_kind k) { return k != OP_GET && k != OP_RGET; }
static int op_adds(op_kind k) {
    return k == OP_ACC || k == OP_GET_ACC || k == OP_FOP || k == OP_RACC || k == OP_RGET_ACC;
}
/* Longs an operation touches in a round of size n: fop one, cas two. */
static size_t op_len(op_kind k, size_t n) { return k == OP_FOP ? 1 : k == OP_CAS ? 2 : n; }

/* 8 B, just under 8 KiB, just over 64 KiB, 1 MiB. The 1 MiB rounds dominate the run time,
 * so only three modes have them: fence, lock exclusive and lock_all + flush_all. */
static const size_t kSizes[] = {1, 1017, 8193, 131072};
static int size_runs_in(int s, rt_mode m) {
    return s < 3 || m == RT_FENCE || m == RT_LOCK_EXCLUSIVE || m == RT_LOCK_ALL_FLUSH_ALL;
}
enum { kNSizes = 4, kRegion = 131072 + 8, kWinElems = OP_N * kRegion, kResGuard = 8 };
static const long kSentinel = -7777777;

typedef struct {
    rt_win w;
    int me, np, left, right;
    long* win;    /* this rank's window memory as longs */
    long* shadow; /* what the window must hold */
    long* src[OP_N];
    long* res[OP_N]; /* fetched values + kResGuard sentinels */
    long cmp[2];
    size_t at[OP_N]; /* where each operation's longs start in the window this round */
    MPI_Request rq[OP_N];
    int trace;          /* RMA_TRACE set: rank 0 names each round before running it */
    const char* filter; /* RMA_FILTER: only modes whose name contains it run */
    double t0;          /* MPI_Wtime at the start, for the trace */
} ctx;

static long init_value(size_t i, int r, unsigned round) {
    return rt_value(i, round * 64u + (unsigned)r);
}
/* Operation k's source values; seeds differ per op so a value landing in another operation's
 * region is caught. */
static long src_value(op_kind k, size_t i, int r, unsigned round) {
    return rt_value(i, round * 64u + 32u + (unsigned)k * 8u + (unsigned)r);
}

static int op_active(op_kind k, rt_mode m) { return rt_mode_passive(m) || !op_request_based(k); }

/* Region of operation k in round `round` (they rotate), and where in it the longs go: at
 * element 3, or ending at the region's end. */
static size_t op_offset(op_kind k, size_t len, unsigned round) {
    const size_t region = ((size_t)k + round) % OP_N;
    return region * kRegion + (round / OP_N % 2 ? kRegion - len : 3);
}

/* Sets the elements a round touches (plus two on each side) to fresh values, in the window
 * and in its shadow, so a stale result from an earlier round cannot pass. */
static void init_round(ctx* c, rt_mode m, size_t n, unsigned round) {
    for (int k = 0; k < OP_N; ++k) {
        if (!op_active((op_kind)k, m)) continue;
        const size_t x = c->at[k], len = op_len((op_kind)k, n);
        const size_t lo = x >= 2 ? x - 2 : 0,
                     hi = x + len + 2 < kWinElems ? x + len + 2 : kWinElems;
        for (size_t i = lo; i < hi; ++i)
            c->win[i] = c->shadow[i] = init_value(i, c->me, round);
    }
}

/* Applies to the shadow what the left neighbour's operations do to this rank's window. */
static void expect_target(ctx* c, rt_mode m, size_t n, unsigned round) {
    for (int kk = 0; kk < OP_N; ++kk) {
        const op_kind k = (op_kind)kk;
        if (!op_active(k, m) || !op_writes(k)) continue;
        const size_t x = c->at[k];
        if (k == OP_CAS) {
            c->shadow[x] = src_value(k, 0, c->left, round); /* element x+1's compare fails */
            continue;
        }
        for (size_t i = 0; i < op_len(k, n); ++i) {
            const long v = src_value(k, i, c->left, round);
            c->shadow[x + i] = op_adds(k) ? c->shadow[x + i] + v : v;
        }
    }
}

static const char* region_owner(ctx* c, size_t i, rt_mode m) {
    for (int k = 0; k < OP_N; ++k)
        if (op_active((op_kind)k, m) && i / kRegion == c->at[k] / kRegion) return op_names[k];
    return "no operation";
}

static void check_window(ctx* c, const char* when, rt_mode m, size_t n) {
    if (memcmp(c->win, c->shadow, sizeof(long) * kWinElems) == 0 && rt_guards_intact(&c->w)) return;
    for (size_t i = 0; i < kWinElems; ++i)
        MT_CHECK(c->win[i] == c->shadow[i],
                 "%s/%s n=%zu (%s): window element %zu (region of %s, +%zu) is %ld, want %ld",
                 rt_flavour_names[c->w.flavour], rt_mode_names[m], n, when, i,
                 region_owner(c, i, m), i % kRegion, c->win[i], c->shadow[i]);
    MT_FAIL("%s/%s n=%zu: guard memory around the window was written",
            rt_flavour_names[c->w.flavour], rt_mode_names[m], n);
}

/* Results fetched from the right neighbour: its old values, nothing past them. */
static void check_results(ctx* c, rt_mode m, op_kind k, size_t n, unsigned round) {
    if (!op_active(k, m) || !op_fetches(k)) return;
    const size_t got = op_len(k, n);
    for (size_t i = 0; i < got + kResGuard; ++i) {
        const long want = i < got ? init_value(c->at[k] + i, c->right, round) : kSentinel;
        MT_CHECK(c->res[k][i] == want, "%s/%s/%s n=%zu: result %zu is %ld, want %ld",
                 rt_flavour_names[c->w.flavour], rt_mode_names[m], op_names[k], n, i, c->res[k][i],
                 want);
    }
}

static void check_all_results(ctx* c, rt_mode m, size_t n, unsigned round, int requests_only) {
    for (int k = 0; k < OP_N; ++k)
        if (!requests_only || op_request_based((op_kind)k))
            check_results(c, m, (op_kind)k, n, round);
}

/* Issues operation k; a request-based one leaves its request in c->rq[k]. */
static void issue(ctx* c, op_kind k, size_t n) {
    const int t = c->right, cnt = (int)n;
    const MPI_Aint d = rt_disp(&c->w, t, c->at[k] * sizeof(long));
    MPI_Win win = c->w.win;
    long *src = c->src[k], *res = c->res[k];
    switch (k) {
        case OP_PUT: MT_MPI(MPI_Put(src, cnt, MPI_LONG, t, d, cnt, MPI_LONG, win)); break;
        case OP_GET: MT_MPI(MPI_Get(res, cnt, MPI_LONG, t, d, cnt, MPI_LONG, win)); break;
        case OP_ACC:
            MT_MPI(MPI_Accumulate(src, cnt, MPI_LONG, t, d, cnt, MPI_LONG, MPI_SUM, win));
            break;
        case OP_GET_ACC:
            MT_MPI(MPI_Get_accumulate(src, cnt, MPI_LONG, res, cnt, MPI_LONG, t, d, cnt, MPI_LONG,
                                      MPI_SUM, win));
            break;
        case OP_FOP: MT_MPI(MPI_Fetch_and_op(src, res, MPI_LONG, t, d, MPI_SUM, win)); break;
        case OP_CAS: {
            const MPI_Aint d1 = rt_disp(&c->w, t, (c->at[k] + 1) * sizeof(long));
            MT_MPI(MPI_Compare_and_swap(src, &c->cmp[0], res, MPI_LONG, t, d, win));
            MT_MPI(MPI_Compare_and_swap(src + 1, &c->cmp[1], res + 1, MPI_LONG, t, d1, win));
            break;
        }
        case OP_RPUT:
            MT_MPI(MPI_Rput(src, cnt, MPI_LONG, t, d, cnt, MPI_LONG, win, &c->rq[k]));
            break;
        case OP_RGET:
            MT_MPI(MPI_Rget(res, cnt, MPI_LONG, t, d, cnt, MPI_LONG, win, &c->rq[k]));
            break;
        case OP_RACC:
            MT_MPI(
                MPI_Raccumulate(src, cnt, MPI_LONG, t, d, cnt, MPI_LONG, MPI_SUM, win, &c->rq[k]));
            break;
        case OP_RGET_ACC:
            MT_MPI(MPI_Rget_accumulate(src, cnt, MPI_LONG, res, cnt, MPI_LONG, t, d, cnt, MPI_LONG,
                                       MPI_SUM, win, &c->rq[k]));
            break;
        default: MT_FAIL("bad op %d", (int)k);
    }
}

/* Issues every operation of the mode, then waits for the request-based ones (which only
 * completes them locally: their fetched values are there, their writes may not be). */
static void issue_all(ctx* c, rt_mode m, size_t n) {
    for (int k = 0; k < OP_N; ++k) {
        c->rq[k] = MPI_REQUEST_NULL;
        if (op_active((op_kind)k, m)) issue(c, (op_kind)k, n);
    }
    MT_MPI(MPI_Waitall(OP_N, c->rq, MPI_STATUSES_IGNORE));
}

static void flush_for(ctx* c, rt_mode m) {
    switch (m) {
        case RT_LOCK_ALL_FLUSH:
        case RT_SYNC: MT_MPI(MPI_Win_flush(c->right, c->w.win)); break;
        case RT_LOCK_ALL_FLUSH_LOCAL: MT_MPI(MPI_Win_flush_local(c->right, c->w.win)); break;
        case RT_LOCK_ALL_FLUSH_ALL: MT_MPI(MPI_Win_flush_all(c->w.win)); break;
        case RT_LOCK_ALL_FLUSH_LOCAL_ALL: MT_MPI(MPI_Win_flush_local_all(c->w.win)); break;
        default: break;
    }
}

static void run_round(ctx* c, rt_mode m, size_t n, unsigned round) {
    if (c->trace && c->me == 0)
        fprintf(stderr, "%.3f s: round %u: %s/%s n=%zu\n", MPI_Wtime() - c->t0, round,
                rt_flavour_names[c->w.flavour], rt_mode_names[m], n);
    for (int kk = 0; kk < OP_N; ++kk) {
        const op_kind k = (op_kind)kk;
        const size_t len = op_len(k, n);
        c->at[k] = op_offset(k, len, round);
        for (size_t i = 0; i < len; ++i)
            c->src[k][i] = src_value(k, i, c->me, round);
        for (size_t i = 0; i < len + kResGuard; ++i)
            c->res[k][i] = kSentinel;
    }
    c->cmp[0] = init_value(c->at[OP_CAS], c->right, round);         /* matches: swaps */
    c->cmp[1] = init_value(c->at[OP_CAS] + 1, c->right, round) + 1; /* does not */
    MPI_Win win = c->w.win;

    if (m == RT_SYNC) {
        /* Plain stores inside the epoch, published by MPI_Win_sync before anyone looks. The
         * barrier first: a neighbour may still hold its exclusive self-lock to check the last
         * round, which our shared lock on it would wait for while it waits for us. */
        MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        MT_MPI(MPI_Win_lock_all(0, win));
        init_round(c, m, n, round);
        MT_MPI(MPI_Win_sync(win));
    } else {
        rt_local_begin(&c->w);
        init_round(c, m, n, round);
        rt_local_end(&c->w);
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    expect_target(c, m, n, round);

    switch (m) {
        case RT_FENCE:
            MT_MPI(MPI_Win_fence(0, win));
            issue_all(c, m, n);
            MT_MPI(MPI_Win_fence(0, win));
            break;
        case RT_PSCW: {
            MPI_Group to_left = rt_group_of(&c->left, 1), to_right = rt_group_of(&c->right, 1);
            MT_MPI(MPI_Win_post(to_left, 0, win));
            MT_MPI(MPI_Win_start(to_right, 0, win));
            issue_all(c, m, n);
            MT_MPI(MPI_Win_complete(win));
            MT_MPI(MPI_Win_wait(win));
            MPI_Group_free(&to_left);
            MPI_Group_free(&to_right);
            break;
        }
        case RT_LOCK_SHARED:
        case RT_LOCK_EXCLUSIVE:
            MT_MPI(MPI_Win_lock(m == RT_LOCK_SHARED ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE,
                                c->right, 0, win));
            issue_all(c, m, n);
            check_all_results(c, m, n, round, 1); /* MPI_Wait sufficed for these */
            MT_MPI(MPI_Win_unlock(c->right, win));
            break;
        default: { /* lock_all + a flush, or lock_all + sync */
            if (m != RT_SYNC) MT_MPI(MPI_Win_lock_all(0, win));
            issue_all(c, m, n);
            flush_for(c, m);
            check_all_results(c, m, n, round, 0); /* a local flush completes a get, too */
            const int remote = m != RT_LOCK_ALL_FLUSH_LOCAL && m != RT_LOCK_ALL_FLUSH_LOCAL_ALL;
            if (!remote) {
                for (int k = 0; k < OP_N; ++k) /* the origin buffers are ours again */
                    for (size_t i = 0; i < op_len((op_kind)k, n); ++i)
                        c->src[k][i] = kSentinel;
            } else if (c->w.unified) {
                /* Remote completion: visible at the target before anyone closes the epoch. */
                MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
                MT_MPI(MPI_Win_sync(win));
                check_window(c, "after flush, epoch open", m, n);
                MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
            }
            MT_MPI(MPI_Win_unlock_all(win));
            break;
        }
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    rt_local_begin(&c->w);
    check_window(c, "after the epoch", m, n);
    rt_local_end(&c->w);
    check_all_results(c, m, n, round, 0);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    if (argc < 2) MT_FAIL("usage: rma_matrix create|allocate|shared|dynamic");
    ctx c;
    memset(&c, 0, sizeof c);
    c.me = mt_rank();
    c.np = mt_size();
    c.right = (c.me + 1) % c.np;
    c.left = (c.me + c.np - 1) % c.np;
    const rt_flavour f = rt_flavour_parse(argv[1]);
    c.trace = getenv("RMA_TRACE") != NULL;
    c.filter = getenv("RMA_FILTER");
    c.t0 = MPI_Wtime();
    rt_win_open(&c.w, f, sizeof(long) * kWinElems, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD);
    c.win = (long*)c.w.base;
    c.shadow = (long*)mt_malloc(sizeof(long) * kWinElems);
    for (int k = 0; k < OP_N; ++k) {
        c.src[k] = (long*)mt_malloc(sizeof(long) * kSizes[kNSizes - 1]);
        c.res[k] = (long*)mt_malloc(sizeof(long) * (kSizes[kNSizes - 1] + kResGuard));
    }
    rt_local_begin(&c.w);
    for (size_t i = 0; i < kWinElems; ++i)
        c.win[i] = c.shadow[i] = init_value(i, c.me, 0);
    rt_local_end(&c.w);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    unsigned round = 1;
    for (int m = 0; m < RT_NMODES; ++m) {
        if (c.filter && !strstr(rt_mode_names[m], c.filter)) continue;
        for (int s = 0; s < kNSizes; ++s)
            if (size_runs_in(s, (rt_mode)m)) run_round(&c, (rt_mode)m, kSizes[s], round++);
    }

    rt_win_close(&c.w);
    free(c.shadow);
    for (int k = 0; k < OP_N; ++k) {
        free(c.src[k]);
        free(c.res[k]);
    }
    char name[64];
    snprintf(name, sizeof name, "rma_matrix %s (%u rounds)", rt_flavour_names[f], round - 1);
    mt_pass(name);
    MPI_Finalize();
    return 0;
}
