/* Ring and all-to-all exchanges between every pair of ranks, at sizes on each protocol.
 *
 * The ring sends to the right and receives from the left at once (MPI_Sendrecv, then with
 * nonblocking calls), so every endpoint carries traffic both ways at the same time. The
 * all-to-all posts a receive from every peer, sends to every peer, and completes them in
 * whatever order they finish (MPI_Waitany); every payload is seeded with (source,
 * destination, size), so a message delivered to the wrong receive fails its check.
 */
#include "mpitest.h"

/* Around the protocol edges of the built-in figures (mt_sizes.h): one byte past a fragment, the
 * last PIO (or single FIFO) message and the first fragmented one, the last eager and the first
 * rendezvous size (103086/103087, endpoints with and without PIO alike), where a GET is split
 * (131071/131072), and one byte past a GET chunk. */
static const size_t kSizes[] = {0, 1, 8225, 8240, 8241, 103086, 103087, 131071, 131072, 524289};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0] };

static uint32_t seed_of(int src, int dst, size_t n) {
    return (uint32_t)(src * 1000003 + dst * 7919) ^ (uint32_t)n;
}

static void ring(int me, int np, size_t n, uint8_t* sbuf, uint8_t* rbuf) {
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    MPI_Status st;
    int count;
    mt_fill(sbuf, n, seed_of(me, right, n));
    mt_set_guard(rbuf + n, MT_GUARD);
    MT_MPI(MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, right, 1, rbuf, (int)n, MPI_BYTE, left, 1,
                        MPI_COMM_WORLD, &st));
    MT_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    MT_CHECK(st.MPI_SOURCE == left && count == (int)n, "sendrecv %zu B: source %d count %d", n,
             st.MPI_SOURCE, count);
    MT_EXPECT_PATTERN(rbuf, n, seed_of(left, me, n), "ring sendrecv");
    MT_CHECK(mt_guard_intact(rbuf + n, MT_GUARD), "ring sendrecv %zu B: guard overwritten", n);

    /* Same exchange the other way round, nonblocking, receive posted after the send. */
    MPI_Request rq[2];
    mt_fill(sbuf, n, seed_of(me, left, n) + 1);
    MT_MPI(MPI_Isend(sbuf, (int)n, MPI_BYTE, left, 2, MPI_COMM_WORLD, &rq[0]));
    MT_MPI(MPI_Irecv(rbuf, (int)n, MPI_BYTE, right, 2, MPI_COMM_WORLD, &rq[1]));
    MT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    MT_EXPECT_PATTERN(rbuf, n, seed_of(right, me, n) + 1, "ring isend/irecv");
}

/* A token goes round the ring np times, each rank adding its rank: checks that a chain of
 * dependent messages through every endpoint arrives and that nothing is duplicated. */
static void token(int me, int np) {
    long value = 0;
    for (int lap = 0; lap < np; ++lap) {
        if (me == 0) {
            value += me;
            MT_MPI(MPI_Send(&value, 1, MPI_LONG, 1 % np, 3, MPI_COMM_WORLD));
            MT_MPI(MPI_Recv(&value, 1, MPI_LONG, np - 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            MT_MPI(MPI_Recv(&value, 1, MPI_LONG, me - 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            value += me;
            MT_MPI(MPI_Send(&value, 1, MPI_LONG, (me + 1) % np, 3, MPI_COMM_WORLD));
        }
    }
    if (me == 0) {
        long want = (long)np * np * (np - 1) / 2;
        MT_CHECK(value == want, "token %ld, want %ld", value, want);
    }
}

static void alltoall(int me, int np, size_t n, uint8_t* sbufs, uint8_t* rbufs) {
    const size_t stride = n + MT_GUARD;
    MPI_Request* rq = (MPI_Request*)mt_malloc(2 * (size_t)np * sizeof(MPI_Request));
    for (int p = 0; p < np; ++p) {
        mt_set_guard(rbufs + p * stride + n, MT_GUARD);
        MT_MPI(MPI_Irecv(rbufs + p * stride, (int)n, MPI_BYTE, p, 4, MPI_COMM_WORLD, &rq[p]));
    }
    for (int k = 0; k < np; ++k) {
        const int p = (me + k) % np; /* staggered so that not everyone sends to rank 0 first */
        mt_fill(sbufs + p * stride, n, seed_of(me, p, n) + 2);
        MT_MPI(MPI_Isend(sbufs + p * stride, (int)n, MPI_BYTE, p, 4, MPI_COMM_WORLD, &rq[np + p]));
    }
    for (int done = 0; done < np; ++done) {
        int idx;
        MPI_Status st;
        MT_MPI(MPI_Waitany(np, rq, &idx, &st));
        MT_CHECK(idx >= 0 && idx < np && st.MPI_SOURCE == idx, "waitany index %d source %d", idx,
                 st.MPI_SOURCE);
        MT_EXPECT_PATTERN(rbufs + idx * stride, n, seed_of(idx, me, n) + 2, "alltoall");
        MT_CHECK(mt_guard_intact(rbufs + idx * stride + n, MT_GUARD), "alltoall guard from %d",
                 idx);
    }
    MT_MPI(MPI_Waitall(np, rq + np, MPI_STATUSES_IGNORE));
    free(rq);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    const size_t max = kSizes[kNumSizes - 1];
    uint8_t* sbuf = (uint8_t*)mt_malloc(max + MT_GUARD);
    uint8_t* rbuf = (uint8_t*)mt_malloc(max + MT_GUARD);
    for (int i = 0; i < kNumSizes; ++i)
        ring(me, np, kSizes[i], sbuf, rbuf);
    token(me, np);
    free(sbuf);
    free(rbuf);

    /* All-to-all memory grows with np^2 x size: keep 8 ranks on 2 cores small. */
    const size_t a2a_max = np > 4 ? 400000 : max;
    uint8_t* sbufs = (uint8_t*)mt_malloc((size_t)np * (a2a_max + MT_GUARD));
    uint8_t* rbufs = (uint8_t*)mt_malloc((size_t)np * (a2a_max + MT_GUARD));
    for (int rep = 0; rep < 3; ++rep)
        for (int i = 0; i < kNumSizes && kSizes[i] <= a2a_max; ++i)
            alltoall(me, np, kSizes[i], sbufs, rbufs);
    free(sbufs);
    free(rbufs);
    mt_pass("ring_alltoall");
    MPI_Finalize();
    return 0;
}
