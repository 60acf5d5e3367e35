/* The accumulate family (MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op,
 * MPI_Compare_and_swap, MPI_Raccumulate, MPI_Rget_accumulate), element by element:
 *   - every predefined op on int, long, double, short and signed char (and MAXLOC/MINLOC on
 *     MPI_2INT and MPI_DOUBLE_INT), checked against MPI_Reduce_local on the same values;
 *   - concurrent accumulates of every rank to one location: exact sums (int, long, double
 *     with integer values, short: the target-side lock path);
 *   - fetch_and_op counters: every fetched value distinct, together exactly 0..n-1;
 *   - compare_and_swap increments (long, int, double: atomic path and message path);
 *   - derived datatypes on origin, target and result sides;
 *   - a large accumulate (several MiB: split into requests, rendezvous);
 *   - request-based forms; an out-of-window accumulate fails with MPI_ERR_RMA_RANGE and
 *     leaves the window unchanged.
 * Each check runs on a window from MPI_Win_allocate, one from MPI_Win_allocate_shared and
 * one from MPI_Win_create (memory registered in place: atomics then run at the target).
 * Plain MPI: runs over any osc.
 */
#include <pthread.h>

#include "mpitest.h"

#define WIN_ELEMS 64 /* 8-byte slots per rank */
enum { ROUNDS = 200 };

static int rank, nranks, thread_multiple;

/* ---- every op on every type, against MPI_Reduce_local ------------------------------------- */

typedef struct {
    MPI_Op op;
    const char* name;
    int on_int, on_float; /* MPI defines it on C integers / on floating point */
} op_case_t;

static const op_case_t kOps[] = {
    {MPI_MAX, "MAX", 1, 1},   {MPI_MIN, "MIN", 1, 1},         {MPI_SUM, "SUM", 1, 1},
    {MPI_PROD, "PROD", 1, 1}, {MPI_LAND, "LAND", 1, 0},       {MPI_BAND, "BAND", 1, 0},
    {MPI_LOR, "LOR", 1, 0},   {MPI_BOR, "BOR", 1, 0},         {MPI_LXOR, "LXOR", 1, 0},
    {MPI_BXOR, "BXOR", 1, 0}, {MPI_REPLACE, "REPLACE", 1, 1}, {MPI_NO_OP, "NO_OP", 1, 1},
};

typedef struct {
    MPI_Datatype dt;
    const char* name;
    int size, is_float;
} type_case_t;

static const type_case_t kTypes[] = {
    {MPI_INT, "int", sizeof(int), 0},          {MPI_LONG, "long", sizeof(long), 0},
    {MPI_DOUBLE, "double", sizeof(double), 1}, {MPI_SHORT, "short", sizeof(short), 0},
    {MPI_SIGNED_CHAR, "signed char", 1, 0},    {MPI_FLOAT, "float", sizeof(float), 1},
};

/* Value i of a type, seeded so that both sides differ and ops give distinct results. */
static void make_value(const type_case_t* t, int i, int seed, void* out) {
    long v = (long)((i * 7 + seed * 3) % 11) - 3; /* small, some zero, some negative */
    switch (t->size) {
        case 1: *(signed char*)out = (signed char)v; break;
        case 2: *(short*)out = (short)v; break;
        case 4:
            if (t->is_float)
                *(float*)out = (float)v * 0.5f;
            else
                *(int*)out = (int)v;
            break;
        default:
            if (t->is_float)
                *(double*)out = (double)v * 0.25;
            else
                *(long*)out = v;
            break;
    }
}

/* Rank 1 applies each op to N elements of rank 0's window with get_accumulate, checks the old
 * values it got back; rank 0 checks the new values against MPI_Reduce_local. */
