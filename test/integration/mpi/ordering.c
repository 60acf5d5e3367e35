/* MPI's ordering rules with wildcards.
 *
 * 1. Non-overtaking across protocols: every other rank sends rank 0 a stream of messages
 *    whose sizes cycle through eager (PIO and bcopy) and rendezvous sizes; rank 0 receives
 *    them all with MPI_ANY_SOURCE / MPI_ANY_TAG and checks that each source's messages
 *    arrive in send order. A PML that lets a small eager message pass a rendezvous RTS sent
 *    before it breaks this.
 * 2. Post order: receives posted as specific, wildcard, specific match the messages in the
 *    order they were posted, whether the messages arrive after the posts (posted queue) or
 *    before them (unexpected queue).
 * 3. A flood of small sends issued before any receive exists (more than the receiver's
 *    FIFO holds) still arrives complete and in order.
 */
#include "mpitest.h"

static const size_t kCycle[] = {8, 0, 8241, 40000, 17, 400000, 8240, 9000, 3000000, 1};
enum { kCycleLen = sizeof kCycle / sizeof kCycle[0], kStreamLen = 60, kFlood = 2000 };

/* The first 8 bytes of every stream message carry (sequence << 16 | source). */
static void stream(int me, int np) {
    const size_t max = 3000000;
    uint8_t* buf = (uint8_t*)mt_malloc(max + 8);
    if (me != 0) {
        for (int j = 0; j < kStreamLen; ++j) {
            size_t n = kCycle[(j + me) % kCycleLen];
            uint64_t hdr = (uint64_t)j << 16 | (uint64_t)me;
            mt_fill(buf, n + 8, (uint32_t)(j * 131 + me));
            memcpy(buf, &hdr, 8);
            MT_MPI(MPI_Send(buf, (int)(n + 8), MPI_BYTE, 0, j % 5, MPI_COMM_WORLD));
        }
    } else {
        int* next = (int*)calloc((size_t)np, sizeof(int));
        for (int k = 0; k < (np - 1) * kStreamLen; ++k) {
            MPI_Status st;
            int count;
            MT_MPI(MPI_Recv(buf, (int)(max + 8), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                            MPI_COMM_WORLD, &st));
            MT_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            uint64_t hdr;
            memcpy(&hdr, buf, 8);
            const int src = st.MPI_SOURCE, seq = (int)(hdr >> 16);
            MT_CHECK(src > 0 && src < np && (int)(hdr & 0xffff) == src,
                     "header names source %d, "
                     "status %d",
                     (int)(hdr & 0xffff), src);
            MT_CHECK(seq == next[src], "from rank %d got message %d before %d (overtaken)", src,
                     seq, next[src]);
            MT_CHECK(st.MPI_TAG == seq % 5, "message %d from %d has tag %d", seq, src, st.MPI_TAG);
            const size_t n = kCycle[(seq + src) % kCycleLen];
            MT_CHECK(count == (int)(n + 8), "message %d from %d: count %d want %zu", seq, src,
                     count, n + 8);
            /* restore the bytes the header replaced, then the whole payload must match */
            uint8_t head[8];
            mt_fill(head, 8, (uint32_t)(seq * 131 + src));
            memcpy(buf, head, 8);
            MT_EXPECT_PATTERN(buf, n + 8, (uint32_t)(seq * 131 + src), "stream payload");
            next[src]++;
        }
        free(next);
    }
    free(buf);
}

/* Rank 0 posts receives S(1,5), W(any,any), S(1,5); rank 1 then sends three messages with
 * tag 5 carrying 0,1,2. Post order says S gets 0, W gets 1, the second S gets 2. */
static void post_order_expected(int me) {
    int v[3] = {-1, -1, -1};
    if (me == 0) {
        MPI_Request rq[3];
        MT_MPI(MPI_Irecv(&v[0], 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &rq[0]));
        MT_MPI(MPI_Irecv(&v[1], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[1]));
        MT_MPI(MPI_Irecv(&v[2], 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &rq[2]));
        MPI_Barrier(MPI_COMM_WORLD);
        MT_MPI(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 3; ++i)
            MT_CHECK(v[i] == i, "receive %d (posted %s) got message %d", i,
                     i == 1 ? "wildcard" : "specific", v[i]);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 1)
            for (int i = 0; i < 3; ++i)
                MT_MPI(MPI_Send(&i, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
    }
}

/* Messages first (tags 5, 6, 5, 7), receives after: a tag-5 receive takes the first, an
 * ANY_TAG receive the oldest remaining (tag 6), then tag 7 specifically, then ANY_TAG the
 * last tag-5 one. */
static void post_order_unexpected(int me) {
    if (me == 1) {
        const int tags[4] = {5, 6, 5, 7};
        for (int i = 0; i < 4; ++i)
            MT_MPI(MPI_Send(&i, 1, MPI_INT, 0, tags[i], MPI_COMM_WORLD));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        int v;
        MPI_Status st;
        MT_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &st));
        MT_CHECK(v == 0, "tag-5 receive got message %d", v);
        MT_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        MT_CHECK(v == 1 && st.MPI_TAG == 6, "first wildcard got message %d tag %d", v, st.MPI_TAG);
        MT_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &st));
        MT_CHECK(v == 3, "tag-7 receive got message %d", v);
        MT_MPI(MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        MT_CHECK(v == 2 && st.MPI_TAG == 5, "second wildcard got message %d tag %d", v, st.MPI_TAG);
    }
}

/* Rank 1 starts kFlood sends before rank 0 posts anything. */
static void flood(int me) {
    static int vals[kFlood];
    if (me == 1) {
        MPI_Request* rq = (MPI_Request*)mt_malloc(kFlood * sizeof(MPI_Request));
        for (int i = 0; i < kFlood; ++i) {
            vals[i] = i;
            MT_MPI(MPI_Isend(&vals[i], 1, MPI_INT, 0, i % 3, MPI_COMM_WORLD, &rq[i]));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MT_MPI(MPI_Waitall(kFlood, rq, MPI_STATUSES_IGNORE));
        free(rq);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 0)
            for (int i = 0; i < kFlood; ++i) {
                int v;
                MPI_Status st;
                MT_MPI(MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                MT_CHECK(v == i && st.MPI_TAG == i % 3, "flood message %d arrived as %d (tag %d)",
                         i, v, st.MPI_TAG);
            }
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    MT_CHECK(np >= 2, "needs at least 2 ranks");
    stream(me, np);
    MPI_Barrier(MPI_COMM_WORLD);
    post_order_expected(me);
    post_order_unexpected(me);
    flood(me);
    mt_pass("ordering");
    MPI_Finalize();
    return 0;
}
