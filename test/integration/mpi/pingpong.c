/* Ping-pong from 0 B to 64 MiB, around every protocol boundary, checked byte for byte.
 *
 * Each size travels three ways, because each takes a different path through a PML:
 *   expected:   the receive is posted before the send starts (posted-queue match);
 *   unexpected: the send starts before the receive is posted (unexpected queue; for a
 *               rendezvous size the RTS waits there), and the receive offers MT_GUARD more
 *               bytes than arrive, so MPI_Get_count and the untouched tail are checked;
 *   self:       every rank sends to itself (loop-back transport).
 * Rank 1 answers each message with a differently seeded one, so both directions are checked.
 */
#include "mpitest.h"
#include "mt_sizes.h"

static void check_status(const MPI_Status* st, int source, int tag, size_t n, const char* what) {
    int count = -1;
    MT_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    if (st->MPI_SOURCE != source || st->MPI_TAG != tag || count != (int)n)
        MT_FAIL("%s: status source %d tag %d count %d, want %d %d %zu", what, st->MPI_SOURCE,
                st->MPI_TAG, count, source, tag, n);
}

/* Receive n bytes into rbuf offering `room` bytes, then check payload, status and that the
 * MT_GUARD bytes after the n received ones are untouched. */
static void recv_checked(uint8_t* rbuf, size_t n, size_t room, int src, int tag, uint32_t seed,
                         const char* what) {
    MPI_Status st;
    mt_set_guard(rbuf + n, MT_GUARD);
    MT_MPI(MPI_Recv(rbuf, (int)room, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st));
    check_status(&st, src, tag, n, what);
    MT_EXPECT_PATTERN(rbuf, n, seed, what);
    MT_CHECK(mt_guard_intact(rbuf + n, MT_GUARD), "%s: bytes written past the %zu received", what,
             n);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    const int me = mt_rank(), peer = 1 - me;
    mt_sizes_t sizes = mt_sizes_build();
    const size_t max = mt_sizes_max(&sizes);
    uint8_t* sbuf = (uint8_t*)mt_malloc(max + MT_GUARD);
    uint8_t* rbuf = (uint8_t*)mt_malloc(max + 2 * MT_GUARD);
    char what[96];

    for (size_t i = 0; i < sizes.n; ++i) {
        const size_t n = sizes.v[i];
        const int tag = (int)(i % 30000);
        const uint32_t seed = (uint32_t)n * 8u;

        /* expected: rank 1 posts first; the barrier orders the post before rank 0's send */
        snprintf(what, sizeof what, "expected %zu B", n);
        if (me == 0) {
            mt_fill(sbuf, n, seed);
            MPI_Barrier(MPI_COMM_WORLD);
            MT_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            recv_checked(rbuf, n, n, peer, tag, seed + 1, what);
        } else {
            MPI_Request rq;
            MPI_Status st;
            mt_set_guard(rbuf + n, MT_GUARD);
            MT_MPI(MPI_Irecv(rbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq));
            MPI_Barrier(MPI_COMM_WORLD);
            MT_MPI(MPI_Wait(&rq, &st));
            check_status(&st, peer, tag, n, what);
            MT_EXPECT_PATTERN(rbuf, n, seed, what);
            MT_CHECK(mt_guard_intact(rbuf + n, MT_GUARD), "%s: guard overwritten", what);
            mt_fill(sbuf, n, seed + 1);
            MT_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }

        /* unexpected: the send is in flight before the receive exists. Messages from one peer
     * match in order, so once rank 1 has left the barrier the data (or its RTS) is ahead. */
        snprintf(what, sizeof what, "unexpected %zu B", n);
        if (me == 0) {
            MPI_Request rq;
            mt_fill(sbuf, n, seed + 2);
            MT_MPI(MPI_Isend(sbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq));
            MPI_Barrier(MPI_COMM_WORLD);
            MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            recv_checked(rbuf, n, n + MT_GUARD, peer, tag, seed + 3, what);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            recv_checked(rbuf, n, n + MT_GUARD, peer, tag, seed + 2, what);
            mt_fill(sbuf, n, seed + 3);
            MT_MPI(MPI_Send(sbuf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }

        /* self: a rank's own endpoint, send started before the receive */
        snprintf(what, sizeof what, "self %zu B", n);
        {
            MPI_Request rq;
            mt_fill(sbuf, n, seed + 4 + (uint32_t)me);
            MT_MPI(MPI_Isend(sbuf, (int)n, MPI_BYTE, me, tag, MPI_COMM_WORLD, &rq));
            recv_checked(rbuf, n, n + MT_GUARD, me, tag, seed + 4 + (uint32_t)me, what);
            MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        }
    }
    if (me == 0) printf("%zu sizes from 0 to %zu B\n", sizes.n, max);
    free(sbuf);
    free(rbuf);
    free(sizes.v);
    mt_pass("pingpong");
    MPI_Finalize();
    return 0;
}