static void every_op(MPI_Win win, unsigned char* base) {
    enum { N = 5 };
    const int target = 0, origin = nranks > 1 ? 1 : 0;
    for (size_t ti = 0; ti < sizeof(kTypes) / sizeof(kTypes[0]); ++ti) {
        const type_case_t* t = &kTypes[ti];
        for (size_t oi = 0; oi < sizeof(kOps) / sizeof(kOps[0]); ++oi) {
            const op_case_t* o = &kOps[oi];
            if (t->is_float ? !o->on_float : !o->on_int) continue;
            unsigned char init[N * 8], operand[N * 8], expect[N * 8], got[N * 8];
            for (int i = 0; i < N; ++i) {
                make_value(t, i, 1 + (int)oi, init + i * t->size);
                make_value(t, i, 5 + (int)ti, operand + i * t->size);
            }
            MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
            memcpy(base, init, N * t->size);
            MT_MPI(MPI_Win_unlock(rank, win));
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
            if (rank == origin) {
                memset(got, 0xee, sizeof(got));
                MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
                MT_MPI(MPI_Get_accumulate(operand, N, t->dt, got, N, t->dt, target, 0, N, t->dt,
                                          o->op, win));
                MT_MPI(MPI_Win_unlock(target, win));
                MT_CHECK(memcmp(got, init, N * t->size) == 0,
                         "get_accumulate %s on %s: old values differ", o->name, t->name);
            }
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
            if (rank == target) {
                memcpy(expect, init, N * t->size);
                if (o->op == MPI_REPLACE)
                    memcpy(expect, operand, N * t->size);
                else if (o->op != MPI_NO_OP)
                    MT_MPI(MPI_Reduce_local(operand, expect, N, t->dt, o->op));
                MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
                int same = memcmp(base, expect, N * t->size) == 0;
                MT_MPI(MPI_Win_unlock(rank, win));
                MT_CHECK(same, "%s on %s: window holds the wrong result", o->name, t->name);
            }
            MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
}

/* MAXLOC / MINLOC on the pair types (MPI_DOUBLE_INT has a hole: size 12, extent 16). */
static void pair_ops(MPI_Win win, unsigned char* base) {
    typedef struct {
        double v;
        int i;
    } di_t;
    typedef struct {
        int v;
        int i;
    } ii_t;
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    ii_t* ii = (ii_t*)base;
    di_t* di = (di_t*)(base + 64);
    ii[0] = (ii_t){-1, 100};
    ii[1] = (ii_t){1000000, 100};
    di[0] = (di_t){-1.0, 100};
    di[1] = (di_t){1e9, 100};
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* Every rank offers (rank, rank): MAXLOC on slot 0 ends at (n-1, n-1), MINLOC on slot 1
     * at (0, 0). */
    ii_t mine_i = {rank, rank};
    di_t mine_d = {rank, rank};
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    MT_MPI(MPI_Accumulate(&mine_i, 1, MPI_2INT, 0, 0, 1, MPI_2INT, MPI_MAXLOC, win));
    MT_MPI(MPI_Accumulate(&mine_i, 1, MPI_2INT, 0, 1, 1, MPI_2INT, MPI_MINLOC, win));
    /* osc pt2pt refuses MPI_DOUBLE_INT with MAXLOC: MT_NO_DOUBLE_INT=1 skips it there. */
    const int double_int = getenv("MT_NO_DOUBLE_INT") == NULL;
    if (double_int) {
        MT_MPI(MPI_Accumulate(&mine_d, 1, MPI_DOUBLE_INT, 0, 64 / 8, 1, MPI_DOUBLE_INT, MPI_MAXLOC,
                              win));
        MT_MPI(MPI_Accumulate(&mine_d, 1, MPI_DOUBLE_INT, 0, 64 / 8 + 2, 1, MPI_DOUBLE_INT,
                              MPI_MINLOC, win));
    }
    MT_MPI(MPI_Win_unlock(0, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        MT_CHECK(ii[0].v == nranks - 1 && ii[0].i == nranks - 1, "MAXLOC 2INT: (%d,%d)", ii[0].v,
                 ii[0].i);
        MT_CHECK(ii[1].v == 0 && ii[1].i == 0, "MINLOC 2INT: (%d,%d)", ii[1].v, ii[1].i);
        MT_CHECK(!double_int || (di[0].v == nranks - 1 && di[0].i == nranks - 1),
                 "MAXLOC DOUBLE_INT: (%g,%d)", di[0].v, di[0].i);
        MT_CHECK(!double_int || (di[1].v == 0 && di[1].i == 0), "MINLOC DOUBLE_INT: (%g,%d)",
                 di[1].v, di[1].i);
        MT_MPI(MPI_Win_unlock(rank, win));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---- concurrency --------------------------------------------------------------------------- */

static void zero_window(MPI_Win win, unsigned char* base, size_t bytes) {
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    memset(base, 0, bytes);
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Every rank adds to the same int, long, double and short of rank 0, many times. */
static void concurrent_sums(MPI_Win win, unsigned char* base) {
    zero_window(win, base, WIN_ELEMS * 8);
    int one_i = 1;
    long three_l = 3;
    double half = 0.5;
    short two_s = 2;
    int pair[2] = {1, 2};
    MT_MPI(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; ++r) {
        MT_MPI(MPI_Accumulate(&one_i, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
        MT_MPI(MPI_Accumulate(&three_l, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_SUM, win));
        MT_MPI(MPI_Accumulate(&half, 1, MPI_DOUBLE, 0, 2, 1, MPI_DOUBLE, MPI_SUM, win));
        MT_MPI(MPI_Accumulate(&two_s, 1, MPI_SHORT, 0, 3, 1, MPI_SHORT, MPI_SUM, win));
        MT_MPI(MPI_Accumulate(pair, 2, MPI_INT, 0, 4, 2, MPI_INT, MPI_SUM, win));
        if (r % 64 == 0) MT_MPI(MPI_Win_flush(0, win));
    }
    MT_MPI(MPI_Win_unlock_all(win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        long n = (long)nranks * ROUNDS;
        MT_CHECK(((int*)base)[0] == n, "int sum %d, expected %ld", ((int*)base)[0], n);
        MT_CHECK(((long*)base)[1] == 3 * n, "long sum %ld", ((long*)base)[1]);
        MT_CHECK(((double*)base)[2] == 0.5 * n, "double sum %g", ((double*)base)[2]);
        MT_CHECK(((short*)base)[12] == (short)(2 * n), "short sum %d", ((short*)base)[12]);
        MT_CHECK(((int*)base)[8] == n && ((int*)base)[9] == 2 * n, "int pair %d %d",
                 ((int*)base)[8], ((int*)base)[9]);
        MT_MPI(MPI_Win_unlock(rank, win));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static int cmp_long(const void* a, const void* b) {
    long x = *(const long*)a, y = *(const long*)b;
    return (x > y) - (x < y);
}

/* fetch_and_op counters (long: Switchyard atomics; double: the message path): every value
 * fetched is distinct and together they are exactly 0..n-1. */
static void fop_counters(MPI_Win win, unsigned char* base) {
    zero_window(win, base, WIN_ELEMS * 8);
    long mine[ROUNDS];
    double mine_d[ROUNDS];
    long one = 1;
    double one_d = 1.0;
    int one_i = 1, got_i[ROUNDS];
    MT_MPI(MPI_Win_lock_all(0, win));
    for (int r = 0; r < ROUNDS; ++r) {
        MT_MPI(MPI_Fetch_and_op(&one, &mine[r], MPI_LONG, 0, 0, MPI_SUM, win));
        MT_MPI(MPI_Fetch_and_op(&one_d, &mine_d[r], MPI_DOUBLE, 0, 1, MPI_SUM, win));
        MT_MPI(MPI_Fetch_and_op(&one_i, &got_i[r], MPI_INT, 0, 4, MPI_SUM, win));
    }
    MT_MPI(MPI_Win_unlock_all(win));
    long* all = malloc(sizeof(long) * ROUNDS * nranks);
    double* all_d = malloc(sizeof(double) * ROUNDS * nranks);
    MT_MPI(MPI_Allgather(mine, ROUNDS, MPI_LONG, all, ROUNDS, MPI_LONG, MPI_COMM_WORLD));
    MT_MPI(MPI_Allgather(mine_d, ROUNDS, MPI_DOUBLE, all_d, ROUNDS, MPI_DOUBLE, MPI_COMM_WORLD));
    qsort(all, (size_t)ROUNDS * nranks, sizeof(long), cmp_long);
    for (long i = 0; i < (long)ROUNDS * nranks; ++i) {
        MT_CHECK(all[i] == i, "fetch_and_op long: sorted value %ld is %ld", i, all[i]);
        MT_CHECK(all_d[i] >= 0 && all_d[i] < ROUNDS * nranks, "fetch_and_op double: %g", all_d[i]);
        all[i] = (long)all_d[i];
    }
    qsort(all, (size_t)ROUNDS * nranks, sizeof(long), cmp_long);
    for (long i = 0; i < (long)ROUNDS * nranks; ++i)
        MT_CHECK(all[i] == i, "fetch_and_op double: sorted value %ld is %ld", i, all[i]);
    for (int r = 1; r < ROUNDS; ++r)
        MT_CHECK(got_i[r] > got_i[r - 1], "fetch_and_op int: values of one rank must grow");
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        MT_CHECK(((long*)base)[0] == (long)ROUNDS * nranks, "counter %ld", ((long*)base)[0]);
        MT_CHECK(((int*)base)[8] == ROUNDS * nranks, "int counter %d", ((int*)base)[8]);
        MT_MPI(MPI_Win_unlock(rank, win));
    }
    free(all);
    free(all_d);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* One long counter, two paths at once: each rank alternates between fetch_and_op (a
 * Switchyard atomic, applied by the origin itself where the window is mapped) and
 * get_accumulate (a request the target applies), out of step with its neighbours, so both
 * kinds hit the word at the same time. They must be atomic with respect to each other. */
static void mixed_paths(MPI_Win win, unsigned char* base) {
    zero_window(win, base, WIN_ELEMS * 8);
    long one = 1, old = 0;
    MT_MPI(MPI_Win_lock_all(0, win));
    for (int r = 0; r < 4 * ROUNDS; ++r) {
        if ((rank + r) % 2 == 0) {
            MT_MPI(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 5, MPI_SUM, win));
        } else {
            MT_MPI(MPI_Get_accumulate(&one, 1, MPI_LONG, &old, 1, MPI_LONG, 0, 5, 1, MPI_LONG,
                                      MPI_SUM, win));
        }
        if (r % 32 == 0) MT_MPI(MPI_Win_flush(0, win));
    }
    MT_MPI(MPI_Win_unlock_all(win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        MT_CHECK(((long*)base)[5] == 4L * ROUNDS * nranks, "mixed counter %ld, expected %ld",
                 ((long*)base)[5], 4L * ROUNDS * nranks);
        MT_MPI(MPI_Win_unlock(rank, win));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Under MPI_THREAD_MULTIPLE: threads of every rank accumulate (short: the lock path; double:
 * a CAS loop; long: get_accumulate, whose old values come back to each thread) at once. */
enum { THREADS = 4, THREAD_ROUNDS = 100 };
typedef struct {
    MPI_Win win;
    long olds[THREAD_ROUNDS];
} thread_arg_t;

static void* thread_body(void* p) {
    thread_arg_t* arg = p;
    short one_s = 1;
    double one_d = 1.0;
    long one_l = 1;
    for (int r = 0; r < THREAD_ROUNDS; ++r) {
        MT_MPI(MPI_Accumulate(&one_s, 1, MPI_SHORT, 0, 3, 1, MPI_SHORT, MPI_SUM, arg->win));
        MT_MPI(MPI_Accumulate(&one_d, 1, MPI_DOUBLE, 0, 2, 1, MPI_DOUBLE, MPI_SUM, arg->win));
        MT_MPI(MPI_Get_accumulate(&one_l, 1, MPI_LONG, &arg->olds[r], 1, MPI_LONG, 0, 1, 1,
                                  MPI_LONG, MPI_SUM, arg->win));
        MT_MPI(MPI_Win_flush(0, arg->win));
    }
    return NULL;
}

static void threaded_sums(MPI_Win win, unsigned char* base) {
    if (!thread_multiple) return;
    zero_window(win, base, WIN_ELEMS * 8);
    pthread_t threads[THREADS];
    thread_arg_t args[THREADS];
    MT_MPI(MPI_Win_lock_all(0, win));
    for (int t = 0; t < THREADS; ++t) {
        args[t].win = win;
        MT_CHECK(pthread_create(&threads[t], NULL, thread_body, &args[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < THREADS; ++t)
        pthread_join(threads[t], NULL);
    MT_MPI(MPI_Win_unlock_all(win));
    for (int t = 0; t < THREADS; ++t)
        for (int r = 1; r < THREAD_ROUNDS; ++r)
            MT_CHECK(args[t].olds[r] > args[t].olds[r - 1], "thread %d: old values must grow", t);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        const long n = (long)nranks * THREADS * THREAD_ROUNDS;
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        MT_CHECK(((short*)base)[12] == (short)n, "threads: short sum %d", ((short*)base)[12]);
        MT_CHECK(((double*)base)[2] == (double)n, "threads: double sum %g", ((double*)base)[2]);
        MT_CHECK(((long*)base)[1] == n, "threads: long sum %ld", ((long*)base)[1]);
        MT_MPI(MPI_Win_unlock(rank, win));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Increment by compare_and_swap loops: long and int (Switchyard CSWAP), double and short
 * (message path: no Switchyard atomic for them). */
static void cas_increments(MPI_Win win, unsigned char* base) {
    enum { CAS_ROUNDS = 50 };
    zero_window(win, base, WIN_ELEMS * 8);
    MT_MPI(MPI_Win_lock_all(0, win));
    for (int r = 0; r < CAS_ROUNDS; ++r) {
        long cur = 0, next, seen;
        for (;;) {
            next = cur + 1;
            MT_MPI(MPI_Compare_and_swap(&next, &cur, &seen, MPI_LONG, 0, 0, win));
            MT_MPI(MPI_Win_flush(0, win));
            if (seen == cur) break;
            cur = seen;
        }
        int ci = 0, ni, si;
        for (;;) {
            ni = ci + 1;
            MT_MPI(MPI_Compare_and_swap(&ni, &ci, &si, MPI_INT, 0, 1, win));
            MT_MPI(MPI_Win_flush(0, win));
            if (si == ci) break;
            ci = si;
        }
        double cd = 0, nd, sd;
        for (;;) {
            nd = cd + 1;
            MT_MPI(MPI_Compare_and_swap(&nd, &cd, &sd, MPI_DOUBLE, 0, 2, win));
            MT_MPI(MPI_Win_flush(0, win));
            if (sd == cd) break;
            cd = sd;
        }
        short cs = 0, ns, ss;
        for (;;) {
            ns = (short)(cs + 1);
            MT_MPI(MPI_Compare_and_swap(&ns, &cs, &ss, MPI_SHORT, 0, 3, win));
            MT_MPI(MPI_Win_flush(0, win));
            if (ss == cs) break;
            cs = ss;
        }
    }
    MT_MPI(MPI_Win_unlock_all(win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        MT_CHECK(((long*)base)[0] == (long)CAS_ROUNDS * nranks, "cas long %ld", ((long*)base)[0]);
        MT_CHECK(((int*)base)[2] == CAS_ROUNDS * nranks, "cas int %d", ((int*)base)[2]);
        MT_CHECK(((double*)base)[2] == CAS_ROUNDS * nranks, "cas double %g", ((double*)base)[2]);
        MT_CHECK(((short*)base)[12] == CAS_ROUNDS * nranks, "cas short %d", ((short*)base)[12]);
        MT_MPI(MPI_Win_unlock(rank, win));
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---- datatypes, sizes, requests, errors ---------------------------------------------------- */

/* Target: a vector (4 blocks of 2 ints, stride 3) at displacement 0; origin: 8 contiguous
 * ints; result: a vector of 8 single ints with stride 2. */
static void derived_types(MPI_Win win, unsigned char* base) {
    int* w = (int*)base;
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < 2 * WIN_ELEMS; ++i)
        w[i] = 1000 + i;
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Datatype tvec, rvec;
    MT_MPI(MPI_Type_vector(4, 2, 3, MPI_INT, &tvec));
    MT_MPI(MPI_Type_commit(&tvec));
    MT_MPI(MPI_Type_vector(8, 1, 2, MPI_INT, &rvec));
    MT_MPI(MPI_Type_commit(&rvec));
    if (rank == (nranks > 1 ? 1 : 0)) {
        int operand[8], result[16];
        for (int i = 0; i < 8; ++i)
            operand[i] = i + 1;
        for (int i = 0; i < 16; ++i)
            result[i] = -7;
        MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MT_MPI(
            MPI_Get_accumulate(operand, 8, MPI_INT, result, 1, rvec, 0, 0, 1, tvec, MPI_SUM, win));
        MT_MPI(MPI_Win_unlock(0, win));
        static const int idx[8] = {0, 1, 3, 4, 6, 7, 9, 10};
        for (int i = 0; i < 16; ++i) {
            int expect = i % 2 ? -7 : 1000 + idx[i / 2];
            MT_CHECK(result[i] == expect, "result[%d] = %d, expected %d", i, result[i], expect);
        }
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        int k = 0;
        for (int i = 0; i < 2 * WIN_ELEMS; ++i) {
            int in_vec = i < 11 && i % 3 != 2;
            int expect = 1000 + i + (in_vec ? ++k : 0);
            MT_CHECK(w[i] == expect, "window[%d] = %d, expected %d", i, w[i], expect);
        }
        MT_MPI(MPI_Win_unlock(rank, win));
    }
    MPI_Type_free(&tvec);
    MPI_Type_free(&rvec);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Several MiB from every rank to rank 0 (requests of at most 1 MiB, rendezvous), with a
 * strided origin. */
static void large(void) {
    const int n = 3 * 131072 + 5; /* 3 MiB of doubles and a bit */
    double* base = NULL;
    MPI_Win win;
    MT_MPI(MPI_Win_allocate((MPI_Aint)n * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    memset(base, 0, (size_t)n * 8);
    double* src = malloc((size_t)n * 2 * 8);
    for (int i = 0; i < 2 * n; ++i)
        src[i] = (double)(i / 2 % 1000);
    MPI_Datatype strided;
    MT_MPI(MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &strided));
    MT_MPI(MPI_Type_commit(&strided));
    double* old = malloc((size_t)n * 8);
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_lock_all(0, win));
    MT_MPI(MPI_Accumulate(src, 1, strided, 0, 0, n, MPI_DOUBLE, MPI_SUM, win));
    MT_MPI(MPI_Win_flush(0, win));
    MT_MPI(MPI_Win_unlock_all(win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == nranks - 1) { /* the old values are whole multiples of (i % 1000) */
        MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MT_MPI(MPI_Get_accumulate(NULL, 0, MPI_DOUBLE, old, n, MPI_DOUBLE, 0, 0, n, MPI_DOUBLE,
                                  MPI_NO_OP, win));
        MT_MPI(MPI_Win_unlock(0, win));
        for (int i = 0; i < n; ++i)
            MT_CHECK(old[i] == (double)nranks * (i % 1000), "large: element %d = %g", i, old[i]);
    }
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* Ordering (MPI's default accumulate_ordering): a large REPLACE and then a small one over
     * its first element, with no flush between: the small one must land last, although the
     * large one travels as rendezvous requests that the target applies only once pulled. */
    const int to = (rank + 1) % nranks;
    for (int i = 0; i < n; ++i)
        src[i] = rank + 0.5;
    double last = 1000.0 + rank;
    MT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, to, 0, win));
    MT_MPI(MPI_Accumulate(src, n, MPI_DOUBLE, to, 0, n, MPI_DOUBLE, MPI_REPLACE, win));
    MT_MPI(MPI_Accumulate(&last, 1, MPI_DOUBLE, to, 0, 1, MPI_DOUBLE, MPI_REPLACE, win));
    MT_MPI(MPI_Win_unlock(to, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const int from = (rank + nranks - 1) % nranks;
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    MT_CHECK(base[0] == 1000.0 + from, "ordering: element 0 = %g, expected %g", base[0],
             1000.0 + from);
    MT_CHECK(base[1] == from + 0.5 && base[n - 1] == from + 0.5, "large REPLACE: %g %g", base[1],
             base[n - 1]);
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Type_free(&strided);
    free(src);
    free(old);
    MT_MPI(MPI_Win_free(&win));
}

static void requests_and_errors(MPI_Win win, unsigned char* base) {
    zero_window(win, base, WIN_ELEMS * 8);
    int target = (rank + 1) % nranks;
    long v = rank + 1, old = -1;
    MPI_Request req[2];
    MT_MPI(MPI_Win_lock_all(0, win));
    MT_MPI(MPI_Raccumulate(&v, 1, MPI_LONG, target, 3, 1, MPI_LONG, MPI_SUM, win, &req[0]));
    MT_MPI(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    MT_MPI(MPI_Win_flush(target, win));
    MT_MPI(MPI_Rget_accumulate(&v, 1, MPI_LONG, &old, 1, MPI_LONG, target, 3, 1, MPI_LONG, MPI_SUM,
                               win, &req[1]));
    MT_MPI(MPI_Wait(&req[1], MPI_STATUS_IGNORE));
    MT_CHECK(old == v, "rget_accumulate returned %ld, expected %ld", old, v);

    /* Past the end of the target's window: MPI_ERR_RMA_RANGE, nothing written. */
    MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    long junk[4] = {9, 9, 9, 9};
    int rc = MPI_Accumulate(junk, 4, MPI_LONG, target, WIN_ELEMS - 2, 4, MPI_LONG, MPI_SUM, win);
    if (rc == MPI_SUCCESS) rc = MPI_Win_flush(target, win);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    MT_CHECK(cls == MPI_ERR_RMA_RANGE, "out-of-window accumulate: error class %d", cls);
    rc = MPI_Get_accumulate(junk, 1, MPI_LONG, &old, 1, MPI_LONG, target, WIN_ELEMS, 1, MPI_LONG,
                            MPI_SUM, win);
    if (rc == MPI_SUCCESS) rc = MPI_Win_flush(target, win);
    MPI_Error_class(rc, &cls);
    MT_CHECK(cls == MPI_ERR_RMA_RANGE, "out-of-window get_accumulate: error class %d", cls);
    MT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL));
    MT_MPI(MPI_Win_unlock_all(win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    long* w = (long*)base;
    long from = rank == 0 ? nranks : rank; /* the rank that targets us, plus one */
    for (int i = 0; i < WIN_ELEMS; ++i)
        MT_CHECK(w[i] == (i == 3 ? 2 * from : 0), "window[%d] = %ld after the errors", i, w[i]);
    MT_MPI(MPI_Win_unlock(rank, win));
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* MT_CONCURRENCY_ONLY=1: only the checks that race ranks against each other (for the run
 * with many ranks, where the races are likeliest on a small machine). */
static int concurrency_only;

static void run_all(MPI_Win win, unsigned char* base, const char* flavour) {
    if (!concurrency_only) {
        every_op(win, base);
        pair_ops(win, base);
    }
    concurrent_sums(win, base);
    fop_counters(win, base);
    mixed_paths(win, base);
    threaded_sums(win, base);
    cas_increments(win, base);
    if (!concurrency_only) {
        derived_types(win, base);
        requests_and_errors(win, base);
    }
    if (rank == 0) printf("rma_accumulate: %s window passed\n", flavour);
}

int main(int argc, char** argv) {
    int provided = MPI_THREAD_SINGLE;
    MT_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    thread_multiple = provided == MPI_THREAD_MULTIPLE;
    MT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
    concurrency_only = getenv("MT_CONCURRENCY_ONLY") != NULL;
    unsigned char* base = NULL;
    MPI_Win win;
    MT_MPI(MPI_Win_allocate(WIN_ELEMS * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    run_all(win, base, "allocated");
    MT_MPI(MPI_Win_free(&win));

    /* MT_NO_SHARED=1 skips MPI_Win_allocate_shared (for runs without shared memory, such as
     * Switchyard over tcp only). */
    if (getenv("MT_NO_SHARED") == NULL) {
        MT_MPI(
            MPI_Win_allocate_shared(WIN_ELEMS * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
        run_all(win, base, "shared");
        MT_MPI(MPI_Win_free(&win));
    }

    unsigned char* mem = calloc(WIN_ELEMS, 8);
    MT_MPI(MPI_Win_create(mem, WIN_ELEMS * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    run_all(win, mem, "created");
    MT_MPI(MPI_Win_free(&win));
    free(mem);

    if (!concurrency_only) large();
    if (rank == 0)
        printf("rma_accumulate: passed on %d ranks%s\n", nranks,
               thread_multiple ? " (threads too)" : " (no MPI_THREAD_MULTIPLE: threads skipped)");
    MT_MPI(MPI_Finalize());
    return 0;
}
