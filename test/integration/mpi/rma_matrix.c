/* One window flavour (argv[1]: create, allocate, shared or dynamic) through every
 * synchronisation mode x every RMA operation x sizes across Switchyard's thresholds.
 *
 * In each round every rank is an origin to its right neighbour and a target of its left one,
 * with one operation of n longs at element X of the target's window (X at the start of the
 * window or ending exactly at its end). Afterwards the whole window of every rank is compared
 * element by element with what it must hold (a shadow copy kept beside it), fetched results
 * are compared with the target's old values, and result buffers must be untouched past n.
 *
 * Modes: fence, post/start/complete/wait, lock shared/exclusive, lock_all with flush /
 * flush_local / flush_all / flush_local_all, and lock_all with MPI_Win_sync (the window
 * initialised by plain stores that only MPI_Win_sync publishes). After a remote flush the
 * target checks its memory while the epoch is still open (unified model); after a local
 * flush the origin scribbles over its source buffer, which must no longer matter.
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

static const char* const op_names[OP_N] = {"put",  "get",  "accumulate", "get_accumulate",
                                           "fop",  "cas",  "rput",       "rget",
                                           "raccumulate", "rget_accumulate"};

static int op_request_based(op_kind k) { return k >= OP_RPUT; }
static int op_single(op_kind k) { return k == OP_FOP || k == OP_CAS; }
static int op_fetches(op_kind k) { return k != OP_PUT && k != OP_ACC && k != OP_RPUT && k != OP_RACC; }
static int op_writes(op_kind k) { return k != OP_GET && k != OP_RGET; }
static int op_adds(op_kind k) {
    return k == OP_ACC || k == OP_GET_ACC || k == OP_FOP || k == OP_RACC || k == OP_RGET_ACC;
}

/* 8 B, just under 8 KiB, just over 64 KiB, 1 MiB. */
static const size_t kSizes[] = {1, 1017, 8193, 131072};
enum { kNSizes = 4, kWinElems = 131072 + 8, kResGuard = 8 };
static const long kSentinel = -7777777;

typedef struct {
    rt_win w;
    int me, np, left, right;
    long* win;    /* this rank's window memory as longs */
    long* shadow; /* what the window must hold */
    long* src;
    long* res;    /* n results + kResGuard sentinels */
    long cmp[2];
    MPI_Group to_left, to_right;
    int trace;          /* RMA_TRACE set: rank 0 names each round before running it */
    const char* filter; /* RMA_FILTER: only rounds whose "mode/op" contains it run */
} ctx;

/* Where round `round` puts its n elements: at element 3, or ending at the window's end. */
static size_t round_offset(unsigned round, size_t n) {
    return round % 2 ? (size_t)kWinElems - n : 3;
}

/* The value element i of rank r's window gets at the start of round `round`. */
static long init_value(size_t i, int r, unsigned round) {
    return rt_value(i, round * 64u + (unsigned)r);
}
static long src_value(size_t i, int r, unsigned round) {
    return rt_value(i, round * 64u + 32u + (unsigned)r);
}

/* Sets the elements a round touches (plus two on each side) to fresh values, in the window
 * and in its shadow, so a stale result from an earlier round cannot pass. */
static void init_round(ctx* c, size_t x, size_t n, unsigned round) {
    size_t lo = x >= 2 ? x - 2 : 0, hi = x + n + 2 < kWinElems ? x + n + 2 : kWinElems;
    for (size_t i = lo; i < hi; ++i)
        c->win[i] = c->shadow[i] = init_value(i, c->me, round);
}

/* Applies to the shadow what the left neighbour's operation does to this rank's window. */
static void expect_target(ctx* c, op_kind k, size_t x, size_t n, unsigned round) {
    if (!op_writes(k)) return;
    if (k == OP_CAS) {
        c->shadow[x] = src_value(0, c->left, round); /* element x+1's compare fails */
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        const long v = src_value(i, c->left, round);
        c->shadow[x + i] = op_adds(k) ? c->shadow[x + i] + v : v;
    }
}

static void check_window(ctx* c, const char* when, rt_mode m, op_kind k, size_t n) {
    if (memcmp(c->win, c->shadow, sizeof(long) * kWinElems) == 0 && rt_guards_intact(&c->w))
        return;
    for (size_t i = 0; i < kWinElems; ++i)
        MT_CHECK(c->win[i] == c->shadow[i],
                 "%s/%s/%s n=%zu (%s): window element %zu is %ld, want %ld",
                 rt_flavour_names[c->w.flavour], rt_mode_names[m], op_names[k], n, when, i,
                 c->win[i], c->shadow[i]);
    MT_FAIL("%s/%s/%s n=%zu: guard memory around the window was written",
            rt_flavour_names[c->w.flavour], rt_mode_names[m], op_names[k], n);
}

