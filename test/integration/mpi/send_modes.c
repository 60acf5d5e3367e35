/* The send modes: synchronous (completes only once a receive has matched), buffered (the
 * payload is copied into the attached buffer, so the send completes before any receive
 * exists) and ready (legal only when the receive is already posted), blocking and
 * nonblocking, at eager and rendezvous sizes, payloads checked.
 */
#include "mpitest.h"

#include <time.h>

static const size_t kSizes[] = {0, 8, 8192, 8240, 8241, 30000, 400000, 3000000};
enum { kNumSizes = sizeof kSizes / sizeof kSizes[0] };

static void recv_expect(uint8_t* buf, size_t n, int src, int tag, uint32_t seed, const char* what) {
    MPI_Status st;
    int count;
    MT_MPI(MPI_Recv(buf, (int)n, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st));
    MT_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    MT_CHECK(count == (int)n, "%s %zu B: count %d", what, n, count);
    MT_EXPECT_PATTERN(buf, n, seed, what);
}

static void ssend_pingpong(int me, size_t n, uint8_t* buf) {
    const int peer = 1 - me;
    if (me == 0) {
        mt_fill(buf, n, (uint32_t)n + 1);
        MT_MPI(MPI_Ssend(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
        recv_expect(buf, n, peer, 1, (uint32_t)n + 2, "ssend reply");
    } else {
        recv_expect(buf, n, peer, 1, (uint32_t)n + 1, "ssend");
        mt_fill(buf, n, (uint32_t)n + 2);
        MPI_Request rq;
        MT_MPI(MPI_Issend(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq));
        MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }
}

/* Rank 0's Issend cannot complete while rank 1 has posted no matching receive, however much
 * it progresses (even for a message small enough to go eagerly). Rank 1 posts that receive
 * only after a second message, which rank 0 sends after it has polled for a while. */
static void issend_waits_for_match(int me, size_t n, uint8_t* buf) {
    if (me == 0) {
        mt_fill(buf, n, 555);
        MPI_Request rq;
        MT_MPI(MPI_Issend(buf, (int)n, MPI_BYTE, 1, 20, MPI_COMM_WORLD, &rq));
        const double until = MPI_Wtime() + 0.05;
        while (MPI_Wtime() < until) {
            int done = 0;
            MT_MPI(MPI_Test(&rq, &done, MPI_STATUS_IGNORE));
            MT_CHECK(!done, "Issend of %zu B completed before any receive was posted", n);
        }
        int go = 1;
        MT_MPI(MPI_Send(&go, 1, MPI_INT, 1, 21, MPI_COMM_WORLD));
        MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else {
        int go = 0;
        MT_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        recv_expect(buf, n, 0, 20, 555, "issend after go");
    }
}

/* Rank 0 Bsends every size (and Ibsends them again) and detaches the buffer before rank 1
 * posts anything: the sends completed from the attached buffer. */
static void bsend_all(int me, uint8_t* buf) {
    if (me == 0) {
        int total = 0;
        for (int i = 0; i < kNumSizes; ++i) {
            int sz;
            MT_MPI(MPI_Pack_size((int)kSizes[i], MPI_BYTE, MPI_COMM_WORLD, &sz));
            total += 2 * (sz + MPI_BSEND_OVERHEAD);
        }
        void* attached = mt_malloc((size_t)total);
        MT_MPI(MPI_Buffer_attach(attached, total));
        for (int i = 0; i < kNumSizes; ++i) {
            mt_fill(buf, kSizes[i], (uint32_t)i + 40);
            MT_MPI(MPI_Bsend(buf, (int)kSizes[i], MPI_BYTE, 1, 30, MPI_COMM_WORLD));
            mt_fill(buf, kSizes[i], (uint32_t)i + 60);
            MPI_Request rq;
            MT_MPI(MPI_Ibsend(buf, (int)kSizes[i], MPI_BYTE, 1, 31, MPI_COMM_WORLD, &rq));
            MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            memset(buf, 0, kSizes[i]); /* the library must hold its own copy now */
        }
        MPI_Barrier(MPI_COMM_WORLD);
        void* back;
        int back_size;
        MT_MPI(MPI_Buffer_detach(&back, &back_size)); /* waits until the messages are out */
        MT_CHECK(back == attached && back_size == total, "detach returned another buffer");
        free(back);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < kNumSizes; ++i) {
            recv_expect(buf, kSizes[i], 0, 30, (uint32_t)i + 40, "bsend");
            recv_expect(buf, kSizes[i], 0, 31, (uint32_t)i + 60, "ibsend");
        }
    }
}

/* Ready mode: the receive is posted before the barrier, the Rsend after it. */
static void rsend(int me, size_t n, uint8_t* buf, int nonblocking) {
    if (me == 1) {
        MPI_Request rq;
        MPI_Status st;
        MT_MPI(MPI_Irecv(buf, (int)n, MPI_BYTE, 0, 40, MPI_COMM_WORLD, &rq));
        MPI_Barrier(MPI_COMM_WORLD);
        MT_MPI(MPI_Wait(&rq, &st));
        MT_EXPECT_PATTERN(buf, n, (uint32_t)n + 70, "rsend");
    } else {
        mt_fill(buf, n, (uint32_t)n + 70);
        MPI_Barrier(MPI_COMM_WORLD);
        if (nonblocking) {
            MPI_Request rq;
            MT_MPI(MPI_Irsend(buf, (int)n, MPI_BYTE, 1, 40, MPI_COMM_WORLD, &rq));
            MT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        } else {
            MT_MPI(MPI_Rsend(buf, (int)n, MPI_BYTE, 1, 40, MPI_COMM_WORLD));
        }
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    const int me = mt_rank();
    uint8_t* buf = (uint8_t*)mt_malloc(kSizes[kNumSizes - 1]);
    for (int i = 0; i < kNumSizes; ++i)
        ssend_pingpong(me, kSizes[i], buf);
    for (int i = 0; i < kNumSizes; ++i)
        issend_waits_for_match(me, kSizes[i], buf);
    bsend_all(me, buf);
    for (int i = 0; i < kNumSizes; ++i) {
        rsend(me, kSizes[i], buf, 0);
        rsend(me, kSizes[i], buf, 1);
    }
    free(buf);
    mt_pass("send_modes");
    MPI_Finalize();
    return 0;
}
