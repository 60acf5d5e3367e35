/* Many communicators: messages on one communicator never match receives on another, even
 * with the same source and tag. MPI_Comm_split (with ranks reordered by key) and ~100
 * MPI_Comm_dup, each carrying traffic, received in the reverse order of sending. */
#include "mpitest.h"

enum { kDups = 100 };

static void split_checks(int me, int np) {
    MPI_Comm half;
    /* colour by parity; key reverses the order, so new rank 0 is the highest old rank */
    MT_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, np - me, &half));
    int hr, hn;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    const int want_size = np / 2 + (me % 2 == 0 ? np % 2 : 0);
    MT_CHECK(hn == want_size, "split size %d want %d", hn, want_size);
    long sum = 0, mine = me, want = 0;
    for (int r = me % 2; r < np; r += 2)
        want += r;
    MT_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, half));
    MT_CHECK(sum == want, "allreduce over the split %ld want %ld", sum, want);

    /* A ring inside the split: the source reported is a rank of `half`, and the payload
   * (the sender's world rank) is the one that rank should have. */
    int* world_of = (int*)mt_malloc((size_t)hn * sizeof(int));
    MT_MPI(MPI_Allgather(&me, 1, MPI_INT, world_of, 1, MPI_INT, half));
    /* by decreasing key: the highest world rank of this parity first, then every second one */
    const int top = (np - 1) % 2 == me % 2 ? np - 1 : np - 2;
    for (int r = 0; r < hn; ++r)
        MT_CHECK(world_of[r] == top - 2 * r, "split rank %d is world rank %d, want %d", r,
                 world_of[r], top - 2 * r);
    int got = -1;
    MPI_Status st;
    MT_MPI(MPI_Sendrecv(&me, 1, MPI_INT, (hr + 1) % hn, 8, &got, 1, MPI_INT, MPI_ANY_SOURCE, 8,
                        half, &st));
    const int left = (hr + hn - 1) % hn;
    MT_CHECK(st.MPI_SOURCE == left && got == world_of[left], "split ring: source %d value %d",
             st.MPI_SOURCE, got);
    free(world_of);
    MPI_Comm_free(&half);
}

static void dups(int me, int np) {
    MPI_Comm c[kDups];
    for (int i = 0; i < kDups; ++i)
        MT_MPI(MPI_Comm_dup(i ? c[i - 1] : MPI_COMM_WORLD, &c[i]));
    const int right = (me + 1) % np, left = (me + np - 1) % np;
    int out[kDups], in[kDups];
    MPI_Request rq[kDups];
    /* same tag and peer on every communicator, sent in order 0..99 */
    for (int i = 0; i < kDups; ++i) {
        out[i] = i * 1000 + me;
        MT_MPI(MPI_Isend(&out[i], 1, MPI_INT, right, 0, c[i], &rq[i]));
    }
    MPI_Barrier(MPI_COMM_WORLD); /* all of them are now unexpected at the receiver */
    /* received last communicator first, and with ANY_SOURCE/ANY_TAG on half of them */
    for (int i = kDups - 1; i >= 0; --i) {
        MPI_Status st;
        if (i % 2)
            MT_MPI(MPI_Recv(&in[i], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c[i], &st));
        else
            MT_MPI(MPI_Recv(&in[i], 1, MPI_INT, left, 0, c[i], &st));
        MT_CHECK(in[i] == i * 1000 + left && st.MPI_SOURCE == left,
                 "communicator %d received %d from %d, want %d from %d", i, in[i], st.MPI_SOURCE,
                 i * 1000 + left, left);
    }
    MT_MPI(MPI_Waitall(kDups, rq, MPI_STATUSES_IGNORE));
    /* a message on WORLD is not visible on a dup */
    if (np >= 2) {
        int flag = 1, v = 5;
        if (me == 0) MT_MPI(MPI_Send(&v, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 1) {
            MT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c[0], &flag, MPI_STATUS_IGNORE));
            MT_CHECK(!flag, "a WORLD message is visible on a duplicate");
            MT_MPI(MPI_Recv(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
    }
    for (int i = 0; i < kDups; ++i)
        MT_MPI(MPI_Comm_free(&c[i]));
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int me = mt_rank(), np = mt_size();
    split_checks(me, np);
    for (int rep = 0; rep < 2; ++rep)
        dups(me, np); /* twice: freed contexts are reused */
    mt_pass("comms");
    MPI_Finalize();
    return 0;
}
