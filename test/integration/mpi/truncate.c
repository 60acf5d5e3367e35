/* Truncation under MPI_ERRORS_RETURN: a message longer than the receive buffer completes the
 * receive with MPI_ERR_TRUNCATE, writes nothing past the buffer (guard bytes intact), lets
 * the sender complete normally, and leaves the connection usable. Checked for blocking and
 * nonblocking receives (MPI_Wait returns the error; MPI_Waitall reports MPI_ERR_IN_STATUS
 * with the error in the status) at eager and rendezvous sizes, and for a blocking receive
 * with MPI_STATUS_IGNORE (pml swy's MPI_Recv then asks Switchyard for no match information:
 * the truncation must still come back as the call's error).
 */
#include "mpitest.h"

static const size_t kSizes[] = {1, 100, 4065, 8200, 30000, 400000, 3000000};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0] };

static int error_class(int rc) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* Rank 1 sends n bytes; rank 0 offers `room` < n. `how` picks the receive call. */
static void truncated(int me, size_t n, size_t room, int how, uint8_t* buf) {
    const int tag = 3 + how;
    if (me == 1) {
        mt_fill(buf, n, (uint32_t)n);
        int rc = MPI_Send(buf, (int)n, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
        MT_CHECK(rc == MPI_SUCCESS, "sender of a truncated %zu B message got error %d", n, rc);
        return;
    }
    memset(buf, 0, room);
    mt_set_guard(buf + room, MT_GUARD);
    MPI_Status st;
    int rc, cls;
    if (how == 0) {
        rc = MPI_Recv(buf, (int)room, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st);
        cls = error_class(rc);
    } else if (how == 3) {
        rc = MPI_Recv(buf, (int)room, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        cls = error_class(rc);
    } else if (how == 1) {
        MPI_Request rq;
        MT_MPI(MPI_Irecv(buf, (int)room, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &rq));
        rc = MPI_Wait(&rq, &st);
        cls = error_class(rc);
    } else {
        MPI_Request rq;
        MT_MPI(MPI_Irecv(buf, (int)room, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &rq));
        rc = MPI_Waitall(1, &rq, &st);
        MT_CHECK(error_class(rc) == MPI_ERR_IN_STATUS,
                 "waitall on a truncated receive returned "
                 "class %d, want MPI_ERR_IN_STATUS",
                 error_class(rc));
        cls = error_class(st.MPI_ERROR);
    }
    MT_CHECK(cls == MPI_ERR_TRUNCATE,
             "%zu B into %zu B (call %d): error class %d, want "
             "MPI_ERR_TRUNCATE (%d)",
             n, room, how, cls, MPI_ERR_TRUNCATE);
    MT_CHECK(mt_guard_intact(buf + room, MT_GUARD),
             "%zu B into %zu B: bytes written past the "
             "receive buffer",
             n, room);
}

/* After each truncation the same pair exchanges a full message: nothing is left stuck. The
 * receive fits exactly, with a status and with MPI_STATUS_IGNORE (@p ignore). */
static void still_usable(int me, size_t n, uint8_t* buf, int ignore) {
    if (me == 1) {
        mt_fill(buf, n, (uint32_t)n + 9);
        MT_MPI(MPI_Send(buf, (int)n, MPI_BYTE, 0, 99, MPI_COMM_WORLD));
    } else {
        MPI_Status st;
        mt_set_guard(buf + n, MT_GUARD);
        MT_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 1, 99, MPI_COMM_WORLD,
                        ignore ? MPI_STATUS_IGNORE : &st));
        MT_EXPECT_PATTERN(buf, n, (uint32_t)n + 9, "message after a truncation");
        MT_CHECK(mt_guard_intact(buf + n, MT_GUARD), "%zu B: bytes written past the buffer", n);
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    const int me = mt_rank();
    uint8_t* buf = (uint8_t*)mt_malloc(kSizes[kNumSizes - 1] + MT_GUARD);
    for (int i = 0; i < kNumSizes; ++i)
        for (int how = 0; how < 4; ++how) {
            const size_t n = kSizes[i];
            truncated(me, n, n - 1, how, buf); /* one byte short: the edge case */
            if (n > 2) truncated(me, n, n / 2, how, buf);
            truncated(me, n, 0, how, buf);
            still_usable(me, n, buf, how == 3);
        }
    free(buf);
    mt_pass("truncate");
    MPI_Finalize();
    return 0;
}