/* Results fetched from the right neighbour: its old values at x, nothing past n. */
static void check_results(ctx* c, rt_mode m, op_kind k, size_t x, size_t n, unsigned round) {
    const size_t got = k == OP_CAS ? 2 : op_fetches(k) ? n : 0;
    for (size_t i = 0; i < got + kResGuard; ++i) {
        const long want = i < got ? init_value(x + i, c->right, round) : kSentinel;
        MT_CHECK(c->res[i] == want, "%s/%s/%s n=%zu: result %zu is %ld, want %ld",
                 rt_flavour_names[c->w.flavour], rt_mode_names[m], op_names[k], n, i, c->res[i],
                 want);
    }
}

/* Issues the operation; a request-based one is waited for (completing it locally). */
static void issue(ctx* c, op_kind k, size_t x, size_t n) {
    const int t = c->right, cnt = (int)n;
    const MPI_Aint d = rt_disp(&c->w, t, x * sizeof(long));
    MPI_Win win = c->w.win;
    MPI_Request rq = MPI_REQUEST_NULL;
    switch (k) {
    case OP_PUT: MT_MPI(MPI_Put(c->src, cnt, MPI_LONG, t, d, cnt, MPI_LONG, win)); break;
    case OP_GET: MT_MPI(MPI_Get(c->res, cnt, MPI_LONG, t, d, cnt, MPI_LONG, win)); break;
    case OP_ACC:
        MT_MPI(MPI_Accumulate(c->src, cnt, MPI_LONG, t, d, cnt, MPI_LONG, MPI_SUM, win));
        break;
    case OP_GET_ACC:
        MT_MPI(MPI_Get_accumulate(c->src, cnt, MPI_LONG, c->res, cnt, MPI_LONG, t, d, cnt,
                                  MPI_LONG, MPI_SUM, win));
        break;
    case OP_FOP: MT_MPI(MPI_Fetch_and_op(c->src, c->res, MPI_LONG, t, d, MPI_SUM, win)); break;
    case OP_CAS: {
        const MPI_Aint d1 = rt_disp(&c->w, t, (x + 1) * sizeof(long));
        MT_MPI(MPI_Compare_and_swap(c->src, &c->cmp[0], c->res, MPI_LONG, t, d, win));
        MT_MPI(MPI_Compare_and_swap(c->src + 1, &c->cmp[1], c->res + 1, MPI_LONG, t, d1, win));
        break;
    }
    case OP_RPUT: MT_MPI(MPI_Rput(c->src, cnt, MPI_LONG, t, d, cnt, MPI_LONG, win, &rq)); break;
    case OP_RGET: MT_MPI(MPI_Rget(c->res, cnt, MPI_LONG, t, d, cnt, MPI_LONG, win, &rq)); break;
    case OP_RACC:
        MT_MPI(MPI_Raccumulate(c->src, cnt, MPI_LONG, t, d, cnt, MPI_LONG, MPI_SUM, win, &rq));
        break;
    case OP_RGET_ACC:
        MT_MPI(MPI_Rget_accumulate(c->src, cnt, MPI_LONG, c->res, cnt, MPI_LONG, t, d, cnt,
                                   MPI_LONG, MPI_SUM, win, &rq));
        break;
    default: MT_FAIL("bad op %d", (int)k);
    }
    if (rq != MPI_REQUEST_NULL) MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
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

static void run_round(ctx* c, rt_mode m, op_kind k, size_t n, unsigned round) {
    if (c->trace && c->me == 0)
        fprintf(stderr, "round %u: %s/%s/%s n=%zu\n", round, rt_flavour_names[c->w.flavour],
                rt_mode_names[m], op_names[k], n);
    const size_t touched = op_single(k) ? 2 : n; /* cas uses two elements */
    const size_t x = round_offset(round, touched);
    for (size_t i = 0; i < n || i < 2; ++i)
        c->src[i] = src_value(i, c->me, round);
    for (size_t i = 0; i < n + kResGuard || i < 2 + kResGuard; ++i)
        c->res[i] = kSentinel;
    c->cmp[0] = init_value(x, c->right, round);         /* matches: the swap happens */
    c->cmp[1] = init_value(x + 1, c->right, round) + 1; /* does not: nothing changes */
    MPI_Win win = c->w.win;

    if (m == RT_SYNC) {
        /* Plain stores inside the epoch, published by MPI_Win_sync before anyone looks. The
         * barrier first: a neighbour may still hold its exclusive self-lock to check the last
         * round, which our shared lock on it would wait for while it waits for us. */
        MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        MT_MPI(MPI_Win_lock_all(0, win));
        init_round(c, x, touched, round);
        MT_MPI(MPI_Win_sync(win));
    } else {
        rt_local_begin(&c->w);
        init_round(c, x, touched, round);
        rt_local_end(&c->w);
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    expect_target(c, k, x, n, round);

    switch (m) {
    case RT_FENCE:
        MT_MPI(MPI_Win_fence(0, win));
        issue(c, k, x, n);
        MT_MPI(MPI_Win_fence(0, win));
        break;
    case RT_PSCW:
        MT_MPI(MPI_Win_post(c->to_left, 0, win));
        MT_MPI(MPI_Win_start(c->to_right, 0, win));
        issue(c, k, x, n);
        MT_MPI(MPI_Win_complete(win));
        MT_MPI(MPI_Win_wait(win));
        break;
    case RT_LOCK_SHARED:
    case RT_LOCK_EXCLUSIVE:
        MT_MPI(MPI_Win_lock(m == RT_LOCK_SHARED ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE,
                            c->right, 0, win));
        issue(c, k, x, n);
        if (op_request_based(k)) check_results(c, m, k, x, n, round); /* MPI_Wait sufficed */
        MT_MPI(MPI_Win_unlock(c->right, win));
        break;
    default: { /* lock_all + a flush, or lock_all + sync */
        if (m != RT_SYNC) MT_MPI(MPI_Win_lock_all(0, win));
        issue(c, k, x, n);
        flush_for(c, m);
        check_results(c, m, k, x, n, round); /* a local flush completes a get, too */
        const int remote = m != RT_LOCK_ALL_FLUSH_LOCAL && m != RT_LOCK_ALL_FLUSH_LOCAL_ALL;
        if (!remote) {
            for (size_t i = 0; i < n || i < 2; ++i)
                c->src[i] = kSentinel; /* the origin buffer is ours again */
        } else if (c->w.unified) {
            /* Remote completion: visible at the target before anyone closes the epoch. */
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
            MT_MPI(MPI_Win_sync(win));
            check_window(c, "after flush, epoch open", m, k, n);
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
        MT_MPI(MPI_Win_unlock_all(win));
        break;
    }
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    rt_local_begin(&c->w);
    check_window(c, "after the epoch", m, k, n);
    rt_local_end(&c->w);
    check_results(c, m, k, x, n, round);
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
    rt_win_open(&c.w, f, sizeof(long) * kWinElems, sizeof(long), MPI_INFO_NULL,
                MPI_COMM_WORLD);
    c.win = (long*)c.w.base;
    c.shadow = (long*)mt_malloc(sizeof(long) * kWinElems);
    c.src = (long*)mt_malloc(sizeof(long) * kSizes[kNSizes - 1]);
    c.res = (long*)mt_malloc(sizeof(long) * (kSizes[kNSizes - 1] + kResGuard));
    c.to_left = rt_group_of(&c.left, 1);
    c.to_right = rt_group_of(&c.right, 1);
    rt_local_begin(&c.w);
    for (size_t i = 0; i < kWinElems; ++i)
        c.win[i] = c.shadow[i] = init_value(i, c.me, 0);
    rt_local_end(&c.w);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    unsigned round = 1;
    for (int m = 0; m < RT_NMODES; ++m)
        for (int k = 0; k < OP_N; ++k) {
            if (op_request_based((op_kind)k) && !rt_mode_passive((rt_mode)m)) continue;
            char what[64];
            snprintf(what, sizeof what, "%s/%s", rt_mode_names[m], op_names[k]);
            if (c.filter && !strstr(what, c.filter)) continue;
            for (int s = 0; s < kNSizes; ++s) {
                if (op_single((op_kind)k) && s > 0) break;
                run_round(&c, (rt_mode)m, (op_kind)k, op_single((op_kind)k) ? 1 : kSizes[s],
                          round++);
            }
        }

    MPI_Group_free(&c.to_left);
    MPI_Group_free(&c.to_right);
    rt_win_close(&c.w);
    free(c.shadow);
    free(c.src);
    free(c.res);
    char name[64];
    snprintf(name, sizeof name, "rma_matrix %s (%u rounds)", rt_flavour_names[f], round - 1);
    mt_pass(name);
    MPI_Finalize();
    return 0;
}
