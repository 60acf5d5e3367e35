/* Bidirectional bandwidth: both ranks keep `window` receives and `window` sends in flight
 * at once; the figure is the bytes moved both ways per second (MB/s), as OSU's osu_bibw. */
#include "osu_common.h"

int main(int argc, char** argv) {
    int rank, np;
    osu_opts_t o = {1, 4u << 20, 100, 20, 10, 2, 8192, 64};
    if (osu_start(&argc, &argv, &o, OSU_TWO_RANKS, &rank, &np) != 0) return 1;
    if (o.min_size == 0) o.min_size = 1;
    const int slots = osu_slots(&o);
    const int peer = 1 - rank;
    char* sbuf = (char*)osu_alloc(o.max_size * (size_t)slots);
    char* rbuf = (char*)osu_alloc(o.max_size * (size_t)slots);
    MPI_Request* rq = (MPI_Request*)malloc(2 * (size_t)o.window * sizeof(MPI_Request));
    if (rank == 0) osu_header("MPI Bi-Directional Bandwidth Test", "# Size      Bandwidth (MB/s)");

    for (size_t s = o.min_size; s <= o.max_size; s = osu_next_size(s)) {
        const int iters = osu_iters(&o, s), warm = osu_warmup(&o, s);
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < warm + iters; ++i) {
            if (i == warm) t0 = MPI_Wtime();
            for (int w = 0; w < o.window; ++w)
                MPI_Irecv(rbuf + (size_t)(w % slots) * s, (int)s, MPI_CHAR, peer, 200,
                          MPI_COMM_WORLD, &rq[w]);
            for (int w = 0; w < o.window; ++w)
                MPI_Isend(sbuf + (size_t)(w % slots) * s, (int)s, MPI_CHAR, peer, 200,
                          MPI_COMM_WORLD, &rq[o.window + w]);
            MPI_Waitall(2 * o.window, rq, MPI_STATUSES_IGNORE);
        }
        const double secs = MPI_Wtime() - t0;
        if (rank == 0) {
            printf("%-10zu%18.2f\n", s, 2.0 * (double)s * o.window * iters / secs / 1e6);
            fflush(stdout);
        }
    }
    free(rq);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
