/* Multiple bandwidth / message rate: the first half of the ranks each stream `window`
 * messages to a partner in the second half (rank i -> i + np/2) and wait for its
 * acknowledgement; all pairs run at once. Prints the aggregate bandwidth (MB/s, summed over
 * pairs) and message rate (messages/s), as OSU's osu_mbw_mr. */
#include "osu_common.h"

int main(int argc, char** argv) {
    int rank, np;
    osu_opts_t o = {1, 4u << 20, 100, 20, 10, 2, 8192, 64};
    if (osu_start(&argc, &argv, &o, OSU_EVEN_RANKS, &rank, &np) != 0) return 1;
    if (o.min_size == 0) o.min_size = 1;
    const int slots = osu_slots(&o);
    const int pairs = np / 2, sender = rank < pairs;
    const int peer = sender ? rank + pairs : rank - pairs;
    char* buf = (char*)osu_alloc(o.max_size * (size_t)slots);
    MPI_Request* rq = (MPI_Request*)malloc((size_t)o.window * sizeof(MPI_Request));
    int ack = 0;
    if (rank == 0) {
        printf("# MPI Multiple Bandwidth / Message Rate Test (Switchyard bench/osu)\n");
        printf("# [ pairs: %d ] [ window size: %d ]\n", pairs, o.window);
        printf("# Size                  MB/s        Messages/s\n");
        fflush(stdout);
    }

    for (size_t s = o.min_size; s <= o.max_size; s = osu_next_size(s)) {
        const int iters = osu_iters(&o, s), warm = osu_warmup(&o, s);
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < warm + iters; ++i) {
            if (i == warm) t0 = MPI_Wtime();
            if (sender) {
                for (int w = 0; w < o.window; ++w)
                    MPI_Isend(buf + (size_t)(w % slots) * s, (int)s, MPI_CHAR, peer, 300,
                              MPI_COMM_WORLD, &rq[w]);
                MPI_Waitall(o.window, rq, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_INT, peer, 301, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (int w = 0; w < o.window; ++w)
                    MPI_Irecv(buf + (size_t)(w % slots) * s, (int)s, MPI_CHAR, peer, 300,
                              MPI_COMM_WORLD, &rq[w]);
                MPI_Waitall(o.window, rq, MPI_STATUSES_IGNORE);
                MPI_Send(&ack, 1, MPI_INT, peer, 301, MPI_COMM_WORLD);
            }
        }
        /* Each sender's own rate; the aggregate is their sum. */
        const double secs = MPI_Wtime() - t0;
        double rate = sender ? (double)o.window * iters / secs : 0.0, total = 0.0;
        MPI_Reduce(&rate, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("%-10zu%18.2f%18.2f\n", s, total * (double)s / 1e6, total);
            fflush(stdout);
        }
    }
    free(rq);
    free(buf);
    MPI_Finalize();
    return 0;
}
