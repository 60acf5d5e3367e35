/* Ping-pong latency between ranks 0 and 1: one-way latency = half the round trip, averaged
 * over the timed iterations. Blocking MPI_Send/MPI_Recv, as OSU's osu_latency. */
#include "osu_common.h"

int main(int argc, char** argv) {
    int rank, np;
    osu_opts_t o = {0, 4u << 20, 10000, 1000, 1000, 100, 8192, 1};
    if (osu_start(&argc, &argv, &o, OSU_TWO_RANKS, &rank, &np) != 0) return 1;
    char* sbuf = (char*)osu_alloc(o.max_size);
    char* rbuf = (char*)osu_alloc(o.max_size);
    if (rank == 0) osu_header("MPI Latency Test", "# Size          Latency (us)");

    for (size_t s = o.min_size; s <= o.max_size; s = osu_next_size(s)) {
        const int iters = osu_iters(&o, s), warm = osu_warmup(&o, s);
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < warm + iters; ++i) {
            if (i == warm) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(sbuf, (int)s, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)s, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, (int)s, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)s, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        const double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
        if (rank == 0) {
            printf("%-10zu%18.2f\n", s, us);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
