/* Persistent requests: Send_init/Recv_init once, then Start/Startall many times with new
 * contents each round; every round's payload is checked, so a request that re-sent a stale
 * snapshot or completed without moving data fails. Inactive requests complete at once. */
#include "mpitest.h"

static const size_t kSizes[] = {0, 64, 4065, 30000, 400000};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0], kRounds = 25 };

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    const int me = mt_rank(), peer = 1 - me;
    uint8_t* sbuf[kNumSizes];
    uint8_t* rbuf[kNumSizes];
    MPI_Request rq[2 * kNumSizes];
    for (int i = 0; i < kNumSizes; ++i) {
        sbuf[i] = (uint8_t*)mt_malloc(kSizes[i]);
        rbuf[i] = (uint8_t*)mt_malloc(kSizes[i] + MT_GUARD);
        MT_MPI(MPI_Recv_init(rbuf[i], (int)kSizes[i], MPI_BYTE, peer, i, MPI_COMM_WORLD, &rq[i]));
        MT_MPI(MPI_Send_init(sbuf[i], (int)kSizes[i], MPI_BYTE, peer, i, MPI_COMM_WORLD,
                             &rq[kNumSizes + i]));
    }

    /* A persistent request that was never started is inactive: Wait returns at once with an
   * empty status. */
    MPI_Status st;
    MT_MPI(MPI_Wait(&rq[0], &st));
    MT_CHECK(rq[0] != MPI_REQUEST_NULL, "Wait freed an inactive persistent request");

    for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < kNumSizes; ++i) {
            mt_fill(sbuf[i], kSizes[i], (uint32_t)(round * 16 + i) + (uint32_t)me * 1000);
            mt_set_guard(rbuf[i] + kSizes[i], MT_GUARD);
        }
        if (round % 2 == 0) {
            MT_MPI(MPI_Startall(2 * kNumSizes, rq));
        } else {
            /* one at a time, sends first on one side and receives first on the other */
            for (int k = 0; k < 2 * kNumSizes; ++k)
                MT_MPI(MPI_Start(&rq[me == 0 ? k : 2 * kNumSizes - 1 - k]));
        }
        MPI_Status sts[2 * kNumSizes];
        MT_MPI(MPI_Waitall(2 * kNumSizes, rq, sts));
        for (int i = 0; i < kNumSizes; ++i) {
            int count;
            MT_MPI(MPI_Get_count(&sts[i], MPI_BYTE, &count));
            MT_CHECK(count == (int)kSizes[i] && sts[i].MPI_TAG == i && sts[i].MPI_SOURCE == peer,
                     "round %d size %zu: count %d tag %d source %d", round, kSizes[i], count,
                     sts[i].MPI_TAG, sts[i].MPI_SOURCE);
            MT_EXPECT_PATTERN(rbuf[i], kSizes[i],
                              (uint32_t)(round * 16 + i) + (uint32_t)peer * 1000,
                              "persistent receive");
            MT_CHECK(mt_guard_intact(rbuf[i] + kSizes[i], MT_GUARD), "guard overwritten");
        }
    }
    for (int i = 0; i < 2 * kNumSizes; ++i) {
        MT_MPI(MPI_Request_free(&rq[i]));
        MT_CHECK(rq[i] == MPI_REQUEST_NULL, "Request_free left the handle set");
    }
    for (int i = 0; i < kNumSizes; ++i) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    mt_pass("persistent");
    MPI_Finalize();
    return 0;
}
