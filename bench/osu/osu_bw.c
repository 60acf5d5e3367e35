/* Unidirectional bandwidth: rank 0 keeps `window` nonblocking sends in flight to rank 1,
 * then waits for a 4-byte acknowledgement, so the time covers delivery and not only local
 * completion. Reported in MB/s (10^6 bytes), as OSU's osu_bw. */
#include "osu_common.h"

int main(int argc, char** argv) {
    int rank, np;
    osu_opts_t o = {1, 4u << 20, 100, 20, 10, 2, 8192, 64};
    if (osu_start(&argc, &argv, &o, OSU_TWO_RANKS, &rank, &np) != 0) return 1;
    if (o.min_size == 0) o.min_size = 1; /* 0 bytes has no bandwidth */
    const int slots = osu_slots(&o);
    char* buf = (char*)osu_alloc(o.max_size * (size_t)slots);
    MPI_Request* rq = (MPI_Request*)malloc((size_t)o.window * sizeof(MPI_Request));
    int ack = 0;
    if (rank == 0) osu_header("MPI Bandwidth Test", "# Size      Bandwidth (MB/s)");

    for (size_t s = o.min_size; s <= o.max_size; s = osu_next_size(s)) {
        const int iters = osu_iters(&o, s), warm = osu_warmup(&o, s);
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < warm + iters; ++i) {
            if (i == warm) t0 = MPI_Wtime();
            if (rank == 0) {
                for (int w = 0; w < o.window; ++w)
                    MPI_Isend(buf + (size_t)(w % slots) * s, (int)s, MPI_CHAR, 1, 100,
                              MPI_COMM_WORLD, &rq[w]);
                MPI_Waitall(o.window, rq, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_INT, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (int w = 0; w < o.window; ++w)
                    MPI_Irecv(buf + (size_t)(w % slots) * s, (int)s, MPI_CHAR, 0, 100,
                              MPI_COMM_WORLD, &rq[w]);
                MPI_Waitall(o.window, rq, MPI_STATUSES_IGNORE);
                MPI_Send(&ack, 1, MPI_INT, 0, 101, MPI_COMM_WORLD);
            }
        }
        const double secs = MPI_Wtime() - t0;
        if (rank == 0) {
            printf("%-10zu%18.2f\n", s, (double)s * o.window * iters / secs / 1e6);
            fflush(stdout);
        }
    }
    free(rq);
    free(buf);
    MPI_Finalize();
    return 0;
}
