/* Every predefined reduction op through MPI_Accumulate, MPI_Get_accumulate and
 * MPI_Fetch_and_op on int, long and double (bitwise and logical ops on the integers only),
 * and MAXLOC/MINLOC on MPI_2INT and MPI_FLOAT_INT: all ranks at once to the
 * same elements of one target, which must end up holding the exact reduction of its old
 * values and every rank's contribution (the ops are commutative and the values small, so the
 * order in which the target applied them cannot matter). Element-wise atomicity is what makes
 * the result exact; a lost update shows as a wrong element.
 *
 * Each type uses a window of another flavour, so the four flavours are all covered. Then
 * MPI_NO_OP through get_accumulate must fetch the final values and change nothing, and
 * MPI_REPLACE must leave each element equal to one rank's value.
 */
#include "rmatest.h"

typedef struct {
    MPI_Op op;
    const char* name;
    int integers_only;
} op_desc;

enum { kNOps = 11 };

static op_desc op_at(int k) {
    const op_desc ops[kNOps] = {
        {MPI_SUM, "sum", 0},   {MPI_PROD, "prod", 0},      {MPI_MAX, "max", 0},
        {MPI_MIN, "min", 0},   {MPI_LAND, "land", 1},      {MPI_LOR, "lor", 1},
        {MPI_LXOR, "lxor", 1}, {MPI_BAND, "band", 1},      {MPI_BOR, "bor", 1},
        {MPI_BXOR, "bxor", 1}, {MPI_REPLACE, "replace", 0}};
    return ops[k];
}

/* A section per op: one element through fetch_and_op, then three accumulates of 1, 1000 and
 * 8200 elements (8 B, 8 KB and 64 KB of longs) at consecutive offsets. */
static const int kCounts[3] = {1, 1000, 8200};
enum { kSection = 1 + 1 + 1000 + 8200 };

/* What rank r (or, for r < 0, the target's initial value) brings to element i under op k. */
static long contribution(int k, int r, size_t i) {
    const uint64_t h = mt_pattern_word(i, (unsigned)(1000 + 37 * k + r));
    const char* name = op_at(k).name;
    if (strcmp(name, "prod") == 0) {
        static const long f[4] = {1, 2, -1, 1};
        return r < 0 ? 3 : f[h % 4]; /* |product| <= 3 * 2^8: exact everywhere */
    }
    if (name[0] == 'l') return h % 4 ? (long)(h >> 40) + 1 : 0; /* true 3 times in 4 */
    return rt_value(i, (unsigned)(1000 + 37 * k + r));
}

static long apply(int k, long a, long b) {
    switch (k) {
        case 0: return a + b;
        case 1: return a * b;
        case 2: return a > b ? a : b;
        case 3: return a < b ? a : b;
        case 4: return a && b;
        case 5: return a || b;
        case 6: return !a != !b;
        case 7: return a & b;
        case 8: return a | b;
        case 9: return a ^ b;
        default: return b;
    }
}

static long expected(int k, int np, size_t i) {
    long v = contribution(k, -1, i);
    for (int r = 0; r < np; ++r)
        v = apply(k, v, contribution(k, r, i));
    return v;
}

static int replace_ok(int np, long got, size_t i) {
    for (int r = 0; r < np; ++r)
        if (got == contribution(kNOps - 1, r, i)) return 1;
    return 0;
}

