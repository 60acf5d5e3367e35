/* Probe and matched probe: MPI_Probe/Iprobe report a message without taking it; MPI_Mprobe/
 * Improbe take it out of matching, so that only MPI_Mrecv/Imrecv on that handle can receive
 * it, in any order. Sizes cover eager and rendezvous (a probed RTS must report the full
 * size before any data has moved).
 */
#include "mpitest.h"

static const size_t kSizes[] = {0, 100, 4065, 30000, 1000000};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0] };

static void expect_status(const MPI_Status* st, int src, int tag, size_t n, const char* what) {
    int count;
    MT_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    MT_CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag && count == (int)n,
             "%s: source %d tag %d count %d, want %d %d %zu", what, st->MPI_SOURCE, st->MPI_TAG,
             count, src, tag, n);
}

/* Probe (blocking, then Iprobe twice: a probe must not consume), then receive. Each size has
 * its own tag (the sender runs ahead: a later message with the same tag would be probeable). */
static void probe_then_recv(int me, int index, uint8_t* buf) {
    const size_t n = kSizes[index];
    const int tag = 10 + index;
    if (me == 1) {
        mt_fill(buf, n, (uint32_t)n);
        MT_MPI(MPI_Send(buf, (int)n, MPI_BYTE, 0, tag, MPI_COMM_WORLD));
        return;
    }
    MPI_Status st;
    MT_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    expect_status(&st, 1, tag, n, "probe");
    for (int i = 0; i < 2; ++i) {
        int flag = 0;
        MT_MPI(MPI_Iprobe(1, tag, MPI_COMM_WORLD, &flag, &st));
        MT_CHECK(flag, "iprobe %d after probe did not see the %zu B message", i, n);
        expect_status(&st, 1, tag, n, "iprobe");
    }
    MT_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st));
    expect_status(&st, 1, tag, n, "recv after probe");
    MT_EXPECT_PATTERN(buf, n, (uint32_t)n, "recv after probe");
    int flag = 1;
    MT_MPI(MPI_Iprobe(1, tag, MPI_COMM_WORLD, &flag, &st));
    MT_CHECK(!flag, "message still probeable after it was received");
}

/* Two messages with the same tag; both are matched-probed, then received newest first. A
 * matched message must not be seen by a later probe or taken by an ordinary receive. */
static void mprobe_out_of_order(int me, size_t n1, size_t n2, uint8_t* b1, uint8_t* b2) {
    const int tag = 77;
    if (me == 1) {
        mt_fill(b1, n1, 1001);
        mt_fill(b2, n2, 1002);
        MPI_Request rq[2];
        MT_MPI(MPI_Isend(b1, (int)n1, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &rq[0]));
        MT_MPI(MPI_Isend(b2, (int)n2, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &rq[1]));
        MT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        return;
    }
    MPI_Message m1, m2;
    MPI_Status st;
    MT_MPI(MPI_Mprobe(1, tag, MPI_COMM_WORLD, &m1, &st));
    expect_status(&st, 1, tag, n1, "mprobe first");
    int flag = 0;
    while (!flag)
        MT_MPI(MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &m2, &st));
    expect_status(&st, 1, tag, n2, "improbe second");
    MT_MPI(MPI_Iprobe(1, tag, MPI_COMM_WORLD, &flag, &st));
    MT_CHECK(!flag, "a matched-probed message is still visible to MPI_Iprobe");

    MPI_Request rq;
    MT_MPI(MPI_Imrecv(b2, (int)n2, MPI_BYTE, &m2, &rq));
    MT_CHECK(m2 == MPI_MESSAGE_NULL, "Imrecv did not consume its message handle");
    MT_MPI(MPI_Wait(&rq, &st));
    expect_status(&st, 1, tag, n2, "imrecv second");
    MT_EXPECT_PATTERN(b2, n2, 1002, "imrecv second");
    MT_MPI(MPI_Mrecv(b1, (int)n1, MPI_BYTE, &m1, &st));
    expect_status(&st, 1, tag, n1, "mrecv first");
    MT_EXPECT_PATTERN(b1, n1, 1001, "mrecv first");
}

/* MPI_PROC_NULL is answered by the MPI layer, but a PML must not break it. */
static void mprobe_proc_null(void) {
    MPI_Message m;
    MPI_Status st;
    MT_MPI(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
    MT_CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "mprobe of PROC_NULL");
    MT_MPI(MPI_Mrecv(NULL, 0, MPI_BYTE, &m, &st));
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    const int me = mt_rank();
    const size_t max = kSizes[kNumSizes - 1];
    uint8_t* b1 = (uint8_t*)mt_malloc(max);
    uint8_t* b2 = (uint8_t*)mt_malloc(max);
    for (int i = 0; i < kNumSizes; ++i)
        probe_then_recv(me, i, b1);
    for (int i = 0; i < kNumSizes; ++i)
        for (int j = 0; j < kNumSizes; ++j) {
            mprobe_out_of_order(me, kSizes[i], kSizes[j], b1, b2);
            MPI_Barrier(MPI_COMM_WORLD); /* next pair only once this one is received */
        }
    mprobe_proc_null();
    free(b1);
    free(b2);
    mt_pass("probe");
    MPI_Finalize();
    return 0;
}
