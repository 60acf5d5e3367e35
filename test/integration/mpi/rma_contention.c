/* Every rank at once on the same location of one target, where only atomicity and mutual
 * exclusion make the result exact:
 *  - fetch_and_op(SUM, 1) on a counter: the values fetched by all ranks together are exactly
 *    0 .. np*K-1, each once (a lost or duplicated update shows as a gap or a repeat);
 *  - compare_and_swap retry loops incrementing a counter: exactly np*K at the end;
 *  - exclusive locks: get, flush, increment, put inside each epoch: exactly np*K at the end
 *    (a lock that lets two ranks in at once loses increments);
 *  - accumulate(SUM) of 1 MiB of longs and of 4 KiB of doubles from every rank to the same
 *    elements: exact sums (the doubles hold small integers);
 * on int and long counters, each case in another window flavour, the target rank varying.
 */
#include "rmatest.h"

enum { kRepeats = 40 };

/* The counter at element 1 of the target (element 0 and 2 must stay as they were). */
static void fop_counter(rt_flavour f, rt_type t, int target, int me, int np) {
    const size_t es = rt_type_size(t);
    rt_win w;
    rt_win_open(&w, f, 3 * es, (int)es, MPI_INFO_NULL, MPI_COMM_WORLD);
    rt_local_begin(&w);
    for (size_t i = 0; i < 3; ++i)
        rt_set(w.base, t, i, i == 1 ? 0 : -9);
    rt_local_end(&w);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double got[kRepeats];
    char one[8], old[8];
    rt_set(one, t, 0, 1);
    MT_MPI(MPI_Win_lock_all(0, w.win));
    for (int k = 0; k < kRepeats; ++k) {
        MT_MPI(MPI_Fetch_and_op(one, old, rt_mpi_type(t), target, rt_disp(&w, target, es), MPI_SUM,
                                w.win));
        MT_MPI(MPI_Win_flush(target, w.win));
        got[k] = rt_get(old, t, 0);
    }
    MT_MPI(MPI_Win_unlock_all(w.win));
    double* all = (double*)mt_malloc(sizeof got * (size_t)np);
    MT_MPI(MPI_Allgather(got, kRepeats, MPI_DOUBLE, all, kRepeats, MPI_DOUBLE, MPI_COMM_WORLD));
    const int total = np * kRepeats;
    char* seen = (char*)mt_malloc((size_t)total);
    memset(seen, 0, (size_t)total);
    for (int i = 0; i < total; ++i) {
        const double v = all[i];
        MT_CHECK(v >= 0 && v < total && !seen[(int)v],
                 "%s window, %s fetch_and_op counter on rank %d: rank %d fetched %g (twice, or "
                 "out of 0..%d)",
                 rt_flavour_names[f], rt_type_names[t], target, i / kRepeats, v, total - 1);
        seen[(int)v] = 1;
    }
    if (me == target) {
        rt_local_begin(&w);
        MT_CHECK(rt_get(w.base, t, 1) == total && rt_get(w.base, t, 0) == -9 &&
                     rt_get(w.base, t, 2) == -9,
                 "%s window, %s fetch_and_op counter: %g, neighbours %g %g", rt_flavour_names[f],
                 rt_type_names[t], rt_get(w.base, t, 1), rt_get(w.base, t, 0),
                 rt_get(w.base, t, 2));
        rt_local_end(&w);
    }
    free(all);
    free(seen);
    rt_win_close(&w);
}

/* Increments through compare_and_swap retry loops, under a shared lock_all. */
static void cas_counter(rt_flavour f, rt_type t, int target, int me, int np) {
    const size_t es = rt_type_size(t);
    rt_win w;
    rt_win_open(&w, f, es, (int)es, MPI_INFO_NULL, MPI_COMM_WORLD);
    rt_local_begin(&w);
    rt_set(w.base, t, 0, 0);
    rt_local_end(&w);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_lock_all(0, w.win));
    char cur[8], next[8], old[8];
    rt_set(cur, t, 0, 0);
    for (int k = 0; k < kRepeats; ++k) {
        for (;;) {
            rt_set(next, t, 0, rt_get(cur, t, 0) + 1);
            MT_MPI(MPI_Compare_and_swap(next, cur, old, rt_mpi_type(t), target,
                                        rt_disp(&w, target, 0), w.win));
            MT_MPI(MPI_Win_flush(target, w.win));
            if (rt_get(old, t, 0) == rt_get(cur, t, 0)) break;
            memcpy(cur, old, es); /* somebody else won: retry from what was there */
        }
        rt_set(cur, t, 0, rt_get(cur, t, 0) + 1);
    }
    MT_MPI(MPI_Win_unlock_all(w.win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == target) {
        rt_local_begin(&w);
        MT_CHECK(rt_get(w.base, t, 0) == np * kRepeats,
                 "%s window, %s compare_and_swap counter: %g, want %d", rt_flavour_names[f],
                 rt_type_names[t], rt_get(w.base, t, 0), np * kRepeats);
        rt_local_end(&w);
    }
    rt_win_close(&w);
}

