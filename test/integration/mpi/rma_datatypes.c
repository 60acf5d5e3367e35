/* Derived datatypes on either side and on both sides of put, get, accumulate and
 * get_accumulate: vector, indexed, and indexed with its blocks in descending address order
 * (a typemap that goes backwards), against contiguous and against each other, at a few
 * elements, ~8 KiB and ~64 KiB of data, in every window flavour.
 *
 * Each round, every rank runs the four operations of every case at once, each on its own
 * region of its right neighbour's window. Every element of the target window is then
 * checked: typed positions hold the value they must, holes hold what they held. Fetched
 * results land in typed buffers whose holes must stay untouched too. The synchronisation
 * mode changes from round to round.
 */
#include "rmatest.h"

/* A datatype with the element positions (in longs) of its typemap, in typemap order. */
typedef struct {
    MPI_Datatype type; /* committed; MPI_LONG for a contiguous run */
    int count;         /* of `type` */
    size_t n;          /* longs in the typemap */
    size_t span;       /* longs from the first to one past the last */
    size_t* pos;
    const char* name;
} shape;

static void shape_contig(shape* s, size_t n) {
    s->type = MPI_LONG;
    s->count = (int)n;
    s->n = s->span = n;
    s->pos = (size_t*)mt_malloc(n * sizeof(size_t));
    for (size_t j = 0; j < n; ++j)
        s->pos[j] = j;
    s->name = "contiguous";
}

/* Blocks of 3 longs every 7. */
static void shape_vector(shape* s, size_t n) {
    const size_t blocks = n / 3;
    MT_MPI(MPI_Type_vector((int)blocks, 3, 7, MPI_LONG, &s->type));
    MT_MPI(MPI_Type_commit(&s->type));
    s->count = 1;
    s->n = blocks * 3;
    s->span = 7 * (blocks - 1) + 3;
    s->pos = (size_t*)mt_malloc(s->n * sizeof(size_t));
    for (size_t j = 0; j < s->n; ++j)
        s->pos[j] = j / 3 * 7 + j % 3;
    s->name = "vector";
}

/* Irregular blocks (1..5 longs, gaps 0..3) holding exactly n longs; with `descending` the
 * blocks are listed from the highest address down. */
static void shape_indexed(shape* s, size_t n, int descending) {
    size_t nblk = 0, filled = 0, at = 0;
    while (filled < n) {
        const size_t len = 1 + nblk % 5;
        filled += len < n - filled ? len : n - filled;
        ++nblk;
    }
    int* lens = (int*)mt_malloc(nblk * sizeof(int));
    int* displs = (int*)mt_malloc(nblk * sizeof(int));
    filled = 0;
    for (size_t b = 0; b < nblk; ++b) {
        size_t len = 1 + b % 5;
        if (len > n - filled) len = n - filled;
        const size_t slot = descending ? nblk - 1 - b : b;
        lens[slot] = (int)len;
        displs[slot] = (int)at;
        at += len + b % 4;
        filled += len;
    }
    MT_MPI(MPI_Type_indexed((int)nblk, lens, displs, MPI_LONG, &s->type));
    MT_MPI(MPI_Type_commit(&s->type));
    s->count = 1;
    s->n = n;
    s->span = (size_t)displs[descending ? 0 : nblk - 1] + (size_t)lens[descending ? 0 : nblk - 1];
    s->pos = (size_t*)mt_malloc(n * sizeof(size_t));
    size_t j = 0;
    for (size_t b = 0; b < nblk; ++b)
        for (int k = 0; k < lens[b]; ++k)
            s->pos[j++] = (size_t)displs[b] + (size_t)k;
    s->name = descending ? "indexed-descending" : "indexed";
    free(lens);
    free(displs);
}

static void shape_free(shape* s) {
    if (s->type != MPI_LONG) MPI_Type_free(&s->type);
    free(s->pos);
}

/* Origin and target shapes of a case, both of n longs. */
typedef enum {
    C_VEC_TO_CONTIG,
    C_CONTIG_TO_VEC,
    C_IDX_TO_VEC,
    C_VEC_TO_IDX,
    C_DESC_TO_IDX,
    C_N
} kind;

static void make_case(kind c, size_t n, shape* o, shape* t) {
    switch (c) {
        case C_VEC_TO_CONTIG:
            shape_vector(o, n);
            shape_contig(t, o->n);
            break;
        case C_CONTIG_TO_VEC:
            shape_vector(t, n);
            shape_contig(o, t->n);
            break;
        case C_IDX_TO_VEC:
            shape_vector(t, n);
            shape_indexed(o, t->n, 0);
            break;
        case C_VEC_TO_IDX:
            shape_vector(o, n);
            shape_indexed(t, o->n, 0);
            break;
        default:
            shape_indexed(o, n, 1);
            shape_indexed(t, n, 0);
            break;
    }
}

/* Regions of the target window, one per operation, each kRegion longs apart. */
enum { R_PUT, R_ACC, R_GET, R_GET_ACC, kNRegions };
/* Longs: a few, ~8 KiB and ~64 KiB of data (the contiguous 1 MiB case is rma_matrix's). */
static const size_t kSizes[] = {12, 1026, 8200};
enum { kRegion = 20000, kWinLongs = C_N * kNRegions * kRegion };

static long win_init(size_t i, int r, unsigned round) {
    return rt_value(i, round * 16u + (unsigned)r);
}
static long src_init(size_t i, int r, unsigned round) {
    return rt_value(i, round * 16u + 8u + (unsigned)r);
}
static const long kSentinel = -5555555;

static const rt_mode kModes[] = {RT_FENCE, RT_PSCW, RT_LOCK_EXCLUSIVE, RT_LOCK_ALL_FLUSH_ALL,
                                 RT_LOCK_SHARED};

