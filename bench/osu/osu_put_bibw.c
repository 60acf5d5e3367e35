/* Bidirectional MPI_Put bandwidth: per round both ranks put a window of -W messages (default
 * 64) into each other's window at once, synchronised by post/start/complete/wait (default,
 * as OSU's osu_put_bibw) or fence; the figure is the bytes put both ways per second, MB/s. */
#include "osu_rma.h"

int main(int argc, char** argv) {
    int rank;
    osu_opts_t o = {1, 4u << 20, 100, 20, 10, 2, 8192, 64};
    osu_rma_opts_t r = {OSU_WIN_ALLOCATE, OSU_SYNC_PSCW, OSU_SYNC_ACTIVE, 0, OSU_TYPE_CHAR, 2};
    if (osu_rma_start(&argc, &argv, &o, &r, &rank) != 0) return 1;
    if (o.min_size == 0) o.min_size = 1; /* 0 bytes has no bandwidth */
    const int slots = osu_slots(&o), peer = 1 - rank;
    char* sbuf = (char*)osu_alloc(o.max_size * (size_t)slots);
    osu_win_t w;
    osu_win_open(&w, r.win, o.max_size * (size_t)slots, rank);
    if (rank == 0)
        osu_rma_header("MPI_Put Bi-directional Bandwidth Test", &r, NULL,
                       "# Size      Bandwidth (MB/s)");

    for (size_t s = o.min_size; s <= o.max_size; s = osu_next_size(s)) {
        const int iters = osu_iters(&o, s), warm = osu_warmup(&o, s);
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < warm + iters; ++i) {
            if (i == warm) t0 = MPI_Wtime();
            if (r.sync == OSU_SYNC_PSCW) {
                MPI_Win_post(w.peer, 0, w.win);
                MPI_Win_start(w.peer, 0, w.win);
            } else {
                MPI_Win_fence(0, w.win);
            }
            for (int j = 0; j < o.window; ++j) {
                const size_t off = (size_t)(j % slots) * s;
                MPI_Put(sbuf + off, (int)s, MPI_CHAR, peer, w.peer_disp + (MPI_Aint)off, (int)s,
                        MPI_CHAR, w.win);
            }
            if (r.sync == OSU_SYNC_PSCW) {
                MPI_Win_complete(w.win);
                MPI_Win_wait(w.win);
            } else {
                MPI_Win_fence(0, w.win);
            }
        }
        const double secs = MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
        osu_rma_row(&r, rank, s, (double)s * o.window * iters * 2 / secs / 1e6);
    }
    osu_win_close(&w);
    free(sbuf);
    MPI_Finalize();
    return 0;
}
