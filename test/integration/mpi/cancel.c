/* Cancel of receives: a receive that nothing matches can be cancelled (MPI_Test_cancelled
 * says so) and does not swallow a message sent later; a receive that has completed is not
 * cancelled. Specific and wildcard receives, many in a row (the request pool must recycle
 * cancelled requests). */
#include "mpitest.h"

enum { kMany = 200 };

static void cancel_one(int src, int tag) {
    int v = -1, cancelled = 0;
    MPI_Request rq;
    MPI_Status st;
    MT_MPI(MPI_Irecv(&v, 1, MPI_INT, src, tag, MPI_COMM_WORLD, &rq));
    MT_MPI(MPI_Cancel(&rq));
    MT_MPI(MPI_Wait(&rq, &st));
    MT_MPI(MPI_Test_cancelled(&st, &cancelled));
    MT_CHECK(cancelled, "unmatched receive (source %d tag %d) was not cancelled", src, tag);
    MT_CHECK(v == -1, "a cancelled receive wrote its buffer");
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() >= 2, "needs 2 ranks");
    const int me = mt_rank();

    if (me == 0) {
        cancel_one(1, 5);
        cancel_one(MPI_ANY_SOURCE, 5);
        cancel_one(MPI_ANY_SOURCE, MPI_ANY_TAG);
        for (int i = 0; i < kMany; ++i)
            cancel_one(i % 2 ? 1 : MPI_ANY_SOURCE, i);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Rank 1 now sends tag 5 (small and rendezvous-sized): the cancelled receives above must
   * not have taken them, fresh receives get them, and they are not marked cancelled. */
    const size_t big = 1000000;
    uint8_t* buf = (uint8_t*)mt_malloc(big);
    if (me == 1) {
        int v = 42;
        MT_MPI(MPI_Send(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
        mt_fill(buf, big, 5);
        MT_MPI(MPI_Send(buf, (int)big, MPI_BYTE, 0, 5, MPI_COMM_WORLD));
    } else if (me == 0) {
        int v = -1, cancelled = 1;
        MPI_Status st;
        MT_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &st));
        MT_CHECK(v == 42, "message after cancels carried %d", v);
        MT_MPI(MPI_Test_cancelled(&st, &cancelled));
        MT_CHECK(!cancelled, "a completed receive reports cancelled");

        /* Cancel after completion: the receive keeps its data and is not cancelled. */
        MPI_Request rq;
        MT_MPI(MPI_Irecv(buf, (int)big, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &rq));
        int done = 0;
        while (!done)
            MT_MPI(MPI_Test(&rq, &done, &st)); /* completes and frees the request */
        MT_EXPECT_PATTERN(buf, big, 5, "rendezvous receive");
        MT_MPI(MPI_Test_cancelled(&st, &cancelled));
        MT_CHECK(!cancelled, "rendezvous receive reports cancelled");

        /* Cancel racing a match: either outcome is legal, but it must be self-consistent. */
        int w = -1;
        MT_MPI(MPI_Irecv(&w, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, &rq));
        MT_MPI(MPI_Send(&done, 0, MPI_INT, 1, 7, MPI_COMM_WORLD)); /* tell rank 1 to send tag 6 */
        MT_MPI(MPI_Cancel(&rq));
        MT_MPI(MPI_Wait(&rq, &st));
        MT_MPI(MPI_Test_cancelled(&st, &cancelled));
        if (cancelled) {
            MT_CHECK(w == -1, "cancelled receive wrote its buffer");
            MT_MPI(MPI_Recv(&w, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, &st));
        }
        MT_CHECK(w == 6, "tag-6 message carried %d", w);
    }
    if (me == 1) {
        int six = 6;
        MT_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MT_MPI(MPI_Send(&six, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
    }
    free(buf);
    mt_pass("cancel");
    MPI_Finalize();
    return 0;
}