/* Read-modify-write by get + put inside exclusive epochs: only mutual exclusion makes it
 * exact. The get is flushed before its value is used, as MPI requires. */
static void lock_counter(rt_flavour f, int target, int me, int np) {
    rt_win w;
    rt_win_open(&w, f, 2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD);
    rt_local_begin(&w);
    ((long*)w.base)[0] = 0;
    ((long*)w.base)[1] = 0;
    rt_local_end(&w);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < kRepeats; ++k) {
        long v[2];
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w.win));
        MT_MPI(MPI_Get(v, 2, MPI_LONG, target, rt_disp(&w, target, 0), 2, MPI_LONG, w.win));
        MT_MPI(MPI_Win_flush(target, w.win));
        /* Element 1 records who was last in; element 0 counts. */
        MT_CHECK(v[0] >= 0 && v[0] < (long)np * kRepeats, "lock counter read %ld", v[0]);
        v[0] += 1;
        v[1] = me;
        MT_MPI(MPI_Put(v, 2, MPI_LONG, target, rt_disp(&w, target, 0), 2, MPI_LONG, w.win));
        MT_MPI(MPI_Win_unlock(target, w.win));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == target) {
        rt_local_begin(&w);
        const long* c = (const long*)w.base;
        MT_CHECK(c[0] == (long)np * kRepeats && c[1] >= 0 && c[1] < np,
                 "%s window, exclusive-lock counter on rank %d: %ld (last writer %ld), want %d",
                 rt_flavour_names[f], target, c[0], c[1], np * kRepeats);
        rt_local_end(&w);
    }
    rt_win_close(&w);
}

/* Everyone accumulates into the same elements at once; the sums must be exact. */
static void sum_to_one(rt_flavour f, rt_type t, size_t n, int target, int me, int np) {
    const size_t es = rt_type_size(t);
    rt_win w;
    rt_win_open(&w, f, me == target ? n * es : 0, (int)es, MPI_INFO_NULL, MPI_COMM_WORLD);
    if (me == target) {
        rt_local_begin(&w);
        for (size_t i = 0; i < n; ++i)
            rt_set(w.base, t, i, (double)rt_value(i, 5));
        rt_local_end(&w);
    }
    char* src = (char*)mt_malloc(n * es);
    for (size_t i = 0; i < n; ++i)
        rt_set(src, t, i, (double)rt_value(i, 100u + (unsigned)me));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w.win));
    MT_MPI(MPI_Accumulate(src, (int)n, rt_mpi_type(t), target, rt_disp(&w, target, 0), (int)n,
                          rt_mpi_type(t), MPI_SUM, w.win));
    MT_MPI(MPI_Win_unlock(target, w.win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == target) {
        rt_local_begin(&w);
        for (size_t i = 0; i < n; ++i) {
            double want = (double)rt_value(i, 5);
            for (int r = 0; r < np; ++r)
                want += (double)rt_value(i, 100u + (unsigned)r);
            MT_CHECK(rt_get(w.base, t, i) == want,
                     "%s window, %zu %s summed by %d ranks: element %zu = %g, want %g",
                     rt_flavour_names[f], n, rt_type_names[t], np, i, rt_get(w.base, t, i), want);
        }
        rt_local_end(&w);
    }
    free(src);
    rt_win_close(&w);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    for (int f = 0; f < RT_NFLAVOURS; ++f) {
        const rt_flavour fl = (rt_flavour)f;
        const int target = f % np, other = (np - 1 - f % np + np) % np;
        fop_counter(fl, f % 2 ? RT_LONG : RT_INT, target, me, np);
        cas_counter(fl, f % 2 ? RT_INT : RT_LONG, other, me, np);
        lock_counter(fl, target, me, np);
        sum_to_one(fl, RT_LONG, 131072, other, me, np);
        sum_to_one(fl, RT_DOUBLE, 512, target, me, np);
    }
    mt_pass("rma_contention");
    MPI_Finalize();
    return 0;
}
