/* Collectives over the PML (Open MPI's coll components are built on point-to-point):
 * bcast from every root, reduce and allreduce with known sums and maxima, alltoall with
 * per-pair values, at sizes that make the collectives use eager and rendezvous messages,
 * and a barrier that is shown to wait for the slowest rank. */
#include "mpitest.h"

#include <unistd.h>

static void bcast(int me, int np) {
    const int counts[] = {1, 5000, 1 << 20};
    uint8_t* buf = (uint8_t*)mt_malloc(1 << 20);
    for (int c = 0; c < 3; ++c)
        for (int root = 0; root < np; ++root) {
            const size_t n = (size_t)counts[c];
            const uint32_t seed = (uint32_t)(root * 100 + c);
            if (me == root)
                mt_fill(buf, n, seed);
            else
                memset(buf, 0, n);
            MT_MPI(MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD));
            MT_EXPECT_PATTERN(buf, n, seed, "bcast");
        }
    free(buf);
}

/* Element i of rank r contributes r + i; the sum over ranks is np*i + np(np-1)/2 and the
 * maximum (np-1) + i. Doubles with exact small integers, so the sum is exact. */
static void reductions(int me, int np) {
    const int counts[] = {1, 1000, 300000};
    for (int c = 0; c < 3; ++c) {
        const int n = counts[c];
        double* in = (double*)mt_malloc((size_t)n * sizeof(double));
        double* out = (double*)mt_malloc((size_t)n * sizeof(double));
        long* lin = (long*)mt_malloc((size_t)n * sizeof(long));
        long* lout = (long*)mt_malloc((size_t)n * sizeof(long));
        for (int i = 0; i < n; ++i) {
            in[i] = me + i;
            lin[i] = me + i;
        }
        for (int root = 0; root<np; root += np> 2 ? np - 1 : 1) {
            MT_MPI(MPI_Reduce(lin, lout, n, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
            if (me == root)
                for (int i = 0; i < n; ++i)
                    MT_CHECK(lout[i] == (long)np * i + (long)np * (np - 1) / 2,
                             "reduce to %d: [%d] = %ld", root, i, lout[i]);
        }
        MT_MPI(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < n; ++i)
            MT_CHECK(out[i] == (double)np * i + np * (np - 1) / 2.0, "allreduce sum [%d] = %f", i,
                     out[i]);
        MT_MPI(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        for (int i = 0; i < n; ++i)
            MT_CHECK(out[i] == (double)(np - 1 + i), "allreduce max [%d] = %f", i, out[i]);
        free(in);
        free(out);
        free(lin);
        free(lout);
    }
}

static void alltoall(int me, int np) {
    const int counts[] = {1, 1000, 40000};
    for (int c = 0; c < 3; ++c) {
        const int n = counts[c];
        int* sb = (int*)mt_malloc((size_t)n * np * sizeof(int));
        int* rb = (int*)mt_malloc((size_t)n * np * sizeof(int));
        for (int p = 0; p < np; ++p)
            for (int i = 0; i < n; ++i)
                sb[p * n + i] = (me * 64 + p) * 100003 + i;
        MT_MPI(MPI_Alltoall(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD));
        for (int p = 0; p < np; ++p)
            for (int i = 0; i < n; ++i)
                MT_CHECK(rb[p * n + i] == (p * 64 + me) * 100003 + i, "alltoall from %d [%d] = %d",
                         p, i, rb[p * n + i]);
        free(sb);
        free(rb);
    }
}

/* The last rank arrives 300 ms late; nobody may leave the barrier before it enters. */
static void barrier(int me, int np) {
    for (int i = 0; i < 20; ++i)
        MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const double delay = 0.3;
    double t0 = MPI_Wtime();
    if (me == np - 1)
        while (MPI_Wtime() - t0 < delay)
            usleep(1000); /* sleeps: 8 ranks may share 2 cores */
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const double waited = MPI_Wtime() - t0;
    /* A third of the delay: clocks of different processes are not compared; each rank measures
   * its own wait, which is the late rank's delay less how much later this rank left the
   * previous barrier (scheduling skew, up to ~0.2 s on a loaded, oversubscribed host). */
    if (me != np - 1)
        MT_CHECK(waited > delay / 3, "left the barrier after %.3f s, before the late rank came",
                 waited);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    MT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* everyone is up before the barrier timing */
    barrier(me, np);
    bcast(me, np);
    reductions(me, np);
    alltoall(me, np);
    mt_pass("collectives");
    MPI_Finalize();
    return 0;
}