static void scalar_ops(rt_type t, rt_flavour f, int me, int np) {
    const int target = (int)t % np;
    const size_t es = rt_type_size(t);
    rt_win w;
    rt_win_open(&w, f, me == target ? es * kSection * kNOps : 0, (int)es, MPI_INFO_NULL,
                MPI_COMM_WORLD);
    if (me == target) {
        rt_local_begin(&w);
        for (int k = 0; k < kNOps; ++k)
            for (size_t i = 0; i < kSection; ++i)
                rt_set(w.base, t, (size_t)k * kSection + i, (double)contribution(k, -1, i));
        rt_local_end(&w);
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* One source section per op: all of them are in flight until the epoch ends. */
    char* src = (char*)mt_malloc(es * kSection * kNOps);
    void* fetched = mt_malloc(es * kSection);
    const MPI_Datatype dt = rt_mpi_type(t);
    MT_MPI(MPI_Win_lock_all(0, w.win));
    for (int k = 0; k < kNOps; ++k) {
        const op_desc o = op_at(k);
        if (o.integers_only && t == RT_DOUBLE) continue;
        const size_t sec = (size_t)k * kSection;
        for (size_t i = 0; i < kSection; ++i)
            rt_set(src + sec * es, t, i, (double)contribution(k, me, i));
        MT_MPI(MPI_Fetch_and_op(src + sec * es, (char*)fetched + (size_t)k * es, dt, target,
                                rt_disp(&w, target, sec * es), o.op, w.win));
        size_t at = 1;
        for (int c = 0; c < 3; ++c) {
            MT_MPI(MPI_Accumulate(src + (sec + at) * es, kCounts[c], dt, target,
                                  rt_disp(&w, target, (sec + at) * es), kCounts[c], dt, o.op,
                                  w.win));
            at += (size_t)kCounts[c];
        }
    }
    MT_MPI(MPI_Win_unlock_all(w.win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    if (me == target) {
        rt_local_begin(&w);
        for (int k = 0; k < kNOps; ++k) {
            const op_desc o = op_at(k);
            if (o.integers_only && t == RT_DOUBLE) continue;
            for (size_t i = 0; i < kSection; ++i) {
                const double got = rt_get(w.base, t, (size_t)k * kSection + i);
                if (k == kNOps - 1) {
                    MT_CHECK(replace_ok(np, (long)got, i),
                             "%s window, %s replace: element %zu = %g is no rank's value",
                             rt_flavour_names[f], rt_type_names[t], i, got);
                    continue;
                }
                const long want = expected(k, np, i);
                MT_CHECK(got == (double)want,
                         "%s window, %s %s from %d ranks: element %zu = %g, want %ld",
                         rt_flavour_names[f], rt_type_names[t], o.name, np, i, got, want);
            }
        }
        rt_local_end(&w);
    }
    /* Every rank fetches the sum section with MPI_NO_OP, which must not change it. */
    MT_MPI(MPI_Win_fence(0, w.win));
    MT_MPI(MPI_Get_accumulate(NULL, 0, dt, fetched, kSection, dt, target, rt_disp(&w, target, 0),
                              kSection, dt, MPI_NO_OP, w.win));
    MT_MPI(MPI_Win_fence(0, w.win));
    for (size_t i = 0; i < kSection; ++i)
        MT_CHECK(rt_get(fetched, t, i) == (double)expected(0, np, i),
                 "%s window, %s: no_op fetched element %zu = %g, want %ld", rt_flavour_names[f],
                 rt_type_names[t], i, rt_get(fetched, t, i), expected(0, np, i));

    free(src);
    free(fetched);
    rt_win_close(&w);
}

/* MAXLOC / MINLOC on a (value, index) pair type: the value is small so that ties are common
 * (the lower index wins). MPI_2INT and MPI_FLOAT_INT: Open MPI's own components refuse the
 * pair types with padding (MPI_LONG_INT, MPI_DOUBLE_INT), so they could not check the test. */
typedef struct {
    MPI_Datatype type;
    int float_value; /* the value is a float, else an int */
    const char* name;
} pair_desc;

typedef struct {
    union {
        int i;
        float f;
    } v;
    int index;
} pair;

enum { kLocElems = 600 };

static long loc_value(int r, size_t i) { return (long)(mt_pattern_word(i, 77u + (unsigned)r) % 5); }

static void loc_expect(int np, size_t i, int maxloc, long* v, int* idx) {
    *v = 2; /* the target's initial pair is (2, 100) */
    *idx = 100;
    for (int r = 0; r < np; ++r) {
        const long x = loc_value(r, i);
        if ((maxloc ? x > *v : x < *v) || (x == *v && r < *idx)) {
            *v = x;
            *idx = r;
        }
    }
}

static void pair_set(pair* e, const pair_desc* p, long v, int idx) {
    if (p->float_value)
        e->v.f = (float)v;
    else
        e->v.i = (int)v;
    e->index = idx;
}

static double pair_value(const pair* e, const pair_desc* p) {
    return p->float_value ? (double)e->v.f : (double)e->v.i;
}

static void loc_ops(const pair_desc* p, rt_flavour f, int me, int np) {
    const int target = np - 1;
    rt_win w;
    rt_win_open(&w, f, me == target ? 2 * kLocElems * sizeof(pair) : 0, (int)sizeof(pair),
                MPI_INFO_NULL, MPI_COMM_WORLD);
    pair* mine = (pair*)w.base;
    if (me == target) {
        rt_local_begin(&w);
        for (size_t i = 0; i < 2 * kLocElems; ++i)
            pair_set(&mine[i], p, 2, 100);
        rt_local_end(&w);
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    pair src[kLocElems];
    for (size_t i = 0; i < kLocElems; ++i)
        pair_set(&src[i], p, loc_value(me, i), me);
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w.win));
    MT_MPI(MPI_Accumulate(src, kLocElems, p->type, target, rt_disp(&w, target, 0), kLocElems,
                          p->type, MPI_MAXLOC, w.win));
    MT_MPI(MPI_Accumulate(src, kLocElems, p->type, target,
                          rt_disp(&w, target, kLocElems * sizeof(pair)), kLocElems, p->type,
                          MPI_MINLOC, w.win));
    MT_MPI(MPI_Win_unlock(target, w.win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == target) {
        rt_local_begin(&w);
        for (size_t i = 0; i < 2 * kLocElems; ++i) {
            long v;
            int idx;
            loc_expect(np, i % kLocElems, i < kLocElems, &v, &idx);
            const double got = pair_value(&mine[i], p);
            const int got_idx = mine[i].index;
            MT_CHECK(got == (double)v && got_idx == idx,
                     "%s window, %s %s element %zu = (%g, %d), want (%ld, %d)", rt_flavour_names[f],
                     p->name, i < kLocElems ? "maxloc" : "minloc", i % kLocElems, got, got_idx, v,
                     idx);
        }
        rt_local_end(&w);
    }
    rt_win_close(&w);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    scalar_ops(RT_INT, RT_CREATE, me, np);
    scalar_ops(RT_LONG, RT_ALLOCATE, me, np);
    scalar_ops(RT_DOUBLE, RT_SHARED, me, np);
    scalar_ops(RT_LONG, RT_DYNAMIC, me, np);
    const pair_desc two_int = {MPI_2INT, 0, "2int"}, float_int = {MPI_FLOAT_INT, 1, "float_int"};
    loc_ops(&two_int, RT_DYNAMIC, me, np);
    loc_ops(&float_int, RT_CREATE, me, np);
    loc_ops(&two_int, RT_SHARED, me, np);
    mt_pass("rma_ops");
    MPI_Finalize();
    return 0;
}
