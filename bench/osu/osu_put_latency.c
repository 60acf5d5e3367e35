/* MPI_Put latency: rank 0 puts `size` bytes into rank 1's window and completes it as -s says
 * (default: flush, as OSU's osu_put_latency); the figure is microseconds per put. */
#include "osu_rma.h"

static void put(void* ctx, const osu_win_t* w, int target, size_t offset, size_t size) {
    MPI_Put((char*)ctx + offset, (int)size, MPI_CHAR, target, w->peer_disp + (MPI_Aint)offset,
            (int)size, MPI_CHAR, w->win);
}

int main(int argc, char** argv) {
    int rank;
    osu_opts_t o = {1, 4u << 20, 10000, 1000, 100, 10, 8192, 1};
    osu_rma_opts_t r = {OSU_WIN_ALLOCATE, OSU_SYNC_FLUSH, OSU_SYNC_ALL, 0, OSU_TYPE_CHAR, 2};
    if (osu_rma_start(&argc, &argv, &o, &r, &rank) != 0) return 1;
    char* sbuf = (char*)osu_alloc(o.max_size);
    osu_win_t w;
    osu_win_open(&w, r.win, o.max_size, rank);
    if (rank == 0) osu_rma_header("MPI_Put Latency Test", &r, NULL, "# Size          Latency (us)");

    for (size_t s = o.min_size; s <= o.max_size; s = osu_next_size(s))
        osu_rma_row(
            &r, rank, s,
            osu_rma_latency_us(&r, &w, rank, s, osu_warmup(&o, s), osu_iters(&o, s), put, sbuf));
    osu_win_close(&w);
    free(sbuf);
    MPI_Finalize();
    return 0;
}