static const char* const kOpNames[kNRegions] = {"put", "accumulate", "get", "get_accumulate"};

/* Every case at once: case c's four operations use regions 4c .. 4c+3. */
static void round_of(rt_win* w, size_t size, unsigned round, int me, int np) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    const rt_mode m = kModes[round % 5];
    shape o[C_N], t[C_N];
    long *src[C_N], *got[C_N], *got_acc[C_N];
    for (int c = 0; c < C_N; ++c) {
        make_case((kind)c, size, &o[c], &t[c]);
        MT_CHECK(o[c].n == t[c].n && t[c].span <= kRegion, "case %d: shapes of %zu and %zu longs",
                 c, o[c].n, t[c].n);
        src[c] = (long*)mt_malloc(o[c].span * sizeof(long));
        got[c] = (long*)mt_malloc(o[c].span * sizeof(long));
        got_acc[c] = (long*)mt_malloc(o[c].span * sizeof(long));
        for (size_t i = 0; i < o[c].span; ++i) {
            src[c][i] = src_init(i, me, round);
            got[c][i] = got_acc[c][i] = kSentinel;
        }
    }
    const size_t total = kWinLongs;
    long* win = (long*)w->base;
    rt_local_begin(w);
    for (size_t i = 0; i < total; ++i)
        win[i] = win_init(i, me, round);
    rt_local_end(w);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    rt_epoch_begin(w->win, m, right, left);
    for (int c = 0; c < C_N; ++c) {
        MPI_Aint d[kNRegions];
        for (int r = 0; r < kNRegions; ++r)
            d[r] = rt_disp(w, right, (size_t)(c * kNRegions + r) * kRegion * sizeof(long));
        const shape *oc = &o[c], *tc = &t[c];
        MT_MPI(MPI_Put(src[c], oc->count, oc->type, right, d[R_PUT], tc->count, tc->type, w->win));
        MT_MPI(MPI_Accumulate(src[c], oc->count, oc->type, right, d[R_ACC], tc->count, tc->type,
                              MPI_SUM, w->win));
        MT_MPI(MPI_Get(got[c], oc->count, oc->type, right, d[R_GET], tc->count, tc->type, w->win));
        MT_MPI(MPI_Get_accumulate(src[c], oc->count, oc->type, got_acc[c], oc->count, oc->type,
                                  right, d[R_GET_ACC], tc->count, tc->type, MPI_SUM, w->win));
    }
    rt_epoch_end(w->win, m, right);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* Target side: what the left neighbour's operations must have left. */
    long* want = (long*)mt_malloc(total * sizeof(long));
    for (size_t i = 0; i < total; ++i)
        want[i] = win_init(i, me, round);
    for (int c = 0; c < C_N; ++c) {
        long* region = want + (size_t)c * kNRegions * kRegion;
        for (size_t j = 0; j < t[c].n; ++j) {
            const long v = src_init(o[c].pos[j], left, round);
            region[R_PUT * (size_t)kRegion + t[c].pos[j]] = v;
            region[R_ACC * (size_t)kRegion + t[c].pos[j]] += v;
            region[R_GET_ACC * (size_t)kRegion + t[c].pos[j]] += v;
        }
    }
    rt_local_begin(w);
    for (size_t i = 0; i < total; ++i) {
        const int c = (int)(i / kRegion / kNRegions), r = (int)(i / kRegion % kNRegions);
        MT_CHECK(win[i] == want[i],
                 "%s window, %s, %s: %s -> %s, %zu longs: target element %zu is %ld, want %ld",
                 rt_flavour_names[w->flavour], rt_mode_names[m], kOpNames[r], o[c].name, t[c].name,
                 o[c].n, i % kRegion, win[i], want[i]);
    }
    rt_local_end(w);
    MT_CHECK(rt_guards_intact(w), "%s window: guard memory written", rt_flavour_names[w->flavour]);

    /* Origin side: fetched values at the typed positions, holes untouched. */
    for (int c = 0; c < C_N; ++c)
        for (int pass = 0; pass < 2; ++pass) {
            long* buf = pass ? got_acc[c] : got[c];
            const size_t region = (size_t)c * kNRegions + (pass ? R_GET_ACC : R_GET);
            for (size_t i = 0; i < o[c].span; ++i)
                want[i] = kSentinel;
            for (size_t j = 0; j < o[c].n; ++j)
                want[o[c].pos[j]] = win_init(region * kRegion + t[c].pos[j], right, round);
            for (size_t i = 0; i < o[c].span; ++i)
                MT_CHECK(buf[i] == want[i],
                         "%s window, %s, %s: %s -> %s, %zu longs: fetched element %zu is %ld, "
                         "want %ld",
                         rt_flavour_names[w->flavour], rt_mode_names[m], kOpNames[pass ? 3 : 2],
                         t[c].name, o[c].name, o[c].n, i, buf[i], want[i]);
        }
    free(want);
    for (int c = 0; c < C_N; ++c) {
        free(src[c]);
        free(got[c]);
        free(got_acc[c]);
        shape_free(&o[c]);
        shape_free(&t[c]);
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    unsigned round = 0;
    for (int f = 0; f < RT_NFLAVOURS; ++f) {
        rt_win w;
        rt_win_open(&w, (rt_flavour)f, kWinLongs * sizeof(long), sizeof(long), MPI_INFO_NULL,
                    MPI_COMM_WORLD);
        for (size_t s = 0; s < sizeof kSizes / sizeof kSizes[0]; ++s)
            round_of(&w, kSizes[s], round++, me, np);
        rt_win_close(&w);
    }
    mt_pass("rma_datatypes");
    MPI_Finalize();
    return 0;
}
