/* MPI_Get bandwidth: per round rank 0 gets a window of -W messages (default 64) from rank
 * 1's window and completes them as -s says (default: flush, as OSU's osu_get_bw); the figure
 * is bytes read per second, MB/s (10^6 B/s). */
#include "osu_rma.h"

static void get(void* ctx, const osu_win_t* w, int target, size_t offset, size_t size) {
    MPI_Get((char*)ctx + offset, (int)size, MPI_CHAR, target, w->peer_disp + (MPI_Aint)offset,
            (int)size, MPI_CHAR, w->win);
}

int main(int argc, char** argv) {
    int rank;
    osu_opts_t o = {1, 4u << 20, 100, 20, 10, 2, 8192, 64};
    osu_rma_opts_t r = {OSU_WIN_ALLOCATE, OSU_SYNC_FLUSH, OSU_SYNC_ALL, 0, OSU_TYPE_CHAR, 2};
    if (osu_rma_start(&argc, &argv, &o, &r, &rank) != 0) return 1;
    if (o.min_size == 0) o.min_size = 1; /* 0 bytes has no bandwidth */
    const int slots = osu_slots(&o);
    char* rbuf = (char*)osu_alloc(o.max_size * (size_t)slots);
    osu_win_t w;
    osu_win_open(&w, r.win, o.max_size * (size_t)slots, rank);
    if (rank == 0)
        osu_rma_header("MPI_Get Bandwidth Test", &r, NULL, "# Size      Bandwidth (MB/s)");

    for (size_t s = o.min_size; s <= o.max_size; s = osu_next_size(s)) {
        const int iters = osu_iters(&o, s);
        const double secs =
            osu_rma_run(&r, &w, rank, s, osu_warmup(&o, s), iters, o.window, slots, 0, get, rbuf);
        osu_rma_row(&r, rank, s, secs > 0 ? (double)s * o.window * iters / secs / 1e6 : 0);
    }
    osu_win_close(&w);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
